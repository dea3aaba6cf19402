package qwen35

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/floatconv"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/x448/float16"
)

// Reference is the float64 forward pass over unfolded dense weights: no Hadamard transform
// at run time, GDN V heads in GROUPED order, its own plain loops. It is the yardstick the
// packed, rotated, tiled runtime path is tested against, so it shares none of that path's
// code: it reads the file, unfolds and un-tiles every weight once at load, and then runs
// the forward pass of the package doc (§ Forward pass) literally.
//
// It reads two kinds of file:
//   - a packed Bonsai file (with the prism.hadamard contract): every ternary matrix is
//     decoded and each row unfolded with the rotation of its input width, row =
//     signs ⊙ FWHT(row′)/√n. That one operation serves both the folded weights (W′ = W·Rᵀ,
//     so a row of W is Rᵀ applied to the stored row) and the embedding (the stored row is
//     R·e, so e = Rᵀ·row);
//   - the unfolded "twin" of a packed file, which upstream llama.cpp runs: no contract,
//     every weight dense (F32; F16 and BF16 are accepted too, since they widen exactly),
//     the same tiled V order as the packed file for the V rows of attn_qkv, attn_gate,
//     ssm_alpha, ssm_beta, ssm_a, ssm_dt.bias and the conv V channels, and ssm_out's
//     input columns tiled as well: upstream applies no permutation, so the twin's writer
//     moves packed grouped column g to tiled position TiledHead(g).
//
// Either way the Reference ends up with the same dense weights, in grouped V-head order,
// stored as float32 (see unfoldRows for why that loses nothing on the synthetic models).
//
// Every sum is a sequential loop in float64 with each product rounded before it is added
// (no fused multiply-add), and goroutines only split independent rows, so the logits are
// bitwise reproducible: across runs, across batch sizes, across machines, and between a
// PQ2_0 file, its PTQ1_0 transcode and its twin. A Reference is read-only after
// NewReference and safe for concurrent use.
type Reference struct {
	cfg     Config
	dense   map[string]*refMatrix // every tensor of Config.Tensors, by GGUF name
	embed   *refMatrix
	output  *refMatrix
	outNorm *refMatrix
	layers  []refLayer
	mtp     *refMTP // nil without an MTP head
	rounded int64
}

// refMTP is the MTP head: its decoder layer and the three norms around eh_proj.
type refMTP struct {
	layer               refLayer
	ehProj              *refMatrix // 2·E inputs: [embedding; hidden]
	eNorm, hNorm, hdNrm *refMatrix
}

// refMatrix is a dense tensor: rows of cols values, row-major. cols is the GGUF Shape[0]
// (a linear's input width K; a vector's length; the conv's taps), rows the product of the
// rest (a linear's outputs; 1 for a vector; the conv's channels).
type refMatrix struct {
	rows, cols int
	w          []float32
}

func (m *refMatrix) row(i int) []float32 { return m.w[i*m.cols : (i+1)*m.cols] }

type refLayer struct {
	attention          bool
	attnNorm, postNorm *refMatrix

	// Gated DeltaNet, V heads grouped (index k·Repeat + r).
	qkv, gate, ssmOut  *refMatrix
	alpha, beta        *refMatrix
	conv               *refMatrix // QKVWidth channels × ConvKernel taps, tap 0 oldest
	dtBias, a, ssmNorm *refMatrix

	// Full attention.
	q, k, v, o   *refMatrix // q rows per head: [query HeadDim | gate HeadDim]
	qNorm, kNorm *refMatrix

	ffnGate, ffnUp, ffnDown *refMatrix
}

