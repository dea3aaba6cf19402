package backend_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

func snapshot(t testing.TB, st backend.State) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := backend.WriteState(&b, st); err != nil {
		t.Fatalf("WriteState: %v", err)
	}
	return b.Bytes()
}

// kvOf returns the fake KV caches of st's attention layers, in order.
func kvOf(st *fakeState) []*fakeKV {
	var kvs []*fakeKV
	for _, l := range st.layers {
		if l.KV != nil {
			kvs = append(kvs, l.KV.(*fakeKV))
		}
	}
	return kvs
}

// checkEmpty fails unless st holds nothing: no tokens, no positions, zero arrays.
func checkEmpty(t *testing.T, what string, st *fakeState) {
	t.Helper()
	if st.Len() != 0 {
		t.Fatalf("%s: the state holds %d tokens, want 0", what, st.Len())
	}
	for i, l := range st.layers {
		if l.KV != nil && l.KV.Len() != 0 {
			t.Fatalf("%s: layer %d holds %d positions, want 0", what, i, l.KV.Len())
		}
		for _, a := range l.Recurrent {
			if slices.ContainsFunc(a, func(x float32) bool { return x != 0 }) {
				t.Fatalf("%s: layer %d's arrays are not reset", what, i)
			}
		}
	}
}

// The encoding, written out by hand for a state of one token: a recurrent layer of one
// array of 2 values, then an f32 attention layer of one head of 2 values.
func TestWriteStateEncoding(t *testing.T) {
	st := newFakeState([]layerSpec{{recurrent: []int{2}}, {heads: 1, dim: 2}}, backend.KVFloat32, 4)
	copy(st.layers[0].Recurrent[0], []float32{1.5, -2})
	f32 := func(xs ...float32) (b []byte) {
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		return b
	}
	if err := st.layers[1].KV.AppendRow(f32(1, 2), f32(3, 4)); err != nil {
		t.Fatal(err)
	}
	st.n = 1
	want := slices.Concat(
		[]byte{1, 0, 0, 0}, // tokens
		f32(1.5, -2),       // layer 0
		[]byte{byte(backend.KVFloat32), 1, 0, 0, 0}, f32(1, 2), f32(3, 4), // layer 1: precision, positions, k, v
	)
	if got := snapshot(t, st); !bytes.Equal(got, want) {
		t.Fatalf("snapshot\n% x, want\n% x", got, want)
	}
	fresh := newFakeState([]layerSpec{{recurrent: []int{2}}, {heads: 1, dim: 2}}, backend.KVFloat32, 4)
	if err := backend.ReadState(bytes.NewReader(want), fresh); err != nil {
		t.Fatal(err)
	}
	if fresh.Len() != 1 || !slices.Equal(fresh.layers[0].Recurrent[0], []float32{1.5, -2}) ||
		!bytes.Equal(kvOf(fresh)[0].k[0], f32(1, 2)) || !bytes.Equal(kvOf(fresh)[0].v[0], f32(3, 4)) {
		t.Fatal("ReadState of the hand-written snapshot does not restore the state")
	}
}

func TestStateRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range precisions {
		a := newFakeState(fakeLayout, p, 8)
		a.fill(rng, 5)
		snap := snapshot(t, a)
		b := newFakeState(fakeLayout, p, 8)
		b.fill(rng, 7) // something to replace, longer than what replaces it
		if err := backend.ReadState(bytes.NewReader(snap), b); err != nil {
			t.Fatalf("%v: ReadState: %v", p, err)
		}
		if b.Len() != 5 {
			t.Fatalf("%v: the loaded state holds %d tokens, want 5", p, b.Len())
		}
		for i := range a.layers {
			for j := range a.layers[i].Recurrent {
				if !slices.Equal(a.layers[i].Recurrent[j], b.layers[i].Recurrent[j]) {
					t.Fatalf("%v: layer %d array %d differs after the round trip", p, i, j)
				}
			}
		}
		for i, kv := range kvOf(a) {
			got := kvOf(b)[i]
			if !slices.EqualFunc(kv.k, got.k, bytes.Equal) || !slices.EqualFunc(kv.v, got.v, bytes.Equal) {
				t.Fatalf("%v: attention layer %d's rows differ after the round trip", p, i)
			}
		}
		if !bytes.Equal(snapshot(t, b), snap) {
			t.Fatalf("%v: the loaded state's snapshot differs", p)
		}
	}
}

