//go:build amd64 && !purego

package ternary

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The AVX2 interleaved kernel is tested here against the generic twin's integers and
// against the AVX2 Q8 kernel's bits, on any AVX2 machine (on an AVX-512 one it would
// not otherwise run: the AVX-512 families are preferred).

// ilvNeedAVX2 skips t unless the CPU has what the AVX2 kernels need, and returns the
// AVX2 Q8 family.
func ilvNeedAVX2(t testing.TB) q8Kernel {
	if !hasAVX2() {
		t.Skip("CPU lacks AVX2, FMA or F16C: no AVX2 interleaved kernel")
	}
	for _, k := range q8Kernels {
		if k.id == q8AVX2 {
			return k
		}
	}
	t.Fatal("AVX2 CPU without the avx2 Q8 family")
	return q8Kernel{}
}

// ilvRandQ8 returns activations of width k with every int8 value possible, −128 (which
// Quantize never writes) included, often at the extremes; random block scales D; and
// garbage in the unused half of an odd last block pair, which no kernel may read.
func ilvRandQ8(r *rand.Rand, k int) *Q8 {
	x := NewQ8(k)
	for i := range x.Q {
		x.Q[i] = int8(r.Uint32())
	}
	for b := range k / BlockSize {
		var s int32
		for i := range BlockSize {
			q := &x.Q[q8Index(b*BlockSize+i)]
			switch r.IntN(8) {
			case 0:
				*q = -128
			case 1:
				*q = 127
			}
			s += int32(*q)
		}
		x.D[b] = float32(math.Exp(r.NormFloat64() * 3))
		x.Sum[b] = s
	}
	return x
}

// TestIlvAVX2MatchesQ8 checks MatVecInterleavedRange on the AVX2 family against
// MatVecQ8Range on the same family over the file's bytes, bit for bit: k/128 = 1 … 20
// (groups of 8 blocks and tails), rows on and off tiles, every code value, random
// scales (zeros, subnormals and 65504 included), activations down to −128.
func TestIlvAVX2MatchesQ8(t *testing.T) {
	kern := ilvNeedAVX2(t)
	forEachAVX2Impl(t, func(t *testing.T, _ ilvAVX2Impl) { testIlvAVX2MatchesQ8(t, kern) })
}

// forEachAVX2Impl runs f on every implementation of the AVX2 family's decode kernel
// this CPU runs (ilvAVX2Impls), each in turn the one the family uses.
func forEachAVX2Impl(t *testing.T, f func(t *testing.T, k ilvAVX2Impl)) {
	var names []string
	for _, k := range ilvAVX2Impls {
		names = append(names, k.name)
	}
	t.Logf("the AVX2 family's interleaved kernels on this machine: %s; in use: %s", strings.Join(names, " "), ilvAVX2Use.name)
	for _, k := range ilvAVX2Impls {
		t.Run(k.name, func(t *testing.T) { withAVX2Impl(k, func() { f(t, k) }) })
	}
}

// withAVX2Impl runs f with k as the AVX2 family's interleaved kernels, as withKernel
// does for the Q8 family.
func withAVX2Impl(k ilvAVX2Impl, f func()) {
	save := ilvAVX2Use
	defer func() { ilvAVX2Use = save }()
	ilvAVX2Use = k
	f()
}

// eachAVX2ImplOf runs f once for Q8 family id, or, for the AVX2 family, under each of
// its interleaved implementations in turn, with "/" and the implementation's name.
func eachAVX2ImplOf(id q8ID, f func(impl string)) {
	if id != q8AVX2 {
		f("")
		return
	}
	for _, k := range ilvAVX2Impls {
		withAVX2Impl(k, func() { f("/" + k.name) })
	}
}

// avx512VNNIMachine reports whether this machine runs the AVX-512 VNNI kernels (and so
// the AVX-VNNI kernels' EVEX twins).
func avx512VNNIMachine() bool { return hasAVX512VNNI() }

func testIlvAVX2MatchesQ8(t *testing.T, kern q8Kernel) {
	r := rand.New(rand.NewPCG(60, 61))
	withKernel(kern, func() {
		if ilvSel() != ilvAVX2 {
			t.Fatalf("Q8 family %s: interleaved family %d, want the AVX2 kernel", kern.name, ilvSel())
		}
		for nb := 1; nb <= 20; nb++ {
			k := nb * BlockSize
			for _, n := range []int{1, 63, 64, 65, 130, 200} {
				w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
				v := ilvFill(t, w, k, n)
				x := ilvRandQ8(r, k)
				want := make([]float32, n)
				MatVecQ8Range(PQ2_0, w, k, x, want, 0, n)
				for _, rg := range ilvRanges(n) {
					y := nanVec(n)
					MatVecInterleavedRange(v, x, y, rg[0], rg[1])
					for i := range y {
						in := i >= rg[0] && i < rg[1]
						if in && math.Float32bits(y[i]) != math.Float32bits(want[i]) || !in && !math.IsNaN(float64(y[i])) {
							t.Fatalf("%d×%d rows %v: y[%d] = %v, MatVecQ8Range (avx2) %v", n, k, rg, i, y[i], want[i])
						}
					}
				}
			}
		}
	})
}

// TestIlvAVX2Sums checks the AVX2 kernel's integers against the generic twin's: the
// one-block helper on every tile × block, and the tile kernel with unit scales and D = 1
// (every float exact, so its y is the sum of the twin's block integers).
func TestIlvAVX2Sums(t *testing.T) {
	ilvNeedAVX2(t)
	forEachAVX2Impl(t, testIlvAVX2Sums)
}

