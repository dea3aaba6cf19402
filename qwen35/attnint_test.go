package qwen35

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/stretchr/testify/require"
	"github.com/x448/float16"
)

// intKeys is n random keys of d values quantised as an int8 or q4 cache stores them,
// with their decoded values.
type intKeys struct {
	k8    []int8
	ks    []float32
	k4    []byte
	k4s   []uint16
	plain []float32 // the decoded keys, n × d
}

func newIntKeys(rng *rand.Rand, n, d int, q4 bool) intKeys {
	nb := (d + kvBlock - 1) / kvBlock
	var ik intKeys
	ik.plain = make([]float32, n*d)
	if q4 {
		ik.k4, ik.k4s = make([]byte, 16*nb*n), make([]uint16, nb*n)
	} else {
		ik.k8, ik.ks = make([]int8, n*d), make([]float32, nb*n)
	}
	row := make([]float32, d)
	for p := 0; p < n; p++ {
		scale := 0.1 + 3*rng.Float64() // rows of different sizes
		for i := range row {
			row[i] = float32(rng.NormFloat64() * scale)
		}
		if p%7 == 3 {
			row[rng.IntN(d)] *= 40 // an outlier widens its block's scale
		}
		plain := ik.plain[p*d : (p+1)*d]
		if q4 {
			quantizeQ4(ik.k4[16*nb*p:16*nb*(p+1)], ik.k4s[nb*p:nb*(p+1)], row)
			dequantQ4Generic(plain, ik.k4[16*nb*p:16*nb*(p+1)], ik.k4s[nb*p:nb*(p+1)])
		} else {
			quantizeInt8(ik.k8[d*p:d*(p+1)], ik.ks[nb*p:nb*(p+1)], row)
			dequantInt8Generic(plain, ik.k8[d*p:d*(p+1)], ik.ks[nb*p:nb*(p+1)])
		}
	}
	return ik
}

// intQueries is rep random query heads of d values and their quantQuery forms.
type intQueries struct {
	q     []float32
	codes []int8
	sq    []float32
	corr  []int32
}

func newIntQueries(rng *rand.Rand, rep, d int, q4 bool) intQueries {
	hb, hl := qHead(d), qLanes*qVectors(d)
	iq := intQueries{q: make([]float32, rep*d), codes: make([]int8, rep*hb), sq: make([]float32, rep*hl), corr: make([]int32, rep*hl)}
	for i := range iq.q {
		iq.q[i] = float32(rng.NormFloat64() / math.Sqrt(float64(d))) // scaled as attention scales q
	}
	for r := 0; r < rep; r++ {
		quantQuery(iq.codes[r*hb:(r+1)*hb], iq.sq[r*hl:(r+1)*hl], iq.corr[r*hl:(r+1)*hl], iq.q[r*d:(r+1)*d], q4)
	}
	return iq
}

func (iq intQueries) score(out []float32, os, rep int, ik intKeys, n, d int, k *kernels) {
	if ik.k4 != nil {
		f := k.scoreQ4
		if f == nil || d != 256 {
			f = scoreQ4Generic
		}
		f(out, os, iq.codes, iq.sq, iq.corr, rep, ik.k4, ik.k4s, n, d)
		return
	}
	f := k.scoreInt8
	if f == nil || d != 256 {
		f = scoreInt8Generic
	}
	f(out, os, iq.codes, iq.sq, iq.corr, rep, ik.k8, ik.ks, n, d)
}

