package ternary

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/bonsai-go/sdk/internal/parallel"
)

// The matrix-vector benchmarks stream weights from memory as decode does: every
// iteration reads the next of several copies of the matrix, and the copies together
// span at least four times the last-level cache (up to a cap), so no iteration finds its
// weights in the cache. BenchmarkMemoryRead measures the machine's streaming-read
// bandwidth over the same buffer; the ratio of the two is the figure that matters.
//
// TERNARY_Q8_KERNEL=name runs the benchmarks on another available implementation
// (generic, avx2, avx512vnni, neon, neondot) instead of the one chosen at start-up.

// matVecShapes are the decode matrices of the 27B model (K×N): attention q/k/v/o, GDN
// qkv/z/gate/out, the FFN gate/up/down, the small GDN projections and the head.
var matVecShapes = [][2]int{
	{5120, 12288}, {5120, 10240}, {5120, 6144}, {5120, 17408},
	{6144, 5120}, {17408, 5120}, {5120, 1024}, {5120, 248320},
}

// lastLevelCache returns the size of the largest CPU cache in bytes (Linux sysfs), or
// 32 MiB when it cannot tell.
func lastLevelCache() int {
	best := 0
	for i := 0; i < 8; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/size", i))
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		mult := 1
		switch {
		case strings.HasSuffix(s, "K"):
			mult, s = 1<<10, strings.TrimSuffix(s, "K")
		case strings.HasSuffix(s, "M"):
			mult, s = 1<<20, strings.TrimSuffix(s, "M")
		}
		if v, err := strconv.Atoi(s); err == nil {
			best = max(best, v*mult)
		}
	}
	if best == 0 {
		best = 32 << 20
	}
	return best
}

var (
	arenaOnce sync.Once
	arena     []byte
)

// benchArena returns the shared weight buffer: 4× the last-level cache, at least
// 256 MiB and at most 2 GiB (512 MiB on 32-bit platforms), filled with PQ2_0 blocks
// (34-byte period from offset 0, so that every copy of a matrix placed at a multiple of
// its size is valid): random codes and scales of ordinary magnitude.
func benchArena(b *testing.B) []byte {
	benchArenaNoLog(b)
	b.Logf("weight arena %d MiB (last-level cache %d MiB)", len(arena)>>20, lastLevelCache()>>20)
	return arena
}

func benchArenaNoLog(b *testing.B) []byte {
	arenaOnce.Do(func() {
		limit := int(min(int64(2<<30), int64(math.MaxInt)/4)) // 2 GiB; 512 MiB on 32-bit
		size := min(max(4*lastLevelCache(), 256<<20), limit)
		size -= size % pq2BlockBytes
		arena = make([]byte, size)
		var wg sync.WaitGroup
		const parts = 8
		per := size / parts / 8 * 8
		for p := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(p), 99))
				end := (p + 1) * per
				if p == parts-1 {
					end = size / 8 * 8
				}
				for i := p * per; i < end; i += 8 {
					binary.LittleEndian.PutUint64(arena[i:], r.Uint64())
				}
			}()
		}
		wg.Wait()
		for i := 0; i+pq2BlockBytes <= size; i += pq2BlockBytes {
			// fp16 scales between 2⁻⁸ and 2⁻⁷, either sign.
			binary.LittleEndian.PutUint16(arena[i:], 0x1c00|uint16(arena[i+2])<<8&0x8000|uint16(arena[i+3])&0x3ff)
		}
	})
	return arena
}

// benchKernel switches to the implementation named by TERNARY_Q8_KERNEL, if any, and
// logs which one runs.
func benchKernel(b *testing.B) {
	if name := os.Getenv("TERNARY_Q8_KERNEL"); name != "" {
		found := false
		for _, k := range q8Kernels {
			if k.name == name {
				useQ8Kernel(k)
				found = true
			}
		}
		if !found {
			b.Fatalf("TERNARY_Q8_KERNEL=%s is not available here", name)
		}
	}
	b.Logf("Q8 kernel: %s", Q8Kernel())
}

// streamRows runs body over rows [0, n) on the model's worker pool (internal/parallel),
// split as the model splits a product: guided chunks (each a share of the rows left, at
// least grain), claimed in order from a shared counter (a worker that falls behind on a noisy
// machine takes fewer chunks). Each iteration passes the copy to read.
type streamRows struct {
	n, grain int
	pool     *parallel.Pool
	body     func(copy, lo, hi int)
	cp       int
	own      bool // the pool is this loop's, closed by stop
}

