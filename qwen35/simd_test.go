package qwen35

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/bonsai-go/sdk/internal/selfexec"
)

// QWEN35_KERNELS=name runs the package's tests on that kernel set instead of the one
// chosen for this machine; TestKernelSetsPackage uses it to run the mixer tests on every
// set.
func init() {
	name := os.Getenv("QWEN35_KERNELS")
	if name == "" {
		return
	}
	for _, k := range kernelSets {
		if k.name == name {
			kern = k
			return
		}
	}
	panic("QWEN35_KERNELS=" + name + ": no such kernel set on this machine")
}

// The lengths every kernel is tried at: empty, each tail length around the vector widths
// (4, 8, 16 and the 32- and 64-value unrolled loops), head dims and the model's widths.
var simdLengths = []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65,
	96, 127, 128, 129, 255, 256, 257, 1000, 5120, 5123, 6144, 17408}

// forEachSet runs f on every kernel set this machine runs, the generic one included.
func forEachSet(t *testing.T, f func(t *testing.T, k *kernels)) {
	t.Logf("kernel sets: %v; in use: %s", setNames(), kern.name)
	for _, k := range kernelSets {
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

func setNames() []string {
	var names []string
	for _, k := range kernelSets {
		names = append(names, k.name)
	}
	return names
}

// unitRoundoff is float32's u = 2⁻²⁴; gammaK is γₖ = k·u/(1−k·u), the relative error
// bound of k chained roundings.
const unitRoundoff = 0x1p-24

func gammaK(k int) float64 { return float64(k) * unitRoundoff / (1 - float64(k)*unitRoundoff) }

// accDepth bounds the number of additions any term of an n-term sum goes through, for
// every implementation: at least four lanes of partial sums (the generic code and NEON's
// narrowest loop) plus the tails and the final reduction.
func accDepth(n int) int { return n/4 + 12 }

// guard surrounds n float32s with sentinel margins, so that a test can check a kernel
// wrote nothing outside its slice.
type guard struct {
	buf  []float32
	n    int
	tail int
}

const guardMargin = 37

func newGuard(n int, fill func(i int) float32) *guard {
	g := &guard{buf: make([]float32, n+2*guardMargin), n: n}
	for i := range g.buf {
		g.buf[i] = -12345.5
	}
	s := g.s()
	for i := range s {
		s[i] = fill(i)
	}
	return g
}

func (g *guard) s() []float32 { return g.buf[guardMargin : guardMargin+g.n : guardMargin+g.n] }

func (g *guard) check(t *testing.T) {
	t.Helper()
	for i, x := range g.buf {
		if (i < guardMargin || i >= guardMargin+g.n) && x != -12345.5 {
			t.Fatalf("wrote outside the slice: buf[%d] = %v (slice [%d:%d])", i, x, guardMargin, guardMargin+g.n)
		}
	}
}

// smallInt returns integers in [−m, m] as float32: products and sums of a few thousand
// of them are exact, so every summation order must give the same bits.
func smallInt(rng *rand.Rand, m int) func(int) float32 {
	return func(int) float32 { return float32(rng.IntN(2*m+1) - m) }
}

func normal(rng *rand.Rand, scale float64) func(int) float32 {
	return func(int) float32 { return float32(rng.NormFloat64() * scale) }
}

// awkward returns values over many binades, with signed zeros, subnormals and
// infinities: elementwise kernels must round them exactly as the generic code does.
func awkward(rng *rand.Rand) func(int) float32 {
	return func(int) float32 {
		switch rng.IntN(20) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return math.Float32frombits(rng.Uint32N(1<<23) | uint32(rng.IntN(2))<<31)
		case 3:
			return float32(math.Inf(1 - 2*rng.IntN(2)))
		case 4:
			return float32(rng.NormFloat64() * 1e37)
		default:
			return float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(60)-30)))
		}
	}
}

func sameBits(t *testing.T, want, got []float32, format string, args ...any) {
	t.Helper()
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			t.Fatalf("%s: [%d] = %v (%#08x), generic %v (%#08x)", fmt.Sprintf(format, args...), i,
				got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func TestKernelsDot(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(1, 1))
		worst := 0.0
		for _, n := range simdLengths {
			// Small integers: exact whatever the order.
			a, b := newGuard(n, smallInt(rng, 8)), newGuard(n, smallInt(rng, 8))
			var exact float64
			for i := range n {
				exact += float64(a.s()[i]) * float64(b.s()[i])
			}
			require.Equal(t, float32(exact), k.dot(a.s(), b.s()), "n=%d integers", n)
			require.Equal(t, k.dot(a.s(), b.s()), dotGeneric(a.s(), b.s()), "n=%d integers", n)
			// Normal values: within γ·Σ|aᵢbᵢ| of the exact sum.
			a, b = newGuard(n, normal(rng, 1)), newGuard(n, normal(rng, 3))
			var want, mag float64
			for i := range n {
				p := float64(a.s()[i]) * float64(b.s()[i])
				want += p
				mag += math.Abs(p)
			}
			got := float64(k.dot(a.s(), b.s()))
			bound := gammaK(accDepth(n)) * mag
			require.LessOrEqual(t, math.Abs(got-want), bound, "n=%d", n)
			if mag > 0 {
				worst = math.Max(worst, math.Abs(got-want)/mag)
			}
			a.check(t)
			b.check(t)
		}
		t.Logf("max |dot − exact| / Σ|aᵢbᵢ| = %.2g", worst)
	})
}