// converted returns row (at precision from) as a cache of precision to stores it.
func converted(t *testing.T, kv *fakeKV, from, to backend.KVPrecision, row []byte) []byte {
	t.Helper()
	c := backend.NewKVRowCodec(kv.heads, kv.dim)
	x := make([]float32, kv.heads*kv.dim)
	if err := c.Decode(from, x, row); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, to.RowBytes(kv.heads, kv.dim))
	c.Encode(to, out, x)
	return out
}

// checkConverted: dst holds src's state, its rows src's re-encoded at dst's precision.
func checkConverted(t *testing.T, what string, dst, src *fakeState) {
	t.Helper()
	if dst.Len() != src.Len() {
		t.Fatalf("%s: %d tokens, want %d", what, dst.Len(), src.Len())
	}
	for i := range src.layers {
		for j := range src.layers[i].Recurrent {
			if !slices.Equal(dst.layers[i].Recurrent[j], src.layers[i].Recurrent[j]) {
				t.Fatalf("%s: layer %d array %d differs", what, i, j)
			}
		}
	}
	for i, s := range kvOf(src) {
		d := kvOf(dst)[i]
		if d.Len() != s.Len() {
			t.Fatalf("%s: attention layer %d holds %d positions, want %d", what, i, d.Len(), s.Len())
		}
		for pos := range s.Len() {
			if !bytes.Equal(d.k[pos], converted(t, s, s.prec, d.prec, s.k[pos])) ||
				!bytes.Equal(d.v[pos], converted(t, s, s.prec, d.prec, s.v[pos])) {
				t.Fatalf("%s: attention layer %d position %d is not the source's row at %v", what, i, pos, d.prec)
			}
		}
	}
}

func TestReadStateConverts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, from := range precisions {
		for _, to := range precisions {
			a := newFakeState(fakeLayout, from, 8)
			a.fill(rng, 4)
			b := newFakeState(fakeLayout, to, 8)
			if err := backend.ReadState(bytes.NewReader(snapshot(t, a)), b); err != nil {
				t.Fatalf("%v → %v: %v", from, to, err)
			}
			checkConverted(t, from.String()+" → "+to.String(), b, a)
		}
	}

	// f32 → int8 is the int8 quantiser applied to the f32 rows.
	a := newFakeState(fakeLayout, backend.KVFloat32, 8)
	a.fill(rng, 3)
	b := newFakeState(fakeLayout, backend.KVInt8, 8)
	if err := backend.ReadState(bytes.NewReader(snapshot(t, a)), b); err != nil {
		t.Fatal(err)
	}
	for i, kv := range kvOf(a) {
		for pos := range kv.Len() {
			x := decodeF32(kv.k[pos])
			codes, scales := make([]int8, kv.dim), make([]float32, (kv.dim+backend.KVBlock-1)/backend.KVBlock)
			var want []byte
			var wantScales []byte
			for h := range kv.heads {
				backend.QuantizeInt8(codes, scales, x[h*kv.dim:(h+1)*kv.dim])
				for _, q := range codes {
					want = append(want, byte(q))
				}
				for _, s := range scales {
					wantScales = binary.LittleEndian.AppendUint32(wantScales, math.Float32bits(s))
				}
			}
			if got := kvOf(b)[i].k[pos]; !bytes.Equal(got, append(want, wantScales...)) {
				t.Fatalf("f32 → int8: layer %d position %d key\n% x, want\n% x", i, pos, got, append(want, wantScales...))
			}
		}
	}

	// f16 → f32 is exact, and back to f16 gives the same bytes.
	h := newFakeState(fakeLayout, backend.KVFloat16, 8)
	h.fill(rng, 3)
	f := newFakeState(fakeLayout, backend.KVFloat32, 8)
	if err := backend.ReadState(bytes.NewReader(snapshot(t, h)), f); err != nil {
		t.Fatal(err)
	}
	for i, kv := range kvOf(h) {
		c := backend.NewKVRowCodec(kv.heads, kv.dim)
		want := make([]float32, kv.heads*kv.dim)
		for pos := range kv.Len() {
			if err := c.Decode(backend.KVFloat16, want, kv.v[pos]); err != nil {
				t.Fatal(err)
			}
			if got := decodeF32(kvOf(f)[i].v[pos]); !slices.Equal(got, want) {
				t.Fatalf("f16 → f32: layer %d position %d value row %v, want %v", i, pos, got, want)
			}
		}
	}
	h2 := newFakeState(fakeLayout, backend.KVFloat16, 8)
	if err := backend.ReadState(bytes.NewReader(snapshot(t, f)), h2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshot(t, h2), snapshot(t, h)) {
		t.Fatal("f16 → f32 → f16 changes the snapshot")
	}
}

