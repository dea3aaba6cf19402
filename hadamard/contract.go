package hadamard

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Values of the contract this package implements.
const (
	TransformName    = "normalized-sylvester-walsh-hadamard"
	AxisInputLast    = "input-last-dimension"
	SignModeExplicit = "explicit"
	SupportedVersion = 1
)

// Metadata keys of the contract.
const (
	KeyVersion            = "prism.hadamard.version"
	KeyBlockSize          = "prism.hadamard.block_size"
	KeyTransform          = "prism.hadamard.transform"
	KeyAxis               = "prism.hadamard.axis"
	KeySignMode           = "prism.hadamard.sign_mode"
	KeySignWidths         = "prism.hadamard.sign_widths"
	KeySignValues         = "prism.hadamard.sign_values"
	KeyWeightNames        = "prism.hadamard.weight_names"
	KeyInverseWeightNames = "prism.hadamard.inverse_weight_names"
	KeyGDNVGrouped        = "prism.hadamard.gdn_v_grouped"
)

var (
	// ErrNoContract means the metadata has no prism.hadamard.version key:
	// the model is not rotated.
	ErrNoContract = errors.New("hadamard: no prism.hadamard contract")

	// ErrUnsupported means the contract is well formed but asks for
	// something this package does not implement, such as another version
	// or transform. Running such a model anyway would silently produce
	// wrong output.
	ErrUnsupported = errors.New("hadamard: unsupported contract")

	// ErrInvalid means the contract is malformed: a key is missing or of
	// the wrong type, or its value is inconsistent.
	ErrInvalid = errors.New("hadamard: invalid contract")
)

// maxWidth bounds a sign width: files store widths as 32-bit integers, and
// KeyValues writes them back as int32.
const maxWidth = math.MaxInt32

// Metadata is the view of a model file's key/value metadata that
// [ParseContract] needs. *gguf.File implements it.
type Metadata interface {
	// Has reports whether the file has key; the getters fail for a key it lacks or of
	// another type.
	Has(key string) bool
	Int(key string) (int64, error) // any integer type
	String(key string) (string, error)
	Bool(key string) (bool, error)
	Ints(key string) ([]int64, error)     // array of any integer type
	Floats(key string) ([]float64, error) // array of any integer or float type
	Strings(key string) ([]string, error)
}

// A ContractError reports a contract key that cannot be accepted. It
// unwraps to Kind, which is [ErrUnsupported] or [ErrInvalid], and to Err,
// the [Metadata] error behind it, if any.
type ContractError struct {
	Key    string // the metadata key, e.g. KeyTransform
	Reason string // what is wrong with its value
	Kind   error  // ErrUnsupported or ErrInvalid
	Err    error  // the underlying error, or nil
}