func TestKernelsDotRows(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(11, 1))
		for _, d := range []int{0, 1, 5, 8, 13, 16, 31, 64, 128, 129, 256} {
			for _, na := range []int{1, 2, 3, 5, 6} {
				for _, nb := range []int{1, 3, 4, 5, 8, 11, 64} {
					for _, integers := range []bool{true, false} {
						fill := normal(rng, 1)
						if integers {
							fill = smallInt(rng, 8)
						}
						as, bs, os := d+3, d+5, nb+2
						a := newGuard((na-1)*as+d, fill)
						b := newGuard((nb-1)*bs+d, fill)
						out := newGuard((na-1)*os+nb, func(int) float32 { return -1 })
						k.dotRows(out.s(), os, a.s(), as, na, b.s(), bs, nb, d)
						for i := range na {
							for j := range nb {
								var want, mag float64
								for l := range d {
									p := float64(a.s()[i*as+l]) * float64(b.s()[j*bs+l])
									want += p
									mag += math.Abs(p)
								}
								got := out.s()[i*os+j]
								if integers {
									require.Equal(t, float32(want), got, "d=%d na=%d nb=%d (%d,%d)", d, na, nb, i, j)
								} else {
									require.InDelta(t, want, got, gammaK(accDepth(d))*mag, "d=%d na=%d nb=%d (%d,%d)", d, na, nb, i, j)
								}
							}
							// The gaps between output rows are untouched.
							for j := nb; j < os && i < na-1; j++ {
								require.Equal(t, float32(-1), out.s()[i*os+j])
							}
						}
						out.check(t)
					}
				}
			}
		}
	})
}

func TestKernelsDotBF16(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(3, 1))
		for _, n := range simdLengths {
			for _, integers := range []bool{true, false} {
				fill := normal(rng, 0.05)
				if integers {
					fill = smallInt(rng, 8)
				}
				x := newGuard(n, normal(rng, 1))
				if integers {
					x = newGuard(n, smallInt(rng, 8))
				}
				// Whole bf16 values (the low 16 bits of the float32 dropped), stored in a
				// longer buffer so that reads past the row would see different data.
				row := make([]byte, 2*n+8)
				held := make([]float64, n)
				for i := range n {
					bits := math.Float32bits(fill(i)) >> 16
					row[2*i], row[2*i+1] = byte(bits), byte(bits>>8)
					held[i] = float64(math.Float32frombits(bits << 16))
				}
				for i := 2 * n; i < len(row); i++ {
					row[i] = 0x7f // bf16 0x7f7f ≈ 3.4e38
				}
				var want, mag float64
				for i := range n {
					p := held[i] * float64(x.s()[i])
					want += p
					mag += math.Abs(p)
				}
				got := k.dotBF16(row[:2*n], x.s())
				if integers {
					require.Equal(t, float32(want), got, "n=%d integers", n)
				} else {
					require.LessOrEqual(t, math.Abs(float64(got)-want), gammaK(accDepth(n))*mag, "n=%d", n)
				}
				x.check(t)
			}
		}
	})
}

func TestKernelsSumSquares(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(4, 1))
		for _, n := range simdLengths {
			x := newGuard(n, smallInt(rng, 100))
			require.Equal(t, sumSquaresGeneric(x.s()), k.sumSquares(x.s()), "n=%d integers", n)
			x = newGuard(n, normal(rng, 30))
			want := sumSquaresGeneric(x.s())
			// Nonnegative terms, each square exact in float64: the relative error of any
			// order is below (n+4)·2⁻⁵³.
			require.InDelta(t, want, k.sumSquares(x.s()), 2*float64(n+4)*0x1p-53*want, "n=%d", n)
			x.check(t)
		}
	})
}

// TestKernelsElementwise checks scal and scaleMul against the generic code bit for
// bit, on values that include signed zeros, subnormals and infinities.
func TestKernelsElementwise(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(5, 1))
		for _, n := range simdLengths {
			for trial := range 3 {
				x := newGuard(n, awkward(rng))
				y0 := newGuard(n, awkward(rng))
				alpha := []float32{1.5, -0.3, 7e-20}[trial]

				want, got := append([]float32(nil), y0.s()...), newGuard(n, func(i int) float32 { return y0.s()[i] })
				scalGeneric(want, alpha)
				k.scal(got.s(), alpha)
				sameBits(t, want, got.s(), "scal n=%d", n)
				got.check(t)

				for _, gain := range [][]float32{nil, newGuard(n, awkward(rng)).s()} {
					want := make([]float32, n)
					scaleMulGeneric(want, x.s(), alpha, gain)
					dst := newGuard(n, func(int) float32 { return 0 })
					k.scaleMul(dst.s(), x.s(), alpha, gain)
					sameBits(t, want, dst.s(), "scaleMul n=%d gain=%v", n, gain != nil)
					dst.check(t)
					// In place.
					in := newGuard(n, func(i int) float32 { return x.s()[i] })
					k.scaleMul(in.s(), in.s(), alpha, gain)
					sameBits(t, want, in.s(), "scaleMul in place n=%d", n)
					in.check(t)
				}
				x.check(t)
			}
		}
	})
}

