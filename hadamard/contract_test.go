package hadamard

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeMD is a map-backed Metadata with the typing rules of *gguf.File: Int
// accepts any integer type, Floats any integer or float array, and errors
// name the key.
type fakeMD map[string]any

func (m fakeMD) Has(key string) bool { _, ok := m[key]; return ok }

func (m fakeMD) get(key string) (any, error) {
	v, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("gguf: key %q not found", key)
	}
	return v, nil
}

func wrongType(key, want string, v any) error {
	return fmt.Errorf("gguf: key %q: want %s, have %T", key, want, v)
}

func (m fakeMD) Int(key string) (int64, error) {
	v, err := m.get(key)
	if err != nil {
		return 0, err
	}
	switch v := v.(type) {
	case int8:
		return int64(v), nil
	case int16:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case int64:
		return v, nil
	case uint8:
		return int64(v), nil
	case uint16:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case uint64:
		if v > math.MaxInt64 {
			return 0, fmt.Errorf("gguf: key %q: %d overflows int64", key, v)
		}
		return int64(v), nil
	}
	return 0, wrongType(key, "integer", v)
}

func (m fakeMD) String(key string) (string, error) {
	v, err := m.get(key)
	if err != nil {
		return "", err
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", wrongType(key, "string", v)
}

func (m fakeMD) Bool(key string) (bool, error) {
	v, err := m.get(key)
	if err != nil {
		return false, err
	}
	if b, ok := v.(bool); ok {
		return b, nil
	}
	return false, wrongType(key, "bool", v)
}

func convert[T, U int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64](s []T) []U {
	out := make([]U, len(s))
	for i, v := range s {
		out[i] = U(v)
	}
	return out
}

func (m fakeMD) Ints(key string) ([]int64, error) {
	v, err := m.get(key)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case []int8:
		return convert[int8, int64](v), nil
	case []int16:
		return convert[int16, int64](v), nil
	case []int32:
		return convert[int32, int64](v), nil
	case []int64:
		return slices.Clone(v), nil
	case []uint8:
		return convert[uint8, int64](v), nil
	case []uint16:
		return convert[uint16, int64](v), nil
	case []uint32:
		return convert[uint32, int64](v), nil
	}
	return nil, wrongType(key, "integer array", v)
}

func (m fakeMD) Floats(key string) ([]float64, error) {
	v, err := m.get(key)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case []float32:
		return convert[float32, float64](v), nil
	case []float64:
		return slices.Clone(v), nil
	}
	ints, err := m.Ints(key)
	if err != nil {
		return nil, wrongType(key, "numeric array", v)
	}
	return convert[int64, float64](ints), nil
}

func (m fakeMD) Strings(key string) ([]string, error) {
	v, err := m.get(key)
	if err != nil {
		return nil, err
	}
	if s, ok := v.([]string); ok {
		return slices.Clone(s), nil
	}
	return nil, wrongType(key, "string array", v)
}

var _ Metadata = fakeMD(nil)

// modelWeightNames lists the 401 folded tensors of the released model: 64
// layers, every fourth full attention (q, k, v, o) and the rest GDN (qkv,
// gate, ssm_out), each with an MLP (gate, up, down), plus the output head.
func modelWeightNames() []string {
	var names []string
	for l := range 64 {
		if l%4 == 3 {
			for _, t := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
				names = append(names, fmt.Sprintf("blk.%d.%s.weight", l, t))
			}
		} else {
			for _, t := range []string{"attn_qkv", "attn_gate", "ssm_out"} {
				names = append(names, fmt.Sprintf("blk.%d.%s.weight", l, t))
			}
		}
		for _, t := range []string{"ffn_gate", "ffn_up", "ffn_down"} {
			names = append(names, fmt.Sprintf("blk.%d.%s.weight", l, t))
		}
	}
	return append(names, "output.weight")
}

// modelMD returns metadata shaped like the released model's, with random
// signs, and the signs themselves (concatenated).
func modelMD(seed uint64) (fakeMD, []int8) {
	signs := randSigns(rand.New(rand.NewPCG(seed, seed)), 5120+6144+17408)
	return fakeMD{
		KeyVersion:             uint32(1),
		KeyBlockSize:           uint32(1024),
		KeyTransform:           TransformName,
		KeyAxis:                AxisInputLast,
		KeySignMode:            SignModeExplicit,
		KeySignWidths:          []int32{5120, 6144, 17408},
		KeySignValues:          signs,
		KeyWeightNames:         modelWeightNames(),
		KeyInverseWeightNames:  []string{"token_embd.weight"},
		KeyGDNVGrouped:         true,
		"general.architecture": "qwen35",
	}, signs
}