// NewReference loads a packed Bonsai file or its unfolded twin (see [Reference]) into dense
// float32 weights in grouped V-head order. A packed file is bound and checked with [Bind];
// a twin's tensors are read by the names and shapes of [Config.Tensors]. A file with
// ternary tensors but no prism.hadamard contract is refused: its rotation is unknown.
func NewReference(f *gguf.File) (*Reference, error) {
	vocab := 0
	if t, ok := f.Tensor(NameTokenEmbedding); ok && len(t.Shape) == 2 && t.Shape[1] > 0 && t.Shape[1] <= maxDim {
		vocab = int(t.Shape[1])
	}
	l := refLoader{f: f}
	var cfg *Config
	if f.Has(hadamard.KeyVersion) {
		w, err := Bind(f)
		if err != nil {
			return nil, err
		}
		cfg = &w.Config
		l.rotation = w.Rotation
		// gdn_v_grouped is true in every file PrismML ships. A contract without it folded
		// ssm_out over tiled columns; unfolding then leaves them tiled, as in the twin.
		l.outTiled = !w.Contract.GDNVGrouped
	} else {
		var err error
		if cfg, err = ReadConfig(f, vocab); err != nil {
			return nil, err
		}
		l.outTiled = true
	}
	r := &Reference{cfg: *cfg, dense: map[string]*refMatrix{}}
	for _, s := range cfg.Tensors() {
		m, err := l.load(s)
		if err != nil {
			return nil, err
		}
		r.untile(s, m, l.outTiled)
		r.dense[s.Name] = m
	}
	r.rounded = l.rounded.Load()
	r.embed, r.output, r.outNorm = r.dense[NameTokenEmbedding], r.dense[NameOutput], r.dense[NameOutputNorm]
	r.layers = make([]refLayer, cfg.Layers)
	layer := func(i int, attention bool) refLayer {
		t := func(suffix string) *refMatrix { return r.dense[LayerTensor(i, suffix)] }
		return refLayer{
			attention: attention,
			attnNorm:  t(SuffixAttnNorm), postNorm: t(SuffixPostAttnNorm),
			qkv: t(SuffixQKV), gate: t(SuffixGate), ssmOut: t(SuffixSSMOut),
			alpha: t(SuffixSSMAlpha), beta: t(SuffixSSMBeta), conv: t(SuffixSSMConv),
			dtBias: t(SuffixSSMDT), a: t(SuffixSSMA), ssmNorm: t(SuffixSSMNorm),
			q: t(SuffixAttnQ), k: t(SuffixAttnK), v: t(SuffixAttnV), o: t(SuffixAttnOut),
			qNorm: t(SuffixAttnQNorm), kNorm: t(SuffixAttnKNorm),
			ffnGate: t(SuffixFFNGate), ffnUp: t(SuffixFFNUp), ffnDown: t(SuffixFFNDown),
		}
	}
	for i := range r.layers {
		r.layers[i] = layer(i, cfg.IsAttention(i))
	}
	if cfg.NextN > 0 {
		n := cfg.NextNLayer(0)
		t := func(suffix string) *refMatrix { return r.dense[LayerTensor(n, suffix)] }
		r.mtp = &refMTP{layer: layer(n, true), ehProj: t(SuffixNextNEHProj),
			eNorm: t(SuffixNextNENorm), hNorm: t(SuffixNextNHNorm), hdNrm: t(SuffixNextNSharedHeadNorm)}
	}
	return r, nil
}

// Config returns the model's hyperparameters.
func (r *Reference) Config() Config { return r.cfg }

// RoundedWeights returns how many unfolded weights float32 could not hold exactly (they
// are stored rounded to nearest). It is zero for the synthetic models and for a twin
// (whose writer did any rounding); see unfoldRows.
func (r *Reference) RoundedWeights() int64 { return r.rounded }

// Dense returns a copy of the dense weights the Reference holds under a tensor's GGUF
// name — unfolded, V heads grouped — as rows × cols values, row-major, with cols the
// tensor's GGUF Shape[0]: a linear's rows are its outputs, a vector is one row, the conv
// is one row of taps per channel. ok is false for a name the model does not have.
func (r *Reference) Dense(name string) (w []float32, rows, cols int, ok bool) {
	m, ok := r.dense[name]
	if !ok {
		return nil, 0, 0, false
	}
	return append([]float32(nil), m.w...), m.rows, m.cols, true
}

// refLoader reads one tensor at a time into a dense matrix.
type refLoader struct {
	f        *gguf.File
	rotation func(k int) *hadamard.Rotation // nil for a twin
	outTiled bool                           // ssm_out's columns are stored tiled
	rounded  atomic.Int64
}

func (l *refLoader) fail(name, format string, args ...any) error {
	return fmt.Errorf("%w: tensor %q: %s", ErrWeights, name, fmt.Sprintf(format, args...))
}

