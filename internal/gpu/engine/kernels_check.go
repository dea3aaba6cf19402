package engine

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/x448/float16"
)

// RunChecks is kernelcheck.Run (the doc is there): it opens the backend's device,
// compiles the library and runs every kernel against its Go reference, at small odd
// shapes and, with opt.Real, at the 27B model's. It lives here because the checks drive
// the engine's own dispatch helpers, so that they exercise the host's argument layouts.
// The tolerances stated in kernelcheck.Run's doc are the tol constants below.
func RunChecks(b backend.Backend, opt Options) ([]Check, error) {
	mb, ok := b.(*Backend)
	if !ok {
		return nil, errors.New("kernelcheck.Run needs a backend of package metal")
	}
	dev, err := mb.cfg.Device()
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	k := &checker{dev: dev, rng: rand.New(rand.NewPCG(opt.Seed, 0x5eed)), libs: map[string]map[string]gpu.Pipeline{}, log: opt.Log}
	defer k.releaseAll()
	if err := k.smallChecks(); err != nil {
		return k.out, err
	}
	if opt.Real {
		if err := k.realChecks(); err != nil {
			return k.out, err
		}
	}
	return k.out, nil
}

// checker holds a device and the pipelines compiled per geometry.
type checker struct {
	dev  gpu.Device
	rng  *rand.Rand
	libs map[string]map[string]gpu.Pipeline
	bufs []gpu.Buffer
	out  []Check
	log  func(Check)
}

func (k *checker) releaseAll() {
	for _, b := range k.bufs {
		b.Release()
	}
	k.bufs = nil
}

func (k *checker) add(c Check) {
	k.out = append(k.out, c)
	if k.log != nil {
		k.log(c)
	}
}

// newBuf allocates a device buffer of n bytes holding b's bytes when b is given.
func (k *checker) newBuf(n int, b []byte) (gpu.Buffer, error) {
	buf, err := k.dev.NewBuffer(max(n, 16))
	if err != nil {
		return nil, err
	}
	k.bufs = append(k.bufs, buf)
	copy(buf.Contents(), b)
	return buf, nil
}

// ckEngine is an engine over random tensors of a configuration: the same dispatch
// helpers as a loaded model, so the checks exercise the host's argument layouts too.
type ckEngine struct {
	*engine
	k    *checker
	rots map[int]*hadamard.Rotation
	// ptq1: the checks' matrices go to the device as PTQ1_0 (else PQ2_0).
	ptq1 bool
}

// asPTQ1 returns the engine with its checks' matrices stored as PTQ1_0.
func (e *ckEngine) asPTQ1() *ckEngine {
	c := *e
	c.ptq1 = true
	return &c
}

// format is the format the checks' matrices are stored in on the device.
func (e *ckEngine) format() ternary.Format {
	if e.ptq1 {
		return ternary.PTQ1_0
	}
	return ternary.PQ2_0
}

// encode returns a PQ2_0 matrix's bytes in the engine's format.
func (e *ckEngine) encode(w []byte) ([]byte, error) {
	if !e.ptq1 {
		return w, nil
	}
	t := make([]byte, len(w)/34*28)
	return t, ternary.Transcode(t, ternary.PTQ1_0, w, ternary.PQ2_0)
}

// upload puts a PQ2_0 matrix on the device in the engine's format (a PTQ1_0 transcode
// holds the same values, so the references keep reading the PQ2_0 bytes).
func (e *ckEngine) upload(w []byte) (ref, error) {
	t, err := e.encode(w)
	if err != nil {
		return ref{}, err
	}
	r, err := e.k.put(t)
	if err == nil && e.ptq1 {
		if e.engine.ptq1 == nil {
			e.engine.ptq1 = map[ref]bool{}
		}
		e.engine.ptq1[r] = true
	}
	return r, err
}

func (k *checker) engine(c qwen35.Config, blk int, widths []int, maxGroups, chunkCap int) (*ckEngine, error) {
	geo, err := newGeometry(&c, blk)
	if err != nil {
		return nil, err
	}
	geo = geo.withProducts(widths, blk, chunkCap)
	key := fmt.Sprint(geo.macros(), geo.mv)
	p := k.libs[key]
	if p == nil {
		if p, err = compile(k.dev, geo); err != nil {
			return nil, err
		}
		k.libs[key] = p
	}
	e := &engine{
		b: &Backend{cfg: Config{MaxGroups: maxGroups}}, dev: k.dev, cfg: &c, geo: geo, p: p, blk: blk,
		scale: float32(1 / math.Sqrt(float64(blk))), eps: float32(c.RMSEpsilon), fused: geo.fusedGDN,
		chunkCap: chunkCap, layers: make([]layerRefs, c.Layers), att: qwen35.NewAttention(&c), sizes: checkSizes(&c),
		plan: &qwen35.Plan{Embedding: &qwen35.Matrix{Format: ternary.PQ2_0}, EmbeddingWidth: c.Embedding},
	}
	for i := range e.layers {
		if c.IsAttention(i) {
			e.layers[i].mixer = qwen35.MixerAttention
		}
	}
	ce := &ckEngine{engine: e, k: k, rots: map[int]*hadamard.Rotation{}}
	total := 0
	for _, w := range widths {
		total += w
	}
	signs := make([]float32, 0, total)
	e.signOff = map[int]int{}
	for _, w := range widths {
		s := make([]int8, w)
		for i := range s {
			s[i] = int8(1 - 2*k.rng.IntN(2))
		}
		r, err := hadamard.NewRotation(s, blk)
		if err != nil {
			return nil, err
		}
		ce.rots[w] = r
		e.signOff[w] = 4 * len(signs)
		for _, v := range s {
			signs = append(signs, float32(v))
		}
	}
	if e.signs, err = k.newBuf(4*len(signs), f32Bytes(signs)); err != nil {
		return nil, err
	}
	return ce, nil
}

// checkSizes are the activation widths of a state of the checks' configuration: those
// of the random tensors the checks make, which have the model's shapes.
func checkSizes(c *qwen35.Config) actSizes {
	g := qwen35.NewGDN(c).NewState()
	kv := c.KVHeads * c.HeadDim
	return actSizes{
		embed: c.Embedding, gdnIn: [2]int{c.QKVWidth(), c.InnerSize}, attnIn: [3]int{2 * c.AttentionWidth(), kv, kv},
		mix: max(c.InnerSize, c.AttentionWidth()), ffn: c.FeedForward, vocab: c.Vocab,
		conv: len(g.Conv), ssm: len(g.S), gdnLayers: c.Layers - c.AttentionLayers(),
	}
}