// Error returns "hadamard: KEY: REASON", and the underlying error after it.
func (e *ContractError) Error() string {
	s := "hadamard: " + e.Key + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Kind and, when set, Err, so that errors.Is finds either.
func (e *ContractError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func invalid(key, format string, args ...any) error {
	return &ContractError{Key: key, Reason: fmt.Sprintf(format, args...), Kind: ErrInvalid}
}

func unsupported(key, format string, args ...any) error {
	return &ContractError{Key: key, Reason: fmt.Sprintf(format, args...), Kind: ErrUnsupported}
}

// A Contract is the prism.hadamard metadata of a rotated model: which
// tensors were folded with which rotation. Stored folded weights are W·Rᵀ,
// so the matching activation must be rotated forward before the product;
// inverse tensors (the token embedding) store R·e per row and are rotated
// back after the lookup.
type Contract struct {
	Version   int    // KeyVersion: SupportedVersion
	BlockSize int    // KeyBlockSize: the rotation's block over the input width
	Transform string // KeyTransform: TransformName
	Axis      string // KeyAxis: AxisInputLast
	SignMode  string // KeySignMode: SignModeExplicit

	Widths []int    // sign_widths, in file order
	Signs  [][]int8 // Signs[i] has Widths[i] entries of ±1

	WeightNames        []string // folded tensors: forward rotation on the activation side
	InverseWeightNames []string // tensors whose rows are rotated back after lookup
	GDNVGrouped        bool     // ssm_out's input columns are in grouped V-head order
}

// ParseContract reads and validates the contract in md. It returns
// [ErrNoContract] if md has no [KeyVersion], and a
// [*ContractError] naming the offending key for a contract it cannot use.
// gdn_v_grouped may be absent (false); every other key is required, though
// the name lists may be empty.
//
// ParseContract trusts nothing in md: widths are checked against the
// number of sign values before anything is sized by them.
func ParseContract(md Metadata) (*Contract, error) {
	if !md.Has(KeyVersion) {
		return nil, ErrNoContract
	}
	// The version comes first: a later version may change the other keys,
	// and "unsupported version" is the useful message then.
	version, err := readInt(md, KeyVersion)
	if err != nil {
		return nil, err
	}
	if version != SupportedVersion {
		return nil, unsupported(KeyVersion, "unsupported version %d (want %d)", version, SupportedVersion)
	}

	c := &Contract{Version: SupportedVersion}
	block, err := readInt(md, KeyBlockSize)
	if err != nil {
		return nil, err
	}
	if block < 2 || block > maxWidth || !IsPowerOfTwo(int(block)) {
		return nil, invalid(KeyBlockSize, "block size %d is not a power of two ≥ 2", block)
	}
	c.BlockSize = int(block)

	for _, f := range []struct {
		key string
		dst *string
	}{
		{KeyTransform, &c.Transform},
		{KeyAxis, &c.Axis},
		{KeySignMode, &c.SignMode},
	} {
		if *f.dst, err = readString(md, f.key); err != nil {
			return nil, err
		}
	}

	if c.Widths, c.Signs, err = readSigns(md); err != nil {
		return nil, err
	}
	if c.WeightNames, err = readStrings(md, KeyWeightNames); err != nil {
		return nil, err
	}
	if c.InverseWeightNames, err = readStrings(md, KeyInverseWeightNames); err != nil {
		return nil, err
	}
	if md.Has(KeyGDNVGrouped) {
		if c.GDNVGrouped, err = md.Bool(KeyGDNVGrouped); err != nil {
			return nil, wrapRead(KeyGDNVGrouped, err)
		}
	}

	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// readSigns reads sign_widths and sign_values and splits the values into
// one vector per width. It rejects widths that are out of range or that do
// not add up to the number of values, so a hostile file cannot make it
// allocate more than the values it already holds.
func readSigns(md Metadata) ([]int, [][]int8, error) {
	if !md.Has(KeySignWidths) {
		return nil, nil, invalid(KeySignWidths, "missing")
	}
	raw, err := md.Ints(KeySignWidths)
	if err != nil {
		return nil, nil, wrapRead(KeySignWidths, err)
	}
	if !md.Has(KeySignValues) {
		return nil, nil, invalid(KeySignValues, "missing")
	}
	vals, err := md.Floats(KeySignValues)
	if err != nil {
		return nil, nil, wrapRead(KeySignValues, err)
	}

	widths := make([]int, len(raw))
	var total int64
	for i, w := range raw {
		if w <= 0 || w > maxWidth {
			return nil, nil, invalid(KeySignWidths, "width %d is %d, want 1 to %d", i, w, maxWidth)
		}
		// Each w is at most maxWidth, so total cannot overflow before
		// it passes len(vals).
		if total += w; total > int64(len(vals)) {
			return nil, nil, invalid(KeySignValues, "%d values, but %s needs more", len(vals), KeySignWidths)
		}
		widths[i] = int(w)
	}
	if total != int64(len(vals)) {
		return nil, nil, invalid(KeySignValues, "%d values, want %d (the sum of %s)", len(vals), total, KeySignWidths)
	}

	all := make([]int8, len(vals))
	for i, v := range vals {
		switch v {
		case 1:
			all[i] = 1
		case -1:
			all[i] = -1
		default:
			return nil, nil, invalid(KeySignValues, "value %d is %v, want ±1", i, v)
		}
	}
	signs := make([][]int8, len(widths))
	for i, w := range widths {
		signs[i], all = all[:w:w], all[w:]
	}
	return widths, signs, nil
}

func readInt(md Metadata, key string) (int64, error) {
	if !md.Has(key) {
		return 0, invalid(key, "missing")
	}
	v, err := md.Int(key)
	if err != nil {
		return 0, wrapRead(key, err)
	}
	return v, nil
}

func readString(md Metadata, key string) (string, error) {
	if !md.Has(key) {
		return "", invalid(key, "missing")
	}
	v, err := md.String(key)
	if err != nil {
		return "", wrapRead(key, err)
	}
	return v, nil
}

func readStrings(md Metadata, key string) ([]string, error) {
	if !md.Has(key) {
		return nil, invalid(key, "missing")
	}
	v, err := md.Strings(key)
	if err != nil {
		return nil, wrapRead(key, err)
	}
	return v, nil
}

func wrapRead(key string, err error) error {
	return &ContractError{Key: key, Reason: "cannot read", Kind: ErrInvalid, Err: err}
}

// Validate reports whether c is a contract this package implements, with a
// [*ContractError] naming the first offending key.
func (c *Contract) Validate() error {
	if c.Version != SupportedVersion {
		return unsupported(KeyVersion, "unsupported version %d (want %d)", c.Version, SupportedVersion)
	}
	if c.BlockSize < 2 || c.BlockSize > maxWidth || !IsPowerOfTwo(c.BlockSize) {
		return invalid(KeyBlockSize, "block size %d is not a power of two ≥ 2", c.BlockSize)
	}
	if c.Transform != TransformName {
		return unsupported(KeyTransform, "unsupported transform %q (want %q)", c.Transform, TransformName)
	}
	if c.Axis != AxisInputLast {
		return unsupported(KeyAxis, "unsupported axis %q (want %q)", c.Axis, AxisInputLast)
	}
	if c.SignMode != SignModeExplicit {
		return unsupported(KeySignMode, "unsupported sign mode %q (want %q)", c.SignMode, SignModeExplicit)
	}

	if len(c.Widths) == 0 {
		return invalid(KeySignWidths, "no widths")
	}
	seen := make(map[int]bool, len(c.Widths))
	for i, w := range c.Widths {
		switch {
		case w <= 0 || w > maxWidth:
			return invalid(KeySignWidths, "width %d is %d, want 1 to %d", i, w, maxWidth)
		case w%c.BlockSize != 0:
			return invalid(KeySignWidths, "width %d is %d, not a multiple of block size %d", i, w, c.BlockSize)
		case seen[w]:
			return invalid(KeySignWidths, "width %d appears twice", w)
		}
		seen[w] = true
	}

	if len(c.Signs) != len(c.Widths) {
		return invalid(KeySignValues, "%d sign vectors for %d widths", len(c.Signs), len(c.Widths))
	}
	off := 0 // index into the concatenated sign_values, for the messages
	for i, s := range c.Signs {
		if len(s) != c.Widths[i] {
			return invalid(KeySignValues, "%d signs for width %d", len(s), c.Widths[i])
		}
		for j, v := range s {
			if v != 1 && v != -1 {
				return invalid(KeySignValues, "value %d is %d, want ±1", off+j, v)
			}
		}
		off += len(s)
	}

	if err := checkNames(KeyWeightNames, c.WeightNames); err != nil {
		return err
	}
	if err := checkNames(KeyInverseWeightNames, c.InverseWeightNames); err != nil {
		return err
	}
	if len(c.InverseWeightNames) > 0 {
		folded := make(map[string]bool, len(c.WeightNames))
		for _, name := range c.WeightNames {
			folded[name] = true
		}
		for _, name := range c.InverseWeightNames {
			if folded[name] {
				return invalid(KeyInverseWeightNames, "%q is also in %s", name, KeyWeightNames)
			}
		}
	}
	return nil
}

func checkNames(key string, names []string) error {
	seen := make(map[string]bool, len(names))
	for i, name := range names {
		if name == "" {
			return invalid(key, "name %d is empty", i)
		}
		if seen[name] {
			return invalid(key, "%q appears twice", name)
		}
		seen[name] = true
	}
	return nil
}

// Rotation returns the rotation for inputs of the given width. It builds a
// new [Rotation] each time; callers keep the result.
func (c *Contract) Rotation(width int) (*Rotation, error) {
	for i, w := range c.Widths {
		if w == width {
			return NewRotation(c.Signs[i], c.BlockSize)
		}
	}
	return nil, fmt.Errorf("hadamard: contract has no sign vector for width %d (it has %v)", width, c.Widths)
}

// IsFolded reports whether the named tensor was folded with a rotation, so
// that its input must be rotated forward.
func (c *Contract) IsFolded(name string) bool { return slices.Contains(c.WeightNames, name) }

// IsInverse reports whether the named tensor stores rotated rows that must
// be rotated back after lookup.
func (c *Contract) IsInverse(name string) bool { return slices.Contains(c.InverseWeightNames, name) }

// A KeyValue is one metadata entry of a contract.
type KeyValue struct {
	Key   string // one of the Key constants
	Value any    // the value in the GGUF type it is written as: uint32, string, bool, []int32, []int8, []string
}

// KeyValues returns the metadata that records c in a model file, in a fixed
// order, as native Go values for a writer to convert: version and
// block_size uint32; transform, axis and sign_mode string; sign_widths
// []int32; sign_values []int8 (the vectors concatenated in width order);
// the name lists []string (never nil); gdn_v_grouped bool.
// c should be valid; see [Contract.Validate].
func (c *Contract) KeyValues() []KeyValue {
	widths := make([]int32, len(c.Widths))
	for i, w := range c.Widths {
		widths[i] = int32(w)
	}
	var signs []int8
	for _, s := range c.Signs {
		signs = append(signs, s...)
	}
	if signs == nil {
		signs = []int8{}
	}
	return []KeyValue{
		{KeyVersion, uint32(c.Version)},
		{KeyBlockSize, uint32(c.BlockSize)},
		{KeyTransform, c.Transform},
		{KeyAxis, c.Axis},
		{KeySignMode, c.SignMode},
		{KeySignWidths, widths},
		{KeySignValues, signs},
		{KeyWeightNames, append([]string{}, c.WeightNames...)},
		{KeyInverseWeightNames, append([]string{}, c.InverseWeightNames...)},
		{KeyGDNVGrouped, c.GDNVGrouped},
	}
}
