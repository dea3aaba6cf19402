//go:build linux && (amd64 || arm64)

package mslemu

import (
	"encoding/binary"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/bonsai-go/sdk/internal/gpu"
)

func isNaN16(b uint16) bool { return b&0x7c00 == 0x7c00 && b&0x3ff != 0 }

func TestHalfConversionAllPatterns(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	const n = 1 << 16
	bits := bufBytes(t, d, 2*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(bits.Contents()[2*i:], uint16(i))
	}
	// float inputs: every half exactly, every midpoint between neighbouring halves
	// (ties), and random floats, including out-of-range ones
	fin := make([]float32, 4*n)
	rng := rand.New(rand.NewSource(5))
	for i := 0; i < n; i++ {
		h := float16.Frombits(uint16(i)).Float32()
		fin[i] = h
		if i&0x7fff < 0x7bff { // a finite, not the largest: the midpoint to the next half up in magnitude
			next := float16.Frombits(uint16(i + 1)).Float32()
			fin[n+i] = float32((float64(h) + float64(next)) / 2)
		} else {
			fin[n+i] = h
		}
		fin[2*n+i] = math.Float32frombits(rng.Uint32())
		fin[3*n+i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(40)-25)))
	}
	bf := bufBytes(t, d, 4*4*n)
	bfin := bufF32(t, d, fin)
	hout := bufBytes(t, d, 2*4*n)
	// the first n threads also convert bits; the kernel reads bits[gid] for all 4n
	// threads, so bind a 4n-entry bits buffer
	bits4 := bufBytes(t, d, 2*4*n)
	copy(bits4.Contents(), bits.Contents())
	require.NoError(t, run(t, d, ps["half_convert"], gpu.Size{4 * n / 256, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: bits4}, gpu.Arg{Index: 1, Buf: bf}, gpu.Arg{Index: 2, Buf: bfin}, gpu.Arg{Index: 3, Buf: hout}))
	f := f32s(bf)
	for i := 0; i < n; i++ {
		want := float16.Frombits(uint16(i)).Float32()
		if !sameBits(want, f[i]) {
			t.Fatalf("half %#04x -> float %v (%#08x), want %v (%#08x)", i, f[i], math.Float32bits(f[i]), want, math.Float32bits(want))
		}
	}
	h := u16s(hout)
	for i, x := range fin {
		want := float16.Fromfloat32(x).Bits()
		if isNaN16(want) && isNaN16(h[i]) {
			continue
		}
		if want != h[i] {
			t.Fatalf("float %v (%#08x) -> half %#04x, want %#04x", x, math.Float32bits(x), h[i], want)
		}
	}
}

func TestHalfArithmetic(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	const n = 1 << 16
	// every half pattern as a, against a shuffled permutation as b
	a, b := bufBytes(t, d, 2*n), bufBytes(t, d, 2*n)
	perm := rand.New(rand.NewSource(9)).Perm(n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(a.Contents()[2*i:], uint16(i))
		binary.LittleEndian.PutUint16(b.Contents()[2*i:], uint16(perm[i]))
	}
	out := bufBytes(t, d, 2*5*n)
	require.NoError(t, run(t, d, ps["half_arith"], gpu.Size{n / 256, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: a}, gpu.Arg{Index: 1, Buf: b}, gpu.Arg{Index: 2, Buf: out}))
	o := u16s(out)
	for i := 0; i < n; i++ {
		x, y := float16.Frombits(uint16(i)).Float32(), float16.Frombits(uint16(perm[i])).Float32()
		want := []uint16{
			float16.Fromfloat32(x + y).Bits(), float16.Fromfloat32(x * y).Bits(), float16.Fromfloat32(x / y).Bits(),
			float16.Fromfloat32(x - y).Bits(), float16.Fromfloat32(float32(math.Sqrt(float64(x)))).Bits(),
		}
		for j, w := range want {
			got := o[5*i+j]
			if isNaN16(w) && isNaN16(got) {
				continue
			}
			if w != got {
				t.Fatalf("op %d on halves %#04x, %#04x: got %#04x want %#04x", j, i, perm[i], got, w)
			}
		}
	}
}

func TestUnpackUnorm(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	const n = 4096
	in := bufBytes(t, d, 4*n)
	rng := rand.New(rand.NewSource(2))
	vals := make([]uint32, n)
	for i := range vals {
		vals[i] = rng.Uint32()
		if i < 256 {
			vals[i] = uint32(i) * 0x01010101
		}
		binary.LittleEndian.PutUint32(in.Contents()[4*i:], vals[i])
	}
	out, repack := bufBytes(t, d, 16*n), bufBytes(t, d, 4*n)
	require.NoError(t, run(t, d, ps["unpack"], gpu.Size{n / 64, 1, 1}, gpu.Size{64, 1, 1},
		gpu.Arg{Index: 0, Buf: in}, gpu.Arg{Index: 1, Buf: out}, gpu.Arg{Index: 2, Buf: repack}))
	f := f32s(out)
	for i, v := range vals {
		for c := 0; c < 4; c++ {
			want := float32(v>>(8*c)&0xff) / 255
			require.Equal(t, want, f[4*i+c], "value %#08x component %d", v, c)
		}
		require.Equal(t, v, u32s(repack)[i], "pack(unpack(%#08x))", v)
	}
}