func TestParseContractModel(t *testing.T) {
	md, signs := modelMD(1)
	c, err := ParseContract(md)
	require.NoError(t, err)

	assert.Equal(t, &Contract{
		Version:            1,
		BlockSize:          1024,
		Transform:          TransformName,
		Axis:               AxisInputLast,
		SignMode:           SignModeExplicit,
		Widths:             []int{5120, 6144, 17408},
		Signs:              [][]int8{signs[:5120], signs[5120:11264], signs[11264:]},
		WeightNames:        modelWeightNames(),
		InverseWeightNames: []string{"token_embd.weight"},
		GDNVGrouped:        true,
	}, c)
	assert.Len(t, c.WeightNames, 401)

	for i, w := range []int{5120, 6144, 17408} {
		r, err := c.Rotation(w)
		require.NoError(t, err)
		assert.Equal(t, w, r.Width())
		assert.Equal(t, 1024, r.BlockSize())
		assert.Equal(t, c.Signs[i], r.Signs())
	}
	_, err = c.Rotation(4096)
	assert.EqualError(t, err, "hadamard: contract has no sign vector for width 4096 (it has [5120 6144 17408])")

	assert.True(t, c.IsFolded("output.weight"))
	assert.True(t, c.IsFolded("blk.63.ffn_down.weight"))
	assert.True(t, c.IsFolded("blk.3.attn_q.weight"))
	assert.False(t, c.IsFolded("blk.0.ssm_alpha.weight")) // reads the un-rotated input
	assert.False(t, c.IsFolded("token_embd.weight"))
	assert.True(t, c.IsInverse("token_embd.weight"))
	assert.False(t, c.IsInverse("output.weight"))
}

func TestParseContractNoContract(t *testing.T) {
	_, err := ParseContract(fakeMD{"general.architecture": "qwen35"})
	assert.ErrorIs(t, err, ErrNoContract)

	md, _ := modelMD(2)
	delete(md, KeyVersion)
	_, err = ParseContract(md)
	assert.ErrorIs(t, err, ErrNoContract)
}

func TestContractKeyValuesRoundTrip(t *testing.T) {
	md, _ := modelMD(3)
	c, err := ParseContract(md)
	require.NoError(t, err)

	kvs := c.KeyValues()
	var keys []string
	out := fakeMD{}
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
		out[kv.Key] = kv.Value
	}
	assert.Equal(t, []string{KeyVersion, KeyBlockSize, KeyTransform, KeyAxis, KeySignMode,
		KeySignWidths, KeySignValues, KeyWeightNames, KeyInverseWeightNames, KeyGDNVGrouped}, keys)
	// The native types a writer converts from.
	assert.IsType(t, uint32(0), out[KeyVersion])
	assert.IsType(t, uint32(0), out[KeyBlockSize])
	assert.IsType(t, "", out[KeyTransform])
	assert.IsType(t, []int32(nil), out[KeySignWidths])
	assert.IsType(t, []int8(nil), out[KeySignValues])
	assert.IsType(t, []string(nil), out[KeyWeightNames])
	assert.IsType(t, []string(nil), out[KeyInverseWeightNames])
	assert.IsType(t, false, out[KeyGDNVGrouped])
	assert.Equal(t, md[KeySignValues], out[KeySignValues])

	back, err := ParseContract(out)
	require.NoError(t, err)
	assert.Equal(t, c, back)

	// Empty name lists still produce (empty) arrays, and false is written.
	c.WeightNames, c.InverseWeightNames, c.GDNVGrouped = nil, nil, false
	out = fakeMD{}
	for _, kv := range c.KeyValues() {
		out[kv.Key] = kv.Value
	}
	assert.Equal(t, []string{}, out[KeyWeightNames])
	back, err = ParseContract(out)
	require.NoError(t, err)
	assert.Empty(t, back.WeightNames)
	assert.False(t, back.GDNVGrouped)

	// KeyValues does not alias c.
	out[KeySignValues].([]int8)[0] *= -1
	out2 := c.KeyValues()
	assert.NotEqual(t, out[KeySignValues], out2[6].Value)
}

