package qwen35

import (
	"fmt"
	"math"

	"github.com/bonsai-go/sdk/internal/hugemem"
)

// GDNChunk is the chunk length of the chunked (parallel) form of the Gated DeltaNet
// recurrence, as llama.cpp uses: long enough that the per-chunk state products dominate,
// short enough that the within-chunk triangular work (quadratic in the chunk) stays small.
const GDNChunk = 64

// GDN is the core of a Gated DeltaNet mixer: everything between the attn_qkv, attn_gate,
// ssm_alpha and ssm_beta projections and the ssm_out rotation. It holds only sizes and
// the V-head tables derived from the head order rule of heads.go, so one GDN serves every
// GDN layer of a model and any number of sequences.
type GDN struct {
	d      int // StateSize: head dim of q, k, v
	kHeads int
	vHeads int
	width  int // QKVWidth
	inner  int // InnerSize
	kernel int // ConvKernel
	eps    float32
	qScale float32

	keyHead []int   // per tiled V head: the q/k head it reads
	grouped []int   // per tiled V head: its grouped index (its place in the output)
	readers [][]int // per q/k head: the tiled V heads that read it
}

// NewGDN returns the mixer core for c's sizes. c must be valid (see Config.Validate).
func NewGDN(c *Config) *GDN {
	g := &GDN{
		d:      c.StateSize,
		kHeads: c.KHeads,
		vHeads: c.VHeads,
		width:  c.QKVWidth(),
		inner:  c.InnerSize,
		kernel: c.ConvKernel,
		eps:    float32(c.RMSEpsilon),
		qScale: float32(1 / math.Sqrt(float64(c.StateSize))),
	}
	g.keyHead = make([]int, g.vHeads)
	g.grouped = make([]int, g.vHeads)
	g.readers = make([][]int, g.kHeads)
	for h := 0; h < g.vHeads; h++ {
		g.keyHead[h] = c.KeyHead(h)
		g.grouped[h] = c.GroupedHead(h)
		g.readers[g.keyHead[h]] = append(g.readers[g.keyHead[h]], h)
	}
	return g
}

// GDNState is the recurrent state of one GDN layer for one sequence: all that a decode
// step needs from the past, fixed in size whatever the context length.
type GDNState struct {
	// Conv holds the last ConvKernel−1 qkv projections (before the convolution), row 0
	// the oldest: ConvKernel−1 rows of QKVWidth.
	Conv []float32
	// S holds one StateSize×StateSize matrix per V head, heads in TILED order. The math
	// writes S[i][j] with i along the key and j along the value dimension; it is stored
	// at S[h·d² + j·d + i], each value-row contiguous over the key dimension (llama.cpp's
	// layout), so that a step reads and writes every row once while it is in L1.
	S []float32
}

// NewState returns a zero state.
func (g *GDN) NewState() *GDNState { return g.NewStates(1)[0] }

// NewStates returns n zero states, for the n GDN layers of one sequence. Their recurrent
// states share one allocation in transparent huge pages where the system has them
// (3 MiB a layer for the 27B model): a sequence's first step writes every byte of them,
// and in 4 KiB pages that was 37,000 page faults for the 27B, most of a second on a
// virtual machine whose memory is busy with the model's pages.
func (g *GDN) NewStates(n int) []*GDNState {
	size := g.vHeads * g.d * g.d
	all := hugemem.Float32s(n * size)
	sts := make([]*GDNState, n)
	for i := range sts {
		sts[i] = &GDNState{
			Conv: make([]float32, (g.kernel-1)*g.width),
			S:    all[i*size : (i+1)*size : (i+1)*size],
		}
	}
	return sts
}

// Reset zeroes the state, as at the start of a sequence.
func (s *GDNState) Reset() {
	clear(s.Conv)
	clear(s.S)
}

// CopyFrom makes s a deep copy of o, reusing s's memory when the sizes match (they do
// for states of the same GDN), so that snapshotting a sequence costs no allocation.
func (s *GDNState) CopyFrom(o *GDNState) {
	if len(s.Conv) != len(o.Conv) {
		s.Conv = make([]float32, len(o.Conv))
	}
	if len(s.S) != len(o.S) {
		s.S = make([]float32, len(o.S))
	}
	copy(s.Conv, o.Conv)
	copy(s.S, o.S)
}

// Runner splits a loop over [0, n) across workers; *parallel.Pool is one. The blocks
// hand it their independent per-head (or per-channel) work when a scratch has one, and
// run the loop on the calling goroutine otherwise.
type Runner interface {
	// For calls body.Run over ranges that cover [0, n) once, each of about grain
	// indices or more, and returns when every call has.
	For(n, grain int, body Body)
}