func testIlvAVX2Sums(t *testing.T, impl ilvAVX2Impl) {
	r := rand.New(rand.NewPCG(62, 63))
	unit := func() uint16 { return [...]uint16{0x3c00, 0x3c00, 0x3c00, 0, 0x8000}[r.IntN(5)] }
	for nb := 1; nb <= 20; nb++ {
		k := nb * BlockSize
		for _, n := range []int{64, 65, 200} {
			w := randPQ2(r, k, n, unit)
			v := ilvFill(t, w, k, n)
			x := ilvRandQ8(r, k)
			tiles := (n + IlvRows - 1) / IlvRows
			want := make([]float32, tiles*IlvRows)
			for tl := range tiles {
				tile := v.buf[tl*v.tileBytes():]
				for b := range nb {
					blk := (*[ilvBlockBytes]byte)(tile[b*ilvBlockBytes:])
					var got, sums [IlvRows]int32
					ilvBlockGeneric(&sums, blk, x, b)
					impl.block(&blk[0], &x.Q[256*(b/2)+32*(b%2)], &x.Sum[b], &got[0])
					if got != sums {
						t.Fatalf("%d×%d tile %d block %d: %s sums %v, generic %v", n, k, tl, b, impl.name, got, sums)
					}
					if b < nb/8*8 {
						for i, s := range sums {
							if binary.LittleEndian.Uint16(blk[2*i:])&0x7fff != 0 {
								want[tl*IlvRows+i] += float32(s) // exact: |Σ| < 2²⁴
							}
						}
					}
				}
			}
			if nb < 8 {
				continue
			}
			x.D = make([]float32, nb)
			for b := range x.D {
				x.D[b] = 1
			}
			var acc [8 * IlvRows]float32
			got := nanVec(tiles * IlvRows)
			impl.tiles(&v.buf[0], tiles, nb/8, v.tileBytes(), &x.Q[0], &x.D[0], &x.Sum[0], &acc[0], &got[0])
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%d×%d: %s tiles y[%d] = %v, generic twin's integers %v", n, k, impl.name, i, got[i], want[i])
				}
			}
		}
	}
}

// TestIlvAVX2CodeBytes runs every code byte value through the one-block helper, alone
// in a block and beside random bytes, with all activations −128, all 127 and random:
// the extremes of the int16 accumulation (a row of code 3 against −128 sums −49152).
func TestIlvAVX2CodeBytes(t *testing.T) {
	ilvNeedAVX2(t)
	forEachAVX2Impl(t, testIlvAVX2CodeBytes)
}

func testIlvAVX2CodeBytes(t *testing.T, impl ilvAVX2Impl) {
	r := rand.New(rand.NewPCG(64, 65))
	acts := map[string]func() int8{
		"-128":   func() int8 { return -128 },
		"127":    func() int8 { return 127 },
		"random": func() int8 { return int8(r.Uint32()) },
	}
	for name, act := range acts {
		x := NewQ8(2 * BlockSize)
		for i := range x.Q {
			x.Q[i] = act()
		}
		for c := range 256 {
			for _, mixed := range []bool{false, true} {
				var blk [ilvBlockBytes]byte
				for i := 128; i < ilvBlockBytes; i++ {
					blk[i] = byte(c)
					if mixed && r.IntN(2) == 0 {
						blk[i] = byte(r.Uint32())
					}
				}
				ilvCheckBlockAVX2(t, impl, fmt.Sprintf("acts %s, byte %#02x, mixed %v", name, c, mixed), &blk, x)
			}
		}
	}
}

func ilvCheckBlockAVX2(t *testing.T, impl ilvAVX2Impl, what string, blk *[ilvBlockBytes]byte, x *Q8) {
	t.Helper()
	for b := range 2 {
		var got, want [IlvRows]int32
		ilvBlockGeneric(&want, blk, x, b)
		impl.block(&blk[0], &x.Q[32*b], &x.Sum[b], &got[0])
		if got != want {
			t.Fatalf("%s, block %d: %s sums %v, generic %v", what, b, impl.name, got, want)
		}
	}
}

// FuzzIlvAVX2Block checks the one-block helpers (every implementation) against the generic twin on arbitrary
// code bytes (the input repeated over the block) and activations from a seed.
func FuzzIlvAVX2Block(f *testing.F) {
	f.Add([]byte{0xff}, uint64(1), uint8(0))
	f.Add([]byte{0x1b, 0xe4, 0x00, 0xc0}, uint64(2), uint8(1))
	f.Add([]byte{0x55, 0xaa, 0x03, 0x30, 0x0c}, uint64(3), uint8(2))
	f.Fuzz(func(t *testing.T, codes []byte, seed uint64, mode uint8) {
		ilvNeedAVX2(t)
		if len(codes) == 0 {
			return
		}
		r := rand.New(rand.NewPCG(seed, 66))
		var blk [ilvBlockBytes]byte
		for i := 128; i < ilvBlockBytes; i++ {
			blk[i] = codes[(i-128)%len(codes)]
		}
		x := NewQ8(2 * BlockSize)
		for i := range x.Q {
			switch mode % 3 {
			case 0:
				x.Q[i] = int8(r.Uint32())
			case 1:
				x.Q[i] = -128
			default:
				x.Q[i] = [...]int8{-128, 127}[r.IntN(2)]
			}
		}
		x.Sum[0], x.Sum[1] = int32(r.Uint32()>>8), -int32(r.Uint32()>>8)
		for _, impl := range ilvAVX2Impls {
			ilvCheckBlockAVX2(t, impl, fmt.Sprintf("codes %x seed %d mode %d", codes, seed, mode), &blk, x)
		}
	})
}
