package qwen35_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/floatconv"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refTokens is a fixed token sequence within the tiny vocabulary.
func refTokens(n, vocab int) []int {
	toks := make([]int, n)
	for i := range toks {
		toks[i] = (i*7919 + 13) % vocab
	}
	return toks
}

// fileTensor is the test's own float64 reading of one tensor, in the order the file
// stores it (V heads tiled), rows × cols with cols the GGUF Shape[0]. Ternary rows are
// unfolded with an explicit dense Sylvester matrix rather than the package's FWHT.
type fileTensor struct {
	rows, cols int
	w          []float64
}

func (m fileTensor) row(i int) []float64 { return m.w[i*m.cols : (i+1)*m.cols] }

func readFileTensor(t testing.TB, f *gguf.File, contract *hadamard.Contract, name string) fileTensor {
	t.Helper()
	info, ok := f.Tensor(name)
	require.True(t, ok, name)
	data, err := f.TensorData(name)
	require.NoError(t, err)
	m := fileTensor{cols: int(info.Shape[0]), rows: 1}
	for _, d := range info.Shape[1:] {
		m.rows *= int(d)
	}
	m.w = make([]float64, m.rows*m.cols)
	if format, ok := ternary.FormatOf(info.Type); ok {
		require.NotNil(t, contract, "%s: ternary without a contract", name)
		signs := signsOf(t, contract, m.cols)
		n := contract.BlockSize
		rootN := math.Sqrt(float64(n))
		require.Equal(t, math.Floor(rootN), rootN, "the test's exactness needs √n a whole number")
		rb := format.RowBytes(m.cols)
		dec := make([]float32, m.cols)
		for i := 0; i < m.rows; i++ {
			require.NoError(t, format.Decode(dec, data[i*rb:(i+1)*rb]))
			out := m.row(i)
			for b := 0; b < m.cols; b += n {
				for c := 0; c < n; c++ {
					// (H·row′)[c] = Σ_r (−1)^popcount(c&r) · row′[r], then signs and 1/√n.
					var s float64
					for r := 0; r < n; r++ {
						v := float64(dec[b+r])
						if bits.OnesCount(uint(c&r))%2 == 1 {
							v = -v
						}
						s += v
					}
					out[b+c] = float64(signs[b+c]) * s / rootN
				}
			}
		}
		return m
	}
	for i := range m.w {
		switch info.Type {
		case gguf.TypeF32:
			m.w[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
		case gguf.TypeBF16:
			m.w[i] = float64(floatconv.BF16ToFloat32(binary.LittleEndian.Uint16(data[2*i:])))
		default:
			require.FailNowf(t, "unexpected type", "%s: %s", name, info.Type)
		}
	}
	return m
}

func signsOf(t testing.TB, c *hadamard.Contract, width int) []int8 {
	for i, w := range c.Widths {
		if w == width {
			return c.Signs[i]
		}
	}
	require.FailNowf(t, "no signs", "the contract has no signs for width %d", width)
	return nil
}

func parseContract(t testing.TB, f *gguf.File) *hadamard.Contract {
	t.Helper()
	c, err := hadamard.ParseContract(f)
	require.NoError(t, err)
	return c
}

func dense(t testing.TB, r *qwen35.Reference, name string) fileTensor {
	t.Helper()
	w, rows, cols, ok := r.Dense(name)
	require.True(t, ok, name)
	m := fileTensor{rows: rows, cols: cols, w: make([]float64, len(w))}
	for i, v := range w {
		m.w[i] = float64(v)
	}
	return m
}

// groupedRow is where row i of a tensor as the file stores it lands in the reference's
// grouped order, for the rows that move: the V rows of attn_qkv and the V channels of
// the conv (StateSize rows per head after the q and k rows), attn_gate's rows (StateSize
// per head) and ssm_alpha/ssm_beta's rows (one per head). ssm_a and ssm_dt.bias are one
// row whose elements move; see groupedElem.
func groupedRow(c *qwen35.Config, suffix string, i int) int {
	d, kv := c.StateSize, 2*c.KHeads*c.StateSize
	switch suffix {
	case qwen35.SuffixQKV, qwen35.SuffixSSMConv:
		if i < kv {
			return i
		}
		return kv + c.GroupedHead((i-kv)/d)*d + (i-kv)%d
	case qwen35.SuffixGate:
		return c.GroupedHead(i/d)*d + i%d
	case qwen35.SuffixSSMAlpha, qwen35.SuffixSSMBeta:
		return c.GroupedHead(i)
	}
	return i
}

func groupedElem(c *qwen35.Config, suffix string, j int) int {
	if suffix == qwen35.SuffixSSMA || suffix == qwen35.SuffixSSMDT {
		return c.GroupedHead(j)
	}
	return j
}

func suffixOf(s qwen35.TensorSpec) string {
	if s.Layer < 0 {
		return ""
	}
	return strings.TrimPrefix(s.Name, qwen35.LayerTensor(s.Layer, ""))
}

// checkDenseMatchesFile checks every weight of the reference against the test's own
// reading of the packed file: unfolded with the explicit Hadamard matrix, moved from
// tiled to grouped order by GroupedHead. Equality is bitwise: both sides are exact
// (see unfoldRows), and the float32 the reference stores must hold the float64 value.
func checkDenseMatchesFile(t *testing.T, r *qwen35.Reference, f *gguf.File) {
	cfg := r.Config()
	contract := parseContract(t, f)
	for _, s := range cfg.Tensors() {
		want := readFileTensor(t, f, contract, s.Name)
		got := dense(t, r, s.Name)
		require.Equal(t, want.rows, got.rows, s.Name)
		require.Equal(t, want.cols, got.cols, s.Name)
		suffix := suffixOf(s)
		if s.Layer >= 0 && cfg.IsAttention(s.Layer) {
			suffix = "" // attention layers have no V-head order
		}
		bad := 0
		for i := 0; i < want.rows; i++ {
			gi := groupedRow(&cfg, suffix, i)
			for j := 0; j < want.cols; j++ {
				if got.row(gi)[groupedElem(&cfg, suffix, j)] != want.row(i)[j] {
					bad++
				}
			}
		}
		assert.Zero(t, bad, "%s: %d weights differ", s.Name, bad)
	}
}

func TestReferenceUnfoldExact(t *testing.T) {
	f := synthtest.File(t, "tiny", 1, ternary.PQ2_0)
	r, err := qwen35.NewReference(f)
	require.NoError(t, err)
	assert.Zero(t, r.RoundedWeights(), "every unfolded weight fits float32 exactly")
	checkDenseMatchesFile(t, r, f)

	// The unfolding is not the identity: a folded row differs from its stored form.
	contract := parseContract(t, f)
	info, _ := f.Tensor(qwen35.NameOutput)
	data, err := f.TensorData(qwen35.NameOutput)
	require.NoError(t, err)
	format, _ := ternary.FormatOf(info.Type)
	stored := make([]float32, info.Shape[0])
	require.NoError(t, format.Decode(stored, data[:format.RowBytes(int(info.Shape[0]))]))
	unfolded := readFileTensor(t, f, contract, qwen35.NameOutput).row(0)
	same := 0
	for j := range stored {
		if float64(stored[j]) == unfolded[j] {
			same++
		}
	}
	assert.Less(t, same, len(stored)/2)
}

func TestReferenceUntile(t *testing.T) {
	cfg := synthtest.Config(t, "tiny")
	f := synthtest.File(t, "tiny", 2, ternary.PQ2_0)
	r, err := qwen35.NewReference(f)
	require.NoError(t, err)
	contract := parseContract(t, f)
	d, nk := cfg.StateSize, cfg.KHeads
	require.Equal(t, 3, cfg.HeadRepeat())
	const layer = 0
	require.False(t, cfg.IsAttention(layer))
	name := func(s string) string { return qwen35.LayerTensor(layer, s) }

	// Tiled head 5 is K group 5 % 4 = 1, repeat 5 / 4 = 1: grouped head 1·3 + 1 = 4.
	const tiled, grouped = 5, 4
	require.Equal(t, grouped, cfg.GroupedHead(tiled))

	conv := readFileTensor(t, f, contract, name(qwen35.SuffixSSMConv))
	gotConv := dense(t, r, name(qwen35.SuffixSSMConv))
	for j := 0; j < d; j++ {
		assert.Equal(t, conv.row(2*nk*d+tiled*d+j), gotConv.row(2*nk*d+grouped*d+j), "conv V channel %d of tiled head %d", j, tiled)
	}
	// q and k channels stay where they are.
	assert.Equal(t, conv.row(3), gotConv.row(3))
	assert.Equal(t, conv.row(nk*d+7), gotConv.row(nk*d+7))

	qkv := readFileTensor(t, f, contract, name(qwen35.SuffixQKV))
	gotQKV := dense(t, r, name(qwen35.SuffixQKV))
	assert.Equal(t, qkv.row(2*nk*d+tiled*d+3), gotQKV.row(2*nk*d+grouped*d+3))

	gate := readFileTensor(t, f, contract, name(qwen35.SuffixGate))
	assert.Equal(t, gate.row(tiled*d+9), dense(t, r, name(qwen35.SuffixGate)).row(grouped*d+9))

	for _, s := range []string{qwen35.SuffixSSMAlpha, qwen35.SuffixSSMBeta} {
		assert.Equal(t, readFileTensor(t, f, contract, name(s)).row(tiled), dense(t, r, name(s)).row(grouped), s)
	}
	for _, s := range []string{qwen35.SuffixSSMA, qwen35.SuffixSSMDT} {
		assert.Equal(t, readFileTensor(t, f, contract, name(s)).w[tiled], dense(t, r, name(s)).w[grouped], s)
	}
	// The packed ssm_out's columns are grouped already: they do not move.
	out := readFileTensor(t, f, contract, name(qwen35.SuffixSSMOut))
	assert.Equal(t, out.w, dense(t, r, name(qwen35.SuffixSSMOut)).w)
}

func TestReferenceForwardInvariants(t *testing.T) {
	cfg := synthtest.Config(t, "tiny")
	f := synthtest.File(t, "tiny", 3, ternary.PQ2_0)
	r, err := qwen35.NewReference(f)
	require.NoError(t, err)
	toks := refTokens(16, cfg.Vocab)
	logits, err := r.Forward(toks)
	require.NoError(t, err)
	require.Len(t, logits, len(toks))
	var spread float64
	for p, row := range logits {
		require.Len(t, row, cfg.Vocab)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range row {
			require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "position %d", p)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		spread += hi - lo
	}
	assert.Greater(t, spread/float64(len(toks)), 1.0, "logits should not be flat")

	// Deterministic: again, and from a second load.
	again, err := r.Forward(toks)
	require.NoError(t, err)
	assert.Equal(t, logits, again)
	r2, err := qwen35.NewReference(f)
	require.NoError(t, err)
	again, err = r2.Forward(toks)
	require.NoError(t, err)
	assert.Equal(t, logits, again)

	// Causal: changing the tokens after position i leaves positions ≤ i bitwise alone,
	// and so does dropping them.
	for _, i := range []int{0, 4, 9} {
		changed := append([]int(nil), toks...)
		for j := i + 1; j < len(changed); j++ {
			changed[j] = (changed[j] + 101) % cfg.Vocab
		}
		got, err := r.Forward(changed)
		require.NoError(t, err)
		assert.Equal(t, logits[:i+1], got[:i+1], "prefix through %d", i)
		assert.NotEqual(t, logits[i+1], got[i+1])
		prefix, err := r.Forward(toks[:i+1])
		require.NoError(t, err)
		assert.Equal(t, logits[:i+1], prefix, "forward of the first %d tokens", i+1)
	}

	_, err = r.Forward(nil)
	assert.ErrorContains(t, err, "qwen35: ")
	_, err = r.Forward([]int{0, cfg.Vocab})
	assert.ErrorContains(t, err, "vocabulary")
	_, err = r.Forward([]int{-1})
	assert.Error(t, err)
}

func TestReferencePTQ1_0MatchesPQ2_0(t *testing.T) {
	cfg := synthtest.Config(t, "tiny")
	pq, err := qwen35.NewReference(synthtest.File(t, "tiny", 4, ternary.PQ2_0))
	require.NoError(t, err)
	ptq, err := qwen35.NewReference(synthtest.File(t, "tiny", 4, ternary.PTQ1_0))
	require.NoError(t, err)
	assert.Zero(t, ptq.RoundedWeights())
	for _, s := range cfg.Tensors() {
		a, _, _, _ := pq.Dense(s.Name)
		b, _, _, _ := ptq.Dense(s.Name)
		require.Equal(t, a, b, s.Name)
	}
	toks := refTokens(12, cfg.Vocab)
	want, err := pq.Forward(toks)
	require.NoError(t, err)
	got, err := ptq.Forward(toks)
	require.NoError(t, err)
	assert.Equal(t, want, got, "bitwise identical logits")
}

// buildTwin writes the unfolded F32 twin of a packed file as the twin's description has
// it: no prism.hadamard keys, every weight F32 — ternary ones unfolded, alpha/beta
// widened — the V-ordered tensors tiled as in the packed file, and ssm_out's input
// columns tiled too (packed grouped column g goes to tiled position TiledHead(g)).
func buildTwin(t testing.TB, packed *gguf.File) *gguf.File {
	t.Helper()
	info, _ := packed.Tensor(qwen35.NameTokenEmbedding)
	cfg, err := qwen35.ReadConfig(packed, int(info.Shape[1]))
	require.NoError(t, err)
	contract := parseContract(t, packed)
	var kv []gguf.KV
	for _, e := range packed.KV {
		if strings.HasPrefix(e.Key, "prism.hadamard.") || e.Key == "general.file_type" {
			continue
		}
		kv = append(kv, e)
	}
	specs := cfg.Tensors()
	infos := make([]gguf.TensorInfo, len(specs))
	for i, s := range specs {
		infos[i] = gguf.TensorInfo{Name: s.Name, Type: gguf.TypeF32, Shape: s.Shape}
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, kv, infos)
	require.NoError(t, err)
	d := cfg.StateSize
	for _, s := range specs {
		m := readFileTensor(t, packed, contract, s.Name)
		if s.Layer >= 0 && suffixOf(s) == qwen35.SuffixSSMOut {
			tiled := make([]float64, len(m.w))
			for i := 0; i < m.rows; i++ {
				for g := 0; g < cfg.VHeads; g++ {
					tg := cfg.TiledHead(g)
					copy(tiled[i*m.cols+tg*d:i*m.cols+(tg+1)*d], m.row(i)[g*d:(g+1)*d])
				}
			}
			m.w = tiled
		}
		b := make([]byte, 4*len(m.w))
		for i, v := range m.w {
			require.Equal(t, v, float64(float32(v)), "%s: not exact in float32", s.Name)
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		}
		require.NoError(t, w.WriteTensor(s.Name, b))
	}
	require.NoError(t, w.Close())
	f, err := gguf.Parse(buf.Bytes())
	require.NoError(t, err)
	return f
}

func TestReferenceTwinMatchesPacked(t *testing.T) {
	cfg := synthtest.Config(t, "tiny")
	packed := synthtest.File(t, "tiny", 5, ternary.PQ2_0)
	twin := buildTwin(t, packed)
	assert.False(t, twin.Has(hadamard.KeyVersion))
	rp, err := qwen35.NewReference(packed)
	require.NoError(t, err)
	rt, err := qwen35.NewReference(twin)
	require.NoError(t, err)
	assert.Equal(t, rp.Config(), rt.Config())
	for _, s := range cfg.Tensors() {
		a, _, _, _ := rp.Dense(s.Name)
		b, _, _, _ := rt.Dense(s.Name)
		require.Equal(t, a, b, s.Name)
	}
	toks := refTokens(10, cfg.Vocab)
	want, err := rp.Forward(toks)
	require.NoError(t, err)
	got, err := rt.Forward(toks)
	require.NoError(t, err)
	assert.Equal(t, want, got, "bitwise identical logits")
}

// The twin that internal/synth writes for upstream llama.cpp loads to the same dense
// weights as the packed file, for both ternary formats, and so gives the same logits.
func TestReferenceSynthTwinMatchesPacked(t *testing.T) {
	cfg := synthtest.Config(t, "tiny")
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		rt, err := qwen35.NewReference(synthtest.Twin(t, "tiny", 8, format))
		require.NoError(t, err)
		rp, err := qwen35.NewReference(synthtest.File(t, "tiny", 8, format))
		require.NoError(t, err)
		for _, s := range cfg.Tensors() {
			a, _, _, _ := rp.Dense(s.Name)
			b, _, _, _ := rt.Dense(s.Name)
			require.Equal(t, a, b, "%s %s", format, s.Name)
		}
		toks := refTokens(10, cfg.Vocab)
		want, err := rp.Forward(toks)
		require.NoError(t, err)
		got, err := rt.Forward(toks)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%s: bitwise identical logits", format)
	}
}