func decodeF32(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

// snapOffsets returns where each attention layer's header starts in a snapshot of
// fakeLayout at precision p holding n tokens.
func snapOffsets(p backend.KVPrecision, n int) []int {
	var at []int
	off := 4
	for _, l := range fakeLayout {
		if l.heads > 0 {
			at = append(at, off)
			off += 5 + 2*n*p.RowBytes(l.heads, l.dim)
			continue
		}
		for _, m := range l.recurrent {
			off += 4 * m
		}
	}
	return at
}

func TestReadStateTruncated(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, p := range precisions {
		a := newFakeState(fakeLayout, p, 8)
		a.fill(rng, 2)
		snap := snapshot(t, a)
		b := newFakeState(fakeLayout, p, 8)
		for n := range len(snap) {
			b.fill(rng, 3)
			err := backend.ReadState(bytes.NewReader(snap[:n]), b)
			if !errors.Is(err, backend.ErrSnapshot) || !strings.Contains(err.Error(), "truncated") {
				t.Fatalf("%v: ReadState of the first %d of %d bytes: %v, want ErrSnapshot (truncated)", p, n, len(snap), err)
			}
			checkEmpty(t, "after a truncated snapshot", b)
		}
	}
}

func TestReadStateRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	type snap struct {
		p    backend.KVPrecision
		data []byte
	}
	valid := map[backend.KVPrecision][]byte{}
	for _, p := range precisions {
		a := newFakeState(fakeLayout, p, 8)
		a.fill(rng, 2)
		valid[p] = snapshot(t, a)
	}
	// mutate returns a copy of the 2-token snapshot at precision p, changed by f.
	mutate := func(p backend.KVPrecision, f func(b []byte, kv []int)) []byte {
		b := slices.Clone(valid[p])
		f(b, snapOffsets(p, 2))
		return b
	}
	i8, q4 := backend.KVInt8, backend.KVQ4
	const rowI8 = 96 // RowBytes(2, 40) of int8: 80 codes, 4 scales
	const rowQ4 = 72 // of q4: 64 code bytes, 4 halves
	for _, c := range []struct {
		name   string
		data   []byte
		into   backend.KVPrecision
		want   string
		alsoIs error
	}{
		{"an unknown precision", mutate(i8, func(b []byte, kv []int) { b[kv[0]] = 4 }), i8, "unknown KV precision 4", nil},
		{"precision 255 in the second layer", mutate(i8, func(b []byte, kv []int) { b[kv[1]] = 255 }), i8, "layer 3: unknown KV precision 255", nil},
		{"one more token than positions", mutate(i8, func(b []byte, kv []int) { b[0] = 3 }), i8, "layer 1 holds 2 positions, the state 3 tokens", nil},
		{"a layer of fewer positions", mutate(i8, func(b []byte, kv []int) { b[kv[1]+1] = 1 }), i8, "layer 3 holds 1 positions, the state 2 tokens", nil},
		{"int8 code −128", mutate(i8, func(b []byte, kv []int) { b[kv[0]+5+17] = 0x80 }), i8, "layer 1 position 0 key", backend.ErrKVRow},
		{"int8 code −128, converted", mutate(i8, func(b []byte, kv []int) { b[kv[0]+5+rowI8+3] = 0x80 }), backend.KVFloat32, "layer 1 position 0 value", backend.ErrKVRow},
		{"a negative int8 scale", mutate(i8, func(b []byte, kv []int) {
			binary.LittleEndian.PutUint32(b[kv[1]+5+2*rowI8+80+4:], math.Float32bits(-1))
		}), i8, "layer 3 position 1 key", backend.ErrKVRow},
		{"a NaN int8 scale, converted", mutate(i8, func(b []byte, kv []int) {
			binary.LittleEndian.PutUint32(b[kv[1]+5+3*rowI8+80+12:], 0x7fc00000)
		}), q4, "layer 3 position 1 value", backend.ErrKVRow},
		{"an Inf q4 scale", mutate(q4, func(b []byte, kv []int) {
			binary.LittleEndian.PutUint16(b[kv[0]+5+rowQ4+64+6:], 0x7c00)
		}), q4, "layer 1 position 0 value", backend.ErrKVRow},
		{"a NaN q4 scale, converted", mutate(q4, func(b []byte, kv []int) {
			binary.LittleEndian.PutUint16(b[kv[1]+5+64:], 0xfe00)
		}), backend.KVFloat16, "layer 3 position 0 key", backend.ErrKVRow},
	} {
		st := newFakeState(fakeLayout, c.into, 8)
		st.fill(rng, 1)
		err := backend.ReadState(bytes.NewReader(c.data), st)
		if !errors.Is(err, backend.ErrSnapshot) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrSnapshot saying %q", c.name, err, c.want)
		} else if c.alsoIs != nil && !errors.Is(err, c.alsoIs) {
			t.Errorf("%s: %v does not wrap %v", c.name, err, c.alsoIs)
		}
		checkEmpty(t, c.name, st)
	}
}

func TestReadStateContextFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	a := newFakeState(fakeLayout, backend.KVFloat16, 8)
	a.fill(rng, 5)
	b := newFakeState(fakeLayout, backend.KVFloat16, 3)
	b.fill(rng, 2)
	err := backend.ReadState(bytes.NewReader(snapshot(t, a)), b)
	if !errors.Is(err, backend.ErrContextFull) || !strings.Contains(err.Error(), "5 positions") {
		t.Fatalf("5 positions into a context of 3: %v, want ErrContextFull", err)
	}
	checkEmpty(t, "after a snapshot too long", b)

	// A state without attention layers learns the length from SetLen alone.
	layout := []layerSpec{{recurrent: []int{3}}}
	r := newFakeState(layout, backend.KVFloat16, 8)
	r.n = 5
	small := newFakeState(layout, backend.KVFloat16, 4)
	if err := backend.ReadState(bytes.NewReader(snapshot(t, r)), small); !errors.Is(err, backend.ErrContextFull) {
		t.Fatalf("5 tokens of recurrent state into a context of 4: %v, want ErrContextFull", err)
	}
	checkEmpty(t, "after SetLen refused", small)
}

// A snapshot that claims 2^32−1 positions fails without reading, or allocating, for
// them: at once against a bounded context, and at the end of the input against an
// unbounded one.
func TestReadStateClaimsAllocateNothing(t *testing.T) {
	claim := func() []byte {
		b := binary.LittleEndian.AppendUint32(nil, math.MaxUint32)
		b = append(b, make([]byte, 4*16)...) // layer 0
		b = append(b, byte(backend.KVFloat32))
		b = binary.LittleEndian.AppendUint32(b, math.MaxUint32)
		return append(b, make([]byte, 3*320)...) // a position and a half
	}()
	for _, c := range []struct {
		max int
		is  error
	}{{8, backend.ErrContextFull}, {1 << 40, backend.ErrSnapshot}} {
		st := newFakeState(fakeLayout, backend.KVFloat32, c.max)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := backend.ReadState(bytes.NewReader(claim), st)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, c.is) {
			t.Errorf("context %d: %v, want %v", c.max, err, c.is)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("context %d: ReadState allocated %d bytes for a claim of 2^32−1 positions", c.max, n)
		}
		checkEmpty(t, "after the claim", st)
	}
}