func (l *refLoader) load(s TensorSpec) (*refMatrix, error) {
	t, ok := l.f.Tensor(s.Name)
	if !ok {
		return nil, l.fail(s.Name, "missing")
	}
	if !sameShape(t.Shape, s.Shape) {
		return nil, l.fail(s.Name, "shape %v, want %v", t.Shape, s.Shape)
	}
	data, err := l.f.TensorData(s.Name)
	if err != nil {
		return nil, l.fail(s.Name, "%v", err)
	}
	m := &refMatrix{cols: int(s.Shape[0]), rows: 1}
	for _, d := range s.Shape[1:] {
		m.rows *= int(d)
	}
	m.w = make([]float32, m.rows*m.cols)
	if format, ok := ternary.FormatOf(t.Type); ok {
		if l.rotation == nil {
			return nil, l.fail(s.Name, "ternary (%s) but the file has no %s contract: its rotation is unknown", t.Type, hadamard.KeyVersion)
		}
		if s.Role == RoleNone {
			return nil, l.fail(s.Name, "ternary, but the model has it dense")
		}
		if err := l.unfoldRows(m, format, data, l.rotation(m.cols)); err != nil {
			return nil, l.fail(s.Name, "%v", err)
		}
		return m, nil
	}
	var widen func(b []byte) float32
	size := 2
	switch t.Type {
	case gguf.TypeF32:
		size = 4
		widen = func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
	case gguf.TypeF16:
		widen = func(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }
	case gguf.TypeBF16:
		widen = func(b []byte) float32 { return floatconv.BF16ToFloat32(binary.LittleEndian.Uint16(b)) }
	default:
		return nil, l.fail(s.Name, "type %s, want F32, F16, BF16 or (with the contract) ternary", t.Type)
	}
	if l.rotation != nil && s.Kind == KindTernary {
		// Bind has already refused this; kept so the loader never reads a folded weight
		// as if it were unfolded.
		return nil, l.fail(s.Name, "type %s in a packed file, want ternary", t.Type)
	}
	for i := range m.w {
		v := widen(data[i*size:])
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, l.fail(s.Name, "element %d is %v", i, v)
		}
		m.w[i] = v
	}
	return m, nil
}

// unfoldRows decodes each ternary row and unfolds it: row = signs ⊙ FWHT(row′)/√n, in
// float64, stored as float32.
//
// Why float32 loses nothing here: a decoded weight is (q−1)·d with d an fp16 scale, an
// integer below 2¹¹ times a power of two, so one Hadamard block's output is Σ ±dᵦ over
// n terms — an integer multiple of the smallest scale's unit. The FWHT's float64 partial
// sums are such multiples far below 2⁵³, so they are exact; signs are ±1 and 1/√n is a
// power of two whenever n is a power of four (1024 in the real model; synth picks one),
// so the float64 row is the exact unfolded row. It fits float32's 24-bit significand
// when that integer stays below 2²⁴: with scales within a factor 4 of each other (the
// synthetic models spread them over [0.5d, 1.5d)), |Σ| < n·2¹¹·4 ≤ 2²³ for n ≤ 1024.
// A real model whose scales in one Hadamard block spread further, or an n that is not a
// power of four, may round; RoundedWeights counts such weights, and the tests check it
// is zero for the synthetic models.
func (l *refLoader) unfoldRows(m *refMatrix, format ternary.Format, data []byte, rot *hadamard.Rotation) error {
	if rot == nil || rot.Width() != m.cols {
		return fmt.Errorf("no rotation of width %d", m.cols)
	}
	rb := format.RowBytes(m.cols)
	if len(data) != m.rows*rb {
		return fmt.Errorf("%d bytes, want %d", len(data), m.rows*rb)
	}
	var mu sync.Mutex
	var firstErr error
	parallelRows(m.rows, m.cols*16, func(lo, hi int) {
		dec := make([]float32, m.cols)
		row := make([]float64, m.cols)
		var rounded int64
		for i := lo; i < hi; i++ {
			if err := format.Decode(dec, data[i*rb:(i+1)*rb]); err != nil {
				mu.Lock()
				firstErr = firstOf(firstErr, fmt.Errorf("row %d: %w", i, err))
				mu.Unlock()
				return
			}
			for j, v := range dec {
				row[j] = float64(v)
			}
			rot.Inverse64(row)
			out := m.row(i)
			for j, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					mu.Lock()
					firstErr = firstOf(firstErr, fmt.Errorf("row %d: unfolded element %d is %v (a non-finite scale)", i, j, v))
					mu.Unlock()
					return
				}
				out[j] = float32(v)
				if float64(out[j]) != v {
					rounded++
				}
			}
		}
		l.rounded.Add(rounded)
	})
	return firstErr
}

func firstOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// untile puts a GDN tensor stored in tiled V-head order into grouped order (heads.go).
// Only the V-ordered tensors move; ssm_out's input columns move only when stored tiled
// (a twin).
func (r *Reference) untile(s TensorSpec, m *refMatrix, outTiled bool) {
	if s.Layer < 0 || r.cfg.IsAttention(s.Layer) || s.Layer >= r.cfg.Layers {
		return
	}
	c := &r.cfg
	d, kv := c.StateSize, 2*c.KHeads*c.StateSize
	switch s.Name[len(LayerTensor(s.Layer, "")):] {
	case SuffixQKV:
		// q and k rows stay; the V rows move in blocks of StateSize rows.
		untileHeads(c, m.w[kv*m.cols:], d*m.cols)
	case SuffixSSMConv:
		// One row of taps per channel: the V channels move like the qkv V rows.
		untileHeads(c, m.w[kv*m.cols:], d*m.cols)
	case SuffixGate:
		untileHeads(c, m.w, d*m.cols)
	case SuffixSSMAlpha, SuffixSSMBeta:
		untileHeads(c, m.w, m.cols) // one row per V head
	case SuffixSSMA, SuffixSSMDT:
		untileHeads(c, m.w, 1)
	case SuffixSSMOut:
		if outTiled {
			tmp := make([]float32, m.cols)
			for i := 0; i < m.rows; i++ {
				copy(tmp, m.row(i))
				c.PermuteTiledToGrouped(m.row(i), tmp)
			}
		}
	}
}

// untileHeads reorders w, VHeads blocks of unit values in tiled head order, to grouped
// order in place.
func untileHeads(c *Config, w []float32, unit int) {
	src := append([]float32(nil), w[:c.VHeads*unit]...)
	for g := 0; g < c.VHeads; g++ {
		t := c.TiledHead(g)
		copy(w[g*unit:(g+1)*unit], src[t*unit:(t+1)*unit])
	}
}

// parallelRows runs fn over [0, n) split into one contiguous range per processor, when
// the work (n·cost inner steps) is worth the goroutines. Ranges are independent, so the
// split never changes a result.
func parallelRows(n, cost int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 || n*cost < 1<<16 {
		fn(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+chunk, n))
	}
	wg.Wait()
}

// Forward runs a fresh sequence (zero GDN and conv state, empty attention history) over
// tokens and returns the logits of every position, Vocab values each.
//
// It works layer by layer over all positions — the state recurrences run position by
// position inside each mixer — so each weight matrix is read once per layer rather than
// once per token. Causality holds by construction: position i only reads positions ≤ i.
func (r *Reference) Forward(tokens []int) ([][]float64, error) {
	x, err := r.Hidden(tokens)
	if err != nil {
		return nil, err
	}
	return matmul(r.output, r.norms(x, r.outNorm)), nil
}

// Hidden returns the residual stream after the last decoder layer at every position,
// before output_norm: the hidden state the MTP head reads (see [MTPHead]).
func (r *Reference) Hidden(tokens []int) ([][]float64, error) {
	c := &r.cfg
	if len(tokens) == 0 {
		return nil, errors.New("qwen35: Reference.Forward: no tokens")
	}
	x := make([][]float64, len(tokens))
	for t, tok := range tokens {
		if tok < 0 || tok >= c.Vocab {
			return nil, fmt.Errorf("qwen35: Reference.Forward: token %d at position %d is outside the vocabulary [0, %d)", tok, t, c.Vocab)
		}
		x[t] = widen(r.embed.row(tok))
	}
	for i := range r.layers {
		r.layer(&r.layers[i], x)
	}
	return x, nil
}