func TestFloatLiteralsAreFloat(t *testing.T) {
	d := newDevice(t)
	ps := pipelines(t, d)
	const n = 8192
	x, y := make([]float32, n), make([]float32, n)
	rng := rand.New(rand.NewSource(4))
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 100)
		y[i] = float32(rng.NormFloat64() * 100)
	}
	out := bufBytes(t, d, 8*n)
	require.NoError(t, run(t, d, ps["literals"], gpu.Size{n / 256, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: bufF32(t, d, x)}, gpu.Arg{Index: 1, Buf: bufF32(t, d, y)}, gpu.Arg{Index: 2, Buf: out}))
	o := f32s(out)
	const p1, p2 = float32(0.1), float32(0.2)
	for i := range x {
		// rounded to float per operation, as in MSL (the conversions stop Go from fusing)
		want := float32(float32(x[i]*p1) + float32(y[i]*p2))
		require.Equal(t, want, o[2*i], "x*0.1 + y*0.2 for %v, %v", x[i], y[i])
		hx := float16.Fromfloat32(x[i]).Float32()
		require.Equal(t, float16.Fromfloat32(1.5*hx).Float32(), o[2*i+1])
	}
}

func TestVectorTypes(t *testing.T) {
	d := newDevice(t, WithOrder(Random))
	ps := pipelines(t, d)
	const n = 256
	a := make([]float32, 4*n)
	rng := rand.New(rand.NewSource(8))
	for i := range a {
		a[i] = float32(rng.NormFloat64() * 3)
	}
	out := bufBytes(t, d, 3*16*n)
	require.NoError(t, run(t, d, ps["vectors"], gpu.Size{n / 64, 1, 1}, gpu.Size{64, 1, 1},
		gpu.Arg{Index: 0, Buf: bufF32(t, d, a)}, gpu.Arg{Index: 1, Buf: out}))
	o := f32s(out)
	for i := 0; i < n; i++ {
		x, y, z, w := a[4*i], a[4*i+1], a[4*i+2], a[4*i+3]
		dot := float32(float32(x*x) + float32(y*y))
		dot = float32(dot + float32(z*z))
		dot = float32(dot + float32(w*w))
		sel := float32(1)
		if x > y {
			sel = 2
		}
		want := []float32{
			y, x, z * 2, z * 2,
			float32(float32(y*1) - float32(z*0)), float32(float32(z*0) - float32(x*1)), float32(float32(x*0) - float32(y*0)), dot,
			float16.Fromfloat32(w).Float32(), float32(int32(x)), sel, float32(math.Min(math.Max(float64(x), 0), 1)),
		}
		assert.Equal(t, want, o[12*i:12*i+12], "vector %d", i)
	}
}

// TestShimCoverage runs coverage.metal (most of the shim): the results must be finite
// and the same in every order, and the atomics must add up.
func TestShimCoverage(t *testing.T) {
	var first []float32
	for _, o := range []Order{Forward, Reverse, Random} {
		d := newDevice(t, WithOrder(o))
		ps := pipelines(t, d)
		out, au, ai, af := bufBytes(t, d, 4*64), bufBytes(t, d, 4), bufBytes(t, d, 4), bufBytes(t, d, 4)
		pk := bufF32(t, d, []float32{1, 2, 3, 4})
		require.NoError(t, run(t, d, ps["coverage"], gpu.Size{1, 2, 1}, gpu.Size{32, 1, 1},
			gpu.Arg{Index: 0, Buf: out}, gpu.Arg{Index: 1, Buf: au}, gpu.Arg{Index: 2, Buf: ai}, gpu.Arg{Index: 3, Buf: af}, gpu.Arg{Index: 4, Buf: pk}))
		got := append([]float32(nil), f32s(out)...)
		for i, v := range got {
			require.False(t, math.IsNaN(float64(v)) || math.IsInf(float64(v), 0), "thread %d: %v", i, v)
		}
		if first == nil {
			first = got
		} else {
			require.Equal(t, first, got, "order %s", o)
		}
		assert.Equal(t, uint32(0), u32s(au)[0])
		assert.Equal(t, int32(-31), int32(u32s(ai)[0]))
		assert.Equal(t, float32(32), f32s(af)[0])
	}
}