// run records with rec into one command buffer, commits it and waits.
func (k *checker) run(rec func(cb gpu.CommandBuffer)) (time.Duration, error) {
	cb, err := k.dev.NewCommandBuffer()
	if err != nil {
		return 0, err
	}
	rec(cb)
	t0 := time.Now()
	cb.Commit()
	err = cb.Wait()
	return time.Since(t0), err
}

// ---- random data ----

func (k *checker) floats(n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(k.rng.NormFloat64()) * scale
	}
	return v
}

// pq returns a random PQ2_0 matrix of n rows of K (codes 0..2, scales 0.01–0.06).
func (k *checker) pq(n, K int) []byte {
	out := make([]byte, n*ternary.PQ2_0.RowBytes(K))
	var codes [ternary.BlockSize]uint8
	for b := 0; b < n*K/ternary.BlockSize; b++ {
		for j := range codes {
			codes[j] = uint8(k.rng.IntN(3))
		}
		d := float16.Fromfloat32(0.01 + 0.05*k.rng.Float32()).Bits()
		ternary.PackPQ2_0(out[b*34:], &codes, d)
	}
	return out
}

func (k *checker) bf16(n int, scale float32) []byte {
	out := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		b := math.Float32bits(float32(k.rng.NormFloat64()) * scale)
		out[2*i], out[2*i+1] = byte(b>>16), byte(b>>24)
	}
	return out
}

// put uploads bytes and returns them as a reference.
func (k *checker) put(b []byte) (ref, error) {
	buf, err := k.newBuf(len(b), b)
	return ref{buf, 0}, err
}

func (k *checker) putF(v []float32) (ref, error) { return k.put(f32Bytes(v)) }

func readF(b gpu.Buffer, off, n int) []float32 {
	return append([]float32(nil), floats(b.Contents()[off:])[:n]...)
}

// ---- references ----

// refMatVec returns W·x in float64 and Σ|w·x| per row.
func refMatVec(w []byte, K, N int, x []float32) (y, l1 []float64) {
	y, l1 = make([]float64, N), make([]float64, N)
	rb := ternary.PQ2_0.RowBytes(K)
	row := make([]float32, K)
	for i := 0; i < N; i++ {
		if err := ternary.PQ2_0.Decode(row, w[i*rb:(i+1)*rb]); err != nil {
			panic(err)
		}
		for j, v := range row {
			p := float64(v) * float64(x[j])
			y[i] += p
			l1[i] += math.Abs(p)
		}
	}
	return y, l1
}

// errL1 is max |got − want| / max(Σ|w·x|, tiny) over the rows.
func errL1(got []float32, want, l1 []float64) float64 {
	e := 0.0
	for i := range want {
		d := math.Abs(float64(got[i])-want[i]) / math.Max(l1[i], 1e-30)
		if math.IsNaN(float64(got[i])) {
			d = math.Inf(1)
		}
		e = math.Max(e, d)
	}
	return e
}

// errRel is max |got − want| / max |want|.
func errRel(got, want []float32) float64 {
	m, e := 0.0, 0.0
	for i := range want {
		m = math.Max(m, math.Abs(float64(want[i])))
	}
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(float64(got[i])) {
			d = math.Inf(1)
		}
		e = math.Max(e, d)
	}
	return e / math.Max(m, 1e-30)
}

const (
	tolL1    = 2e-5
	tolExact = 1e-6
	tolCore  = 1e-4
	tolF16KV = 3e-3
	tolI8KV  = 2e-2
)

// ---- the checks ----

// tinyLike is the tiny synthetic preset's configuration (kept here so that the check
// needs no model file): block 64, odd-ish widths.
func tinyLike() (qwen35.Config, int) {
	return qwen35.Config{
		Layers: 4, Embedding: 256, FeedForward: 512, Heads: 4, KVHeads: 2, HeadDim: 64,
		RMSEpsilon: 1e-6, RopeBase: 1e7, RopeDims: 16, RopeSections: [4]int{3, 3, 2, 0},
		ConvKernel: 4, StateSize: 32, InnerSize: 384, VHeads: 12, KHeads: 4,
		FullAttentionInterval: 4, ContextLength: 4096, Vocab: 160,
	}, 64
}

func realLike() (qwen35.Config, int) {
	return qwen35.Config{
		Layers: 4, Embedding: 5120, FeedForward: 17408, Heads: 24, KVHeads: 4, HeadDim: 256,
		RMSEpsilon: 1e-6, RopeBase: 1e7, RopeDims: 64, RopeSections: [4]int{11, 11, 10, 0},
		ConvKernel: 4, StateSize: 128, InnerSize: 768, VHeads: 6, KHeads: 2,
		FullAttentionInterval: 4, ContextLength: 262144, Vocab: 64,
	}, 1024
}