// layer runs one decoder layer over every position of the residual stream x, in place.
func (r *Reference) layer(l *refLayer, x [][]float64) {
	h := r.norms(x, l.attnNorm)
	var mix [][]float64
	if l.attention {
		mix = r.attention(l, h)
	} else {
		mix = r.gdn(l, h)
	}
	addTo(x, mix)
	h2 := r.norms(x, l.postNorm)
	g, u := matmul(l.ffnGate, h2), matmul(l.ffnUp, h2)
	for t := range g {
		for j := range g[t] {
			g[t][j] = silu(g[t][j]) * u[t][j]
		}
	}
	addTo(x, matmul(l.ffnDown, g))
}

// MTP runs the MTP head (see [MTPHead]) over a sequence of positions 0..T−1: row t
// pairs hidden[t], the main model's hidden state at position t (from Hidden), with
// next[t], the token at position t+1, and predicts the token at t+2. The head's
// attention layer attends causally over the rows, as its own KV cache would hold them
// in a decode that ran the head at every position. It returns the logits and the
// layer's output (before shared_head_norm), which a chain feeds back as the hidden
// state of its next step. The rows' positions are 0..T−1 (vLLM's: a row sits at its
// hidden state's position); llama.cpp places them one later, which RoPE's relative
// phases make the same attention.
func (r *Reference) MTP(hidden [][]float64, next []int) (logits, out [][]float64, err error) {
	c := &r.cfg
	m := r.mtp
	if m == nil {
		return nil, nil, ErrNoMTP
	}
	if len(hidden) != len(next) || len(next) == 0 {
		return nil, nil, fmt.Errorf("qwen35: Reference.MTP: %d hidden states for %d tokens", len(hidden), len(next))
	}
	E := c.Embedding
	x := make([][]float64, len(next))
	for t, tok := range next {
		if tok < 0 || tok >= c.Vocab {
			return nil, nil, fmt.Errorf("qwen35: Reference.MTP: token %d at row %d is outside the vocabulary [0, %d)", tok, t, c.Vocab)
		}
		if len(hidden[t]) != E {
			return nil, nil, fmt.Errorf("qwen35: Reference.MTP: hidden state %d has %d values, want %d", t, len(hidden[t]), E)
		}
		cat := make([]float64, 2*E)
		copy(cat, widen(r.embed.row(tok)))
		rmsNormInPlace(cat[:E], m.eNorm.w, c.RMSEpsilon)
		copy(cat[E:], hidden[t])
		rmsNormInPlace(cat[E:], m.hNorm.w, c.RMSEpsilon)
		x[t] = cat
	}
	x = matmul(m.ehProj, x)
	r.layer(&m.layer, x)
	return matmul(r.output, r.norms(x, m.hdNrm)), x, nil
}