// TestKernelsScaleAddRows: y ← scale·y + Σ c[s]·x[s·stride:], with strides that make the
// rows overlap, touch, or leave gaps.
func TestKernelsScaleAddRows(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(6, 1))
		for _, n := range simdLengths {
			if n == 0 || n > 1000 { // the wrapper returns before the kernel for n = 0
				continue
			}
			for _, rows := range []int{0, 1, 3, 17, 64} {
				for _, strideExtra := range []int{0, 16, -n / 2} {
					stride := n + strideExtra
					for _, integers := range []bool{true, false} {
						fill := normal(rng, 1)
						if integers {
							fill = smallInt(rng, 8)
						}
						xl := 0
						if rows > 0 {
							xl = (rows-1)*stride + n
						}
						x := newGuard(xl, fill)
						c := newGuard(rows, fill)
						y := newGuard(n, fill)
						scale := float32(0.5)
						want, mag := make([]float64, n), make([]float64, n)
						for i := range n {
							want[i] = float64(scale) * float64(y.s()[i])
							mag[i] = math.Abs(want[i])
							for s := range rows {
								p := float64(c.s()[s]) * float64(x.s()[s*stride+i])
								want[i] += p
								mag[i] += math.Abs(p)
							}
						}
						k.scaleAddRows(y.s(), scale, c.s(), x.s(), stride)
						for i := range n {
							if integers {
								require.Equal(t, float32(want[i]), y.s()[i], "n=%d rows=%d stride=%d [%d]", n, rows, stride, i)
							} else {
								require.InDelta(t, want[i], y.s()[i], gammaK(rows+2)*mag[i], "n=%d rows=%d stride=%d [%d]", n, rows, stride, i)
							}
						}
						y.check(t)
						x.check(t)
					}
				}
			}
		}
	})
}

// gdnStep64 is the GDN step rows in float64 from the same float32 state, with a bound
// on the float32 error of each output and new state entry.
func gdnStep64(S, k, q, v []float32, decay, beta float32) (o, newS, oTol, sTol []float64) {
	d, rows := len(k), len(v)
	o, newS = make([]float64, rows), make([]float64, rows*d)
	oTol, sTol = make([]float64, rows), make([]float64, rows*d)
	g := gammaK(accDepth(d) + 4)
	for j := range rows {
		row := S[j*d : (j+1)*d]
		var s, smag float64
		for i := range d {
			p := float64(row[i]) * float64(k[i])
			s += p
			smag += math.Abs(p)
		}
		dc, bt := float64(decay), float64(beta)
		dl := (float64(v[j]) - dc*s) * bt
		dlErr := g * (math.Abs(float64(v[j])) + dc*smag) * math.Abs(bt)
		var out, omag, oerr float64
		for i := range d {
			r := dc*float64(row[i]) + dl*float64(k[i])
			rerr := g*(dc*math.Abs(float64(row[i]))+math.Abs(dl*float64(k[i]))) + dlErr*math.Abs(float64(k[i]))
			newS[j*d+i], sTol[j*d+i] = r, rerr
			out += r * float64(q[i])
			omag += math.Abs(r * float64(q[i]))
			oerr += rerr * math.Abs(float64(q[i]))
		}
		o[j], oTol[j] = out, g*omag+oerr
	}
	return o, newS, oTol, sTol
}

func TestKernelsGDNStep(t *testing.T) {
	forEachSet(t, func(t *testing.T, kset *kernels) {
		rng := rand.New(rand.NewPCG(7, 1))
		for _, d := range []int{1, 3, 4, 7, 8, 9, 16, 17, 31, 32, 33, 64, 100, 128, 129, 256} {
			for _, rows := range []int{0, 1, 5, d} {
				// Exact: entries in {−1, 0, 1} and small integers, decay and beta powers of
				// two, so that every partial result is exact.
				S := newGuard(rows*d, smallInt(rng, 4))
				k, q := newGuard(d, smallInt(rng, 1)), newGuard(d, smallInt(rng, 1))
				v := newGuard(rows, smallInt(rng, 4))
				o := newGuard(rows, func(int) float32 { return 0 })
				wantS := append([]float32(nil), S.s()...)
				wantO := make([]float32, rows)
				gdnStepGeneric(wantS, k.s(), q.s(), v.s(), wantO, 0.5, 0.25)
				kset.gdnStep(S.s(), k.s(), q.s(), v.s(), o.s(), 0.5, 0.25)
				sameBits(t, wantS, S.s(), "d=%d rows=%d state (exact)", d, rows)
				sameBits(t, wantO, o.s(), "d=%d rows=%d out (exact)", d, rows)
				for _, g := range []*guard{S, k, q, v, o} {
					g.check(t)
				}

				// Rounding: within the propagated bound of the float64 step.
				S = newGuard(rows*d, normal(rng, 0.3))
				k, q = newGuard(d, normal(rng, 0.1)), newGuard(d, normal(rng, 0.1))
				v = newGuard(rows, normal(rng, 1))
				o = newGuard(rows, func(int) float32 { return 0 })
				decay, beta := float32(0.93), float32(0.7)
				o64, s64, oTol, sTol := gdnStep64(S.s(), k.s(), q.s(), v.s(), decay, beta)
				kset.gdnStep(S.s(), k.s(), q.s(), v.s(), o.s(), decay, beta)
				for j := range rows {
					require.InDelta(t, o64[j], o.s()[j], oTol[j], "d=%d rows=%d o[%d]", d, rows, j)
				}
				for i := range s64 {
					require.InDelta(t, s64[i], S.s()[i], sTol[i], "d=%d rows=%d S[%d]", d, rows, i)
				}
				o.check(t)
				S.check(t)
			}
		}
	})
}

// TestKernelsF16 widens every half and compares with the generic code bit for bit; a
// signalling NaN may come back quiet (the hardware conversions set the quiet bit).
func TestKernelsF16(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		src := make([]uint16, 1<<16)
		for i := range src {
			src[i] = uint16(i)
		}
		want := make([]float32, len(src))
		f16ToF32Generic(want, src)
		got := newGuard(len(src), func(int) float32 { return 0 })
		k.f16ToF32(got.s(), src)
		got.check(t)
		for i := range want {
			w, g := math.Float32bits(want[i]), math.Float32bits(got.s()[i])
			if w != g && !(math.IsNaN(float64(want[i])) && g == w|1<<22) {
				t.Fatalf("half %#04x: %#08x, generic %#08x", i, g, w)
			}
		}
		// Every length, at every offset in the table.
		for _, n := range simdLengths {
			off := (n * 7919) % (len(src) - n)
			dst := newGuard(n, func(int) float32 { return 0 })
			k.f16ToF32(dst.s(), src[off:off+n])
			for i := range n {
				w, g := math.Float32bits(want[off+i]), math.Float32bits(dst.s()[i])
				if w != g && !(math.IsNaN(float64(want[off+i])) && g == w|1<<22) {
					t.Fatalf("n=%d [%d]: %#08x, generic %#08x", n, i, g, w)
				}
			}
			dst.check(t)
		}
	})
}