func (k *checker) smallChecks() error {
	c, blk := tinyLike()
	e, err := k.engine(c, blk, []int{256, 384, 512}, 3, 0)
	if err != nil {
		return err
	}
	steps := []func() error{
		func() error { return e.checkEmbed(5) },
		func() error { return e.checkSites(3) },
		func() error { return e.checkMV(mvPlain, 384, []int{37}, 0, "odd rows") },
		func() error { return e.checkMV(mvFWHT, 384, []int{37, 5, 70}, 0, "3 sets, odd splits") },
		func() error { return e.checkMV(mvNorm, 256, []int{100, 29}, mvfDelta|mvfXOut, "2 sets, add+xout") },
		func() error { return e.checkMV(mvNorm, 256, []int{64}, mvfHOut, "no delta, hout") },
		func() error { return e.checkMV(mvSwiGLU, 512, []int{77}, 0, "") },
		func() error { return e.checkGemm(384, 70, 37) },
		func() error { return e.checkGemm(256, 33, 1) },
		func() error { return e.checkGemm(256, 200, 64) },
		func() error { return e.checkGemmCut(256, 200, 40) },
		func() error { return e.checkGDN(7) },
		func() error { return e.checkGDNChunk(45) },
		func() error { return e.checkAttention(backend.KVFloat16, 5, 3) },
		func() error { return e.checkAttention(backend.KVFloat32, 4, 2) },
		func() error { return e.checkAttention(backend.KVInt8, 4, 3) },
		// Many positions: 3,000 cached, cut into 12 blocks; a 40-token prefill (three
		// token tiles) and a decode step, one with every block × tile a dispatch and a
		// command buffer of its own.
		func() error { return e.checkAttention(backend.KVInt8, 5, 3000) },
		func() error { return e.checkAttentionCut(backend.KVFloat16, 40, 3000, true) },
		func() error { return e.checkArgmax(1000) },
		func() error { return e.checkStreamRead(1000) },
		func() error { return e.checkCopy(1000, 37, 3) },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	// The streamed (chunked) product at small widths: chunks of 128 values.
	s, err := k.engine(c, blk, []int{256, 384, 512}, 3, 128)
	if err != nil {
		return err
	}
	for _, f := range []func() error{
		func() error { return s.checkMV(mvSwiGLU, 512, []int{45}, 0, "streamed, chunk 128") },
		func() error {
			return s.checkMV(mvNorm, 384, []int{40, 9}, mvfDelta|mvfXOut|mvfHOut, "streamed, chunk 128, xout+hout")
		},
		// gdn_decode after a streamed mv_norm: the convolution on the rows of the last
		// chunk's pass.
		func() error { return s.checkGDN(2) },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	// The PTQ1_0 kernels (the matrices stored as PTQ1_0, the references reading the same
	// values as PQ2_0).
	t1, s1 := e.asPTQ1(), s.asPTQ1()
	for _, f := range []func() error{
		func() error { return t1.checkEmbed(3) },
		func() error { return t1.checkMV(mvPlain, 384, []int{37}, 0, "odd rows") },
		func() error { return t1.checkMV(mvFWHT, 384, []int{37, 5, 70}, 0, "3 sets, odd splits") },
		func() error { return t1.checkMV(mvNorm, 256, []int{100, 29}, mvfDelta|mvfXOut, "2 sets, add+xout") },
		func() error { return t1.checkMV(mvSwiGLU, 512, []int{77}, 0, "") },
		func() error { return s1.checkMV(mvSwiGLU, 512, []int{45}, 0, "streamed, chunk 128") },
		func() error { return t1.checkGemm(384, 70, 37) },
		func() error { return t1.checkGemm(256, 200, 64) },
		func() error { return t1.checkGemmCut(256, 200, 40) },
		func() error { return t1.checkGDN(3) },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

func (k *checker) realChecks() error {
	c, blk := realLike()
	e, err := k.engine(c, blk, []int{5120, 6144, 17408}, 128, 0)
	if err != nil {
		return err
	}
	for _, f := range []func() error{
		func() error { return e.checkEmbed(2) },
		func() error { return e.checkMV(mvNorm, 5120, []int{17408}, mvfDelta|mvfXOut, "ffn_gate rows") },
		func() error { return e.checkMV(mvNorm, 5120, []int{512, 256, 256}, mvfDelta|mvfXOut, "q+k+v, 3 sets") },
		func() error { return e.checkMV(mvFWHT, 6144, []int{512}, 0, "o_proj / ssm_out width") },
		func() error { return e.checkMV(mvSwiGLU, 17408, []int{256}, 0, "ffn_down width, streamed") },
		func() error { return e.checkGemm(5120, 96, 9) },
		// A 64-token chunk at every input width of the model: attn_k/attn_v whole (1024
		// rows), and 256-row samples of ffn_gate (17408 rows), attn_output/ssm_out (6144
		// inputs) and ffn_down (17408 inputs), in both formats.
		func() error { return e.checkGemmRows(5120, 1024, 64, 0) },
		func() error { return e.checkGemmRows(5120, 17408, 64, 4) },
		func() error { return e.checkGemmRows(6144, 5120, 64, 4) },
		func() error { return e.checkGemmRows(17408, 5120, 64, 4) },
		func() error { return e.asPTQ1().checkGemmRows(5120, 1024, 64, 0) },
		func() error { return e.asPTQ1().checkGemmRows(6144, 5120, 64, 4) },
		func() error { return e.asPTQ1().checkGemmRows(17408, 5120, 64, 4) },
		func() error {
			return e.asPTQ1().checkMV(mvNorm, 5120, []int{512, 256, 256}, mvfDelta|mvfXOut, "q+k+v, 3 sets")
		},
		func() error { return e.asPTQ1().checkMV(mvFWHT, 6144, []int{512}, 0, "o_proj / ssm_out width") },
		func() error { return e.asPTQ1().checkMV(mvSwiGLU, 17408, []int{256}, 0, "ffn_down width, streamed") },
		func() error { return e.asPTQ1().checkGDN(2) },
		func() error { return e.checkGDN(3) },
		func() error { return e.checkGDNChunk(40) },
		func() error { return e.checkAttention(backend.KVFloat16, 3, 2) },
		func() error { return e.checkAttention(backend.KVInt8, 2, 2) },
		// Many positions at the 27B model's heads: 2,000 cached (8 blocks), and a
		// 12-token prefill (3 tiles of 5) cut into a dispatch per block × tile.
		func() error { return e.checkAttention(backend.KVInt8, 3, 2000) },
		func() error { return e.checkAttentionCut(backend.KVFloat16, 12, 1500, true) },
		func() error { return e.checkArgmax(248320) },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// state allocates a sequence state of the check configuration.
func (e *ckEngine) state(ctx int, p backend.KVPrecision) (*state, error) {
	s, err := e.NewState(backend.StateOptions{ContextSize: ctx, KVCache: p})
	if err != nil {
		return nil, err
	}
	st := s.(*state)
	e.k.bufs = append(e.k.bufs, st.all...)
	st.all = nil
	return st, nil
}

func shape(c *qwen35.Config) string { return fmt.Sprintf("E %d", c.Embedding) }

func (e *ckEngine) checkEmbed(T int) error {
	c := e.cfg
	vocab := 3 + T
	table := e.k.pq(vocab, c.Embedding)
	var err error
	if e.emb, err = e.upload(table); err != nil {
		return err
	}
	e.plan.Embedding.Format = e.format()
	st, err := e.state(T, backend.KVFloat16)
	if err != nil {
		return err
	}
	ids := make([]int32, T)
	for i := range ids {
		ids[i] = int32(e.k.rng.IntN(vocab))
		putU32(st.ids.Contents()[4*i:], uint32(ids[i]))
	}
	dt, err := e.k.run(func(cb gpu.CommandBuffer) { e.embed(cb, &st.acts, T) })
	ck := Check{Kernel: kEmbed, Case: fmt.Sprintf("%s × %d tokens, block %d, %s", shape(c), T, e.blk, e.format()), Tol: tolExact, Metric: "rel", Time: dt, Failure: err}
	if err == nil {
		got := readF(st.xa, 0, T*c.Embedding)
		want := make([]float32, T*c.Embedding)
		rb := ternary.PQ2_0.RowBytes(c.Embedding)
		for t, id := range ids {
			x := want[t*c.Embedding : (t+1)*c.Embedding]
			_ = ternary.PQ2_0.Decode(x, table[int(id)*rb:(int(id)+1)*rb])
			e.rots[c.Embedding].Inverse(x)
		}
		ck.Err = errRel(got, want)
	}
	e.k.add(ck)
	return nil
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func (e *ckEngine) checkSites(T int) error {
	c := e.cfg
	E, ff := c.Embedding, c.FeedForward
	st, err := e.state(T, backend.KVFloat16)
	if err != nil {
		return err
	}
	x, delta := e.k.floats(T*E, 1), e.k.floats(T*E, 0.5)
	gain := e.k.floats(E, 0.3)
	for i := range gain {
		gain[i] += 1
	}
	g, err := e.k.putF(gain)
	if err != nil {
		return err
	}
	copy(floats(st.xa.Contents()), x)
	copy(floats(st.delta.Contents()), delta)
	gate, up := e.k.floats(T*ff, 2), e.k.floats(T*ff, 1)
	copy(floats(st.gate.Contents()), gate)
	copy(floats(st.up.Contents()), up)
	inner := c.InnerSize
	mix := e.k.floats(T*inner, 1)
	copy(floats(st.mix.Contents()), mix)
	dt, err := e.k.run(func(cb gpu.CommandBuffer) {
		e.siteNorm(cb, &st.acts, T, E, g, true, true)
		e.siteBlocks(cb, kSiteSwiGLU, ff, T, st.gate, st.up, st.act)
		e.siteBlocks(cb, kSiteFWHT, inner, T, st.mix, st.mixr)
	})
	// References.
	wx, wh, whr := make([]float32, T*E), make([]float32, T*E), make([]float32, T*E)
	wact, wmix := make([]float32, T*ff), make([]float32, T*inner)
	for t := 0; t < T; t++ {
		for i := 0; i < E; i++ {
			wx[t*E+i] = x[t*E+i] + delta[t*E+i]
		}
		qwen35.RMSNorm(wh[t*E:(t+1)*E], wx[t*E:(t+1)*E], gain, e.eps)
		copy(whr[t*E:], wh[t*E:(t+1)*E])
		e.rots[E].Forward(whr[t*E : (t+1)*E])
		qwen35.SwiGLU(wact[t*ff:(t+1)*ff], gate[t*ff:(t+1)*ff], up[t*ff:(t+1)*ff])
		e.rots[ff].Forward(wact[t*ff : (t+1)*ff])
		copy(wmix[t*inner:], mix[t*inner:(t+1)*inner])
		e.rots[inner].Forward(wmix[t*inner : (t+1)*inner])
	}
	cases := []struct {
		kernel, what string
		got, want    []float32
		tol          float64
	}{
		{kSiteNorm, "x + delta", readF(st.xa, 0, T*E), wx, tolExact},
		{kSiteNorm, "h = RMSNorm(x)·gain", readF(st.h, 0, T*E), wh, tolExact},
		{kSiteNorm, "hr = R·h", readF(st.hr, 0, T*E), whr, tolExact},
		{kSiteSwiGLU, "R·(silu(gate)·up)", readF(st.act, 0, T*ff), wact, tolExact},
		{kSiteFWHT, "R·x", readF(st.mixr, 0, T*inner), wmix, tolExact},
	}
	for _, cs := range cases {
		ck := Check{Kernel: cs.kernel, Case: fmt.Sprintf("%s, %d rows: %s", shape(c), T, cs.what), Tol: cs.tol, Metric: "rel", Time: dt, Failure: err}
		if err == nil {
			ck.Err = errRel(cs.got, cs.want)
		}
		e.k.add(ck)
	}
	return nil
}

// checkMV runs one matrix-vector product of K inputs over the given row counts.
func (e *ckEngine) checkMV(mode mvMode, K int, rows []int, flags uint32, what string) error {
	k := e.k
	var sets []mvSet
	var ws [][]byte
	for _, n := range rows {
		w := k.pq(n, K)
		wr, err := e.upload(w)
		if err != nil {
			return err
		}
		y, err := k.newBuf(4*n, nil)
		if err != nil {
			return err
		}
		sets = append(sets, mvSet{wr, n, ref{y, 0}})
		ws = append(ws, w)
	}
	in0, in1 := k.floats(K, 1), k.floats(K, 0.5)
	gain := k.floats(K, 0.2)
	for i := range gain {
		gain[i] += 1
	}
	r0b, err := k.putF(in0)
	if err != nil {
		return err
	}
	r1b, err := k.putF(in1)
	if err != nil {
		return err
	}
	gb, err := k.putF(gain)
	if err != nil {
		return err
	}
	xo, err := k.newBuf(4*K, nil)
	if err != nil {
		return err
	}
	ho, err := k.newBuf(4*K, nil)
	if err != nil {
		return err
	}
	in := mvIn{in0: r0b, in1: r1b, xout: ref{xo, 0}, gain: gb, signs: e.signsOf(K), hout: ref{ho, 0}, flags: flags}
	dt, err := k.run(func(cb gpu.CommandBuffer) { e.mv(cb, mode, K, in, sets...) })
	// The Go input of the product.
	x := make([]float32, K)
	var wantX, wantH []float32
	switch mode {
	case mvPlain:
		copy(x, in0)
	case mvFWHT:
		copy(x, in0)
		e.rots[K].Forward(x)
	case mvNorm:
		wantX = make([]float32, K)
		for i := range wantX {
			wantX[i] = in0[i]
			if flags&mvfDelta != 0 {
				wantX[i] += in1[i]
			}
		}
		qwen35.RMSNorm(x, wantX, gain, e.eps)
		wantH = append([]float32(nil), x...)
		e.rots[K].Forward(x)
	case mvSwiGLU:
		qwen35.SwiGLU(x, in0, in1)
		e.rots[K].Forward(x)
	}
	total := 0
	for _, n := range rows {
		total += n
	}
	name := fmt.Sprintf("K %d, rows %v", K, rows)
	if what != "" {
		name += ", " + what
	}
	ck := Check{Kernel: mode.kernel(e.ptq1), Case: name, Tol: tolL1, Metric: "L1 ", Time: dt, Failure: err}
	if err == nil {
		for i, s := range sets {
			want, l1 := refMatVec(ws[i], K, s.rows, x)
			ck.Err = math.Max(ck.Err, errL1(readF(s.y.buf, 0, s.rows), want, l1))
		}
		if mode == mvNorm && flags&mvfXOut != 0 {
			ck.Err = math.Max(ck.Err, errRel(readF(xo, 0, K), wantX))
		}
		if mode == mvNorm && flags&mvfHOut != 0 {
			ck.Err = math.Max(ck.Err, errRel(readF(ho, 0, K), wantH))
		}
	}
	k.add(ck)
	return nil
}

func (e *ckEngine) checkGemm(K, N, T int) error { return e.checkGemmRows(K, N, T, 0) }

// checkGemmRows runs the GEMM of T tokens over an N-row matrix of K inputs. With tiles
// > 0 only the first tiles row tiles are dispatched (and only their rows exist): the
// kernel sees the real N — the output's stride and bounds — while the emulator computes
// a sample of the rows.
func (e *ckEngine) checkGemmRows(K, N, T, tiles int) error {
	k := e.k
	rows := N
	if tiles > 0 {
		rows = min(N, tiles*gemmRows)
	}
	w := k.pq(rows, K)
	dw, err := e.encode(w)
	if err != nil {
		return err
	}
	wr, err := e.upload(w)
	if err != nil {
		return err
	}
	x, xb, y, err := k.gemmIO(K, N, T)
	if err != nil {
		return err
	}
	dt, err := k.run(func(cb gpu.CommandBuffer) { e.gemmTiles(cb, wr, K, N, T, xb, y, (rows+gemmRows-1)/gemmRows) })
	name := fmt.Sprintf("K %d, N %d, T %d", K, N, T)
	if rows < N {
		name += fmt.Sprintf(", rows 0..%d", rows-1)
	}
	kn := kGemm
	if e.ptq1 {
		kn = kGemmT1
	}
	ck := Check{Kernel: kn, Case: name, Tol: tolL1, Metric: "L1 ", Time: dt, Failure: err}
	// The CPU backend's float32 GEMM on the same bytes (its own decoder of the format).
	ckGo := Check{Kernel: kn, Case: name + ", vs Go GEMM", Tol: tolL1, Metric: "L1 ", Time: dt, Failure: err}
	if err == nil {
		got := readF(y, 0, T*N)
		goY := make([]float32, T*rows)
		ternary.MatMulRange(e.format(), dw, K, rows, x, T, goY, 0, rows, nil)
		for t := 0; t < T; t++ {
			want, l1 := refMatVec(w, K, rows, x[t*K:(t+1)*K])
			ck.Err = math.Max(ck.Err, errL1(got[t*N:t*N+rows], want, l1))
			goRow := make([]float64, rows)
			for i, v := range goY[t*rows : (t+1)*rows] {
				goRow[i] = float64(v)
			}
			ckGo.Err = math.Max(ckGo.Err, errL1(got[t*N:t*N+rows], goRow, l1))
		}
	}
	k.add(ck)
	k.add(ckGo)
	return nil
}

// gdnLayer fills layer 0 with random GDN tensors and returns the Go layer.
func (e *ckEngine) gdnLayer() (*qwen35.Layer, error) {
	k, c := e.k, e.cfg
	E := c.Embedding
	l := &qwen35.Layer{Index: 0}
	l.AttnNorm = k.floats(E, 0.2)
	for i := range l.AttnNorm {
		l.AttnNorm[i] += 1
	}
	l.QKV = qwen35.Matrix{Name: "qkv", Format: ternary.PQ2_0, K: E, N: c.QKVWidth(), Data: k.pq(c.QKVWidth(), E)}
	l.Gate = qwen35.Matrix{Name: "gate", Format: ternary.PQ2_0, K: E, N: c.InnerSize, Data: k.pq(c.InnerSize, E)}
	l.Alpha = qwen35.BF16Matrix{Name: "alpha", K: E, N: c.VHeads, Data: k.bf16(E*c.VHeads, 0.05)}
	l.Beta = qwen35.BF16Matrix{Name: "beta", K: E, N: c.VHeads, Data: k.bf16(E*c.VHeads, 0.05)}
	l.Conv = k.floats(c.QKVWidth()*c.ConvKernel, 0.5)
	l.DTBias = k.floats(c.VHeads, 1)
	l.A = k.floats(c.VHeads, 1)
	for i := range l.A {
		l.A[i] = -float32(math.Exp(float64(l.A[i])))
	}
	l.SSMNorm = k.floats(c.StateSize, 0.3)
	for i := range l.SSMNorm {
		l.SSMNorm[i] += 1
	}
	r := &e.layers[0]
	r.in.products, r.in.unrotated = make([]ref, 2), make([]ref, 2) // the plan's order: qkv, gate; alpha, beta
	var err error
	put := func(dst *ref, b []byte) {
		if err == nil {
			*dst, err = k.put(b)
		}
	}
	put(&r.in.norm, f32Bytes(l.AttnNorm))
	up := func(dst *ref, b []byte) {
		if err == nil {
			*dst, err = e.upload(b)
		}
	}
	up(&r.in.products[0], l.QKV.Data)
	up(&r.in.products[1], l.Gate.Data)
	put(&r.in.unrotated[0], l.Alpha.Data)
	put(&r.in.unrotated[1], l.Beta.Data)
	put(&r.conv, f32Bytes(l.Conv))
	put(&r.dt, f32Bytes(l.DTBias))
	put(&r.a, f32Bytes(l.A))
	put(&r.ssmNorm, f32Bytes(l.SSMNorm))
	return l, err
}

// checkGDN runs gdn_seq over T tokens, then gdn_decode for one more, against qwen35's
// GDN (step form) fed by the Go products.
func (e *ckEngine) checkGDN(T int) error {
	c := e.cfg
	E, W, inner, VH := c.Embedding, c.QKVWidth(), c.InnerSize, c.VHeads
	l, err := e.gdnLayer()
	if err != nil {
		return err
	}
	st, err := e.state(T+1, backend.KVFloat16)
	if err != nil {
		return err
	}
	// A non-zero starting state, as after earlier tokens.
	gs := e.gdnRef().NewState()
	for i := range gs.S {
		gs.S[i] = float32(e.k.rng.NormFloat64() * 0.1)
	}
	for i := range gs.Conv {
		gs.Conv[i] = float32(e.k.rng.NormFloat64())
	}
	copy(floats(st.ssm[0].bytes(4*len(gs.S))), gs.S)
	copy(floats(st.conv[0].bytes(4*len(gs.Conv))), gs.Conv)
	qkv, z, h := e.k.floats(T*W, 1), e.k.floats(T*inner, 1), e.k.floats(T*E, 1)
	copy(floats(st.qkv.Contents()), qkv)
	copy(floats(st.z.Contents()), z)
	copy(floats(st.h.Contents()), h)
	dt, err := e.k.run(func(cb gpu.CommandBuffer) { e.gdnSeq(cb, st.alone(T), 0) })
	gdn := e.gdnRef()
	sc := gdn.NewScratch(T)
	alpha, beta := make([]float32, T*VH), make([]float32, T*VH)
	for t := 0; t < T; t++ {
		l.Alpha.MulVec(alpha[t*VH:(t+1)*VH], h[t*E:(t+1)*E])
		l.Beta.MulVec(beta[t*VH:(t+1)*VH], h[t*E:(t+1)*E])
	}
	want := make([]float32, T*inner)
	gdn.Forward(want, qkv, z, alpha, beta, T, l, gs, sc, false)
	name := fmt.Sprintf("d %d, %d×%d heads, %d tokens", c.StateSize, c.KHeads, c.HeadRepeat(), T)
	ck := Check{Kernel: kGDNSeq, Case: name + ": out", Tol: tolCore, Metric: "rel", Time: dt, Failure: err}
	if err == nil {
		ck.Err = errRel(readF(st.mix, 0, T*inner), want)
	}
	e.k.add(ck)
	ck2 := Check{Kernel: kGDNSeq, Case: name + ": states", Tol: tolCore, Metric: "rel", Time: dt, Failure: err}
	if err == nil {
		ck2.Err = math.Max(errRel(readF(st.ssmBuf, st.ssm[0].off, len(gs.S)), gs.S), errRel(readF(st.convBuf, st.conv[0].off, len(gs.Conv)), gs.Conv))
	}
	e.k.add(ck2)
	if !e.geo.fusedGDN {
		return nil
	}
	// One fused decode step from the state the Go side now holds.
	copy(floats(st.ssm[0].bytes(4*len(gs.S))), gs.S)
	copy(floats(st.conv[0].bytes(4*len(gs.Conv))), gs.Conv)
	x, delta := e.k.floats(E, 1), e.k.floats(E, 0.5)
	copy(floats(st.xa.Contents()), x)
	copy(floats(st.delta.Contents()), delta)
	dt, err = e.k.run(func(cb gpu.CommandBuffer) {
		in := mvIn{in0: r0(st.xa), in1: r0(st.delta), xout: r0(st.xb), gain: e.layers[0].in.norm, signs: e.signsOf(E), flags: mvfDelta | mvfXOut}
		e.gdnDecode(cb, st, 0, in, W, inner)
	})
	xn := make([]float32, E)
	for i := range xn {
		xn[i] = x[i] + delta[i]
	}
	hn, hr := make([]float32, E), make([]float32, E)
	qwen35.RMSNorm(hn, xn, l.AttnNorm, e.eps)
	copy(hr, hn)
	e.rots[E].Forward(hr)
	q1, z1 := make([]float32, W), make([]float32, inner)
	for i, v := range refRows(l.QKV.Data, E, W, hr) {
		q1[i] = float32(v)
	}
	for i, v := range refRows(l.Gate.Data, E, inner, hr) {
		z1[i] = float32(v)
	}
	a1, b1 := make([]float32, VH), make([]float32, VH)
	l.Alpha.MulVec(a1, hn)
	l.Beta.MulVec(b1, hn)
	want1 := make([]float32, inner)
	gdn.Forward(want1, q1, z1, a1, b1, 1, l, gs, sc, false)
	// The decode token is two dispatches: the In site's mv_norm (its attn_qkv rows
	// convolved as they are written) and gdn_decode, one threadgroup per V head.
	ck3 := Check{Kernel: kGDNDecode, Case: fmt.Sprintf("E %d, d %d, %d×%d heads, after %s with the convolution (chunks of %d): out, states",
		E, c.StateSize, c.KHeads, c.HeadRepeat(), mvNorm.kernel(e.ptq1), mvChunk(E, e.blk, e.chunkCap)), Tol: tolCore, Metric: "rel", Time: dt, Failure: err}
	if err == nil {
		ck3.Err = math.Max(errRel(readF(st.mix, 0, inner), want1), errRel(readF(st.xb, 0, E), xn))
		ck3.Err = math.Max(ck3.Err, errRel(readF(st.ssmBuf, st.ssm[0].off, len(gs.S)), gs.S))
		ck3.Err = math.Max(ck3.Err, errRel(readF(st.convBuf, st.conv[0].off, len(gs.Conv)), gs.Conv))
	}
	e.k.add(ck3)
	return nil
}

// checkGDNChunk runs gdn_chunk over T tokens (chunks of 32) against qwen35's GDN in
// the step form (the chunked form is the same function; both are reported).
func (e *ckEngine) checkGDNChunk(T int) error {
	c := e.cfg
	E, W, inner, VH := c.Embedding, c.QKVWidth(), c.InnerSize, c.VHeads
	l, err := e.gdnLayer()
	if err != nil {
		return err
	}
	st, err := e.state(T, backend.KVFloat16)
	if err != nil {
		return err
	}
	gdn := e.gdnRef()
	step, chunk := gdn.NewState(), gdn.NewState()
	for i := range step.S {
		step.S[i] = float32(e.k.rng.NormFloat64() * 0.1)
	}
	for i := range step.Conv {
		step.Conv[i] = float32(e.k.rng.NormFloat64())
	}
	chunk.CopyFrom(step)
	copy(floats(st.ssm[0].bytes(4*len(step.S))), step.S)
	copy(floats(st.conv[0].bytes(4*len(step.Conv))), step.Conv)
	qkv, z, h := e.k.floats(T*W, 1), e.k.floats(T*inner, 1), e.k.floats(T*E, 1)
	copy(floats(st.qkv.Contents()), qkv)
	copy(floats(st.z.Contents()), z)
	copy(floats(st.h.Contents()), h)
	dt, err := e.k.run(func(cb gpu.CommandBuffer) { e.gdnChunk(cb, st.alone(T), 0) })
	alpha, beta := make([]float32, T*VH), make([]float32, T*VH)
	for t := 0; t < T; t++ {
		l.Alpha.MulVec(alpha[t*VH:(t+1)*VH], h[t*E:(t+1)*E])
		l.Beta.MulVec(beta[t*VH:(t+1)*VH], h[t*E:(t+1)*E])
	}
	wantStep, wantChunk := make([]float32, T*inner), make([]float32, T*inner)
	gdn.Forward(wantStep, qkv, z, alpha, beta, T, l, step, gdn.NewScratch(T), false)
	gdn.Forward(wantChunk, qkv, z, alpha, beta, T, l, chunk, gdn.NewScratch(T), true)
	name := fmt.Sprintf("d %d, %d×%d heads, %d tokens", c.StateSize, c.KHeads, c.HeadRepeat(), T)
	ck := Check{Kernel: kGDNChunk, Case: name + ": out, states vs step form", Tol: tolCore, Metric: "rel", Time: dt, Failure: err}
	if err == nil {
		got := readF(st.mix, 0, T*inner)
		ck.Err = errRel(got, wantStep)
		ck.Err = math.Max(ck.Err, errRel(readF(st.ssmBuf, st.ssm[0].off, len(step.S)), step.S))
		ck.Err = math.Max(ck.Err, errRel(readF(st.convBuf, st.conv[0].off, len(step.Conv)), step.Conv))
		ck.Case += fmt.Sprintf(" (Go chunked vs step: %.1e)", errRel(wantChunk, wantStep))
	}
	e.k.add(ck)
	return nil
}

func refRows(w []byte, K, N int, x []float32) []float64 {
	y, _ := refMatVec(w, K, N, x)
	return y
}

func (e *ckEngine) gdnRef() *qwen35.GDN { return qwen35.NewGDN(e.cfg) }

// checkAttention runs T tokens through attn_append + attn + attn_merge, then one fused
// decode step, against qwen35's Attention and KV cache.
func (e *ckEngine) checkAttention(p backend.KVPrecision, T, pre int) error {
	return e.checkAttentionCut(p, T, pre, false)
}

// checkAttentionCut is checkAttention after a prefix of pre positions (through the
// kernels, their output unchecked; a prefix longer than the state's rows straight into
// the caches). With cut set the checked steps run in
// a splitter whose cost limit no dispatch meets, so that every block × tile of the
// partial attention is a dispatch, and a command buffer, of its own (the cut the cost
// model makes at long positions), merged in a command buffer of its own.
func (e *ckEngine) checkAttentionCut(p backend.KVPrecision, T, pre int, cut bool) error {
	k, c := e.k, e.cfg
	H, KV, D := c.Heads, c.KVHeads, c.HeadDim
	li := c.FullAttentionInterval - 1
	l := &qwen35.Layer{Index: li, Attention: true, QNorm: k.floats(D, 0.2), KNorm: k.floats(D, 0.2)}
	for i := 0; i < D; i++ {
		l.QNorm[i] += 1
		l.KNorm[i] += 1
	}
	r := &e.layers[li]
	var err error
	if r.qNorm, err = k.putF(l.QNorm); err != nil {
		return err
	}
	if r.kNorm, err = k.putF(l.KNorm); err != nil {
		return err
	}
	ctx := pre + T + 1
	st, err := e.state(ctx, p)
	if err != nil {
		return err
	}
	at := qwen35.NewAttention(c)
	cache := qwen35.NewKVCache(KV, D, p, ctx)
	sc := at.NewScratch(T)
	tol := tolCore
	switch p {
	case backend.KVFloat16:
		tol = tolF16KV
	case backend.KVInt8:
		tol = tolI8KV
	}
	// Runs of n tokens: a prefix (pre tokens, its output unchecked), then T, then 1 fused.
	step := func(n int, fused bool, what string) error {
		qg, kk, vv := k.floats(n*2*H*D, 1), k.floats(n*KV*D, 1), k.floats(n*KV*D, 1)
		copy(floats(st.qg.Contents()), qg)
		copy(floats(st.k.Contents()), kk)
		copy(floats(st.v.Contents()), vv)
		e.ropeTable(&st.acts, 0, st.pos, n) // as encodeChunk writes it
		rec := func(cb gpu.CommandBuffer) { e.attention(cb, st.alone(n), li, fused) }
		var dt time.Duration
		var err error
		buffers := 1
		if cut && what != "" {
			sp := newSplitter(k.dev, 0)
			sp.limit = 1e-12
			rec(sp)
			t0 := time.Now()
			sp.Commit()
			err = sp.Wait()
			dt, buffers = time.Since(t0), sp.buffers()
		} else {
			dt, err = k.run(rec)
		}
		want := make([]float32, n*H*D)
		if err := at.Forward(want, qg, kk, vv, n, st.pos, l, cache, sc); err != nil {
			return err
		}
		st.pos += n
		if what == "" {
			return nil
		}
		kernel := map[backend.KVPrecision]string{backend.KVFloat16: kAttnF16, backend.KVFloat32: kAttnF32, backend.KVInt8: kAttnI8}[p]
		pl := e.planAttention(e.p[kernel], st.pos-n, n, st.part.Len()/(4*H*(D+2)))
		name := fmt.Sprintf("%d×%d heads of %d, kv %s: %s, %d block(s) of %d × %d tile(s) of %d", H, KV, D, p, what, pl.nb, pl.span, pl.tiles, pl.tt)
		if buffers > 1 {
			name += fmt.Sprintf(", %d command buffers", buffers)
		}
		ck := Check{Kernel: kernel, Case: name, Tol: tol, Metric: "rel", Time: dt, Failure: err}
		if err == nil {
			ck.Err = errRel(readF(st.mix, 0, n*H*D), want)
			ck.Case += fmt.Sprintf(" (output %.1e)", ck.Err)
			// The cache, every position so far.
			kr, vr := make([]float32, KV*D), make([]float32, KV*D)
			var gotK, gotV, wantK, wantV []float32
			for pos := 0; pos < st.pos; pos++ {
				cache.Row(pos, kr, vr)
				wantK, wantV = append(wantK, kr...), append(wantV, vr...)
				for g := 0; g < KV; g++ {
					for i := 0; i < D; i++ {
						o := (g*ctx+pos)*D + i
						gotK = append(gotK, cacheValue(st.kc[li], st.ks[li], st.kvElem, o))
						gotV = append(gotV, cacheValue(st.vc[li], st.vs[li], st.kvElem, o))
					}
				}
			}
			ck.Err = math.Max(ck.Err, math.Max(errRel(gotK, wantK), errRel(gotV, wantV)))
		}
		k.add(ck)
		return nil
	}
	if pre > st.chunk {
		// A long prefix goes straight into both caches, the same encoded rows (the
		// emulator would take minutes to attend 3,000 positions chunk by chunk).
		rb := p.RowBytes(KV, D)
		kb, vb := make([]byte, rb), make([]byte, rb)
		for range pre {
			if err := cache.Append(k.floats(KV*D, 1), k.floats(KV*D, 1)); err != nil {
				return err
			}
			cache.ReadRow(cache.Len()-1, kb, vb)
			if err := st.kv[li].AppendRow(kb, vb); err != nil {
				return err
			}
		}
		st.pos = pre
	} else if pre > 0 {
		if err := step(pre, false, ""); err != nil {
			return err
		}
	}
	if err := step(T, false, fmt.Sprintf("prefill %d after %d", T, pre)); err != nil {
		return err
	}
	return step(1, true, fmt.Sprintf("fused decode at %d", pre+T))
}

func cacheValue(b, scales gpu.Buffer, elem, i int) float32 {
	m := b.Contents()
	switch elem {
	case 1:
		return float32(int8(m[i])) * floats(scales.Contents())[i/backend.KVBlock]
	case 2:
		return float16.Frombits(uint16(m[2*i]) | uint16(m[2*i+1])<<8).Float32()
	}
	return floats(m)[i]
}

func (e *ckEngine) checkArgmax(n int) error {
	k := e.k
	v := k.floats(n, 1)
	// A tie for the maximum (the lower index must win), a NaN, and −Inf.
	hi := 3 + n/3
	v[hi], v[hi+n/2] = 9, 9
	v[n/5] = float32(math.NaN())
	v[n-1] = float32(math.Inf(-1))
	b, err := k.newBuf(4*n, f32Bytes(v))
	if err != nil {
		return err
	}
	out, err := k.newBuf(4, nil)
	if err != nil {
		return err
	}
	p := e.p[kArgmax]
	dt, err := k.run(func(cb gpu.CommandBuffer) {
		cb.Dispatch(p, gpu.Size{1, 1, 1}, gpu.Size{threads(p, 1024), 1, 1},
			bytesArg(args{uint32(n), 0, 0, 0}), buf(1, b), buf(2, out))
	})
	ck := Check{Kernel: kArgmax, Case: fmt.Sprintf("%d values, a tie, a NaN", n), Tol: 0, Metric: "idx", Time: dt, Failure: err}
	if err == nil {
		got := int(floatsU32(out.Contents()))
		if got != hi {
			ck.Err = 1
			ck.Failure = fmt.Errorf("argmax %d, want %d", got, hi)
		}
	}
	k.add(ck)
	return nil
}

func floatsU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// streamRead records the streaming read of n float4s of in, each threadgroup's sum to
// out (groups floats).
func (e *engine) streamRead(cb gpu.CommandBuffer, in, out gpu.Buffer, n, groups int) {
	p := e.p[kStreamRead]
	cb.Dispatch(p, gpu.Size{groups, 1, 1}, gpu.Size{threads(p, 256), 1, 1},
		bytesArg(args{uint32(n), uint32(groups), 0, 0}), buf(1, in), buf(2, out))
}

// checkStreamRead compares the streaming read's sums with a float64 sum of the same
// values (relative to Σ|v|: float32 sums in another order).
func (e *ckEngine) checkStreamRead(n int) error {
	k := e.k
	v := k.floats(4*n, 1)
	in, err := k.newBuf(16*n, f32Bytes(v))
	if err != nil {
		return err
	}
	const groups = 3
	out, err := k.newBuf(4*groups, nil)
	if err != nil {
		return err
	}
	dt, err := k.run(func(cb gpu.CommandBuffer) { e.streamRead(cb, in, out, n, groups) })
	ck := Check{Kernel: kStreamRead, Case: fmt.Sprintf("%d float4s, %d threadgroups", n, groups), Tol: tolL1, Metric: "L1 ", Time: dt, Failure: err}
	if err == nil {
		var want, l1, got float64
		for _, x := range v {
			want += float64(x)
			l1 += math.Abs(float64(x))
		}
		for _, x := range readF(out, 0, groups) {
			got += float64(x)
		}
		ck.Err = math.Abs(got-want) / l1
		if math.IsNaN(got) {
			ck.Err = math.Inf(1)
		}
	}
	k.add(ck)
	return nil
}

// gemmIO makes a GEMM's random input of T rows of K (x, and on the device xb) and its
// output buffer of T rows of N.
func (k *checker) gemmIO(K, N, T int) (x []float32, xb, y gpu.Buffer, err error) {
	x = k.floats(T*K, 1)
	if xb, err = k.newBuf(4*T*K, f32Bytes(x)); err != nil {
		return nil, nil, nil, err
	}
	y, err = k.newBuf(4*T*N, nil)
	return x, xb, y, err
}

// checkGemmCut runs the GEMM of a site's product through gemmSite in a splitter whose
// cost limit holds two row tiles, so that the product is cut into GEMMs over ranges of
// its rows, the last range ending at N and overlapping the one before (split.go, the
// cut of the 27B head's GEMM): against the reference, every row, with the output rows
// of all T tokens at their places.
func (e *ckEngine) checkGemmCut(K, N, T int) error {
	k := e.k
	w := k.pq(N, K)
	wr, err := e.upload(w)
	if err != nil {
		return err
	}
	m := &qwen35.Matrix{Format: e.format(), K: K, N: N, Data: make([]byte, N*e.format().RowBytes(K))}
	site := &qwen35.Site{Width: K, Products: []*qwen35.Matrix{m}}
	x, xb, y, err := k.gemmIO(K, N, T)
	if err != nil {
		return err
	}
	sp := newSplitter(k.dev, 0)
	sp.limit = gemmCost(m, 2*gemmRows, T).seconds()
	e.gemmSite(sp, site, &siteRefs{products: []ref{wr}}, T, xb, y)
	t0 := time.Now()
	sp.Commit()
	err = sp.Wait()
	kn := kGemm
	if e.ptq1 {
		kn = kGemmT1
	}
	ck := Check{Kernel: kn, Case: fmt.Sprintf("K %d, N %d, T %d, cut into %d GEMMs of 2 row tiles", K, N, T, sp.Dispatches()),
		Tol: tolL1, Metric: "L1 ", Time: time.Since(t0), Failure: err}
	if err == nil && sp.Dispatches() < 2 {
		ck.Failure = fmt.Errorf("%d GEMM dispatches, want the product cut", sp.Dispatches())
	}
	if err == nil {
		got := readF(y, 0, T*N)
		for t := 0; t < T; t++ {
			want, l1 := refMatVec(w, K, N, x[t*K:(t+1)*K])
			ck.Err = math.Max(ck.Err, errL1(got[t*N:(t+1)*N], want, l1))
		}
	}
	k.add(ck)
	return nil
}

// checkCopy copies n floats of src from float `from` on into dst from float `to` on,
// over 2 threadgroups (so that each strides), and counts the floats that differ from
// what a copy makes: the n copied, and dst's floats around them left as they were.
func (e *ckEngine) checkCopy(n, from, to int) error {
	k := e.k
	v := k.floats(from+n, 1)
	old := k.floats(to+n+5, 1)
	src, err := k.newBuf(4*len(v), f32Bytes(v))
	if err != nil {
		return err
	}
	dst, err := k.newBuf(4*len(old), f32Bytes(old))
	if err != nil {
		return err
	}
	dt, err := k.run(func(cb gpu.CommandBuffer) {
		e.copyFloatsGroups(cb, ref{src, 4 * from}, ref{dst, 4 * to}, n, 2)
	})
	ck := Check{Kernel: kCopy, Case: fmt.Sprintf("%d floats at offsets %d → %d, 2 threadgroups", n, from, to), Tol: 0, Metric: "floats wrong", Time: dt, Failure: err}
	if err == nil {
		want := append(append(append([]float32(nil), old[:to]...), v[from:]...), old[to+n:]...)
		for i, x := range readF(dst, 0, len(want)) {
			if math.Float32bits(x) != math.Float32bits(want[i]) {
				ck.Err++
			}
		}
	}
	k.add(ck)
	return nil
}
