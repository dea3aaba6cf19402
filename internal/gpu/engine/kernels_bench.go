package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/ternary"
)

// Bench is kernelcheck.Bench: each shape's matrix-vector product in the decode's
// kernel for its input width (mv_norm at 5120, mv_fwht at 6144, mv_swiglu at 17408) and
// the streaming read of as many bytes, each timed as the median of opt.Reps command
// buffers after a warm-up.
func Bench(b backend.Backend, opt BenchOptions) ([]Rate, error) {
	mb, ok := b.(*Backend)
	if !ok {
		return nil, errors.New("kernelcheck.Bench needs a backend of package metal")
	}
	if opt.Reps <= 0 {
		opt.Reps = 5
	}
	dev, err := mb.cfg.Device()
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	k := &checker{dev: dev, rng: rand.New(rand.NewPCG(opt.Seed, 0xbe7c)), libs: map[string]map[string]gpu.Pipeline{}}
	defer k.releaseAll()
	c, blk := realLike()
	e, err := k.engine(c, blk, []int{5120, 6144, 17408}, 128, 0)
	if err != nil {
		return nil, err
	}
	keep := len(k.bufs) // the engine's own (the signs)
	var out []Rate
	for _, s := range opt.Shapes {
		r := e.benchShape(s, opt.Reps)
		out = append(out, r)
		if opt.Log != nil {
			opt.Log(r)
		}
		for _, b := range k.bufs[keep:] { // a shape's buffers go before the next one's
			b.Release()
		}
		k.bufs = k.bufs[:keep]
	}
	return out, nil
}

func (e *ckEngine) benchShape(s Shape, reps int) Rate {
	k := e.k
	r := Rate{Shape: s, Reps: reps}
	var mode mvMode
	switch s.K {
	case 5120:
		mode = mvNorm
	case 6144:
		mode = mvFWHT
	case 17408:
		mode = mvSwiGLU
	default:
		r.Failure = fmt.Errorf("K %d: want 5120, 6144 or 17408", s.K)
		return r
	}
	// Random rows, 512 of them repeated: the values do not change the time, and drawing
	// 1.3 G random codes for the output matrix would take longer than timing it.
	seed := k.pq(min(s.N, 512), s.K)
	w := make([]byte, s.N*ternary.PQ2_0.RowBytes(s.K))
	for off := 0; off < len(w); off += len(seed) {
		copy(w[off:], seed)
	}
	r.Bytes = int64(len(w))
	wr, err := e.upload(w)
	if err != nil {
		r.Failure = err
		return r
	}
	y, err := k.newBuf(4*s.N, nil)
	if err != nil {
		r.Failure = err
		return r
	}
	var in mvIn
	for _, p := range []*ref{&in.in0, &in.in1, &in.gain, &in.xout, &in.hout} {
		if *p, err = k.putF(k.floats(s.K, 1)); err != nil {
			r.Failure = err
			return r
		}
	}
	in.signs = e.signsOf(s.K)
	if r.Time, err = k.median(reps, func(cb gpu.CommandBuffer) { e.mv(cb, mode, s.K, in, mvSet{wr, s.N, ref{y, 0}}) }); err != nil {
		r.Failure = fmt.Errorf("product: %w", err)
		return r
	}
	// The streaming read of the same bytes (in whole float4s).
	n4 := len(w) / 16
	groups := min(1024, (n4+255)/256) // enough threadgroups to fill a GPU, none idle
	sums, err := k.newBuf(4*groups, nil)
	if err != nil {
		r.Failure = err
		return r
	}
	if r.Stream, err = k.median(reps, func(cb gpu.CommandBuffer) { e.streamRead(cb, wr.buf, sums, n4, groups) }); err != nil {
		r.Failure = fmt.Errorf("stream read: %w", err)
	}
	return r
}

// median runs rec in a command buffer of its own once to warm up, then reps times, and
// returns the median wall time.
func (k *checker) median(reps int, rec func(cb gpu.CommandBuffer)) (time.Duration, error) {
	if _, err := k.run(rec); err != nil {
		return 0, err
	}
	ts := make([]time.Duration, reps)
	for i := range ts {
		t, err := k.run(rec)
		if err != nil {
			return 0, err
		}
		ts[i] = t
	}
	slices.Sort(ts)
	return ts[reps/2], nil
}