// TestKernelsDequantInt8 widens int8 blocks and compares with the generic code bit for
// bit, over every tail of the last block and awkward scales.
func TestKernelsDequantInt8(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(12, 1))
		for _, n := range simdLengths {
			src := make([]int8, n+5)
			for i := range src {
				src[i] = int8(rng.IntN(256) - 128)
			}
			scales := newGuard((n+kvBlock-1)/kvBlock, awkward(rng)).s()
			want := make([]float32, n)
			dequantInt8Generic(want, src[:n], scales)
			got := newGuard(n, func(int) float32 { return 0 })
			k.dequantInt8(got.s(), src[:n], scales)
			sameBits(t, want, got.s(), "n=%d", n)
			got.check(t)
		}
	})
}

// ulps returns the distance between a and b in units in the last place of float32
// (adjacent floats are 1 apart; +0 and −0 are 0 apart).
func ulps(a, b float32) float64 {
	ord := func(x float32) int64 {
		i := int64(math.Float32bits(x))
		if i&(1<<31) != 0 {
			i = -(i &^ (1 << 31))
		}
		return i
	}
	return math.Abs(float64(ord(a) - ord(b)))
}

// siluULPBound is the largest error of the SIMD SiLU, in float32 ulps of the exact
// silu(g), for g ≥ ln 2⁻¹²⁶ ≈ −87.34: exp is Cephes' expf (about 1 ulp after the range
// reduction), and 1+e, the division, e·(1/(1+e)) and g·σ add half an ulp each, most of
// which the division by 1+e ≥ 1 damps. TestKernelsSiLUExhaustive measured it over every
// float32 of the range.
const siluULPBound = 4

// silu64 is the exact SiLU (to float64 rounding).
func silu64(g float64) float64 { return g / (1 + math.Exp(-g)) }

// fma32 is a float32 fused multiply-add, a·b + c rounded once: a·b is exact in float64
// and the sum's rounding error is recovered exactly (TwoSum), so the only case where
// rounding the float64 sum to float32 goes wrong — the sum landing exactly on a float32
// midpoint while the exact value is not — is settled by the error's sign.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb)
	r := float32(s)
	if e == 0 || float64(r) == s || math.IsInf(s, 0) {
		return r
	}
	other := math.Nextafter32(r, float32(math.Inf(1)))
	if float64(r) > s {
		other = math.Nextafter32(r, float32(math.Inf(-1)))
	}
	if s != (float64(r)+float64(other))/2 {
		return r
	}
	if (e > 0) == (other > r) {
		return other
	}
	return r
}

// siluModel is the SIMD SiLU of simd_amd64.s (SILU8CORE) and simd_arm64.s (SILU4)
// written out in Go, one rounding per operation as the instructions do; NaN aside, both
// must match it bit for bit, so that the two architectures agree exactly.
func siluModel(g float32) float32 { return float32(g * sigmoidModel(g)) }

// sigmoidModel is the SIMD σ of SIGMOID8CORE and SIGMOID4, the SiLU's, in Go.
func sigmoidModel(g float32) float32 {
	f := math.Float32frombits
	a := f(math.Float32bits(g) | 1<<31) // −|g|
	a = max(a, f(0xc2aeac50))           // ln 2⁻¹²⁶
	n := float32(math.RoundToEven(float64(float32(a * f(0x3fb8aa3b)))))
	r := fma32(n, f(0xbf318000), a)
	r = fma32(n, f(0x395e8083), r)
	p := f(0x39506967)
	for _, c := range []uint32{0x3ab743ce, 0x3c088908, 0x3d2aa9c1, 0x3e2aaaaa, 0x3f000000} {
		p = fma32(p, r, f(c))
	}
	p = fma32(p, float32(r*r), r)
	p = float32(p + 1)
	e := float32(p * f(uint32(int32(n)+127)<<23))
	rcp := float32(1 / float32(1+e))
	if math.Signbit(float64(g)) {
		return float32(e * rcp)
	}
	return rcp
}

// activationArgs returns the arguments the SiLU and σ tests take: every 1009th float32
// of [−90, 90] (a million values, about 8000 per binade), hand-picked points, −0 and +Inf.
func activationArgs() []float32 {
	var gs []float32
	for b := math.Float32bits(0); b < math.Float32bits(90); b += 1009 {
		x := math.Float32frombits(b)
		gs = append(gs, x, -x)
	}
	for _, x := range []float32{0, 1, -1, 0.5, -0.5, 20, -20, 87.33, -87.33, -87.34, -87.35, -88, -89,
		-100, -1000, 100, 1e4, 3e38, -3e38, 1e-45, -1e-45, 1e-38, -1e-38} {
		gs = append(gs, x)
	}
	return append(gs, float32(math.Copysign(0, -1)), float32(math.Inf(1)))
}