func newStreamRows(n, grain, threads int, body func(copy, lo, hi int)) *streamRows {
	return &streamRows{n: n, grain: grain, pool: parallel.NewPool(threads), body: body, own: true}
}

// newStreamRowsOn is newStreamRows on a pool shared with other loops, as the model
// shares one pool between all its products: two loops that alternate on pools of their
// own would each find their worker parked (a wake-up costs more than a small product).
func newStreamRowsOn(pool *parallel.Pool, n, grain int, body func(copy, lo, hi int)) *streamRows {
	return &streamRows{n: n, grain: grain, pool: pool, body: body}
}

// Run is the pool's loop body.
func (s *streamRows) Run(lo, hi int) { s.body(s.cp, lo, hi) }

func (s *streamRows) run(cp int) {
	s.cp = cp
	s.pool.For(s.n, s.grain, s)
}

func (s *streamRows) stop() {
	if s.own {
		s.pool.Close()
	}
}

// productGrain is the fewest rows per chunk of the model's product loops (bonsai's CPU
// backend), so the benchmarks split a matrix as a decode step does.
const productGrain = 16

// benchStream times body over rotating copies of a matrix of n rows of rb bytes and
// reports the weight bytes read per second.
func benchStream(b *testing.B, n, rb, threads int, body func(w []byte, lo, hi int)) {
	ar := benchArena(b)
	size := n * rb
	copies := max(1, len(ar)/size)
	s := newStreamRows(n, productGrain, threads, func(cp, lo, hi int) {
		body(ar[cp*size:(cp+1)*size], lo, hi)
	})
	defer s.stop()
	b.SetBytes(int64(size))
	cp := 0
	c0 := processCPUSeconds()
	var rates []float64
	for b.Loop() {
		t0 := time.Now()
		s.run(cp)
		rates = append(rates, float64(size)/time.Since(t0).Seconds()/1e9)
		if cp++; cp == copies {
			cp = 0
		}
	}
	reportStream(b, float64(size), c0, rates)
	if blk := streamBlockBytes(rb); blk > 0 {
		b.ReportMetric(medianOf(rates)/float64(blk), "Gblk/s")
	}
}

// streamBlockBytes returns the block size of rows of rb bytes: 34 (PQ2_0) or 28
// (PTQ1_0), whichever divides rb evenly (PQ2_0 first).
func streamBlockBytes(rb int) int {
	switch {
	case rb%pq2BlockBytes == 0 && rb%ptq1BlockBytes != 0:
		return pq2BlockBytes
	case rb%ptq1BlockBytes == 0 && rb%pq2BlockBytes != 0:
		return ptq1BlockBytes
	}
	return 0
}

// reportStream reports the rate of a streaming benchmark that read size bytes per
// iteration: "GB/s", the median of the iterations' rates (the machines these run on are
// shared, and a mean over b.N iterations moves with every neighbour's burst; the MB/s
// column of SetBytes is the mean), and "cpu": the process's CPU seconds per wall second
// since c0 (about T when the T threads had their cores to themselves; less on a shared
// machine, where a run with less than its share of the cores is not a measure of the
// kernel).
func reportStream(b *testing.B, size, c0 float64, rates []float64) {
	el := b.Elapsed().Seconds()
	b.ReportMetric(medianOf(rates), "GB/s")
	b.ReportMetric((processCPUSeconds()-c0)/el, "cpu")
}

func BenchmarkMatVec(b *testing.B) {
	benchKernel(b)
	for _, f := range []Format{PQ2_0, PTQ1_0} {
		for _, sh := range matVecShapes {
			k, n := sh[0], sh[1]
			for _, threads := range []int{1, 2} {
				name := fmt.Sprintf("%dx%d/threads=%d", k, n, threads)
				if f == PTQ1_0 {
					name = "PTQ1_0/" + name
				}
				b.Run(name, func(b *testing.B) {
					r := rand.New(rand.NewPCG(1, 2))
					xf := make([]float32, k)
					for i := range xf {
						xf[i] = float32(r.NormFloat64())
					}
					x := NewQ8(k)
					x.Quantize(xf)
					y := make([]float32, n)
					// Any bytes are valid PTQ1_0 trits; the arena's random scales
					// do not change the speed.
					benchStream(b, n, f.RowBytes(k), threads, func(w []byte, lo, hi int) {
						MatVecQ8Range(f, w, k, x, y, lo, hi)
					})
				})
			}
		}
	}
}