func TestReferenceRefusesUnrotatedTernary(t *testing.T) {
	packed := synthtest.File(t, "tiny", 6, ternary.PQ2_0)
	var kv []gguf.KV
	for _, e := range packed.KV {
		if !strings.HasPrefix(e.Key, "prism.hadamard.") {
			kv = append(kv, e)
		}
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, kv, packed.Tensors)
	require.NoError(t, err)
	for _, ti := range packed.Tensors {
		data, err := packed.TensorData(ti.Name)
		require.NoError(t, err)
		require.NoError(t, w.WriteTensor(ti.Name, data))
	}
	require.NoError(t, w.Close())
	f, err := gguf.Parse(buf.Bytes())
	require.NoError(t, err)
	_, err = qwen35.NewReference(f)
	require.ErrorIs(t, err, qwen35.ErrWeights)
	assert.ErrorContains(t, err, hadamard.KeyVersion)
	assert.ErrorContains(t, err, qwen35.NameTokenEmbedding)
}

// The hand-rolled forward: the package doc's forward pass written out once more, in a
// different shape from the Reference — straight from the file's tiled tensors, V head h
// reading q/k head h % nk, the mixer output permuted tiled → grouped before ssm_out with
// the doc's own index formula (§ Stored values), matrices as explicit row loops.