// TestQuantQuery checks the query codes against the formula: a_i = round(q_i/s_b) with
// s_b = max_b|q|/127, so |q_i − s_b·a_i| ≤ s_b/2, and the lanes' scales and
// corrections.
func TestQuantQuery(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 1))
	for _, d := range []int{16, 32, 48, 64, 100, 128, 256} {
		for _, q4 := range []bool{false, true} {
			iq := newIntQueries(rng, 1, d, q4)
			// Undo the layout: value i's code, scale and lane.
			for i := 0; i < d; i++ {
				b := i / kvBlock
				var amax float64
				for _, x := range iq.q[b*kvBlock : min((b+1)*kvBlock, d)] {
					amax = math.Max(amax, math.Abs(float64(x)))
				}
				s := amax / 127
				at, lane := queryAt(i)
				a := float64(iq.codes[at])
				require.LessOrEqual(t, math.Abs(float64(iq.q[i])-s*a), s/2*(1+1e-6), "d=%d q4=%v i=%d", d, q4, i)
				require.InDelta(t, s, float64(iq.sq[lane]), s*1e-6)
			}
			bias := int32(128)
			if q4 {
				bias = 8
			}
			for l := range iq.corr {
				var sum int32
				v, ll := l/qLanes, l%qLanes
				for j := 0; j < 4; j++ {
					sum += int32(iq.codes[128*v+4*ll+j]) + int32(iq.codes[128*v+64+4*ll+j])
				}
				require.Equal(t, -bias*sum, iq.corr[l])
			}
		}
	}
	// Exact halves round away from zero, as math.Round: a block whose largest |q| is 127
	// has 1/s_b = 1, so q_i is the unrounded code itself.
	q := make([]float32, 64)
	want := make([]int8, 64)
	for i := range q {
		switch {
		case i == 0:
			q[i] = 127
		case i == 40:
			q[i] = -127
		default:
			q[i] = float32(rng.IntN(253)-126) + []float32{0.5, -0.5, 0.25, 0.49999997, 0.50000006}[i%5]
		}
		want[i] = int8(max(-127, min(127, math.Round(float64(q[i])))))
	}
	codes, sq, corr := make([]int8, qHead(64)), make([]float32, qLanes*qVectors(64)), make([]int32, qLanes*qVectors(64))
	quantQuery(codes, sq, corr, q, false)
	for i := range q {
		at, _ := queryAt(i)
		require.Equal(t, want[i], codes[at], "q=%v", q[i])
	}
}

// TestScoreKernels checks every kernel set's integer scores: bit for bit the generic
// code's, and within the rounding of their float part of the exact score of the
// quantised query, Σ_b s_qb·s_kb·Σ a_i·c_i formed in float64 — which itself is within
// Σ_b (s_qb/2)·Σ|k̂_i| of the float64 score of the unquantised q against the decoded
// keys.
func TestScoreKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(62, 1))
	forEachSet(t, func(t *testing.T, k *kernels) {
		for _, q4 := range []bool{false, true} {
			for _, d := range []int{64, 128, 256} {
				for _, rep := range []int{1, 2, 3, 5, 6, 7, 8, 13} { // the AVX2 kernels score up to six heads a pass
					for _, n := range []int{1, 7, 8, 9, 37} { // and reduce eight keys at a time
						ik, iq := newIntKeys(rng, n, d, q4), newIntQueries(rng, rep, d, q4)
						os := n + 3
						got, want := make([]float32, rep*os), make([]float32, rep*os)
						for i := range got {
							got[i], want[i] = -7, -7
						}
						iq.score(got, os, rep, ik, n, d, k)
						iq.score(want, os, rep, ik, n, d, &genericKernels)
						name := fmt.Sprintf("q4=%v/d=%d/rep=%d/n=%d", q4, d, rep, n)
						for i := range got {
							require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s: out[%d] = %v, generic %v", name, i, got[i], want[i])
						}
						for r := 0; r < rep; r++ {
							for p := 0; p < n; p++ {
								exact, abs, qerr, plain := quantScoreRef(iq, r, d, q4, ik.plain[p*d:(p+1)*d])
								// The float part: per lane a product of three factors and a sum
								// of d/128 terms, then the four-level tree: fewer than
								// 2 + d/128 + 4 roundings on each term's way.
								bound := gammaK(2+qVectors(d)+4) * abs
								require.InDelta(t, exact, float64(got[r*os+p]), bound, "%s r=%d p=%d", name, r, p)
								require.InDelta(t, plain, exact, qerr*(1+1e-9)+1e-12, "%s r=%d p=%d: quantising q", name, r, p)
							}
						}
					}
				}
			}
		}
	})
}