// requireModel fails unless got[i] is model(gs[i]) bit for bit for every i.
func requireModel(t *testing.T, gs, got []float32, model func(float32) float32) {
	t.Helper()
	for i, g := range gs {
		if want := model(g); math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("g=%v: %v (%#08x), model %v (%#08x)", g, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
	}
}

// requireAliasing checks that f(dst, g, u), an element-wise kernel, gives want when dst
// is g and when it is u, and that no call wrote outside its slices.
func requireAliasing(t *testing.T, g, u *guard, want []float32, f func(dst, g, u []float32)) {
	t.Helper()
	gi := newGuard(g.n, func(i int) float32 { return g.s()[i] })
	f(gi.s(), gi.s(), u.s())
	assert.Equal(t, want, gi.s(), "dst aliases g")
	ui := newGuard(u.n, func(i int) float32 { return u.s()[i] })
	f(ui.s(), g.s(), ui.s())
	assert.Equal(t, want, ui.s(), "dst aliases u")
	gi.check(t)
	ui.check(t)
	g.check(t)
	u.check(t)
}

// gateULPBound is the largest error of gateMul's σ, in float32 ulps of the exact σ(g),
// over TestKernelsGateMul's arguments above the exponential's clamp, on every set.
const gateULPBound = 2

// TestKernelsGateMul checks the attention output gate (u·s)·σ(g) of every set: σ
// against float64 over a million arguments (u = 1, s = 1, so that the result is σ
// itself), the SIMD sets bit for bit against the Go model of their operations (so that
// AVX2, AVX-512 and NEON agree exactly), and then the products with u and s at every
// length, in place, against the generic code.
func TestKernelsGateMul(t *testing.T) {
	gs := append(activationArgs(), float32(math.Inf(-1)))
	ones := make([]float32, len(gs))
	for i := range ones {
		ones[i] = 1
	}
	forEachSet(t, func(t *testing.T, k *kernels) {
		got := make([]float32, len(gs))
		k.gateMul(got, gs, ones, 1)
		worst, worstAt := 0.0, float32(0)
		for i, g := range gs {
			want := 1 / (1 + math.Exp(-float64(g)))
			if float64(g) < -87.3365 {
				// Past the clamp σ is taken at e^−87.34 ≈ 1.2e−38; the exact one is below.
				require.True(t, got[i] >= 0 && got[i] < 1.3e-38, "g=%v: got %v, want %v", g, got[i], want)
				continue
			}
			if e := ulps(got[i], float32(want)); e > worst {
				worst, worstAt = e, g
			}
		}
		require.LessOrEqual(t, worst, float64(gateULPBound), "at g=%v", worstAt)
		t.Logf("σ: max error %.0f ulp (at g=%v) over %d values", worst, worstAt, len(gs))
		if k != &genericKernels {
			requireModel(t, gs, got, sigmoidModel)
		}
		nan := []float32{float32(math.NaN())}
		k.gateMul(nan, nan, []float32{1}, 1)
		require.True(t, math.IsNaN(float64(nan[0])))

		rng := rand.New(rand.NewPCG(13, 1))
		for _, n := range simdLengths {
			g, u := newGuard(n, normal(rng, 4)), newGuard(n, normal(rng, 2))
			const s = 0.37
			want := make([]float32, n)
			gateMulGeneric(want, g.s(), u.s(), s)
			dst := newGuard(n, func(int) float32 { return 0 })
			k.gateMul(dst.s(), g.s(), u.s(), s)
			for i := range n {
				us := float32(u.s()[i] * s)
				if k != &genericKernels {
					require.Equal(t, math.Float32bits(us*sigmoidModel(g.s()[i])), math.Float32bits(dst.s()[i]), "n=%d [%d]", n, i)
				}
				// Both: u·s rounded alike, σ within gateULPBound of the exact, the
				// product rounded once.
				require.LessOrEqual(t, ulps(dst.s()[i], want[i]), float64(2*gateULPBound)+1, "n=%d [%d]", n, i)
			}
			dst.check(t)
			requireAliasing(t, g, u, dst.s(), func(d, g, u []float32) { k.gateMul(d, g, u, s) })
		}
	})
}

func TestKernelsSiLU(t *testing.T) {
	gs := activationArgs()
	forEachSet(t, func(t *testing.T, k *kernels) {
		got := make([]float32, len(gs))
		k.siluMul(got, gs, nil)
		worst, worstAt := 0.0, float32(0)
		for i, g := range gs {
			want := float32(silu64(float64(g)))
			switch {
			case float64(g) < -87.3365:
				// Past the clamp σ is taken at e^−87.34; the exact result is below
				// 87.34·e^−87.34 in magnitude either way.
				if math.Abs(float64(got[i])-float64(want)) > math.Abs(float64(g))*1.2e-38 || got[i] > 0 {
					t.Fatalf("g=%v: got %v, want %v", g, got[i], want)
				}
			case math.IsInf(float64(g), 0) || g == 0:
				if math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("g=%v: got %v, want %v", g, got[i], want)
				}
			default:
				if e := ulps(got[i], want); e > worst {
					worst, worstAt = e, g
				}
			}
		}
		require.LessOrEqual(t, worst, float64(siluULPBound), "at g=%v", worstAt)
		t.Logf("max error %.0f ulp (at g=%v) over %d values", worst, worstAt, len(gs))
		if k != &genericKernels {
			requireModel(t, gs, got, siluModel)
		}
		// NaN stays NaN.
		nan := []float32{float32(math.NaN())}
		k.siluMul(nan, nan, nil)
		require.True(t, math.IsNaN(float64(nan[0])))

		// The product with u, each length, in place, and against the generic code.
		rng := rand.New(rand.NewPCG(8, 1))
		for _, n := range simdLengths {
			g, u := newGuard(n, normal(rng, 4)), newGuard(n, normal(rng, 2))
			want := make([]float32, n)
			siluMulGeneric(want, g.s(), u.s())
			dst := newGuard(n, func(int) float32 { return 0 })
			k.siluMul(dst.s(), g.s(), u.s())
			for i := range n {
				// Generic: silu rounded once (½ ulp), then ·u; SIMD: ≤ siluULPBound,
				// then ·u. Each product adds ½ ulp.
				require.LessOrEqual(t, ulps(dst.s()[i], want[i]), float64(siluULPBound)+2, "n=%d [%d]", n, i)
			}
			dst.check(t)
			requireAliasing(t, g, u, dst.s(), k.siluMul)
		}
	})
}