// BenchmarkMatVecLoads is the loads-only twin of BenchmarkMatVec: the same copies, row
// chunks and threads, but each chunk is only xor-reduced with the widest streaming
// reader. A matrix shape that falls short of BenchmarkMemoryRead here is limited by the
// access pattern (chunking, synchronisation), not by the kernel's instructions.
func BenchmarkMatVecLoads(b *testing.B) {
	rd := memReaders[len(memReaders)-1]
	b.Logf("reader: %s", rd.name)
	for _, sh := range matVecShapes {
		k, n := sh[0], sh[1]
		rb := PQ2_0.RowBytes(k)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%dx%d/threads=%d", k, n, threads), func(b *testing.B) {
				var sink [64]atomic.Uint64
				benchStream(b, n, rb, threads, func(w []byte, lo, hi int) {
					p := w[lo*rb : hi*rb]
					m := len(p) / rd.align * rd.align
					sink[lo%64].Store(rd.read(&p[0], m))
				})
			})
		}
	}
}

// BenchmarkMemoryRead measures streaming-read bandwidth: every iteration xor-reduces
// the whole weight arena (≥ 4× the last-level cache) with the widest SIMD reader,
// split in 1 MiB chunks over T goroutines.
func BenchmarkMemoryRead(b *testing.B) {
	rd := memReaders[len(memReaders)-1]
	b.Logf("reader: %s", rd.name)
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			ar := benchArena(b)
			const chunk = 1 << 20
			n := len(ar) / chunk
			var sink [64]atomic.Uint64
			benchStreamRaw(b, n, chunk, threads, func(lo, hi int) {
				sink[lo%64].Store(rd.read(&ar[lo*chunk], (hi-lo)*chunk))
			})
		})
	}
}

// benchStreamRaw is benchStream over the whole arena in fixed chunks (no copies).
func benchStreamRaw(b *testing.B, n, chunk, threads int, body func(lo, hi int)) {
	s := newStreamRows(n, 1, threads, func(_, lo, hi int) { body(lo, hi) })
	defer s.stop()
	size := int64(n) * int64(chunk)
	b.SetBytes(size)
	c0 := processCPUSeconds()
	var rates []float64
	for b.Loop() {
		t0 := time.Now()
		s.run(0)
		rates = append(rates, float64(size)/time.Since(t0).Seconds()/1e9)
	}
	reportStream(b, float64(size), c0, rates)
}

// BenchmarkQ8Kernel measures each implementation's compute rate with the weights in
// the L2 cache (one core): the ceiling a kernel could reach if memory were free. Both
// formats run the same matrix (the PTQ1_0 one its transcode); "Gblk/s", blocks of 128
// weights per second, compares them (GB/s counts each format's own bytes).
func BenchmarkQ8Kernel(b *testing.B) {
	for _, kern := range q8Kernels {
		for _, f := range []Format{PQ2_0, PTQ1_0} {
			for _, k := range []int{5120, 17408} {
				b.Run(fmt.Sprintf("%s/%s/K=%d", kern.name, f, k), func(b *testing.B) {
					r := rand.New(rand.NewPCG(1, 2))
					n := (512 << 10) / PQ2_0.RowBytes(k)
					w := randPTQ1(r, k, n, func() uint16 { return 0x2000 })
					if f == PQ2_0 {
						w = toPQ2(b, w, k, n)
					}
					xf := make([]float32, k)
					for i := range xf {
						xf[i] = float32(r.NormFloat64())
					}
					x := NewQ8(k)
					x.Quantize(xf)
					y := make([]float32, n)
					withKernel(kern, func() {
						b.SetBytes(int64(len(w)))
						for b.Loop() {
							MatVecQ8Range(f, w, k, x, y, 0, n)
						}
					})
					el := b.Elapsed().Seconds()
					b.ReportMetric(float64(len(w))*float64(b.N)/el/1e9, "GB/s")
					b.ReportMetric(float64(n*k/BlockSize)*float64(b.N)/el/1e9, "Gblk/s")
				})
			}
		}
	}
}

