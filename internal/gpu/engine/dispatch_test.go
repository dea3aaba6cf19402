package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// sparse27B writes a file with the 27B configuration's full header and tensor table
// and a sparse (all-zero) data section: the dispatch count needs the real shapes and
// the real file size (for the buffer views), not the weights' values, and a sparse
// 7.2 GB file costs neither disk nor time.
func sparse27B(t *testing.T) string { return sparse27BAs(t, ternary.PQ2_0) }

// sparse27BAs is sparse27B with the ternary tensors in the given format.
func sparse27BAs(t *testing.T, format ternary.Format) string {
	t.Helper()
	cfg, err := synth.Preset("27b")
	if err != nil {
		t.Fatal(err)
	}
	opt := synth.Options{Config: cfg, Seed: 1, Format: format}
	kv, err := synth.Metadata(opt)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := synth.TensorInfos(opt)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "27b-sparse.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	w, err := gguf.NewWriter(bw, kv, infos) // writes the header; the data stay holes
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	header, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		t.Fatal(err)
	}
	laid := w.Tensors()
	last := laid[len(laid)-1]
	size, err := last.Size()
	if err != nil {
		t.Fatal(err)
	}
	const align = 32
	data := (header + align - 1) / align * align
	if err := f.Truncate(data + int64(last.Offset) + size); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadCounting binds the model at path and loads it on a counting device.
func loadCounting(t *testing.T, path string, maxBuf int, opts ...Option) (*engine, *countingDevice, func()) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := qwen35.Bind(f)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	dev := newCountingDevice(maxBuf)
	b := newBackend("counting", func() (gpu.Device, error) { return dev, nil }, opts)
	en, err := b.Load(context.Background(), w, backend.LoadOptions{Threads: 1})
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	return en.(*engine), dev, func() { en.Close(); f.Close() }
}