// TestKernelsSiLUExhaustive measures the SIMD SiLU's error over the float32s in
// [ln 2⁻¹²⁶, 90]: every 4099th bit pattern by default (about 500,000 values), every one
// with QWEN35_EXHAUSTIVE=1 (about 2·10⁹, minutes of work). The exhaustive run on AVX2
// (and so on NEON, which matches it bit for bit) found a maximum of 4 ulp at 6 values;
// 91.3% of the results are correctly rounded and 99.8% within 1 ulp.
func TestKernelsSiLUExhaustive(t *testing.T) {
	stride := uint32(4099)
	if os.Getenv("QWEN35_EXHAUSTIVE") != "" {
		stride = 1
	}
	for _, k := range kernelSets[1:] {
		const B = 1 << 16
		gs, got := make([]float32, B), make([]float32, B)
		worst, at := 0.0, float32(0)
		hist := map[float64]int{}
		for sign := uint32(0); sign < 2; sign++ {
			hi := math.Float32bits(90)
			if sign == 1 {
				hi = math.Float32bits(87.3365)
			}
			for b0 := uint32(0); b0 < hi; b0 += B * stride {
				for i := range gs {
					gs[i] = math.Float32frombits(min(b0+uint32(i)*stride, hi) | sign<<31)
				}
				k.siluMul(got, gs, nil)
				for i, g := range gs {
					if b0+uint32(i)*stride >= hi || g == 0 {
						continue
					}
					e := ulps(got[i], float32(silu64(float64(g))))
					hist[e]++
					if e > worst {
						worst, at = e, g
					}
				}
			}
		}
		t.Logf("%s: max %v ulp at g=%v; ulps: count %v", k.name, worst, at, hist)
		require.LessOrEqual(t, worst, float64(siluULPBound))
	}
}

// The wrappers allocate nothing.
func TestKernelsNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	a, b, c, d := newGuard(128, normal(rng, 1)), newGuard(128, normal(rng, 1)), newGuard(128, normal(rng, 1)), newGuard(128, normal(rng, 1))
	S := newGuard(128*128, normal(rng, 0.1))
	o := make([]float32, 128)
	h := make([]uint16, 128)
	i8 := make([]int8, 128)
	row := make([]byte, 256)
	var sink float32
	allocs := testing.AllocsPerRun(20, func() {
		sink += dot(a.s(), b.s())
		dotRows(o, 8, a.s(), 16, 2, b.s(), 16, 4, 16)
		scal(a.s(), 0.5)
		scaleAddRows(a.s()[:64], 0.5, c.s()[:2], b.s(), 64)
		gdnStep(S.s(), a.s(), b.s(), c.s(), o, 0.9, 0.5)
		sink += float32(sumSquares(a.s()))
		scaleMul(c.s(), a.s(), 0.5, b.s())
		siluMul(c.s(), a.s(), b.s())
		f16ToF32s(d.s(), h)
		dequantInt8(d.s(), i8, o[:4])
		sink += dotBF16(row, a.s())
		sink += expSub(d.s()[:16], 1e30)
		dequantQ4(d.s()[:40], row[:32], h[:2])
	})
	assert.Zero(t, allocs)
	_ = sink
}

// TestKernelSetsPackage reruns the mixer and op tests of the package (GDN and attention
// against the float64 reference, prefill against decode, the KV cache, RMSNorm, SwiGLU)
// on every kernel set other than the one in use, in a child process.
func TestKernelSetsPackage(t *testing.T) {
	if os.Getenv("QWEN35_KERNELS") != "" {
		t.Skip("already a child run")
	}
	if testing.Short() {
		t.Skip("-short: the package's tests on the other kernel sets, in a child process, run in the full go test; TestKernelsDot and its siblings check every set's kernels under -short")
	}
	for _, k := range kernelSets {
		if k == kern {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			out, err := selfexec.CombinedOutput([]string{"QWEN35_KERNELS=" + k.name}, "-test.run", "^Test(GDN|Attention|KVCache|RMSNorm|L2Normalize|SwiGLU|BF16MulVec|Activations)", "-test.count", "1", "-test.v")
			require.NoError(t, err, "%s", out)
			passed := strings.Count(string(out), "\n--- PASS: Test")
			require.Positive(t, passed, "%s", out)
			t.Logf("%d tests passed on %s", passed, k.name)
		})
	}
}

func BenchmarkKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(10, 1))
	vec := func(n int) []float32 { return newGuard(n, normal(rng, 1)).s() }
	for _, k := range kernelSets {
		for _, n := range []int{128, 256, 5120} {
			x, y, z := vec(n), vec(n), vec(n)
			b.Run(fmt.Sprintf("dot/%s/%d", k.name, n), func(b *testing.B) {
				var s float32
				for b.Loop() {
					s += k.dot(x, y)
				}
			})
			b.Run(fmt.Sprintf("rmsnorm/%s/%d", k.name, n), func(b *testing.B) {
				for b.Loop() {
					scale := float32(1 / math.Sqrt(k.sumSquares(x)/float64(n)+1e-6))
					k.scaleMul(z, x, scale, y)
				}
			})
			b.Run(fmt.Sprintf("silumul/%s/%d", k.name, n), func(b *testing.B) {
				for b.Loop() {
					k.siluMul(z, x, y)
				}
			})
			h := make([]uint16, n)
			b.Run(fmt.Sprintf("f16/%s/%d", k.name, n), func(b *testing.B) {
				for b.Loop() {
					k.f16ToF32(z, h)
				}
			})
		}
		S, kk, q, v, o := vec(128*128), vec(128), vec(128), vec(128), vec(128)
		scal(kk, 0.1)
		scal(q, 0.1)
		b.Run(fmt.Sprintf("gdnStep/%s/128", k.name), func(b *testing.B) {
			for b.Loop() {
				k.gdnStep(S, kk, q, v, o, 0.5, 0.5)
			}
		})
		y, c, x := vec(128), vec(64), vec(64*144)
		b.Run(fmt.Sprintf("scaleAddRows/%s/128x64", k.name), func(b *testing.B) {
			for b.Loop() {
				k.scaleAddRows(y, 0.5, c, x, 144)
			}
		})
		// Attention at 27B sizes: one 64-position block of one KV group (6 query heads
		// of 256), scores and the weighted sum of values.
		q, kb, s := vec(6*256), vec(64*256), vec(6*64)
		b.Run(fmt.Sprintf("dotRows/%s/6x64x256", k.name), func(b *testing.B) {
			for b.Loop() {
				k.dotRows(s, 64, q, 256, 6, kb, 256, 64, 256)
			}
		})
		// The same block's integer scores against int8 and q4 keys.
		for _, q4 := range []bool{false, true} {
			ik, iq := newIntKeys(rng, 64, 256, q4), newIntQueries(rng, 6, 256, q4)
			name := map[bool]string{false: "scoreInt8", true: "scoreQ4"}[q4]
			b.Run(fmt.Sprintf("%s/%s/6x64x256", name, k.name), func(b *testing.B) {
				for b.Loop() {
					iq.score(s, 64, 6, ik, 64, 256, k)
				}
			})
		}
		// The same block's weighted sum of values read as int8 and q4 codes (six
		// query heads' rows at once), where the set has the kernels.
		for _, q4 := range []bool{false, true} {
			if q4 && k.axpy6Q4 == nil || !q4 && k.axpy6Int8 == nil {
				continue
			}
			ik := newIntKeys(rng, 64, 256, q4)
			acc6 := vec(6 * 256)
			name := map[bool]string{false: "axpy6Int8", true: "axpy6Q4"}[q4]
			vs := ik.ks
			if q4 {
				vs = make([]float32, len(ik.k4s))
				f16ToF32Generic(vs, ik.k4s)
			}
			b.Run(fmt.Sprintf("%s/%s/6x64x256", name, k.name), func(b *testing.B) {
				for b.Loop() {
					if q4 {
						k.axpy6Q4(acc6, s, 64, ik.k4, vs, 64, 256)
					} else {
						k.axpy6Int8(acc6, s, 64, ik.k8, vs, 64, 256)
					}
				}
			})
		}
		acc := vec(256)
		b.Run(fmt.Sprintf("scaleAddRows/%s/256x64", k.name), func(b *testing.B) {
			for b.Loop() {
				k.scaleAddRows(acc, 1, s[:64], kb, 256)
			}
		})
		// The chunked GDN's S₀ᵀk_t: 128 value-rows × 64 tokens × 128.
		uT := vec(128 * 64)
		b.Run(fmt.Sprintf("dotRows/%s/128x64x128", k.name), func(b *testing.B) {
			for b.Loop() {
				k.dotRows(uT, 64, S, 128, 128, x, 144, 64, 128)
			}
		})
	}
}

// expULPBound is how far expSub's weights may be from e^y (y = x−m rounded to float32)
// for y ≥ ln 2⁻¹²⁶, in units in the last place: the polynomial is within 1–2 ulp and the
// implementations differ by their fused roundings.
const expULPBound = 4

// TestKernelsExpSub checks the softmax exponential of every kernel set against float64
// math.Exp, at every tail length, over the arguments a softmax meets (0 down to below
// the clamp), and that the returned sum is the sum of the weights written.
func TestKernelsExpSub(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(12, 1))
		worst := 0.0
		for _, n := range simdLengths {
			const m = 3.25
			g := newGuard(n, func(i int) float32 {
				switch rng.IntN(8) {
				case 0:
					return m // the maximum itself: weight 1
				case 1:
					return m - float32(90+rng.Float64()*30) // under the clamp
				default:
					return m - float32(rng.ExpFloat64()*8)
				}
			})
			x := append([]float32(nil), g.s()...)
			sum := k.expSub(g.s(), m)
			g.check(t)
			var want float64
			for i, xi := range x {
				y := xi - m
				got := float64(g.s()[i])
				if y < expMin {
					require.InEpsilon(t, 0x1p-126, got, 1e-5, "n=%d y=%v", n, y)
					want += got
					continue
				}
				e := math.Exp(float64(y))
				ulp := float64(math.Nextafter32(float32(e), float32(math.Inf(1))) - float32(e))
				err := math.Abs(got-e) / ulp
				worst = max(worst, err)
				require.LessOrEqual(t, err, float64(expULPBound), "n=%d y=%v: %v, want %v", n, y, got, e)
				want += got
			}
			require.InDelta(t, want, float64(sum), gammaK(accDepth(n))*want+1e-30, "n=%d: sum", n)
		}
		t.Logf("%s: max %.2f ulp from e^y", k.name, worst)
	})
}