// TestScoreKernelsExtremes scores the largest codes against the largest query codes
// (|a| = 127 against int8 keys of −128 and 127, q4 keys of −8 and 7, signs alike and
// mixed), where a kernel that sums more than two of a lane's products in 16 bits (the
// plain NEON scorers' widening multiplies hold two: 2·127·128 = 32512) would wrap: every
// set's scores must be the generic code's bits and the exact scores within the float
// part's rounding.
func TestScoreKernelsExtremes(t *testing.T) {
	const d, n = 256, 9
	nb := d / kvBlock
	forEachSet(t, func(t *testing.T, k *kernels) {
		for _, q4 := range []bool{false, true} {
			var ik intKeys
			ik.plain = make([]float32, n*d)
			if q4 {
				ik.k4, ik.k4s = make([]byte, 16*nb*n), make([]uint16, nb*n)
				for p := 0; p < n; p++ {
					for i := range 16 * nb {
						ik.k4[16*nb*p+i] = []byte{0x00, 0xff, 0x0f, 0xf0}[(p+i/16)%4] // values −8 and 7
					}
					for b := range nb {
						ik.k4s[nb*p+b] = 0x3800 + uint16(b) // 0.5 and a little more
					}
					dequantQ4Generic(ik.plain[p*d:(p+1)*d], ik.k4[16*nb*p:16*nb*(p+1)], ik.k4s[nb*p:nb*(p+1)])
				}
			} else {
				ik.k8, ik.ks = make([]int8, n*d), make([]float32, nb*n)
				for p := 0; p < n; p++ {
					for i := range d {
						c := int8(-128)
						if p%2 == 1 && i%3 != 0 {
							c = 127
						}
						ik.k8[d*p+i] = c
					}
					for b := range nb {
						ik.ks[nb*p+b] = 0.5 + float32(b)/64
					}
					dequantInt8Generic(ik.plain[p*d:(p+1)*d], ik.k8[d*p:d*(p+1)], ik.ks[nb*p:nb*(p+1)])
				}
			}
			for _, rep := range []int{1, 6, 7} {
				hb, hl := qHead(d), qLanes*qVectors(d)
				iq := intQueries{q: make([]float32, rep*d), codes: make([]int8, rep*hb), sq: make([]float32, rep*hl), corr: make([]int32, rep*hl)}
				for i := range iq.q {
					r := i / d
					iq.q[i] = -1 // codes −127 where every value of a block is as large
					if r%2 == 1 && i%5 == 0 {
						iq.q[i] = 1
					}
				}
				for r := 0; r < rep; r++ {
					quantQuery(iq.codes[r*hb:(r+1)*hb], iq.sq[r*hl:(r+1)*hl], iq.corr[r*hl:(r+1)*hl], iq.q[r*d:(r+1)*d], q4)
				}
				got, want := make([]float32, rep*n), make([]float32, rep*n)
				iq.score(got, n, rep, ik, n, d, k)
				iq.score(want, n, rep, ik, n, d, &genericKernels)
				for r := 0; r < rep; r++ {
					for p := 0; p < n; p++ {
						name := fmt.Sprintf("q4=%v/rep=%d: head %d key %d", q4, rep, r, p)
						require.Equal(t, math.Float32bits(want[r*n+p]), math.Float32bits(got[r*n+p]), "%s: %v, generic %v", name, got[r*n+p], want[r*n+p])
						exact, abs, _, _ := quantScoreRef(iq, r, d, q4, ik.plain[p*d:(p+1)*d])
						require.InDelta(t, exact, float64(got[r*n+p]), gammaK(2+qVectors(d)+4)*abs, name)
					}
				}
			}
		}
	})
}

// queryAt returns where quantQuery puts value i's code and scale: the index in the
// head's codes and its lane.
func queryAt(i int) (at, lane int) {
	b := i / kvBlock
	o, j := (i%kvBlock)%16, (i%kvBlock)/16 // byte in block, high nibble
	v, l := b/4, 4*(b%4)+o/4
	return 128*v + 64*j + 4*l + o%4, v*qLanes + l
}

// quantScoreRef returns in float64 the score of quantised query head r of iq (s_b·a_i
// read back from its codes and lanes) against the decoded key k, Σ|terms| of it, the
// bound Σ_b (s_b/2)·Σ_{i∈b}|k_i| on what quantising changed (TestQuantQuery checks
// |q_i − s_b·a_i| ≤ s_b/2), and the score of q itself.
func quantScoreRef(iq intQueries, r, d int, q4 bool, k []float32) (exact, abs, qerr, plain float64) {
	hb, hl := qHead(d), qLanes*qVectors(d)
	q := iq.q[r*d : (r+1)*d]
	for i := range q {
		at, lane := queryAt(i)
		s, a := float64(iq.sq[r*hl+lane]), float64(iq.codes[r*hb+at])
		qerr += s / 2 * math.Abs(float64(k[i]))
		{
			exact += s * a * float64(k[i])
			abs += math.Abs(s * a * float64(k[i]))
			plain += float64(q[i]) * float64(k[i])
		}
	}
	return exact, abs, qerr, plain
}