func TestCopyState(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, from := range precisions {
		for _, to := range precisions {
			src := newFakeState(fakeLayout, from, 8)
			src.fill(rng, 5)
			before := snapshot(t, src)
			dst := newFakeState(fakeLayout, to, 8)
			dst.fill(rng, 7)
			if err := backend.CopyState(dst, src); err != nil {
				t.Fatalf("%v → %v: %v", from, to, err)
			}
			checkConverted(t, "CopyState "+from.String()+" → "+to.String(), dst, src)
			if from == to && !bytes.Equal(snapshot(t, dst), before) {
				t.Fatalf("CopyState %v: the copy's snapshot differs", from)
			}
			if !bytes.Equal(snapshot(t, src), before) {
				t.Fatalf("CopyState %v → %v changed the source", from, to)
			}
		}
	}
}

func TestCopyStateRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	kv := layerSpec{heads: 2, dim: 40}
	rec := layerSpec{recurrent: []int{6, 10}}
	with := func(i int, l layerSpec) []layerSpec {
		layout := slices.Clone(fakeLayout)
		layout[i] = l
		return layout
	}
	for _, c := range []struct {
		name   string
		layout []layerSpec
		max    int
		is     error
	}{
		{"fewer layers", fakeLayout[:3], 8, nil},
		{"a recurrent layer for an attention one", with(1, rec), 8, nil},
		{"an attention layer for a recurrent one", with(2, kv), 8, nil},
		{"one recurrent array fewer", with(2, layerSpec{recurrent: []int{6}}), 8, nil},
		{"a longer recurrent array", with(2, layerSpec{recurrent: []int{6, 11}}), 8, nil},
		{"more heads", with(3, layerSpec{heads: 3, dim: 40}), 8, nil},
		{"a longer head", with(3, layerSpec{heads: 2, dim: 41}), 8, nil},
		{"a smaller context", fakeLayout, 4, backend.ErrContextFull},
	} {
		src := newFakeState(fakeLayout, backend.KVInt8, 8)
		src.fill(rng, 5)
		dst := newFakeState(c.layout, backend.KVInt8, c.max)
		dst.fill(rng, 2)
		before := snapshot(t, dst)
		err := backend.CopyState(dst, src)
		if err == nil {
			t.Errorf("%s: CopyState succeeded", c.name)
			continue
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want %v", c.name, err, c.is)
		}
		// Refused before touching it, or emptied: never half a copy.
		if dst.Len() != 0 && !bytes.Equal(snapshot(t, dst), before) {
			t.Errorf("%s: after the refusal the destination holds %d tokens of something else", c.name, dst.Len())
		}
	}

	// A source row no quantiser writes is refused when it must be converted.
	src := newFakeState(fakeLayout, backend.KVInt8, 8)
	src.fill(rng, 2)
	kvOf(src)[1].k[1][7] = 0x80
	dst := newFakeState(fakeLayout, backend.KVFloat32, 8)
	if err := backend.CopyState(dst, src); !errors.Is(err, backend.ErrKVRow) {
		t.Fatalf("CopyState of an int8 row with code −128 into f32: %v, want ErrKVRow", err)
	}
	checkEmpty(t, "after a bad source row", dst)
}