// gdn is the Gated DeltaNet mixer over all positions, V heads grouped: grouped head g
// reads q/k head g / Repeat.
func (r *Reference) gdn(l *refLayer, h [][]float64) [][]float64 {
	c := &r.cfg
	T, d, nk, nv := len(h), c.StateSize, c.KHeads, c.VHeads
	rep := c.HeadRepeat()
	eps := c.RMSEpsilon
	qkv := matmul(l.qkv, h)
	z := matmul(l.gate, h)
	beta := matmul(l.beta, h)
	alpha := matmul(l.alpha, h)

	// Causal depthwise conv, tap 0 the oldest, zero before the first position; then SiLU.
	ch, taps := c.QKVWidth(), c.ConvKernel
	conv := make([][]float64, T)
	for t := range conv {
		conv[t] = make([]float64, ch)
		for j := 0; j < ch; j++ {
			w := l.conv.row(j)
			var s float64
			for k := 0; k < taps; k++ {
				if p := t - (taps - 1) + k; p >= 0 {
					s += float64(float64(w[k]) * qkv[p][j])
				}
			}
			conv[t][j] = silu(s)
		}
	}

	out := make([][]float64, T)
	state := make([][]float64, nv) // per V head: S[i·d + j], i the key dim, j the value dim
	for g := range state {
		state[g] = make([]float64, d*d)
	}
	scale := 1 / math.Sqrt(float64(d))
	delta := make([]float64, d)
	for t := 0; t < T; t++ {
		q := make([]float64, nk*d)
		k := make([]float64, nk*d)
		for hk := 0; hk < nk; hk++ {
			copy(q[hk*d:(hk+1)*d], conv[t][hk*d:(hk+1)*d])
			copy(k[hk*d:(hk+1)*d], conv[t][(nk+hk)*d:(nk+hk+1)*d])
			l2norm(q[hk*d:(hk+1)*d], eps)
			l2norm(k[hk*d:(hk+1)*d], eps)
			for i := hk * d; i < (hk+1)*d; i++ {
				q[i] *= scale
			}
		}
		v := conv[t][2*nk*d:]
		o := make([]float64, nv*d)
		for g := 0; g < nv; g++ {
			S := state[g]
			qh, kh := q[(g/rep)*d:(g/rep+1)*d], k[(g/rep)*d:(g/rep+1)*d]
			vh, oh := v[g*d:(g+1)*d], o[g*d:(g+1)*d]
			b := sigmoid(beta[t][g])
			decay := math.Exp(softplus(alpha[t][g]+float64(l.dtBias.w[g])) * float64(l.a.w[g]))
			for i := range S {
				S[i] *= decay
			}
			for j := 0; j < d; j++ { // δ = (v − Sᵀk)·β
				var sk float64
				for i := 0; i < d; i++ {
					sk += float64(S[i*d+j] * kh[i])
				}
				delta[j] = (vh[j] - sk) * b
			}
			for i := 0; i < d; i++ { // S += k δᵀ
				for j := 0; j < d; j++ {
					S[i*d+j] += float64(kh[i] * delta[j])
				}
			}
			for j := 0; j < d; j++ { // o = Sᵀq
				var s float64
				for i := 0; i < d; i++ {
					s += float64(S[i*d+j] * qh[i])
				}
				oh[j] = s
			}
			// Gated RMSNorm per head: rmsnorm(o)·ssm_norm ⊙ silu(z).
			rms := rmsScale(oh, eps)
			for j := range oh {
				oh[j] = oh[j] * rms * float64(l.ssmNorm.w[j]) * silu(z[t][g*d+j])
			}
		}
		out[t] = o
	}
	return matmul(l.ssmOut, out)
}

// attention is the gated full-attention mixer over all positions.
func (r *Reference) attention(l *refLayer, h [][]float64) [][]float64 {
	c := &r.cfg
	T, D, H, KV := len(h), c.HeadDim, c.Heads, c.KVHeads
	eps := c.RMSEpsilon
	qg := matmul(l.q, h)
	ks := matmul(l.k, h)
	vs := matmul(l.v, h)
	qs := make([][]float64, T)
	gates := make([][]float64, T)
	for t := 0; t < T; t++ {
		qs[t] = make([]float64, H*D)
		gates[t] = make([]float64, H*D)
		for hd := 0; hd < H; hd++ {
			q := qs[t][hd*D : (hd+1)*D]
			copy(q, qg[t][2*hd*D:(2*hd+1)*D])
			copy(gates[t][hd*D:(hd+1)*D], qg[t][(2*hd+1)*D:(2*hd+2)*D])
			rmsNormInPlace(q, l.qNorm.w, eps)
			rope(q, t, c.RopeDims, c.RopeBase)
		}
		for hk := 0; hk < KV; hk++ {
			k := ks[t][hk*D : (hk+1)*D]
			rmsNormInPlace(k, l.kNorm.w, eps)
			rope(k, t, c.RopeDims, c.RopeBase)
		}
	}
	scale := 1 / math.Sqrt(float64(D))
	group := H / KV
	out := make([][]float64, T)
	p := make([]float64, T)
	for t := 0; t < T; t++ {
		out[t] = make([]float64, H*D)
		for hd := 0; hd < H; hd++ {
			q := qs[t][hd*D : (hd+1)*D]
			kvh := hd / group
			m := math.Inf(-1)
			for s := 0; s <= t; s++ {
				p[s] = dot64(q, ks[s][kvh*D:(kvh+1)*D]) * scale
				m = math.Max(m, p[s])
			}
			var sum float64
			for s := 0; s <= t; s++ {
				p[s] = math.Exp(p[s] - m)
				sum += p[s]
			}
			o := out[t][hd*D : (hd+1)*D]
			for s := 0; s <= t; s++ {
				w := p[s] / sum
				v := vs[s][kvh*D : (kvh+1)*D]
				for j := range o {
					o[j] += float64(w * v[j])
				}
			}
			gate := gates[t][hd*D : (hd+1)*D]
			for j := range o {
				o[j] *= sigmoid(gate[j])
			}
		}
	}
	return matmul(l.o, out)
}