// Body is a loop body over an index range, called concurrently on disjoint ranges.
type Body = interface {
	// Run runs the loop body for the indices [lo, hi).
	Run(lo, hi int)
}

// GDNScratch holds the working buffers of Forward, so that a steady-state call
// allocates nothing. One scratch serves one Forward at a time.
type GDNScratch struct {
	// Runner, when set, runs the convolution over channel ranges and the recurrence
	// over q/k heads (each with the V heads that read it) in parallel.
	Runner Runner

	maxT int
	act  []float32 // T × QKVWidth: conv + SiLU, q and k normalised, q scaled
	beta []float32 // T × VHeads: sigmoid(beta)
	logd []float32 // T × VHeads: log decay g = softplus(alpha+dt_bias)·ssm_a ≤ 0

	chunks []*chunkScratch // per q/k head, allocated on the first chunked call

	conv   gdnConvBody
	heads  gdnHeadBody
	replay gdnReplayBody
}

// chunkScratch holds the buffers of the chunked form for one q/k head at a time.
type chunkScratch struct {
	kc, qc []float32 // C rows of ld: the chunk's k and q of one q/k head, gathered
	ld     int       // row stride of kc and qc: d padded off a power of two
	kk, qk []float32 // C × C: raw k·k and q·k dot products (lower triangle)
	am, qm []float32 // C × C: the same weighted by decay (and β for am)
	cumG   []float64 // C: cumulative log decay within the chunk
	gam    []float32 // C: γ_t = exp(G_t)
	tail   []float32 // C: exp(G_last − G_s)
	uT, wT []float32 // d × C: S₀ᵀk_t and S₀ᵀq_t by value-row; wT then holds the output
	vT     []float32 // d × C: the chunk's values by value-row
	bet    []float32 // C: β_t
	del    []float32 // C: δ_t for one value-row
	coef   []float32 // C: e^{G_last−G_s}·δ_s for one value-row
}

func (g *GDN) newChunkScratch() *chunkScratch {
	const c = GDNChunk
	// A power-of-two stride would map a column of kc into a few L1 sets, and
	// scaleAddRows walks exactly such columns.
	ld := g.d + 16
	return &chunkScratch{
		ld: ld,
		kc: make([]float32, c*ld), qc: make([]float32, c*ld),
		kk: make([]float32, c*c), qk: make([]float32, c*c),
		am: make([]float32, c*c), qm: make([]float32, c*c),
		cumG: make([]float64, c), gam: make([]float32, c), tail: make([]float32, c),
		uT: make([]float32, g.d*c), wT: make([]float32, g.d*c), vT: make([]float32, g.d*c), bet: make([]float32, c),
		del: make([]float32, c), coef: make([]float32, c),
	}
}

// NewScratch returns buffers for calls of up to maxTokens tokens; a longer call grows
// them once. The chunked form's buffers come with the first chunked call.
func (g *GDN) NewScratch(maxTokens int) *GDNScratch {
	sc := &GDNScratch{}
	g.grow(sc, max(maxTokens, 1))
	return sc
}

func (g *GDN) grow(sc *GDNScratch, T int) {
	if T <= sc.maxT {
		return
	}
	sc.maxT = T
	sc.act = make([]float32, T*g.width)
	sc.beta = make([]float32, T*g.vHeads)
	sc.logd = make([]float32, T*g.vHeads)
}

// Forward runs T ≥ 1 tokens of one sequence through the mixer core and advances st.
// Inputs are row-major by token and in the file's (tiled) V-head order: qkv T×QKVWidth
// (the raw attn_qkv output), z T×InnerSize (attn_gate), alpha and beta T×VHeads
// (ssm_alpha, ssm_beta). out receives T×InnerSize values in GROUPED head order, ready
// for the rotation in front of ssm_out. The inputs are not modified; out must not alias
// them.
//
// chunked selects the chunked form of the recurrence for T > 1 (prefill); the step form
// runs the tokens one by one. Both compute the same function up to float32 rounding.
func (g *GDN) Forward(out, qkv, z, alpha, beta []float32, T int, l *Layer, st *GDNState, sc *GDNScratch, chunked bool) {
	g.forward(out, qkv, z, alpha, beta, T, l, st, sc, chunked, nil)
}