// decodeDispatches encodes (without running) one decode step and returns the command
// buffer.
func decodeDispatches(t *testing.T, e *engine, mode outMode) *countingCB {
	t.Helper()
	s, err := e.NewState(backend.StateOptions{ContextSize: 16, KVCache: backend.KVFloat16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cb, _ := e.dev.NewCommandBuffer()
	e.encodeChunk(cb, s.(*state), []int32{1}, mode)
	if err := cb.Wait(); err != nil {
		t.Fatal(err)
	}
	return cb.(*countingCB)
}

func perKernel(cb *countingCB) string {
	var names []string
	for n := range cb.perName {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(" " + n + "×")
		b.WriteString(itoa(cb.perName[n]))
	}
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// decodeDispatchBudget bounds the dispatches of a 27B decode step, all in one command
// buffer (the published Core AI port needed about 900 a token). It was 300; issue 24
// spends one more a GDN layer (the In site's products leave gdn_decode for an mv_norm
// over every core, gdn.metal says why: +48) and one a layer of attention (the merge of
// its position blocks: +16).
const decodeDispatchBudget = 350

// TestDispatchCount27B counts the dispatches of one greedy decode step of the 27B
// configuration, encoded against a counting device: the target is at most
// decodeDispatchBudget.
func TestDispatchCount27B(t *testing.T) {
	// A 2 GiB largest buffer makes the 7.2 GB file wrap as several overlapping views.
	e, dev, done := loadCounting(t, sparse27B(t), 2<<30)
	defer done()
	if len(dev.wrapped) < 4 {
		t.Errorf("the 7.2 GB file wrapped as %d views, want at least 4 under a 2 GiB buffer limit", len(dev.wrapped))
	}
	if e.copied > 1<<20 {
		t.Errorf("%d bytes of weights copied, want the file wrapped in place", e.copied)
	}
	cb := decodeDispatches(t, e, outArgmax)
	c := e.cfg
	want := DecodeDispatches(c, true)
	t.Logf("27B greedy decode step: %d dispatches in one command buffer (views: %d; ternary bytes per step %.3f GB):%s",
		cb.n, len(dev.wrapped), float64(e.w.TernaryBytes())/1e9, perKernel(cb))
	pre, _ := e.dev.NewCommandBuffer()
	ps, err := e.NewState(backend.StateOptions{ContextSize: 64, KVCache: backend.KVFloat16})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	e.encodeChunk(pre, ps.(*state), make([]int32, 64), outLast)
	t.Logf("27B prefill chunk of 64 tokens: %d dispatches:%s", pre.Dispatches(), perKernel(pre.(*countingCB)))
	if cb.n != want || cb.n > decodeDispatchBudget {
		t.Errorf("%d dispatches, want %d (≤ %d)", cb.n, want, decodeDispatchBudget)
	}
	cbLogits := decodeDispatches(t, e, outLast)
	if cbLogits.n != want-1 {
		t.Errorf("logits step: %d dispatches, want %d", cbLogits.n, want-1)
	}
}

// TestDispatchCount27BPTQ1 counts the decode step of the 27B configuration stored as
// PTQ1_0: the same plan, every product on a PTQ1_0 kernel, at most decodeDispatchBudget
// dispatches.
func TestDispatchCount27BPTQ1(t *testing.T) {
	e, _, done := loadCounting(t, sparse27BAs(t, ternary.PTQ1_0), 2<<30)
	defer done()
	cb := decodeDispatches(t, e, outArgmax)
	want := DecodeDispatches(e.cfg, true)
	t.Logf("27B PTQ1_0 greedy decode step: %d dispatches (ternary bytes per step %.3f GB):%s",
		cb.n, float64(e.w.TernaryBytes())/1e9, perKernel(cb))
	if cb.n != want || cb.n > decodeDispatchBudget {
		t.Errorf("%d dispatches, want %d (≤ %d)", cb.n, want, decodeDispatchBudget)
	}
	for _, k := range []string{kMVPlain, kMVFWHT, kMVNorm, kMVSwiGLU} {
		if cb.perName[k] != 0 {
			t.Errorf("a PTQ1_0 decode step ran the PQ2_0 kernel %s %d times", k, cb.perName[k])
		}
	}
	// mv_norm_t1 runs every norm site: each layer's In and FFNIn, and the head.
	L, A := e.cfg.Layers, e.cfg.AttentionLayers()
	for k, n := range map[string]int{kGDNDecode: L - A, kMVFWHTT1: L, kMVNormT1: 2*L + 1, kMVSwiGLUT1: L} {
		if cb.perName[k] != n {
			t.Errorf("%s: %d dispatches, want %d", k, cb.perName[k], n)
		}
	}
	pre, _ := e.dev.NewCommandBuffer()
	ps, err := e.NewState(backend.StateOptions{ContextSize: 64, KVCache: backend.KVFloat16})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	e.encodeChunk(pre, ps.(*state), make([]int32, 64), outLast)
	pc := pre.(*countingCB)
	if pc.perName[kGemm] != 0 || pc.perName[kGemmT1] != 7*L-3*A {
		t.Errorf("PTQ1_0 prefill chunk: gemm×%d gemm_t1×%d, want 0 and %d", pc.perName[kGemm], pc.perName[kGemmT1], 7*L-3*A)
	}
}

// TestDispatchCountTiny checks the same count and the host's argument bindings on the
// tiny configuration, for the fused and unfused decode paths and a prefill chunk.
func TestDispatchCountTiny(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	e, _, done := loadCounting(t, path, 1<<30)
	defer done()
	cb := decodeDispatches(t, e, outArgmax)
	c := e.cfg
	want := DecodeDispatches(c, true)
	if cb.n != want {
		t.Errorf("tiny decode: %d dispatches, want %d:%s", cb.n, want, perKernel(cb))
	}
	e2, _, done2 := loadCounting(t, path, 1<<30, unfused)
	defer done2()
	cb2 := decodeDispatches(t, e2, outArgmax)
	t.Logf("tiny decode: fused %d dispatches, unfused %d", cb.n, cb2.n)
	if cb2.n <= cb.n {
		t.Errorf("unfused decode has %d dispatches, fused %d", cb2.n, cb.n)
	}
}

// TestViewsSplit wraps the tiny model with a largest buffer of a few pages, so that the
// file is split into overlapping views, and checks every tensor landed inside one.
func TestViewsSplit(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	e, dev, done := loadCounting(t, path, 8*16384)
	defer done()
	if len(dev.wrapped) < 3 {
		t.Fatalf("%d views, want several", len(dev.wrapped))
	}
	check := func(name string, r ref, n int) {
		if r.buf == nil || r.off < 0 || r.off+n > r.buf.Len() {
			t.Errorf("%s: offset %d + %d outside its %d-byte buffer", name, r.off, n, r.buf.Len())
		}
	}
	w := e.w
	check("token_embd", e.emb, len(w.TokenEmbedding.Data))
	check("output", e.head.products[0], len(w.Output.Data))
	for i := range e.layers {
		l, r := &w.Layers[i], &e.layers[i]
		check("ffn_down", r.ffnOut.products[0], len(l.FFNDown.Data))
		check("ffn_gate", r.ffnIn.products[0], len(l.FFNGate.Data))
		if l.Attention {
			check("attn_q", r.in.products[0], len(l.Q.Data))
		} else {
			check("attn_qkv", r.in.products[0], len(l.QKV.Data))
			check("ssm_alpha", r.in.unrotated[0], len(l.Alpha.Data))
		}
	}
	// The bytes behind every reference are the tensor's.
	bound := boundTensors(e)
	for _, b := range bound {
		check(b.name, b.r, len(b.data))
		if got := b.r.bytes(len(b.data)); string(got) != string(b.data) {
			t.Fatalf("%s: the view's bytes differ from the tensor's", b.name)
		}
	}
	// Every tensor of the file is bound: the ternary and BF16 matrices, and the F32
	// tensors of the layers and the output norm.
	if want := len(e.cfg.Tensors()); len(bound) != want {
		t.Errorf("%d tensors bound, the file has %d", len(bound), want)
	}
	decodeDispatches(t, e, outArgmax)
}

// boundTensor is a tensor of the plan and its reference on the device.
type boundTensor struct {
	name string
	r    ref
	data []byte
}

// boundTensors lists what bind placed: every site's norm and products and every mixer's
// own tensors, each with the weights' bytes.
func boundTensors(e *engine) []boundTensor {
	out := []boundTensor{{"embedding", e.emb, e.plan.Embedding.Data}}
	site := func(where string, s *qwen35.Site, r *siteRefs) {
		if s.Norm != nil {
			out = append(out, boundTensor{where + s.Name + " norm", r.norm, f32Bytes(s.Norm)})
		}
		for j, m := range s.Products {
			out = append(out, boundTensor{m.Name, r.products[j], m.Data})
		}
		for j, m := range s.Unrotated {
			out = append(out, boundTensor{m.Name, r.unrotated[j], m.Data})
		}
	}
	site("", &e.plan.Head, &e.head)
	for i := range e.plan.Layers {
		lp, r := &e.plan.Layers[i], &e.layers[i]
		where := fmt.Sprintf("layer %d ", i)
		for _, s := range []struct {
			s *qwen35.Site
			r *siteRefs
		}{{&lp.In, &r.in}, {&lp.Out, &r.out}, {&lp.FFNIn, &r.ffnIn}, {&lp.FFNOut, &r.ffnOut}} {
			site(where, s.s, s.r)
		}
		l := lp.Layer
		if l.Attention {
			out = append(out, boundTensor{where + "q norm", r.qNorm, f32Bytes(l.QNorm)}, boundTensor{where + "k norm", r.kNorm, f32Bytes(l.KNorm)})
		} else {
			out = append(out, boundTensor{where + "conv", r.conv, f32Bytes(l.Conv)}, boundTensor{where + "dt", r.dt, f32Bytes(l.DTBias)},
				boundTensor{where + "a", r.a, f32Bytes(l.A)}, boundTensor{where + "ssm norm", r.ssmNorm, f32Bytes(l.SSMNorm)})
		}
	}
	return out
}

// TestRefusals: an unknown KV precision is refused with an error that says what to do
// (package metal's TestNewLoad: New fails where there is no Metal), and a PTQ1_0 file (refused before the PTQ1_0
// kernels) now loads with every ternary matrix bound to them.
func TestRefusals(t *testing.T) {
	w, err := qwen35.Bind(synthtest.File(t, "tiny", 1, ternary.PTQ1_0))
	if err != nil {
		t.Fatal(err)
	}
	dev := newCountingDevice(1 << 30)
	b := newBackend("counting", func() (gpu.Device, error) { return dev, nil }, nil)
	en, err := b.Load(context.Background(), w, backend.LoadOptions{})
	if err != nil {
		t.Fatalf("PTQ1_0 model: %v", err)
	}
	defer en.Close()
	mats := 2 // token_embd, output
	for _, l := range w.Layers {
		mats += 6 // GDN: qkv, gate, ssm_out; the MLP's three
		if l.Attention {
			mats++ // q, k, v, o
		}
	}
	if n := len(en.(*engine).ptq1); n != mats {
		t.Errorf("PTQ1_0 model: %d matrices bound as PTQ1_0, want %d", n, mats)
	}

	e, _, done := loadCounting(t, synthtest.Path(t, "tiny", 1, ternary.PQ2_0), 1<<30)
	defer done()
	if _, err := e.NewState(backend.StateOptions{ContextSize: 8, KVCache: backend.KVPrecision(9)}); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("unknown KV precision: %v, want a clear refusal", err)
	}
	if _, err := e.NewState(backend.StateOptions{ContextSize: 8, KVCache: backend.KVQ4}); err == nil || !strings.Contains(err.Error(), "q4 is not supported by the Metal backend") {
		t.Errorf("q4 KV cache: %v, want a refusal naming it", err)
	}
	// Another architecture's weights: refused, naming both architectures and the backend.
	if _, err := b.Load(context.Background(), otherModel{}, backend.LoadOptions{}); err == nil ||
		!strings.Contains(err.Error(), "llama") || !strings.Contains(err.Error(), qwen35.Architecture) || !strings.Contains(err.Error(), "counting") {
		t.Errorf("Load of a llama model: %v, want a refusal naming llama, qwen35 and the backend", err)
	}
}

// otherModel is the weights of an architecture the backend does not run.
type otherModel struct{}

func (otherModel) Architecture() string { return "llama" }
func (otherModel) Vocab() int           { return 32000 }
func (otherModel) ContextLength() int   { return 4096 }