// The caches' block layouts are what the scorers assume.
func TestScoreCacheLayout(t *testing.T) {
	require.Equal(t, 32, kvBlock)
	require.Equal(t, 18, backend.KVQ4.RowBytes(1, 32))
}

// BenchmarkAttentionLong times one decode step of the 27B model's attention (24 query
// heads, 4 KV heads of 256) on one goroutine with the int8 and q4 caches holding 8k and
// 32k positions, float scoring (before: keys widened, then float dot products) against
// integer scoring, beside a plain loop reading the cache's bytes (keys, values and
// scales), each iteration timing both so that a load on the machine falls on both alike.
// ratio is attention's time over the read's.
func BenchmarkAttentionLong(b *testing.B) {
	c, a, l, vec := attn27B(63)
	row := c.KVHeads * c.HeadDim
	qg, k, v := vec(c.Heads*2*c.HeadDim), vec(row), vec(row)
	out := make([]float32, c.Heads*c.HeadDim)
	for _, p := range []backend.KVPrecision{backend.KVInt8, backend.KVQ4} {
		for _, ctx := range []int{8192, 32768} {
			b.Run(fmt.Sprintf("%v/ctx=%d", p, ctx), func(b *testing.B) { benchAttentionLong(b, a, l, qg, k, v, out, vec, p, ctx) })
		}
	}
}

// attn27B returns the 27B's attention widths, the core, a layer with random q/k norm
// gains, and a source of normal random vectors, seeded.
func attn27B(seed uint64) (*Config, *Attention, *Layer, func(int) []float32) {
	c := &Config{Heads: 24, KVHeads: 4, HeadDim: 256, RopeDims: 64, RopeBase: 1e7, RMSEpsilon: 1e-6}
	rng := rand.New(rand.NewPCG(seed, 1))
	l := &Layer{Attention: true, QNorm: make([]float32, c.HeadDim), KNorm: make([]float32, c.HeadDim)}
	for i := range l.QNorm {
		l.QNorm[i], l.KNorm[i] = 1+0.2*float32(rng.NormFloat64()), 1+0.2*float32(rng.NormFloat64())
	}
	vec := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	return c, NewAttention(c), l, vec
}

// filledCache returns a cache of room positions at precision p holding n positions of
// 64 random key and value rows in turn.
func filledCache(b *testing.B, a *Attention, p backend.KVPrecision, n, room int, vec func(int) []float32) *KVCache {
	row := a.kvHeads * a.dim
	cache := a.NewKVCache(p, room)
	rows := make([][]float32, 64)
	for i := range rows {
		rows[i] = vec(row)
	}
	for cache.Len() < n {
		if err := cache.Append(rows[cache.Len()%64], rows[(cache.Len()+7)%64]); err != nil {
			b.Fatal(err)
		}
	}
	return cache
}

func benchAttentionLong(b *testing.B, a *Attention, l *Layer, qg, k, v, out []float32, vec func(int) []float32, p backend.KVPrecision, ctx int) {
	cache := filledCache(b, a, p, ctx, ctx+1, vec)
	cache.Reserve(ctx + 1)
	sc := a.NewScratch(1)
	for _, integer := range []bool{false, true} {
		b.Run(fmt.Sprintf("integer=%v", integer), func(b *testing.B) {
			defer func(old bool) { integerScores = old }(integerScores)
			integerScores = integer
			// The thread's CPU time, where the system has it, leaves out the time other
			// processes hold the core; the wall time is reported beside it.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var wRead, wAttn, cRead, cAttn time.Duration
			var sink uint64
			for b.Loop() {
				t0, c0 := time.Now(), threadCPU()
				sink += readKV(cache, ctx)
				t1, c1 := time.Now(), threadCPU()
				if err := a.Forward(out, qg, k, v, 1, ctx, l, cache, sc); err != nil {
					b.Fatal(err)
				}
				t2, c2 := time.Now(), threadCPU()
				wRead, wAttn = wRead+t1.Sub(t0), wAttn+t2.Sub(t1)
				cRead, cAttn = cRead+c1-c0, cAttn+c2-c1
				cache.Truncate(ctx)
			}
			us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
			b.ReportMetric(us(wAttn), "µs-attn")
			b.ReportMetric(us(wRead), "µs-read")
			b.ReportMetric(float64(wAttn)/float64(wRead), "ratio")
			if cRead > 0 {
				b.ReportMetric(us(cAttn), "µs-attn-cpu")
				b.ReportMetric(us(cRead), "µs-read-cpu")
				b.ReportMetric(float64(cAttn)/float64(cRead), "ratio-cpu")
			}
			b.ReportMetric(float64(readKVBytes(cache, ctx))/1e3/us(wRead), "GB/s-read")
			_ = sink
		})
	}
}