func (g *GDN) forward(out, qkv, z, alpha, beta []float32, T int, l *Layer, st *GDNState, sc *GDNScratch, chunked bool, keep *GDNKeep) {
	if T < 1 {
		return
	}
	if len(out) < T*g.inner || len(qkv) < T*g.width || len(z) < T*g.inner ||
		len(alpha) < T*g.vHeads || len(beta) < T*g.vHeads {
		panic(fmt.Sprintf("qwen35: GDN.Forward: buffers too short for %d tokens", T))
	}
	if len(l.Conv) != g.width*g.kernel || len(l.DTBias) != g.vHeads || len(l.A) != g.vHeads || len(l.SSMNorm) != g.d {
		panic(fmt.Sprintf("qwen35: GDN.Forward: layer %d has no GDN weights of this shape", l.Index))
	}
	g.grow(sc, T)
	chunked = chunked && T > 1
	if chunked && sc.chunks == nil {
		sc.chunks = make([]*chunkScratch, g.kHeads)
		for i := range sc.chunks {
			sc.chunks[i] = g.newChunkScratch()
		}
	}
	W, K := g.width, g.kernel
	if keep != nil {
		keep.begin(g, st)
		keep.conv = append(keep.conv, qkv[:T*W]...)
	}
	sc.conv = gdnConvBody{g: g, sc: sc, l: l, T: T, cached: st.Conv, rows: qkv[:T*W]}
	run(sc.Runner, W, 512, &sc.conv)
	// The cache keeps the window's last K−1 rows.
	if T >= K-1 {
		copy(st.Conv, qkv[(T-K+1)*W:T*W])
	} else {
		copy(st.Conv, st.Conv[T*W:])
		copy(st.Conv[(K-1-T)*W:], qkv[:T*W])
	}
	sc.heads = gdnHeadBody{g: g, sc: sc, l: l, st: st, out: out, z: z, alpha: alpha, beta: beta, T: T, chunked: chunked, keep: keep}
	run(sc.Runner, g.kHeads, 1, &sc.heads)
	sc.conv, sc.heads = gdnConvBody{}, gdnHeadBody{} // drop the references to the caller's buffers
	if keep != nil {
		keep.beta = append(keep.beta, sc.beta[:T*g.vHeads]...)
		keep.logd = append(keep.logd, sc.logd[:T*g.vHeads]...)
		keep.n += T
	}
}

// run runs body over [0, n) on r, or on the calling goroutine without one.
func run(r Runner, n, grain int, body Body) {
	if r == nil {
		body.Run(0, n)
		return
	}
	r.For(n, grain, body)
}

// gdnConvBody runs the causal depthwise convolution and SiLU over channels [lo, hi)
// of the window of the K−1 cached rows and the T new qkv rows, read where they lie
// (copying them into one buffer and the cache back out of it moved 280 KB a 27B layer
// and decode token, on one thread).
type gdnConvBody struct {
	g            *GDN
	sc           *GDNScratch
	l            *Layer
	T            int
	cached, rows []float32 // the window: K−1 rows, then T
}

// row returns channels [lo, hi) of row r of the window.
func (b *gdnConvBody) row(r, lo, hi int) []float32 {
	W, c := b.g.width, b.g.kernel-1
	if r < c {
		return b.cached[r*W+lo : r*W+hi]
	}
	return b.rows[(r-c)*W+lo : (r-c)*W+hi]
}

func (b *gdnConvBody) Run(lo, hi int) {
	g, sc := b.g, b.sc
	W, K := g.width, g.kernel
	w := b.l.Conv[:W*K]
	for t := 0; t < b.T; t++ {
		dst := sc.act[t*W+lo : t*W+hi]
		if K == 4 {
			x0, x1, x2, x3 := b.row(t, lo, hi), b.row(t+1, lo, hi), b.row(t+2, lo, hi), b.row(t+3, lo, hi)
			wl := w[4*lo : 4*hi]
			for c := range dst {
				wc := wl[4*c : 4*c+4 : 4*c+4]
				dst[c] = wc[0]*x0[c] + wc[1]*x1[c] + wc[2]*x2[c] + wc[3]*x3[c]
			}
			siluMul(dst, dst, nil)
			continue
		}
		clear(dst)
		for tap := 0; tap < K; tap++ {
			x := b.row(t+tap, lo, hi)
			for c := range dst {
				dst[c] += w[(lo+c)*K+tap] * x[c]
			}
		}
		siluMul(dst, dst, nil)
	}
}