// toPQ2 returns the PQ2_0 transcode of the PTQ1_0 matrix w.
func toPQ2(tb testing.TB, w []byte, k, n int) []byte {
	pq := make([]byte, n*PQ2_0.RowBytes(k))
	if err := Transcode(pq, PQ2_0, w, PTQ1_0); err != nil {
		tb.Fatal(err)
	}
	return pq
}

// matMulShapes are the prefill benchmark matrices of the 27B model (K×N): the FFN
// gate/up, the FFN down and the GDN qkv.
var matMulShapes = [][2]int{{5120, 17408}, {17408, 5120}, {5120, 10240}}

// BenchmarkMatMulQ8 measures the batched (prefill) product: t vectors per weight read on
// T goroutines, which claim chunks of rows as the model's worker pool does (about an
// eighth of the rows each). It reports the int8 multiply-adds per second ("GMAC/s",
// t·K·N per product) and the equivalent matrix-vector throughput, t × weight bytes per
// second ("GB/s-equiv"), comparable with BenchmarkQ8Kernel's in-cache rate. The matrix
// is not rotated through copies: at t = 64 a product reads its weights at well under
// 1 GB/s, so where they come from hardly matters.
func BenchmarkMatMulQ8(b *testing.B) {
	benchKernel(b)
	for _, f := range []Format{PQ2_0, PTQ1_0} {
		for _, sh := range matMulShapes {
			k, n := sh[0], sh[1]
			if f == PTQ1_0 && k != 5120 || f == PTQ1_0 && n != 17408 {
				continue // one PTQ1_0 shape: its panels are transcoded, then the same kernel runs
			}
			for _, t := range []int{64} {
				for _, threads := range []int{1, 2} {
					name := fmt.Sprintf("%dx%d/t=%d/threads=%d", k, n, t, threads)
					if f == PTQ1_0 {
						name = "PTQ1_0/" + name
					}
					b.Run(name, func(b *testing.B) { benchMatMul(b, f, k, n, t, threads) })
				}
			}
		}
	}
}

var benchHuge = true

func benchMatMul(b *testing.B, f Format, k, n, t, threads int) {
	r := rand.New(rand.NewPCG(1, 2))
	w := randPQ2(r, k, n, func() uint16 { return 0x2000 })
	if benchHuge {
		w = append(benchAlloc(len(w))[:0], w...)
	}
	if f == PTQ1_0 {
		tq := make([]byte, n*PTQ1_0.RowBytes(k))
		for i := range n {
			var codes [BlockSize]uint8
			for bl := range k / BlockSize {
				src := w[i*PQ2_0.RowBytes(k)+bl*pq2BlockBytes:]
				h := UnpackPQ2_0(&codes, src)
				for j := range codes {
					codes[j] = min(codes[j], 2)
				}
				if err := PackPTQ1_0(tq[i*PTQ1_0.RowBytes(k)+bl*ptq1BlockBytes:], &codes, h); err != nil {
					b.Fatal(err)
				}
			}
		}
		w = tq
		if benchHuge {
			w = append(benchAlloc(len(w))[:0], w...)
		}
	}
	xf := make([]float32, k*t)
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	x := NewQ8Batch(k, t)
	x.Quantize(xf, t)
	y := make([]float32, n*t)
	s := newStreamRows(n, productGrain, threads, func(_, lo, hi int) {
		MatMulQ8Range(f, w, k, n, x, t, y, lo, hi)
	})
	defer s.stop()
	b.SetBytes(int64(len(w)))
	c0 := processCPUSeconds()
	for b.Loop() {
		s.run(0)
	}
	el := b.Elapsed().Seconds()
	b.ReportMetric(float64(k)*float64(n)*float64(t)*float64(b.N)/el/1e9, "GMAC/s")
	b.ReportMetric(float64(PQ2_0.RowBytes(k)*n)*float64(t)*float64(b.N)/el/1e9, "GB/s-equiv")
	b.ReportMetric((processCPUSeconds()-c0)/el, "cpu")
}