// Converting into a quantised cache refuses what it cannot hold rather than storing a
// row that the next ReadState refuses: NaN and infinities in int8 and q4, and in q4 a
// block whose largest magnitude m has m/8 beyond the largest half, 65504. The f16 cache
// takes them (an infinity for a value beyond its range), as it does at run time.
func TestConversionRefusesWhatTheTargetCannotHold(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	i8, q4, f16 := backend.KVInt8, backend.KVQ4, backend.KVFloat16
	for _, c := range []struct {
		value float32
		into  backend.KVPrecision
		want  string // "" for accepted
	}{
		{float32(math.NaN()), i8, "value 2 is NaN, which int8 cannot hold"},
		{float32(math.NaN()), q4, "value 2 is NaN, which q4 cannot hold"},
		{float32(math.Inf(1)), i8, "value 2 is +Inf"},
		{float32(math.Inf(-1)), q4, "value 2 is -Inf"},
		{1e6, q4, "values beyond the range of q4"},
		{-8 * 65520, q4, "values beyond the range of q4"}, // m/−8 = 65520 rounds to the half +Inf
		{8 * 65504, q4, ""}, // m/−8 = −65504, the largest half
		{3e38, i8, ""},
		{float32(math.NaN()), f16, ""},
		{1e6, f16, ""},
	} {
		src := newFakeState(fakeLayout, backend.KVFloat32, 4)
		src.fill(rng, 2)
		binary.LittleEndian.PutUint32(kvOf(src)[0].v[1][8:], math.Float32bits(c.value))
		what := fmt.Sprintf("%v from a row holding %v", c.into, c.value)

		st := newFakeState(fakeLayout, c.into, 4)
		err := backend.ReadState(bytes.NewReader(snapshot(t, src)), st)
		dst := newFakeState(fakeLayout, c.into, 4)
		cerr := backend.CopyState(dst, src)
		if c.want == "" {
			if err != nil || cerr != nil {
				t.Errorf("%s: ReadState %v, CopyState %v; want both accepted", what, err, cerr)
				continue
			}
			// What was stored loads again.
			if err := backend.ReadState(bytes.NewReader(snapshot(t, st)), newFakeState(fakeLayout, c.into, 4)); err != nil {
				t.Errorf("%s: the loaded state's snapshot is refused: %v", what, err)
			}
			continue
		}
		if !errors.Is(err, backend.ErrSnapshot) || !strings.Contains(err.Error(), "layer 1 position 1 value: "+c.want) {
			t.Errorf("%s: ReadState: %v, want ErrSnapshot saying %q", what, err, c.want)
		}
		checkEmpty(t, what, st)
		if cerr == nil || !strings.Contains(cerr.Error(), "layer 1 position 1 value: "+c.want) {
			t.Errorf("%s: CopyState: %v, want an error saying %q", what, cerr, c.want)
		}
		checkEmpty(t, what, dst)
	}
}

// fuzzMax is the fuzzed states' context: small, so that inputs stay small.
const fuzzMax = 4

func FuzzReadState(f *testing.F) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, p := range precisions {
		for _, n := range []int{0, 1, 3} {
			st := newFakeState(fakeLayout, p, fuzzMax)
			st.fill(rng, n)
			f.Add(snapshot(f, st), uint8(p))
			f.Add(snapshot(f, st), uint8(p+1)%4) // converted
		}
	}
	mixed := newFakeState(fakeLayout, backend.KVInt8, fuzzMax)
	kvOf(mixed)[1].prec = backend.KVQ4 // layers of different precisions
	mixed.fill(rng, 2)
	snap := snapshot(f, mixed)
	f.Add(snap, uint8(backend.KVFloat16))
	f.Add(snap[:len(snap)-1], uint8(backend.KVInt8))
	bad := slices.Clone(snap)
	bad[snapOffsets(backend.KVInt8, 2)[0]] = 7
	f.Add(bad, uint8(backend.KVInt8))

	f.Fuzz(func(t *testing.T, data []byte, target uint8) {
		p := backend.KVPrecision(target % 4)
		st := newFakeState(fakeLayout, p, fuzzMax)
		err := backend.ReadState(bytes.NewReader(data), st)
		if err != nil {
			if !errors.Is(err, backend.ErrSnapshot) && !errors.Is(err, backend.ErrContextFull) {
				t.Fatalf("ReadState: %v, want ErrSnapshot or ErrContextFull", err)
			}
			checkEmpty(t, "after a failed ReadState", st)
			return
		}
		// What it loaded is a state like any other: its snapshot loads again, and to
		// the same bytes.
		again := snapshot(t, st)
		st2 := newFakeState(fakeLayout, p, fuzzMax)
		if err := backend.ReadState(bytes.NewReader(again), st2); err != nil {
			t.Fatalf("ReadState of a loaded state's snapshot: %v", err)
		}
		if st2.Len() != st.Len() || !bytes.Equal(snapshot(t, st2), again) {
			t.Fatal("a loaded state's snapshot loads to a different state")
		}
	})
}