// Writers differ in the element types they choose; all must parse alike.
func TestParseContractElementTypes(t *testing.T) {
	md, signs := modelMD(4)
	want, err := ParseContract(md)
	require.NoError(t, err)

	for name, vals := range map[string]any{
		"int8":    signs,
		"int16":   convert[int8, int16](signs),
		"int32":   convert[int8, int32](signs),
		"int64":   convert[int8, int64](signs),
		"float32": convert[int8, float32](signs),
		"float64": convert[int8, float64](signs),
	} {
		md[KeySignValues] = vals
		got, err := ParseContract(md)
		if assert.NoError(t, err, "sign_values as %s", name) {
			assert.Equal(t, want, got, "sign_values as %s", name)
		}
	}
	md[KeySignValues] = signs

	for _, v := range []any{int8(1), uint8(1), int16(1), int32(1), int64(1), uint64(1)} {
		md[KeyVersion] = v
		_, err := ParseContract(md)
		assert.NoError(t, err, "version as %T", v)
	}
	for _, v := range []any{uint16(1024), int32(1024), uint64(1024), int64(1024)} {
		md[KeyBlockSize] = v
		_, err := ParseContract(md)
		assert.NoError(t, err, "block_size as %T", v)
	}
	for _, v := range []any{[]uint16{5120, 6144, 17408}, []uint32{5120, 6144, 17408}, []int64{5120, 6144, 17408}} {
		md[KeySignWidths] = v
		_, err := ParseContract(md)
		assert.NoError(t, err, "sign_widths as %T", v)
	}

	delete(md, KeyGDNVGrouped)
	c, err := ParseContract(md)
	require.NoError(t, err)
	assert.False(t, c.GDNVGrouped, "absent gdn_v_grouped means false")
}