type handModel struct {
	cfg qwen35.Config
	get func(name string) fileTensor
}

func (m handModel) mv(name string, x []float64) []float64 {
	w := m.get(name)
	y := make([]float64, w.rows)
	for i := range y {
		for j, v := range w.row(i) {
			y[i] += v * x[j]
		}
	}
	return y
}

func (m handModel) rmsnorm(x []float64, gain []float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	r := math.Sqrt(ss/float64(len(x)) + m.cfg.RMSEpsilon)
	y := make([]float64, len(x))
	for i := range x {
		y[i] = x[i] / r * gain[i]
	}
	return y
}

func handSigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func (m handModel) forward(tokens []int) [][]float64 {
	c := m.cfg
	require := func(ok bool) {
		if !ok {
			panic("hand model: one layer only")
		}
	}
	require(c.Layers == 1)
	x := make([][]float64, len(tokens))
	for t, tok := range tokens {
		x[t] = append([]float64(nil), m.get(qwen35.NameTokenEmbedding).row(tok)...)
	}
	ln := func(s string) string { return qwen35.LayerTensor(0, s) }
	h := make([][]float64, len(x))
	for t := range x {
		h[t] = m.rmsnorm(x[t], m.get(ln(qwen35.SuffixAttnNorm)).w)
	}
	var mix [][]float64
	if c.IsAttention(0) {
		mix = m.attention(h)
	} else {
		mix = m.gdn(h)
	}
	logits := make([][]float64, len(x))
	for t := range x {
		for j := range x[t] {
			x[t][j] += mix[t][j]
		}
		h2 := m.rmsnorm(x[t], m.get(ln(qwen35.SuffixPostAttnNorm)).w)
		g := m.mv(ln(qwen35.SuffixFFNGate), h2)
		u := m.mv(ln(qwen35.SuffixFFNUp), h2)
		for j := range g {
			g[j] = g[j] * handSigmoid(g[j]) * u[j]
		}
		down := m.mv(ln(qwen35.SuffixFFNDown), g)
		for j := range x[t] {
			x[t][j] += down[j]
		}
		logits[t] = m.mv(qwen35.NameOutput, m.rmsnorm(x[t], m.get(qwen35.NameOutputNorm).w))
	}
	return logits
}

