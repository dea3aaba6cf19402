//go:build linux && (amd64 || arm64)

package mslemu

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// alignKernels runs testdata/align.metal's kernels on d: a float4 (or float2) store into a
// threadgroup float array, a uint read at an odd device address, a float view of a float4
// array; it returns their errors and the placement kernel's output.
type alignRun struct {
	f4, f2, odd, view error
	viewOut           []float32
	f4Out             []float32
	place             []uint32
}

func runAlignKernels(t *testing.T, d gpu.Device) alignRun {
	t.Helper()
	ps := pipelines(t, d)
	in := make([]float32, 64)
	for i := range in {
		in[i] = float32(i) + 0.5
	}
	src := bufF32(t, d, in)
	var r alignRun
	dst := bufBytes(t, d, 256)
	r.f4 = run(t, d, ps["tg_float4_into_float"], gpu.Size{1, 1, 1}, gpu.Size{16, 1, 1}, gpu.Arg{Index: 0, Buf: src}, gpu.Arg{Index: 1, Buf: dst})
	r.f4Out = append([]float32(nil), f32s(dst)...)
	dst2 := bufBytes(t, d, 256)
	r.f2 = run(t, d, ps["tg_float2_into_float"], gpu.Size{1, 1, 1}, gpu.Size{16, 1, 1}, gpu.Arg{Index: 0, Buf: src}, gpu.Arg{Index: 1, Buf: dst2})
	dst3 := bufBytes(t, d, 64)
	r.odd = run(t, d, ps["device_uint_at_odd"], gpu.Size{1, 1, 1}, gpu.Size{8, 1, 1}, gpu.Arg{Index: 0, Buf: src}, gpu.Arg{Index: 1, Buf: dst3})
	dst4 := bufBytes(t, d, 64)
	r.view = run(t, d, ps["tg_float_view_of_float4"], gpu.Size{1, 1, 1}, gpu.Size{16, 1, 1}, gpu.Arg{Index: 0, Buf: src}, gpu.Arg{Index: 1, Buf: dst4})
	r.viewOut = append([]float32(nil), f32s(dst4)...)
	place := bufBytes(t, d, 32)
	require.NoError(t, run(t, d, ps["tg_placement"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: place}))
	r.place = append([]uint32(nil), u32s(place)[:5]...)
	return r
}

// placeAligns are the alignments of tg_placement's variables (uchar, half, float, float2,
// float4).
var placeAligns = []uint32{1, 2, 4, 8, 16}

// TestStrictAlignment: in the strict mode (the default) a store of a float4 or float2
// into a threadgroup float array and a uint load at an odd device address fail as
// ErrMisaligned, naming the MSL line, the type, the alignment and the variable or buffer;
// reading a float4 array as floats passes with the right numbers; and each threadgroup
// variable of alignment a < 16 lies at an address ≡ a (mod 2a).
func TestStrictAlignment(t *testing.T) {
	r := runAlignKernels(t, newDevice(t, WithStrictAlignment(true)))
	require.ErrorIs(t, r.f4, ErrMisaligned)
	// the first thread to run stores at xs + 16·tid (+ 8·tid for float2): any of them
	require.Regexp(t, `^mslemu: kernel tg_float4_into_float \(dispatch 0\), threadgroup \(0,0,0\), thread \(\d+,0,0\): `+
		`misaligned assignment to or method call on address 0x[0-9a-f]+ \(threadgroup variable xs \+ \d+ bytes\) `+
		`of type 'float4', which needs 16-byte alignment, at align\.metal:18:\d+$`, r.f4.Error())
	require.ErrorIs(t, r.f2, ErrMisaligned)
	contains(t, r.f2, "align.metal:29:", "threadgroup variable xs + ", "'float2'", "8-byte alignment")
	require.ErrorIs(t, r.odd, ErrMisaligned)
	contains(t, r.odd, "align.metal:38:", "load from", "(buffer(0) + ", "of type 'const uint'", "4-byte alignment")
	require.NoError(t, r.view)
	for i := 0; i < 16; i++ {
		// Σ_j (4i+j+0.5)·(j+1), j = 0..3
		want := float32(0)
		for j := 0; j < 4; j++ {
			want += (float32(4*i+j) + 0.5) * float32(j+1)
		}
		require.Equal(t, want, r.viewOut[i], "tg_float_view_of_float4[%d]", i)
	}
	for k, a := range placeAligns {
		if a < 16 {
			require.Equal(t, a, r.place[k]%(2*a), "variable of alignment %d at %d mod 32: want ≡ %d mod %d", a, r.place[k], a, 2*a)
		} else {
			require.Zero(t, r.place[k]%a, "variable of alignment %d at %d mod 32", a, r.place[k])
		}
	}
}

// TestAlignmentNotStrict: with the strict mode off, threadgroup variables lie at their
// natural alignment and nothing is checked: the float4 store into a float array, the
// first and only variable of its kernel and so 16-aligned by luck, runs and gives the
// right numbers. That is the hole the strict mode closes (a GPU that places the array 4
// bytes further breaks), kept here so the difference between the modes stays tested.
func TestAlignmentNotStrict(t *testing.T) {
	r := runAlignKernels(t, newDevice(t, WithStrictAlignment(false)))
	require.NoError(t, r.f4)
	for i := 0; i < 64; i++ {
		require.Equal(t, float32(i)+0.5, r.f4Out[i])
	}
	require.NoError(t, r.view)
	for k, a := range placeAligns {
		require.Zero(t, r.place[k]%a, "variable of alignment %d at %d mod 32", a, r.place[k])
	}
}

// TestStrictAlignmentDefault: the strict mode is on unless MSLEMU_STRICT_ALIGN turns it
// off (the engine's kernel and session tests rely on the default), and the device's name
// says when it is off.
func TestStrictAlignmentDefault(t *testing.T) {
	for _, c := range []struct {
		env    string
		strict bool
	}{{"", true}, {"1", true}, {"0", false}, {"false", false}} {
		t.Setenv("MSLEMU_STRICT_ALIGN", c.env)
		o, err := defaultOptions()
		require.NoError(t, err)
		require.Equal(t, c.strict, o.strict, "MSLEMU_STRICT_ALIGN=%q", c.env)
		d := newDevice(t)
		require.Equal(t, !c.strict, strings.Contains(d.Name(), "alignment unchecked"), d.Name())
	}
	t.Setenv("MSLEMU_STRICT_ALIGN", "sometimes")
	_, err := defaultOptions()
	require.ErrorContains(t, err, "MSLEMU_STRICT_ALIGN")
}