func TestParseContractInvalid(t *testing.T) {
	// Sign values with one entry replaced.
	withSign := func(i int, v float64) func(fakeMD) {
		return func(md fakeMD) {
			vals := convert[int8, float64](md[KeySignValues].([]int8))
			vals[i] = v
			md[KeySignValues] = vals
		}
	}
	set := func(key string, v any) func(fakeMD) { return func(md fakeMD) { md[key] = v } }
	del := func(key string) func(fakeMD) { return func(md fakeMD) { delete(md, key) } }
	n := 5120 + 6144 + 17408

	for _, tc := range []struct {
		name   string
		mutate func(fakeMD)
		key    string
		kind   error
		msg    string // expected in the message
	}{
		{"version 2", set(KeyVersion, uint32(2)), KeyVersion, ErrUnsupported, "unsupported version 2 (want 1)"},
		{"version 0", set(KeyVersion, int32(0)), KeyVersion, ErrUnsupported, "version 0"},
		{"version string", set(KeyVersion, "1"), KeyVersion, ErrInvalid, `gguf: key "prism.hadamard.version": want integer, have string`},

		{"block missing", del(KeyBlockSize), KeyBlockSize, ErrInvalid, "missing"},
		{"block 1000", set(KeyBlockSize, uint32(1000)), KeyBlockSize, ErrInvalid, "block size 1000 is not a power of two"},
		{"block 1", set(KeyBlockSize, uint32(1)), KeyBlockSize, ErrInvalid, "block size 1 "},
		{"block 0", set(KeyBlockSize, uint32(0)), KeyBlockSize, ErrInvalid, "block size 0 "},
		{"block negative", set(KeyBlockSize, int32(-1024)), KeyBlockSize, ErrInvalid, "block size -1024 "},
		{"block huge", set(KeyBlockSize, uint64(1)<<62), KeyBlockSize, ErrInvalid, "block size 4611686018427387904 "},
		{"block float", set(KeyBlockSize, float32(1024)), KeyBlockSize, ErrInvalid, "want integer, have float32"},

		{"transform other", set(KeyTransform, "hadamard"), KeyTransform, ErrUnsupported, `unsupported transform "hadamard" (want "normalized-sylvester-walsh-hadamard")`},
		{"transform case", set(KeyTransform, "Normalized-Sylvester-Walsh-Hadamard"), KeyTransform, ErrUnsupported, "transform"},
		{"transform type", set(KeyTransform, uint32(1)), KeyTransform, ErrInvalid, `gguf: key "prism.hadamard.transform": want string, have uint32`},
		{"transform missing", del(KeyTransform), KeyTransform, ErrInvalid, "missing"},
		{"axis", set(KeyAxis, "output-first-dimension"), KeyAxis, ErrUnsupported, `unsupported axis "output-first-dimension" (want "input-last-dimension")`},
		{"axis missing", del(KeyAxis), KeyAxis, ErrInvalid, "missing"},
		{"sign mode", set(KeySignMode, "seeded"), KeySignMode, ErrUnsupported, `unsupported sign mode "seeded" (want "explicit")`},

		{"widths missing", del(KeySignWidths), KeySignWidths, ErrInvalid, "missing"},
		{"widths empty", func(md fakeMD) { md[KeySignWidths] = []int32{}; md[KeySignValues] = []int8{} }, KeySignWidths, ErrInvalid, "no widths"},
		{"widths type", set(KeySignWidths, []string{"5120"}), KeySignWidths, ErrInvalid, "want integer array"},
		{"width zero", set(KeySignWidths, []int32{5120, 0, 6144, 17408}), KeySignWidths, ErrInvalid, "width 1 is 0"},
		{"width negative", set(KeySignWidths, []int32{-5120, 6144, 17408}), KeySignWidths, ErrInvalid, "width 0 is -5120"},
		{"width huge", set(KeySignWidths, []int64{1 << 40}), KeySignWidths, ErrInvalid, "width 0 is 1099511627776"},
		{"width not multiple", set(KeySignWidths, []int32{5120, 6144 - 512, 17408 + 512}), KeySignWidths, ErrInvalid, "width 1 is 5632, not a multiple of block size 1024"},
		{"width twice", func(md fakeMD) {
			md[KeySignWidths] = []int32{5120, 5120}
			md[KeySignValues] = md[KeySignValues].([]int8)[:10240]
		}, KeySignWidths, ErrInvalid, "width 5120 appears twice"},
		{"widths overflow", set(KeySignWidths, []int64{math.MaxInt32, math.MaxInt32, math.MaxInt32, math.MaxInt32, math.MaxInt32}), KeySignValues, ErrInvalid, "needs more"},

		{"values missing", del(KeySignValues), KeySignValues, ErrInvalid, "missing"},
		{"values type", set(KeySignValues, []string{"1"}), KeySignValues, ErrInvalid, "want numeric array"},
		{"values short", func(md fakeMD) { md[KeySignValues] = md[KeySignValues].([]int8)[:n-1] }, KeySignValues, ErrInvalid, "28671 values, but prism.hadamard.sign_widths needs more"},
		{"values long", func(md fakeMD) { md[KeySignValues] = append(md[KeySignValues].([]int8), 1) }, KeySignValues, ErrInvalid, "28673 values, want 28672"},
		{"value 0.5", withSign(7000, 0.5), KeySignValues, ErrInvalid, "value 7000 is 0.5, want ±1"},
		{"value 0", withSign(0, 0), KeySignValues, ErrInvalid, "value 0 is 0, want ±1"},
		{"value 2", withSign(n-1, 2), KeySignValues, ErrInvalid, "value 28671 is 2, want ±1"},
		{"value -2", withSign(5120, -2), KeySignValues, ErrInvalid, "value 5120 is -2"},
		{"value NaN", withSign(17, math.NaN()), KeySignValues, ErrInvalid, "value 17 is NaN"},
		{"value Inf", withSign(18, math.Inf(1)), KeySignValues, ErrInvalid, "value 18 is +Inf"},
		{"value int8 0", func(md fakeMD) { md[KeySignValues].([]int8)[3] = 0 }, KeySignValues, ErrInvalid, "value 3 is 0"},

		{"names missing", del(KeyWeightNames), KeyWeightNames, ErrInvalid, "missing"},
		{"names type", set(KeyWeightNames, []int32{1}), KeyWeightNames, ErrInvalid, "want string array"},
		{"names twice", func(md fakeMD) {
			md[KeyWeightNames] = append(md[KeyWeightNames].([]string), "blk.0.ffn_up.weight")
		}, KeyWeightNames, ErrInvalid, `"blk.0.ffn_up.weight" appears twice`},
		{"names empty", set(KeyWeightNames, []string{"output.weight", ""}), KeyWeightNames, ErrInvalid, "name 1 is empty"},
		{"inverse missing", del(KeyInverseWeightNames), KeyInverseWeightNames, ErrInvalid, "missing"},
		{"inverse twice", set(KeyInverseWeightNames, []string{"token_embd.weight", "token_embd.weight"}), KeyInverseWeightNames, ErrInvalid, "appears twice"},
		{"inverse also folded", set(KeyInverseWeightNames, []string{"token_embd.weight", "output.weight"}), KeyInverseWeightNames, ErrInvalid, `"output.weight" is also in prism.hadamard.weight_names`},
		{"gdn type", set(KeyGDNVGrouped, uint8(1)), KeyGDNVGrouped, ErrInvalid, "want bool, have uint8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md, _ := modelMD(5)
			tc.mutate(md)
			c, err := ParseContract(md)
			require.Error(t, err)
			assert.Nil(t, c)
			assert.ErrorIs(t, err, tc.kind)
			other := ErrInvalid
			if tc.kind == ErrInvalid {
				other = ErrUnsupported
			}
			assert.NotErrorIs(t, err, other)
			assert.NotErrorIs(t, err, ErrNoContract)
			var ce *ContractError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.key, ce.Key)
			assert.Contains(t, err.Error(), "hadamard: "+tc.key+": ")
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// The underlying Metadata error stays reachable.
func TestParseContractWrapsMetadataError(t *testing.T) {
	md, _ := modelMD(6)
	md[KeyAxis] = int32(0)
	_, err := ParseContract(md)
	var ce *ContractError
	require.ErrorAs(t, err, &ce)
	require.Error(t, ce.Err)
	assert.ErrorIs(t, err, ce.Err)
	assert.Equal(t, `hadamard: prism.hadamard.axis: cannot read: gguf: key "prism.hadamard.axis": want string, have int32`, err.Error())
}

// A hostile file's widths must not drive allocation or arithmetic past what
// the sign values already hold.
func TestParseContractHostileWidths(t *testing.T) {
	md, _ := modelMD(7)
	widths := make([]int64, 100000)
	for i := range widths {
		widths[i] = math.MaxInt32
	}
	md[KeySignWidths] = widths
	md[KeySignValues] = []int8{1, -1}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ParseContract(md)
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, ErrInvalid)
	// The fake's copy of the widths (800 kB) and their conversion are all.
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20))
}