// The 4-bit cache's dequantisation: every implementation gives the generic code's bits,
// which are (code − 8)·scale computed exactly in float64 and rounded once, for every
// code, awkward scales, whole and short blocks.
func TestKernelsDequantQ4(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(13, 1))
		for _, n := range simdLengths {
			nb := (n + kvBlock - 1) / kvBlock
			src := make([]byte, 16*nb)
			for i := range src {
				src[i] = byte(rng.IntN(256))
			}
			scales := make([]uint16, nb)
			for i := range scales {
				scales[i] = uint16(rng.IntN(0x7c00)) | uint16(rng.IntN(2))<<15 // finite halves
			}
			want := make([]float32, n)
			for i := range want {
				b, j := i/kvBlock, i%kvBlock
				code := int(src[16*b+j%16])
				if j >= 16 {
					code >>= 4
				}
				code &= 15
				want[i] = float32(float64(code-8) * float64(float16.Frombits(scales[b]).Float32()))
			}
			gen := make([]float32, n)
			dequantQ4Generic(gen, src, scales)
			sameBits(t, want, gen, "generic n=%d", n)
			got := newGuard(n, func(int) float32 { return 0 })
			k.dequantQ4(got.s(), src, scales)
			sameBits(t, want, got.s(), "n=%d", n)
			got.check(t)
		}
	})
}

// The maximum is exact: every implementation returns the generic one's, at every length,
// with the maximum anywhere, the values of every sign and magnitude (no NaN: scores).
func TestKernelsMax(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		rng := rand.New(rand.NewPCG(14, 1))
		for _, n := range simdLengths {
			for range 4 {
				x := newGuard(n, func(int) float32 {
					if rng.IntN(10) == 0 {
						return float32(math.Inf(-1))
					}
					return float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))
				}).s()
				want := maxGeneric(x)
				require.Equal(t, math.Float32bits(want), math.Float32bits(k.max(x)), "n=%d", n)
			}
		}
		require.Equal(t, float32(math.Inf(-1)), k.max(nil))
	})
}

// The six-query score kernels against dotRowsGeneric over float32 and over the halves
// widened exactly, within the summation bound, at key counts around the 4-key blocks.
func TestKernelsDot6(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		if k.dot6F32 == nil {
			t.Skip("no six-query kernels in this set")
		}
		rng := rand.New(rand.NewPCG(15, 1))
		for _, d := range []int{16, 64, 256} {
			for _, nb := range []int{0, 1, 3, 4, 5, 8, 31, 32} {
				q := newGuard(6*d, normal(rng, 1)).s()
				k32 := newGuard(nb*d, normal(rng, 1)).s()
				k16 := make([]uint16, nb*d)
				for i, x := range k32 {
					k16[i] = float16.Fromfloat32(x).Bits()
					k32[i] = float16.Frombits(k16[i]).Float32() // the same keys in both forms
				}
				const os = 37
				want := make([]float32, 5*os+nb)
				dotRowsGeneric(want, os, q, d, 6, k32, d, nb, d)
				for name, run := range map[string]func(out []float32){
					"f32": func(out []float32) { k.dot6F32(out, os, q, k32, nb, d) },
					"f16": func(out []float32) { k.dot6F16(out, os, q, k16, nb, d) },
				} {
					g := newGuard(5*os+nb, func(int) float32 { return -7 })
					run(g.s())
					g.check(t)
					for r := 0; r < 6; r++ {
						for j := 0; j < nb; j++ {
							var bound float64
							for i := 0; i < d; i++ {
								bound += math.Abs(float64(q[r*d+i]) * float64(k32[j*d+i]))
							}
							bound *= 2 * gammaK(accDepth(d))
							require.InDelta(t, want[r*os+j], g.s()[r*os+j], bound, "%s d=%d nb=%d r=%d j=%d", name, d, nb, r, j)
						}
						for j := nb; j < os && r < 5; j++ {
							require.Equal(t, float32(-7), g.s()[r*os+j], "%s: wrote past the keys", name)
						}
					}
				}
			}
		}
	})
}

// The six-row value accumulation against scaleAddRowsGeneric row by row, over float32
// values and over halves widened exactly, within the summation bound.
func TestKernelsAxpy6(t *testing.T) {
	forEachSet(t, func(t *testing.T, k *kernels) {
		if k.axpy6F32 == nil {
			t.Skip("no six-row kernels in this set")
		}
		rng := rand.New(rand.NewPCG(16, 1))
		for _, d := range []int{32, 64, 256} {
			for _, n := range []int{0, 1, 2, 7, 32} {
				const ws = 33
				w := newGuard(5*ws+max(n, 1), normal(rng, 1)).s()
				v32 := newGuard(n*d, normal(rng, 1)).s()
				v16 := make([]uint16, n*d)
				for i, x := range v32 {
					v16[i] = float16.Fromfloat32(x).Bits()
					v32[i] = float16.Frombits(v16[i]).Float32()
				}
				acc0 := newGuard(6*d, normal(rng, 1)).s()
				want := append([]float32(nil), acc0...)
				for r := 0; r < 6; r++ {
					if n > 0 {
						scaleAddRowsGeneric(want[r*d:(r+1)*d], 1, w[r*ws:r*ws+n], v32, d)
					}
				}
				for name, run := range map[string]func(acc []float32){
					"f32": func(acc []float32) { k.axpy6F32(acc, w, ws, v32, n, d) },
					"f16": func(acc []float32) { k.axpy6F16(acc, w, ws, v16, n, d) },
				} {
					g := newGuard(6*d, func(i int) float32 { return acc0[i] })
					run(g.s())
					g.check(t)
					for r := 0; r < 6; r++ {
						for i := 0; i < d; i++ {
							bound := math.Abs(float64(acc0[r*d+i]))
							for p := 0; p < n; p++ {
								bound += math.Abs(float64(w[r*ws+p]) * float64(v32[p*d+i]))
							}
							bound *= 2 * gammaK(n+2)
							require.InDelta(t, want[r*d+i], g.s()[r*d+i], bound, "%s d=%d n=%d r=%d i=%d", name, d, n, r, i)
						}
					}
				}
			}
		}
	})
}
