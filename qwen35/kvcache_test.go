package qwen35_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/x448/float16"
)

// TestKVCacheFloat16Exhaustive stores every finite half value and reads it back: the
// encoder must keep representable values and the decoder must widen them exactly (NaNs
// stay NaN).
func TestKVCacheFloat16Exhaustive(t *testing.T) {
	const dim = 256
	c := qwen35.NewKVCache(1, dim, backend.KVFloat16, 256)
	want := make([]float32, 1<<16)
	for b := range want {
		want[b] = float16.Frombits(uint16(b)).Float32()
	}
	for p := 0; p < 256; p++ {
		require.NoError(t, c.Append(want[p*dim:(p+1)*dim], want[p*dim:(p+1)*dim]))
	}
	k, v := make([]float32, dim), make([]float32, dim)
	for p := 0; p < 256; p++ {
		c.Row(p, k, v)
		for i := range k {
			w := want[p*dim+i]
			if math.IsNaN(float64(w)) {
				require.True(t, math.IsNaN(float64(k[i])), "bits %#04x", p*dim+i)
				continue
			}
			require.Equal(t, math.Float32bits(w), math.Float32bits(k[i]), "bits %#04x", p*dim+i)
			require.Equal(t, math.Float32bits(w), math.Float32bits(v[i]), "bits %#04x", p*dim+i)
		}
	}
	// Rounding to nearest: 1 + 2^−11 is a tie and goes to even (1), 1 + 3·2^−12 up.
	c.Reset()
	x := make([]float32, dim)
	x[0], x[1] = 1+1.0/2048, 1+3.0/4096
	require.NoError(t, c.Append(x, x))
	c.Row(0, k, v)
	assert.Equal(t, float32(1), k[0])
	assert.Equal(t, float32(1+1.0/1024), k[1])
}

// TestKVCacheInt8 checks the block quantisation against its definition, including a head
// width that is not a multiple of the 32-value block.
func TestKVCacheInt8(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	for _, dim := range []int{64, 40, 7} {
		heads := 3
		c := qwen35.NewKVCache(heads, dim, backend.KVInt8, 50)
		rows := make([][]float32, 20)
		for p := range rows {
			rows[p] = randVec(rng, heads*dim, 2)
			if p == 3 {
				clear(rows[p][:dim]) // an all-zero block
			}
			require.NoError(t, c.Append(rows[p], rows[p]))
		}
		k, v := make([]float32, heads*dim), make([]float32, heads*dim)
		for p, row := range rows {
			c.Row(p, k, v)
			for h := 0; h < heads; h++ {
				for b0 := 0; b0 < dim; b0 += 32 {
					b1 := min(b0+32, dim)
					var amax float64
					for i := b0; i < b1; i++ {
						amax = math.Max(amax, math.Abs(float64(row[h*dim+i])))
					}
					for i := b0; i < b1; i++ {
						x := float64(row[h*dim+i])
						want := 0.0
						if amax > 0 {
							want = math.Round(x/(amax/127)) * (amax / 127)
						}
						require.InDelta(t, want, k[h*dim+i], 1e-6*amax+1e-30, "dim %d pos %d head %d i %d", dim, p, h, i)
						require.LessOrEqual(t, math.Abs(float64(v[h*dim+i])-x), amax/254*(1+1e-5))
					}
				}
			}
		}
	}
}

func TestKVCacheFull(t *testing.T) {
	for _, p := range []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8, backend.KVQ4} {
		c := qwen35.NewKVCache(2, 8, p, 37)
		row := make([]float32, 16)
		for i := 0; i < 37; i++ {
			require.NoError(t, c.Append(row, row))
		}
		err := c.Append(row, row)
		require.ErrorIs(t, err, qwen35.ErrContextFull)
		assert.Contains(t, err.Error(), "37")
		assert.Equal(t, 37, c.Len())
		assert.Equal(t, 37, c.MaxLen())
		assert.Equal(t, 37, c.Cap(), "pages stop at MaxLen")
		require.Error(t, c.Append(row[:3], row))
	}
}