func (m handModel) gdn(h [][]float64) [][]float64 {
	c := m.cfg
	ln := func(s string) string { return qwen35.LayerTensor(0, s) }
	d, nk, nv, K := c.StateSize, c.KHeads, c.VHeads, c.ConvKernel
	conv := m.get(ln(qwen35.SuffixSSMConv))
	dt, a, norm := m.get(ln(qwen35.SuffixSSMDT)).w, m.get(ln(qwen35.SuffixSSMA)).w, m.get(ln(qwen35.SuffixSSMNorm)).w
	qkvs := make([][]float64, len(h))
	S := make([][][]float64, nv) // S[head][i][j]
	for hd := range S {
		S[hd] = make([][]float64, d)
		for i := range S[hd] {
			S[hd][i] = make([]float64, d)
		}
	}
	out := make([][]float64, len(h))
	for t := range h {
		qkvs[t] = m.mv(ln(qwen35.SuffixQKV), h[t])
		z := m.mv(ln(qwen35.SuffixGate), h[t])
		b := m.mv(ln(qwen35.SuffixSSMBeta), h[t])
		al := m.mv(ln(qwen35.SuffixSSMAlpha), h[t])
		// conv over the last K−1 inputs and this one, tap 0 oldest, then SiLU.
		cv := make([]float64, len(qkvs[t]))
		for ch := range cv {
			var s float64
			for k := 0; k < K; k++ {
				if p := t - (K - 1) + k; p >= 0 {
					s += conv.row(ch)[k] * qkvs[p][ch]
				}
			}
			cv[ch] = s * handSigmoid(s)
		}
		unit := func(v []float64) []float64 {
			var ss float64
			for _, e := range v {
				ss += e * e
			}
			n := math.Max(math.Sqrt(ss), c.RMSEpsilon)
			o := make([]float64, len(v))
			for i := range v {
				o[i] = v[i] / n
			}
			return o
		}
		tiledOut := make([]float64, nv*d)
		for hd := 0; hd < nv; hd++ { // tiled V head
			kh := hd % nk
			q := unit(cv[kh*d : (kh+1)*d])
			k := unit(cv[(nk+kh)*d : (nk+kh+1)*d])
			v := cv[2*nk*d+hd*d : 2*nk*d+(hd+1)*d]
			beta := handSigmoid(b[hd])
			sp := al[hd] + dt[hd]
			if sp <= 20 {
				sp = math.Log(1 + math.Exp(sp))
			}
			decay := math.Exp(sp * a[hd])
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					S[hd][i][j] *= decay
				}
			}
			delta := make([]float64, d)
			for j := 0; j < d; j++ {
				var stk float64
				for i := 0; i < d; i++ {
					stk += S[hd][i][j] * k[i]
				}
				delta[j] = (v[j] - stk) * beta
			}
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					S[hd][i][j] += k[i] * delta[j]
				}
			}
			o := make([]float64, d)
			for j := 0; j < d; j++ {
				for i := 0; i < d; i++ {
					o[j] += S[hd][i][j] * q[i]
				}
				o[j] /= math.Sqrt(float64(d))
			}
			o = m.rmsnorm(o, norm)
			for j := range o {
				zj := z[hd*d+j]
				tiledOut[hd*d+j] = o[j] * zj * handSigmoid(zj)
			}
		}
		// Package doc, § Stored values: grouped position (k, r, dd) reads tiled index
		// dd + d·(k + nk·r).
		rep := nv / nk
		grouped := make([]float64, nv*d)
		for k := 0; k < nk; k++ {
			for r := 0; r < rep; r++ {
				for dd := 0; dd < d; dd++ {
					grouped[(k*rep+r)*d+dd] = tiledOut[dd+d*(k+nk*r)]
				}
			}
		}
		out[t] = m.mv(ln(qwen35.SuffixSSMOut), grouped)
	}
	return out
}