// BenchmarkMatMulQ8Batch measures the batched product at the batch sizes of concurrent
// decode streams, where (unlike prefill) the weights must come from memory: every
// iteration runs the product once over each copy of a 5120×17408 PQ2_0 matrix (the FFN
// gate/up) in the weight arena (≥ 4× the last-level cache), like one decode step over
// a model of the arena's size, on T goroutines claiming rows as the model's pool does.
// It reports the weight bytes read per second ("GB/s") and the vectors multiplied by
// every copy per second ("vectors/s": t per iteration; for a model of M bytes,
// vectors/s × arena/M is the step rate's tokens/s). "mode=matvec" runs each vector's
// [MatVecQ8Range] over panels of rows small enough for the L2 cache instead (read from
// memory once per panel, then from the cache for each further vector): the alternative
// to narrow tiles that this benchmark weighs them against; "mode=tiles" runs
// [MatMulQ8TilesRange] over tiles made ahead for every copy (the weight bytes it counts
// are still the PQ2_0 copy's; it reads 6% more).
func BenchmarkMatMulQ8Batch(b *testing.B) {
	benchKernel(b)
	const k, n = 5120, 17408
	rb := PQ2_0.RowBytes(k)
	const panelBytes = 256 << 10
	for _, mode := range []string{"matmul", "tiles", "matvec"} {
		for _, t := range []int{1, 2, 4, 8} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("mode=%s/%dx%d/t=%d/threads=%d", mode, k, n, t, threads), func(b *testing.B) {
					ar := benchArena(b)
					size := n * rb
					copies := len(ar) / size
					r := rand.New(rand.NewPCG(1, 2))
					xf := make([]float32, k*t)
					for i := range xf {
						xf[i] = float32(r.NormFloat64())
					}
					x := NewQ8Batch(k, t)
					x.Quantize(xf, t)
					y := make([]float32, n*t)
					var tiles []*Tiles
					if mode == "tiles" {
						tiles = make([]*Tiles, copies)
						for cp := range tiles {
							tl, err := NewTiles(PQ2_0, k, n)
							if err != nil {
								b.Fatal(err)
							}
							tl.Fill(ar[cp*size:(cp+1)*size], 0, n)
							tiles[cp] = tl
						}
					}
					s := newStreamRows(n, productGrain, threads, func(cp, lo, hi int) {
						w := ar[cp*size : (cp+1)*size]
						switch mode {
						case "matmul":
							MatMulQ8Range(PQ2_0, w, k, n, x, t, y, lo, hi)
							return
						case "tiles":
							MatMulQ8TilesRange(PQ2_0, w, tiles[cp], k, n, x, t, y, lo, hi)
							return
						}
						for p0 := lo; p0 < hi; p0 += panelBytes / rb {
							p1 := min(p0+panelBytes/rb, hi)
							for v := range t {
								MatVecQ8Range(PQ2_0, w, k, x.Row(v), y[v*n:(v+1)*n], p0, p1)
							}
						}
					})
					defer s.stop()
					b.SetBytes(int64(copies * size))
					c0 := processCPUSeconds()
					for b.Loop() {
						for cp := range copies {
							s.run(cp)
						}
					}
					el := b.Elapsed().Seconds()
					b.ReportMetric(float64(copies*size)*float64(b.N)/el/1e9, "GB/s")
					b.ReportMetric(float64(t*b.N)/el, "vectors/s")
					b.ReportMetric((processCPUSeconds()-c0)/el, "cpu")
				})
			}
		}
	}
}

// BenchmarkQ8TileKernel measures each tiled (prefill) kernel alone on one core, at its
// widest tile width and at some narrower ones (tv): one repacked tile of rows (as many row pairs as the kernel
// takes) run over 72 vectors whose activations sit in the L2 cache, with no repacking
// and no memory traffic for the weights: the ceiling of BenchmarkMatMulQ8.
func BenchmarkQ8TileKernel(b *testing.B) {
	for _, kern := range q8Kernels {
		var width int
		withKernel(kern, func() { width = q8TileWidth() })
		for _, tv := range []int{width, 4, 2, 1} {
			for _, k := range []int{5120, 17408} {
				b.Run(fmt.Sprintf("%s/K=%d/tv=%d", kern.name, k, tv), func(b *testing.B) {
					benchTileKernel(b, kern, k, tv)
				})
			}
		}
	}
}