// rope rotates the first dims values of x NeoX-style: pairs (i, i + dims/2), angle
// pos·base^(−2i/dims). Text gives every mrope section the same position, so the sections
// do not matter.
func rope(x []float64, pos, dims int, base float64) {
	half := dims / 2
	for i := 0; i < half; i++ {
		theta := float64(pos) * math.Pow(base, -2*float64(i)/float64(dims))
		sin, cos := math.Sincos(theta)
		a, b := x[i], x[i+half]
		x[i] = float64(a*cos) - float64(b*sin)
		x[i+half] = float64(a*sin) + float64(b*cos)
	}
}

// norms returns rmsnorm(x[t])·gain for every position.
func (r *Reference) norms(x [][]float64, gain *refMatrix) [][]float64 {
	out := make([][]float64, len(x))
	for t := range x {
		out[t] = append([]float64(nil), x[t]...)
		rmsNormInPlace(out[t], gain.w, r.cfg.RMSEpsilon)
	}
	return out
}

// rmsScale returns 1/sqrt(mean(x²) + eps).
func rmsScale(x []float64, eps float64) float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	return 1 / math.Sqrt(ss/float64(len(x))+eps)
}

// rmsNormInPlace sets x to rmsnorm(x)·gain; gains are applied as stored (already +1).
func rmsNormInPlace(x []float64, gain []float32, eps float64) {
	s := rmsScale(x, eps)
	for i := range x {
		x[i] = x[i] * s * float64(gain[i])
	}
}

// l2norm sets x to x / max(‖x‖, eps).
func l2norm(x []float64, eps float64) {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	n := math.Max(math.Sqrt(ss), eps)
	for i := range x {
		x[i] /= n
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func silu(x float64) float64 { return x / (1 + math.Exp(-x)) }

// softplus is log(1 + eˣ), taken as x above 20 as torch and ggml do.
func softplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

func dot64(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += float64(a[i] * b[i])
	}
	return s
}

func widen(w []float32) []float64 {
	x := make([]float64, len(w))
	for i, v := range w {
		x[i] = float64(v)
	}
	return x
}

func addTo(x, y [][]float64) {
	for t := range x {
		for j := range x[t] {
			x[t][j] += y[t][j]
		}
	}
}

// matmul returns m·x[t] for every position t. Each output is one sequential float64 sum
// over the row; the explicit float64 conversion of each product forbids fusing it into
// an FMA (Go spec, "Arithmetic operators"), so the result is the same on every machine
// and whether a position is computed alone or with others. Four positions share each
// pass over a row, which only interleaves independent sums.
func matmul(m *refMatrix, x [][]float64) [][]float64 {
	y := make([][]float64, len(x))
	for t := range y {
		y[t] = make([]float64, m.rows)
	}
	parallelRows(m.rows, m.cols*len(x), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			w := m.row(i)
			t := 0
			for ; t+4 <= len(x); t += 4 {
				x0, x1, x2, x3 := x[t][:len(w)], x[t+1][:len(w)], x[t+2][:len(w)], x[t+3][:len(w)]
				var s0, s1, s2, s3 float64
				for j, wj := range w {
					v := float64(wj)
					s0 += float64(v * x0[j])
					s1 += float64(v * x1[j])
					s2 += float64(v * x2[j])
					s3 += float64(v * x3[j])
				}
				y[t][i], y[t+1][i], y[t+2][i], y[t+3][i] = s0, s1, s2, s3
			}
			for ; t < len(x); t++ {
				xt := x[t][:len(w)]
				var s float64
				for j, wj := range w {
					s += float64(float64(wj) * xt[j])
				}
				y[t][i] = s
			}
		}
	})
	return y
}