func (m handModel) attention(h [][]float64) [][]float64 {
	c := m.cfg
	ln := func(s string) string { return qwen35.LayerTensor(0, s) }
	D, H, KV, R := c.HeadDim, c.Heads, c.KVHeads, c.RopeDims
	qn, kn := m.get(ln(qwen35.SuffixAttnQNorm)).w, m.get(ln(qwen35.SuffixAttnKNorm)).w
	rope := func(v []float64, pos int) []float64 {
		o := append([]float64(nil), v...)
		for i := 0; i < R/2; i++ {
			th := float64(pos) * math.Pow(c.RopeBase, -2*float64(i)/float64(R))
			o[i] = v[i]*math.Cos(th) - v[i+R/2]*math.Sin(th)
			o[i+R/2] = v[i]*math.Sin(th) + v[i+R/2]*math.Cos(th)
		}
		return o
	}
	keys := make([][][]float64, len(h)) // [pos][kv head]
	vals := make([][][]float64, len(h))
	out := make([][]float64, len(h))
	for t := range h {
		qg := m.mv(ln(qwen35.SuffixAttnQ), h[t])
		kall := m.mv(ln(qwen35.SuffixAttnK), h[t])
		vall := m.mv(ln(qwen35.SuffixAttnV), h[t])
		keys[t] = make([][]float64, KV)
		vals[t] = make([][]float64, KV)
		for g := 0; g < KV; g++ {
			keys[t][g] = rope(m.rmsnorm(kall[g*D:(g+1)*D], kn), t)
			vals[t][g] = vall[g*D : (g+1)*D]
		}
		attn := make([]float64, H*D)
		for hd := 0; hd < H; hd++ {
			q := rope(m.rmsnorm(qg[2*hd*D:(2*hd+1)*D], qn), t)
			gate := qg[(2*hd+1)*D : (2*hd+2)*D]
			g := hd / (H / KV)
			w := make([]float64, t+1)
			var total float64
			for s := 0; s <= t; s++ {
				var dot float64
				for i := 0; i < D; i++ {
					dot += q[i] * keys[s][g][i]
				}
				w[s] = math.Exp(dot / math.Sqrt(float64(D)))
				total += w[s]
			}
			for j := 0; j < D; j++ {
				var o float64
				for s := 0; s <= t; s++ {
					o += w[s] / total * vals[s][g][j]
				}
				attn[hd*D+j] = o * handSigmoid(gate[j])
			}
		}
		out[t] = m.mv(ln(qwen35.SuffixAttnOut), attn)
	}
	return out
}