// TestKVCacheGrowsWithUse: memory follows the length, not MaxLen.
func TestKVCacheGrowsWithUse(t *testing.T) {
	const heads, dim, maxLen = 4, 256, 262144
	for _, tc := range []struct {
		p       backend.KVPrecision
		perSlot float64 // bytes per stored value
	}{{backend.KVFloat16, 2}, {backend.KVFloat32, 4}, {backend.KVInt8, 1.125}, {backend.KVQ4, 0.5625}} {
		c := qwen35.NewKVCache(heads, dim, tc.p, maxLen)
		assert.Zero(t, c.Bytes(), "nothing allocated up front")
		row := make([]float32, heads*dim)
		for i := 0; i < 10; i++ {
			require.NoError(t, c.Append(row, row))
		}
		rowBytes := 2 * heads * dim * tc.perSlot
		b := float64(c.Bytes())
		assert.LessOrEqual(t, b, 16*rowBytes, "%v after 10 positions", tc.p)
		assert.Less(t, b, 1e-3*maxLen*rowBytes)
		for i := 10; i < 5000; i++ {
			require.NoError(t, c.Append(row, row))
		}
		// Doubling pages: never more than twice what is used (plus the first page).
		assert.LessOrEqual(t, float64(c.Bytes()), 2*5000*rowBytes, tc.p.String())
		assert.GreaterOrEqual(t, float64(c.Bytes()), 5000*rowBytes, tc.p.String())
		c.Reset()
		assert.Zero(t, c.Len())
		assert.GreaterOrEqual(t, float64(c.Bytes()), 5000*rowBytes, "Reset keeps memory")
	}
}

func TestKVCacheReserveAppendNoAllocs(t *testing.T) {
	for _, p := range []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8, backend.KVQ4} {
		c := qwen35.NewKVCache(4, 64, p, 10000)
		c.Reserve(3000)
		assert.GreaterOrEqual(t, c.Cap(), 3000)
		row := make([]float32, 4*64)
		allocs := testing.AllocsPerRun(2, func() {
			c.Reset()
			for i := 0; i < 3000; i++ {
				if err := c.Append(row, row); err != nil {
					panic(err)
				}
			}
		})
		assert.Zero(t, allocs, p.String())
		c.Reserve(1 << 30)
		assert.Equal(t, 10000, c.Cap(), "Reserve stops at MaxLen")
	}
}

// TestKVCacheGrowthAllocations counts the heap allocations of every Append exactly
// (runtime.MemStats.Mallocs, not AllocsPerRun's rounded average): an Append that fits in
// the allocated pages allocates nothing, and one that adds a page allocates once (keys
// and values share it; an int8 cache adds its scales) — the page table is allocated with
// the cache and never moves.
//
// The counter is the process's, so the measurement runs on one P (as AllocsPerRun does:
// other goroutines then run only when this one yields), and an Append during which the
// runtime collected garbage or started an OS thread (7 allocations of its own) is left
// out; the page growths never are.
func TestKVCacheGrowthAllocations(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	tc := pprof.Lookup("threadcreate")
	for _, tc2 := range []struct {
		p         backend.KVPrecision
		perGrowth uint64
	}{{backend.KVFloat16, 1}, {backend.KVFloat32, 1}, {backend.KVInt8, 2}, {backend.KVQ4, 2}} {
		const maxLen = 3000 // pages of 16, 32, …, 1024, 1024, 952 (the last cut at MaxLen)
		c := qwen35.NewKVCache(2, 64, tc2.p, maxLen)
		row := make([]float32, 2*64)
		var ms runtime.MemStats
		runtime.GC()
		growths, skipped := 0, 0
		var within uint64
		for i := 0; i < maxLen; i++ {
			capBefore := c.Cap()
			th := tc.Count()
			runtime.ReadMemStats(&ms)
			before, gc := ms.Mallocs, ms.NumGC
			err := c.Append(row, row) // nothing else between the two readings
			runtime.ReadMemStats(&ms)
			n := ms.Mallocs - before
			require.NoError(t, err)
			if c.Cap() != capBefore {
				growths++
				assert.Equal(t, tc2.perGrowth, n, "%v: Append at %d (a new page)", tc2.p, i)
				continue
			}
			if ms.NumGC != gc || tc.Count() != th {
				skipped++
				continue
			}
			within += n
			if n != 0 {
				t.Errorf("%v: Append at %d allocated %d times within a page", tc2.p, i, n)
			}
		}
		assert.Equal(t, 8, growths, tc2.p.String())
		assert.Equal(t, maxLen, c.Cap(), tc2.p.String())
		assert.Less(t, skipped, 10, "appends left out")
		t.Logf("%v cache, %d appends: %d page growths of %d allocation(s) each; %d allocations in the other %d appends measured (%d left out)",
			tc2.p, maxLen, growths, tc2.perGrowth, within, maxLen-growths-skipped, skipped)
	}
}

func TestKVCacheCopyFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	for _, p := range []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8, backend.KVQ4} {
		t.Run(p.String(), func(t *testing.T) {
			const heads, dim = 2, 40
			a := qwen35.NewKVCache(heads, dim, p, 500)
			rows := make([][]float32, 300)
			for i := range rows {
				rows[i] = randVec(rng, heads*dim, 1)
			}
			for i := 0; i < 100; i++ {
				require.NoError(t, a.Append(rows[i], rows[i]))
			}
			// Copy into a cache of another shape and one with stale longer contents.
			for _, b := range []*qwen35.KVCache{
				qwen35.NewKVCache(1, 8, backend.KVFloat32, 7),
				func() *qwen35.KVCache {
					b := qwen35.NewKVCache(heads, dim, p, 500)
					for i := 0; i < 250; i++ {
						require.NoError(t, b.Append(rows[299-i], rows[i]))
					}
					return b
				}(),
			} {
				b.CopyFrom(a)
				assert.Equal(t, a.Len(), b.Len())
				assert.Equal(t, a.MaxLen(), b.MaxLen())
				assert.Equal(t, a.Precision(), b.Precision())
				// Diverge: a and b each take different rows.
				for i := 100; i < 150; i++ {
					require.NoError(t, a.Append(rows[i], rows[i]))
					require.NoError(t, b.Append(rows[i+150], rows[i+150]))
				}
				ka, va := make([]float32, heads*dim), make([]float32, heads*dim)
				kb, vb := make([]float32, heads*dim), make([]float32, heads*dim)
				for pos := 0; pos < 150; pos++ {
					a.Row(pos, ka, va)
					b.Row(pos, kb, vb)
					if pos < 100 {
						require.Equal(t, ka, kb, fmt.Sprint(pos))
						require.Equal(t, va, vb, fmt.Sprint(pos))
					} else {
						require.NotEqual(t, ka, kb, fmt.Sprint(pos))
					}
				}
				// Back to a's first 100 for the next round.
				c := qwen35.NewKVCache(heads, dim, p, 500)
				for i := 0; i < 100; i++ {
					require.NoError(t, c.Append(rows[i], rows[i]))
				}
				a.CopyFrom(c)
			}
		})
	}
}

// TestKVCacheQ4: each block of 32 values of a head comes back as (code − 8)·d with d the
// half nearest m/−8 (m the value of largest magnitude), the code the nearest integer
// clamped to [0, 15]: within |d|/2 of the value, and within |d| at the clamped end.
func TestKVCacheQ4(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 1))
	for _, dim := range []int{64, 40, 7} {
		heads := 3
		c := qwen35.NewKVCache(heads, dim, backend.KVQ4, 50)
		rows := make([][]float32, 20)
		for p := range rows {
			rows[p] = randVec(rng, heads*dim, 2)
			if p == 3 {
				clear(rows[p][:dim]) // an all-zero block
			}
			require.NoError(t, c.Append(rows[p], rows[p]))
		}
		k, v := make([]float32, heads*dim), make([]float32, heads*dim)
		for p, row := range rows {
			c.Row(p, k, v)
			require.Equal(t, k, v)
			for h := 0; h < heads; h++ {
				for b0 := 0; b0 < dim; b0 += 32 {
					b1 := min(b0+32, dim)
					var m float64
					for i := b0; i < b1; i++ {
						if x := float64(row[h*dim+i]); math.Abs(x) > math.Abs(m) {
							m = x
						}
					}
					d := float64(float16.Fromfloat32(float32(m / -8)).Float32())
					for i := b0; i < b1; i++ {
						x := float64(row[h*dim+i])
						want := 0.0
						if d != 0 {
							want = (math.Max(0, math.Min(15, math.Round(x/d)+8)) - 8) * d
						}
						require.InDelta(t, want, k[h*dim+i], 1e-6*math.Abs(m)+1e-30, "dim %d pos %d head %d i %d", dim, p, h, i)
						require.LessOrEqual(t, math.Abs(float64(k[h*dim+i])-x), math.Abs(d)*(1+1e-3), "dim %d pos %d i %d", dim, p, i)
					}
					if m != 0 {
						// The largest magnitude is code 0: −8·d, the half-rounded m.
						assert.InEpsilon(t, -8*d, float64(k[h*dim+b0 : h*dim+b1][indexOfMaxAbs(row[h*dim+b0:h*dim+b1])]), 1e-7)
					}
				}
			}
		}
		assert.Equal(t, int64(2*c.Cap()*heads*((dim+31)/32)*(16+2)), c.Bytes(), "dim %d: 16 code bytes and a half scale per block", dim)
	}
}

func indexOfMaxAbs(x []float32) int {
	best := 0
	for i := range x {
		if math.Abs(float64(x[i])) > math.Abs(float64(x[best])) {
			best = i
		}
	}
	return best
}