// readKV reads every byte attention reads of the first n positions (codes and scales of
// keys and values) with a plain loop, eight bytes at a time in four sums.
func readKV(c *KVCache, n int) uint64 {
	var s0, s1, s2, s3 uint64
	sum := func(b []byte) {
		w := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
		for i := 0; i+4 <= len(w); i += 4 {
			s0 += w[i]
			s1 += w[i+1]
			s2 += w[i+2]
			s3 += w[i+3]
		}
	}
	forKV(c, n, sum)
	return s0 + s1 + s2 + s3
}

func readKVBytes(c *KVCache, n int) int {
	var t int
	forKV(c, n, func(b []byte) { t += len(b) })
	return t
}

// forKV calls f on the bytes of each head's run of the first n positions of each page.
func forKV(c *KVCache, n int, f func([]byte)) {
	bytes := func(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }
	for i := range c.pages {
		p := &c.pages[i]
		if p.start >= n {
			break
		}
		used := min(p.n, n-p.start)
		for h := 0; h < c.heads; h++ {
			a, s := h*p.n*c.dim, h*p.n*c.blocks
			switch c.prec {
			case backend.KVInt8:
				f(bytes(unsafe.Pointer(&p.k8[a]), used*c.dim))
				f(bytes(unsafe.Pointer(&p.v8[a]), used*c.dim))
				f(bytes(unsafe.Pointer(&p.ks[s]), 4*used*c.blocks))
				f(bytes(unsafe.Pointer(&p.vs[s]), 4*used*c.blocks))
			case backend.KVQ4:
				f(p.k4[16*s : 16*(s+used*c.blocks)])
				f(p.v4[16*s : 16*(s+used*c.blocks)])
				f(bytes(unsafe.Pointer(&p.k4s[s]), 2*used*c.blocks))
				f(bytes(unsafe.Pointer(&p.v4s[s]), 2*used*c.blocks))
			}
		}
	}
}

// TestAxpyCodes checks axpy6Int8 and axpy6Q4, where a set has them, against its own
// axpy6F32 on the rows decoded by the generic code: the same bits.
func TestAxpyCodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(64, 1))
	forEachSet(t, func(t *testing.T, k *kernels) {
		if k.axpy6Int8 == nil && k.axpy6Q4 == nil {
			t.Skipf("the %s set has no axpy6Int8 or axpy6Q4: it decodes the values first", k.name)
		}
		for _, q4 := range []bool{false, true} {
			if q4 && k.axpy6Q4 == nil || !q4 && k.axpy6Int8 == nil {
				continue
			}
			for _, d := range []int{32, 64, 256, 288} {
				for _, n := range []int{1, 2, 7, 32} {
					ik := newIntKeys(rng, n, d, q4)
					const ws = 37
					w := make([]float32, 6*ws)
					for i := range w {
						w[i] = float32(rng.Float64())
					}
					acc0 := make([]float32, 6*d)
					for i := range acc0 {
						acc0[i] = float32(rng.NormFloat64())
					}
					got, want := append([]float32(nil), acc0...), append([]float32(nil), acc0...)
					k.axpy6F32(want, w, ws, ik.plain, n, d)
					if q4 {
						vs := make([]float32, len(ik.k4s))
						f16ToF32Generic(vs, ik.k4s)
						k.axpy6Q4(got, w, ws, ik.k4, vs, n, d)
					} else {
						k.axpy6Int8(got, w, ws, ik.k8, ik.ks, n, d)
					}
					for i := range got {
						require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "q4=%v d=%d n=%d: acc[%d] = %v, want %v", q4, d, n, i, got[i], want[i])
					}
				}
			}
		}
	})
}