// gdnHeadBody runs q/k heads [lo, hi), each with the V heads that read it: the q/k
// normalisation, the gates, the recurrence and the gated norm. Different q/k heads
// share nothing but read-only inputs, so they can run in parallel.
type gdnHeadBody struct {
	g                   *GDN
	sc                  *GDNScratch
	l                   *Layer
	st                  *GDNState
	out, z, alpha, beta []float32
	T                   int
	chunked             bool
	keep                *GDNKeep // when set, each V head's state is saved before its first step of a kept pass
}

func (b *gdnHeadBody) Run(lo, hi int) {
	g, sc, T := b.g, b.sc, b.T
	d := g.d
	for kh := lo; kh < hi; kh++ {
		for t := 0; t < T; t++ {
			row := sc.act[t*g.width : (t+1)*g.width]
			q := row[kh*d : (kh+1)*d]
			L2Normalize(q, g.eps)
			scal(q, g.qScale)
			L2Normalize(row[(g.kHeads+kh)*d:(g.kHeads+kh+1)*d], g.eps)
		}
		for _, h := range g.readers[kh] {
			for t := 0; t < T; t++ {
				i := t*g.vHeads + h
				sc.beta[i] = Sigmoid(b.beta[i])
				sc.logd[i] = Softplus(b.alpha[i]+b.l.DTBias[h]) * b.l.A[h]
			}
		}
		if b.chunked {
			cs := sc.chunks[kh]
			for c0 := 0; c0 < T; c0 += GDNChunk {
				n := min(GDNChunk, T-c0)
				g.chunkDots(cs, kh, c0, n, sc)
				for _, h := range g.readers[kh] {
					g.chunk(cs, b.out, h, c0, n, b.st, sc)
				}
			}
		} else {
			for _, h := range g.readers[kh] {
				if b.keep != nil && b.keep.n == 0 {
					// The head's state is about to be read by its first step: saving
					// it here costs a write, the read being the step's own.
					d2 := d * d
					copy(b.keep.s[h*d2:(h+1)*d2], b.st.S[h*d2:(h+1)*d2])
				}
				for t := 0; t < T; t++ {
					g.step(b.out, h, t, b.st, sc)
				}
			}
		}
		for _, h := range g.readers[kh] {
			g.gatedNorm(b.out, b.z, h, T, b.l)
		}
	}
}

// views returns token t's q, k (of V head h's q/k head) and v (of head h).
func (g *GDN) views(sc *GDNScratch, h, t int) (q, k, v []float32) {
	d, kh := g.d, g.keyHead[h]
	row := sc.act[t*g.width : (t+1)*g.width]
	q = row[kh*d : (kh+1)*d]
	k = row[(g.kHeads+kh)*d : (g.kHeads+kh+1)*d]
	v = row[(2*g.kHeads+h)*d : (2*g.kHeads+h+1)*d]
	return q, k, v
}

// step advances V head h by token t: S ← S·e^g; δ = (v − Sᵀk)·β; S ← S + kδᵀ; o = Sᵀq.
// Each value-row j of S is touched in two passes while it sits in L1.
func (g *GDN) step(out []float32, h, t int, st *GDNState, sc *GDNScratch) {
	d := g.d
	q, k, v := g.views(sc, h, t)
	decay := decayWeight(float64(sc.logd[t*g.vHeads+h]))
	b := sc.beta[t*g.vHeads+h]
	S := st.S[h*d*d : (h+1)*d*d]
	o := out[t*g.inner+g.grouped[h]*d : t*g.inner+(g.grouped[h]+1)*d]
	gdnStep(S, k, q, v, o, decay, b)
}

// chunkDots gathers the k and q vectors of q/k head kh for tokens c0..c0+n−1 and their
// raw dot products, which every V head reading kh shares.
func (g *GDN) chunkDots(cs *chunkScratch, kh, c0, n int, sc *GDNScratch) {
	d, C, ld := g.d, GDNChunk, cs.ld
	for t := 0; t < n; t++ {
		row := sc.act[(c0+t)*g.width : (c0+t+1)*g.width]
		copy(cs.qc[t*ld:t*ld+d], row[kh*d:(kh+1)*d])
		copy(cs.kc[t*ld:t*ld+d], row[(g.kHeads+kh)*d:(g.kHeads+kh+1)*d])
	}
	for t := 0; t < n; t++ {
		dotRows(cs.qk[t*C:], 0, cs.qc[t*ld:], 0, 1, cs.kc, ld, t+1, d) // q_t·k_s, s ≤ t
		dotRows(cs.kk[t*C:], 0, cs.kc[t*ld:], 0, 1, cs.kc, ld, t, d)   // k_t·k_s, s < t
	}
}