func benchTileKernel(b *testing.B, kern q8Kernel, k, tv int) {
	withKernel(kern, func() {
		const t = q8BatchMax
		r := rand.New(rand.NewPCG(1, 2))
		rp := q8TilePairs()
		rows := 2 * rp
		w := randPQ2(r, k, rows, func() uint16 { return 0x2000 })
		xf := make([]float32, k*t)
		for i := range xf {
			xf[i] = float32(r.NormFloat64())
		}
		x := NewQ8Batch(k, t)
		x.Quantize(xf, t)
		y := make([]float32, rows*t)
		nb := k / BlockSize
		ng := nb / 8
		buf := make([]byte, ng*rp*q8PairBytes)
		q8RepackTile(buf, PQ2_0, w, PQ2_0.RowBytes(k), 0, rows, 0, ng)
		facc := make([]float32, rp*t*16)
		descs := make([]q8TileDesc, t/tv)
		tb := q8TileBytes(k)
		for s := range t {
			dc := &descs[s/tv]
			dc.act[s%tv] = &x.tq[s*tb]
			dc.d[s%tv] = &x.d[s*nb]
			dc.sum[s%tv] = &x.sum[s*nb]
			dc.y[s%tv] = &y[s*rows]
			dc.pf = uintptr(unsafe.Pointer(&w[0]))
		}
		for b.Loop() {
			a := q8TileArgs{w: &buf[0], ng: ng, facc: &facc[0], tiles: t / tv, desc: &descs[0], flags: q8First | q8Last, pfStep: 64}
			q8Tile(rp, tv, &a)
		}
		b.ReportMetric(float64(k)*float64(rows)*float64(t)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
	})
}

// BenchmarkMatVecPaired is for noisy, shared machines, where bandwidth drifts between
// one benchmark and the next: every iteration runs the matrix-vector product over one
// copy and the loads-only reader (the widest streaming reader, same row chunks and
// threads) over the next copy, in alternating order, and reports the medians of the
// two rates and of their per-iteration ratio ("ratio" = matvec / loads). "mv-cpu" and
// "ld-cpu" are the process's CPU seconds per wall second during each (median; 1 per
// busy thread when nothing else competes for the cores; NaN where unknown), which tell a
// starved run from a slow kernel.
func BenchmarkMatVecPaired(b *testing.B) {
	benchKernel(b)
	rd := memReaders[len(memReaders)-1]
	for _, sh := range matVecShapes {
		k, n := sh[0], sh[1]
		rb := PQ2_0.RowBytes(k)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%dx%d/threads=%d", k, n, threads), func(b *testing.B) {
				ar := benchArena(b)
				r := rand.New(rand.NewPCG(1, 2))
				xf := make([]float32, k)
				for i := range xf {
					xf[i] = float32(r.NormFloat64())
				}
				x := NewQ8(k)
				x.Quantize(xf)
				y := make([]float32, n)
				size := n * rb
				copies := max(2, len(ar)/size)
				if len(ar)/size < 2 {
					b.Skip("arena holds fewer than two copies")
				}
				var sink [64]atomic.Uint64
				pool := parallel.NewPool(threads)
				defer pool.Close()
				mv := newStreamRowsOn(pool, n, productGrain, func(cp, lo, hi int) {
					MatVecQ8Range(PQ2_0, ar[cp*size:(cp+1)*size], k, x, y, lo, hi)
				})
				defer mv.stop()
				ld := newStreamRowsOn(pool, n, productGrain, func(cp, lo, hi int) {
					p := ar[cp*size+lo*rb : cp*size+hi*rb]
					sink[lo%64].Store(rd.read(&p[0], len(p)/rd.align*rd.align))
				})
				defer ld.stop()
				var rm, rl, ratio, um, ul []float64
				cpu := processCPUSeconds
				cp := 0
				b.SetBytes(int64(2 * size))
				for b.Loop() {
					c2 := (cp + 1) % copies
					var tm, tl time.Duration
					var cm, cl float64
					if len(rm)%2 == 0 {
						c0 := cpu()
						t0 := time.Now()
						mv.run(cp)
						t1 := time.Now()
						c1 := cpu()
						ld.run(c2)
						tm, tl = t1.Sub(t0), time.Since(t1)
						cm, cl = c1-c0, cpu()-c1
					} else {
						c0 := cpu()
						t0 := time.Now()
						ld.run(cp)
						t1 := time.Now()
						c1 := cpu()
						mv.run(c2)
						tl, tm = t1.Sub(t0), time.Since(t1)
						cl, cm = c1-c0, cpu()-c1
					}
					um = append(um, cm/tm.Seconds())
					ul = append(ul, cl/tl.Seconds())
					rm = append(rm, float64(size)/tm.Seconds()/1e9)
					rl = append(rl, float64(size)/tl.Seconds()/1e9)
					ratio = append(ratio, tl.Seconds()/tm.Seconds())
					cp = (cp + 2) % copies
				}
				b.ReportMetric(medianOf(rm), "matvec-GB/s")
				b.ReportMetric(medianOf(rl), "loads-GB/s")
				b.ReportMetric(medianOf(ratio), "ratio")
				b.ReportMetric(medianOf(um), "mv-cpu")
				b.ReportMetric(medianOf(ul), "ld-cpu")
			})
		}
	}
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkQ8Quantize measures quantising one activation vector (done once per vector
// and shared by every matrix that reads it).
func BenchmarkQ8Quantize(b *testing.B) {
	for _, k := range []int{5120, 17408} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			xf := make([]float32, k)
			for i := range xf {
				xf[i] = float32(r.NormFloat64())
			}
			x := NewQ8(k)
			b.SetBytes(int64(4 * k))
			for b.Loop() {
				x.Quantize(xf)
			}
		})
	}
}