func TestContractValidate(t *testing.T) {
	valid := func() *Contract {
		return &Contract{
			Version: 1, BlockSize: 4,
			Transform: TransformName, Axis: AxisInputLast, SignMode: SignModeExplicit,
			Widths:             []int{8, 4},
			Signs:              [][]int8{{1, -1, 1, 1, -1, -1, 1, -1}, {1, 1, -1, 1}},
			WeightNames:        []string{"a.weight", "b.weight"},
			InverseWeightNames: []string{"token_embd.weight"},
		}
	}
	require.NoError(t, valid().Validate())

	for _, tc := range []struct {
		mutate func(*Contract)
		key    string
		kind   error
		msg    string
	}{
		{func(c *Contract) { c.Version = 2 }, KeyVersion, ErrUnsupported, "version 2"},
		{func(c *Contract) { c.BlockSize = 6 }, KeyBlockSize, ErrInvalid, "block size 6"},
		{func(c *Contract) { c.Transform = "" }, KeyTransform, ErrUnsupported, `transform ""`},
		{func(c *Contract) { c.Axis = "x" }, KeyAxis, ErrUnsupported, `axis "x"`},
		{func(c *Contract) { c.SignMode = "x" }, KeySignMode, ErrUnsupported, `sign mode "x"`},
		{func(c *Contract) { c.Widths, c.Signs = nil, nil }, KeySignWidths, ErrInvalid, "no widths"},
		{func(c *Contract) { c.Widths[1] = 6 }, KeySignWidths, ErrInvalid, "width 1 is 6, not a multiple"},
		{func(c *Contract) { c.Signs = c.Signs[:1] }, KeySignValues, ErrInvalid, "1 sign vectors for 2 widths"},
		{func(c *Contract) { c.Signs[1] = c.Signs[1][:3] }, KeySignValues, ErrInvalid, "3 signs for width 4"},
		{func(c *Contract) { c.Signs[1][2] = 0 }, KeySignValues, ErrInvalid, "value 10 is 0, want ±1"},
		{func(c *Contract) { c.WeightNames[1] = "a.weight" }, KeyWeightNames, ErrInvalid, `"a.weight" appears twice`},
		{func(c *Contract) { c.InverseWeightNames = []string{"b.weight"} }, KeyInverseWeightNames, ErrInvalid, `"b.weight" is also in`},
	} {
		c := valid()
		tc.mutate(c)
		err := c.Validate()
		var ce *ContractError
		if assert.ErrorAs(t, err, &ce, tc.msg) {
			assert.Equal(t, tc.key, ce.Key)
			assert.ErrorIs(t, err, tc.kind)
			assert.Contains(t, err.Error(), tc.msg)
		}
	}
}

func TestSentinels(t *testing.T) {
	for _, err := range []error{ErrNoContract, ErrUnsupported, ErrInvalid} {
		assert.Regexp(t, "^hadamard: ", err.Error())
	}
	assert.False(t, errors.Is(ErrInvalid, ErrUnsupported))
}