// chunk advances V head h over tokens c0..c0+n−1 at once. With G_t the cumulative log
// decay within the chunk and S₀ the state at its start, unrolling the step gives
//
//	δ_t + β_t Σ_{s<t} e^{G_t−G_s}(k_t·k_s) δ_s = β_t (v_t − e^{G_t} S₀ᵀk_t)
//	o_t = e^{G_t} S₀ᵀq_t + Σ_{s≤t} e^{G_t−G_s}(q_t·k_s) δ_s
//	S_n = e^{G_n} S₀ + Σ_s e^{G_n−G_s} k_s δ_sᵀ
//
// Every exponent is a difference G_t−G_s ≤ 0 (decay only shrinks), so nothing overflows
// however strong the decay. The system is lower-triangular with a unit diagonal and
// separates by value-row j of S, so each row is solved, read out and updated in turn.
func (g *GDN) chunk(cs *chunkScratch, out []float32, h, c0, n int, st *GDNState, sc *GDNScratch) {
	d, C, ld := g.d, GDNChunk, cs.ld
	var G float64
	for t := 0; t < n; t++ {
		G += float64(sc.logd[(c0+t)*g.vHeads+h])
		cs.cumG[t] = G
		cs.gam[t] = decayWeight(G)
	}
	for t := 0; t < n; t++ {
		bt := sc.beta[(c0+t)*g.vHeads+h]
		cs.bet[t] = bt
		for s := 0; s <= t; s++ {
			e := decayWeight(cs.cumG[t] - cs.cumG[s])
			cs.qm[t*C+s] = e * cs.qk[t*C+s]
			if s < t {
				cs.am[t*C+s] = bt * e * cs.kk[t*C+s]
			}
		}
	}
	last := cs.cumG[n-1]
	for s := 0; s < n; s++ {
		cs.tail[s] = decayWeight(last - cs.cumG[s])
	}
	gLast := cs.gam[n-1]
	vOff := (2*g.kHeads + h) * d
	oOff := g.grouped[h] * d
	S := st.S[h*d*d : (h+1)*d*d]
	// U[j][t] = (S₀ᵀk_t)_j and W[j][t] = (S₀ᵀq_t)_j: every value-row of S against every
	// gathered k and q.
	uT, wT := cs.uT[:d*C], cs.wT[:d*C]
	dotRows(uT, C, S, d, d, cs.kc, ld, n, d)
	dotRows(wT, C, S, d, d, cs.qc, ld, n, d)
	// The chunk's values of head h, transposed to value-row order so the row loop below
	// reads them contiguously (token rows are QKVWidth apart).
	vT := cs.vT[:d*C]
	for t := 0; t < n; t++ {
		vrow := sc.act[(c0+t)*g.width+vOff : (c0+t)*g.width+vOff+d]
		for j, x := range vrow {
			vT[j*C+t] = x
		}
	}
	bet, gam := cs.bet[:n], cs.gam[:n]
	del, coef := cs.del[:n], cs.coef[:n]
	for j := 0; j < d; j++ {
		u, w, v := uT[j*C:j*C+n], wT[j*C:j*C+n], vT[j*C:j*C+n]
		for t := range del {
			del[t] = bet[t]*(v[t]-gam[t]*u[t]) - dot(cs.am[t*C:t*C+t], del)
		}
		for t := range w { // w becomes the output of row j
			w[t] = gam[t]*w[t] + dot(cs.qm[t*C:t*C+t+1], del)
		}
		for s := range coef {
			coef[s] = cs.tail[s] * del[s]
		}
		scaleAddRows(S[j*d:(j+1)*d], gLast, coef, cs.kc, ld)
	}
	for t := 0; t < n; t++ {
		orow := out[(c0+t)*g.inner+oOff : (c0+t)*g.inner+oOff+d]
		for j := range orow {
			orow[j] = wT[j*C+t]
		}
	}
}

// gatedNorm applies rmsnorm(o)·ssm_norm ⊙ silu(z) to V head h (tiled) for T tokens;
// o is already at the head's grouped place, z is tiled.
func (g *GDN) gatedNorm(out, z []float32, h, T int, l *Layer) {
	d := g.d
	for t := 0; t < T; t++ {
		o := out[t*g.inner+g.grouped[h]*d : t*g.inner+(g.grouped[h]+1)*d]
		zh := z[t*g.inner+h*d : t*g.inner+(h+1)*d]
		RMSNorm(o, o, l.SSMNorm, g.eps)
		siluMul(o, zh, o)
	}
}