// TestAxpy6Positions checks that every set's value kernels add a run of positions as
// they add one position at a time (the same FMAs in the same order: kernels that take
// several positions a pass must not change the bits), over runs that are and are not
// multiples of their passes.
func TestAxpy6Positions(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 1))
	forEachSet(t, func(t *testing.T, k *kernels) {
		if k.axpy6F32 == nil {
			t.Skipf("the %s set has no six-row value kernels", k.name)
		}
		for _, d := range []int{32, 256} {
			nb := d / kvBlock
			for _, n := range []int{3, 4, 5, 8, 11} {
				const ws = 29
				w := make([]float32, 5*ws+n)
				for i := range w {
					w[i] = float32(rng.NormFloat64())
				}
				v32 := make([]float32, n*d)
				v16 := make([]uint16, n*d)
				for i := range v32 {
					v16[i] = float16.Fromfloat32(float32(rng.NormFloat64())).Bits()
					v32[i] = float32(rng.NormFloat64())
				}
				i8, i4 := newIntKeys(rng, n, d, false), newIntKeys(rng, n, d, true)
				vs4 := make([]float32, len(i4.k4s))
				f16ToF32Generic(vs4, i4.k4s)
				acc0 := make([]float32, 6*d)
				for i := range acc0 {
					acc0[i] = float32(rng.NormFloat64())
				}
				type run func(acc []float32, p, m int) // positions p … p+m−1
				runs := map[string]run{
					"f32": func(acc []float32, p, m int) { k.axpy6F32(acc, w[p:], ws, v32[p*d:], m, d) },
					"f16": func(acc []float32, p, m int) { k.axpy6F16(acc, w[p:], ws, v16[p*d:], m, d) },
				}
				if k.axpy6Int8 != nil {
					runs["int8"] = func(acc []float32, p, m int) { k.axpy6Int8(acc, w[p:], ws, i8.k8[p*d:], i8.ks[p*nb:], m, d) }
				}
				if k.axpy6Q4 != nil {
					runs["q4"] = func(acc []float32, p, m int) { k.axpy6Q4(acc, w[p:], ws, i4.k4[16*nb*p:], vs4[p*nb:], m, d) }
				}
				for name, f := range runs {
					all, one := append([]float32(nil), acc0...), append([]float32(nil), acc0...)
					f(all, 0, n)
					for p := 0; p < n; p++ {
						f(one, p, 1)
					}
					for i := range all {
						require.Equal(t, math.Float32bits(one[i]), math.Float32bits(all[i]), "%s d=%d n=%d: acc[%d] = %v, one at a time %v", name, d, n, i, all[i], one[i])
					}
				}
			}
		}
	})
}

// BenchmarkAttentionKeptPass times a speculative verification's attention, 5 tokens
// (the last accepted one and 4 drafts) at 8k and 32k positions, computed as steps by
// ForwardAsSteps, against the 5 steps it stands for, alternated in one loop: the
// pass reads the cache once or twice (tokens whose steps split alike share each tile)
// where the steps read it 5 times. Single-threaded, 27B attention widths.
func BenchmarkAttentionKeptPass(b *testing.B) {
	const T = 5
	c, a, l, vec := attn27B(64)
	row := c.KVHeads * c.HeadDim
	qg, k, v := vec(T*c.Heads*2*c.HeadDim), vec(T*row), vec(T*row)
	out := make([]float32, T*c.Heads*c.HeadDim)
	for _, p := range []backend.KVPrecision{backend.KVFloat16, backend.KVInt8} {
		for _, ctx := range []int{8192, 32768} {
			b.Run(fmt.Sprintf("%v/ctx=%d", p, ctx), func(b *testing.B) {
				cache := filledCache(b, a, p, ctx, ctx+T, vec)
				sc := a.NewScratch(T)
				var wSteps, wPass time.Duration
				for b.Loop() {
					t0 := time.Now()
					for t := range T {
						H, D := c.Heads, c.HeadDim
						if err := a.Forward(out[t*H*D:], qg[t*H*2*D:], k[t*row:], v[t*row:], 1, ctx+t, l, cache, sc); err != nil {
							b.Fatal(err)
						}
					}
					cache.Truncate(ctx)
					t1 := time.Now()
					if err := a.ForwardAsSteps(out, qg, k, v, T, ctx, l, cache, sc); err != nil {
						b.Fatal(err)
					}
					cache.Truncate(ctx)
					wSteps, wPass = wSteps+t1.Sub(t0), wPass+time.Since(t1)
				}
				us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
				b.ReportMetric(us(wSteps), "µs-steps")
				b.ReportMetric(us(wPass), "µs-pass")
				b.ReportMetric(float64(wSteps)/float64(wPass), "steps/pass")
			})
		}
	}
}