// BenchmarkPTQ1Ratio measures PTQ1_0 against PQ2_0 on one core with the two formats'
// products interleaved, so that a shared machine's bursts hit both alike: each
// iteration runs one PQ2_0 and one PTQ1_0 product and times each. It reports blocks of
// 128 weights per second for each (best iteration) and the PTQ1_0/PQ2_0 ratio of the
// best and of the median iterations. "cache": the weights in L2 (the instruction
// ceilings); "memory": a fresh part of the arena (4× the last-level cache) each time,
// the memory-bound case where PTQ1_0's 18% fewer bytes count; "batch": the prefill
// product of 64 vectors, weights in cache.
func BenchmarkPTQ1Ratio(b *testing.B) {
	const k = 5120
	r := rand.New(rand.NewPCG(5, 6))
	xf := make([]float32, 64*k)
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	x := NewQ8Batch(k, 64)
	x.Quantize(xf, 64)
	for _, mode := range []string{"cache", "memory", "batch"} {
		b.Run(mode, func(b *testing.B) {
			n, t := 768, 0
			switch mode {
			case "memory":
				n = 17408
			case "batch":
				n, t = 1536, 64
			}
			size := [2]int{n * PQ2_0.RowBytes(k), n * PTQ1_0.RowBytes(k)}
			var ar []byte
			if mode == "memory" {
				ar = benchArena(b)
			} else {
				w := randPTQ1(r, k, n, func() uint16 { return 0x2000 })
				ar = append(toPQ2(b, w, k, n), w...)
			}
			copies := max(1, len(ar)/(size[0]+size[1]))
			y := make([]float32, max(1, t)*n)
			var d [2][]float64
			c := 0
			for b.Loop() {
				base := c * (size[0] + size[1])
				for i, f := range []Format{PQ2_0, PTQ1_0} {
					w := ar[base+i*size[0]:]
					t0 := time.Now()
					if t > 0 {
						MatMulQ8Range(f, w, k, n, x, t, y, 0, n)
					} else {
						MatVecQ8Range(f, w, k, x.Row(0), y, 0, n)
					}
					d[i] = append(d[i], time.Since(t0).Seconds())
				}
				c = (c + 1) % copies
			}
			blocks := float64(n * k / BlockSize * max(1, t))
			var best, med [2]float64
			for i := range d {
				best[i], med[i] = blocks/slices.Min(d[i])/1e9, blocks/medianOf(d[i])/1e9
			}
			b.ReportMetric(best[0], "PQ2_0-Gblk/s")
			b.ReportMetric(best[1], "PTQ1_0-Gblk/s")
			b.ReportMetric(best[1]/best[0], "ratio-best")
			b.ReportMetric(med[1]/med[0], "ratio-median")
		})
	}
}