func TestReferenceMatchesHandRolled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval int
	}{
		{"attention", 1}, // layer 0 is full attention
		{"gdn", 2},       // layer 0 is Gated DeltaNet
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := synthtest.Config(t, "tiny")
			cfg.Layers, cfg.FullAttentionInterval = 1, tc.interval
			f := synthtest.FileOf(t, synth.Options{Config: cfg, Seed: 7, Format: ternary.PQ2_0})
			r, err := qwen35.NewReference(f)
			require.NoError(t, err)
			// The file's config, not the preset: the file stores the epsilon as a float32,
			// and with the GDN head outputs' mean square near eps that difference shows.
			cfg = r.Config()
			require.Equal(t, tc.interval == 1, cfg.IsAttention(0))
			contract := parseContract(t, f)
			cache := map[string]fileTensor{}
			hand := handModel{cfg: cfg, get: func(name string) fileTensor {
				m, ok := cache[name]
				if !ok {
					m = readFileTensor(t, f, contract, name)
					cache[name] = m
				}
				return m
			}}
			// Six tokens: past the conv window, several RoPE angles and softmax rows.
			toks := refTokens(6, cfg.Vocab)
			want := hand.forward(toks)
			got, err := r.Forward(toks)
			require.NoError(t, err)
			var scale, worst float64
			for p := range want {
				for j := range want[p] {
					scale = math.Max(scale, math.Abs(want[p][j]))
					worst = math.Max(worst, math.Abs(want[p][j]-got[p][j]))
				}
			}
			require.Greater(t, scale, 0.1)
			assert.LessOrEqual(t, worst, 1e-12*scale, "max |Δlogit| %g of max |logit| %g", worst, scale)
			// One token alone is the first row of the longer run.
			one, err := r.Forward(toks[:1])
			require.NoError(t, err)
			assert.Equal(t, got[0], one[0])
		})
	}
}

func BenchmarkReferenceTiny(b *testing.B) {
	f := synthtest.File(b, "tiny", 1, ternary.PQ2_0)
	toks := refTokens(16, synthtest.Config(b, "tiny").Vocab)
	b.ReportAllocs()
	for b.Loop() {
		r, err := qwen35.NewReference(f)
		require.NoError(b, err)
		_, err = r.Forward(toks)
		require.NoError(b, err)
	}
}
