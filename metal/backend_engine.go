package metal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/metal/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// ref is a tensor on the device: a buffer and the byte offset of its first element.
type ref struct {
	buf gpu.Buffer
	off int
}

func (r ref) arg(i int) gpu.Arg { return gpu.Arg{Index: i, Buf: r.buf, Offset: r.off} }

// at returns the reference advanced by n bytes.
func (r ref) at(n int) ref { return ref{r.buf, r.off + n} }

// layerRefs are one decoder layer's tensors on the device.
type layerRefs struct {
	attn               bool
	attnNorm, postNorm ref
	// Gated DeltaNet
	qkv, gate, ssmOut, alpha, beta ref
	conv, dt, a, ssmNorm           ref
	// attention
	q, k, v, o, qNorm, kNorm ref
	// MLP
	ffnGate, ffnUp, ffnDown ref
}

// engine is a model loaded on a device.
type engine struct {
	b     *Backend
	dev   gpu.Device
	w     *qwen35.Weights
	cfg   *qwen35.Config
	geo   geometry
	p     map[string]gpu.Pipeline
	blk   int
	scale float32 // 1/√blk
	eps   float32
	fused bool // decode steps use the fused kernels
	// chunkCap, when positive, caps the activation values a matvec threadgroup holds
	// (the kernel checks use it to exercise the streamed path at small widths).
	chunkCap int

	// mu serialises the command buffers of the engine's states.
	mu       sync.Mutex
	closed   bool
	resident int64    // bytes counted against the working set: weights and live states (backend_memory.go)
	budget   cbBudget // the size of prefill command buffers (backend_split.go), under mu

	owned   []gpu.Buffer // released at Close
	views   int          // how many of owned are views of the mapped file
	copied  int          // bytes of weights copied rather than wrapped
	signs   gpu.Buffer
	signOff map[int]int // rotation width → byte offset in signs

	emb, out, outNorm ref
	layers            []layerRefs
	// ptq1 holds the ternary matrices stored as PTQ1_0 (the others are PQ2_0): their
	// products run the _t1 kernels, which read the base-3 bytes as they lie.
	ptq1 map[ref]bool
}

// isPTQ1 reports whether the matrix at r is stored as PTQ1_0.
func (e *engine) isPTQ1(r ref) bool { return e.ptq1[r] }

var (
	_ bonsai.Engine = (*engine)(nil)
)

func newEngine(ctx context.Context, b *Backend, dev gpu.Device, w *qwen35.Weights, opt bonsai.LoadOptions) (*engine, error) {
	c := &w.Config
	if w.Contract == nil {
		return nil, errors.New("metal: the weights have no Hadamard contract")
	}
	blk := w.Contract.BlockSize
	geo, err := newGeometry(c, blk)
	if err != nil {
		return nil, err
	}
	e := &engine{
		b: b, dev: dev, w: w, cfg: c, geo: geo, blk: blk,
		scale: float32(1 / math.Sqrt(float64(blk))),
		eps:   float32(c.RMSEpsilon),
		fused: geo.fusedGDN && !b.cfg.unfused,
	}
	e.budget = cbBudget{target: b.cfg.cbTime, layers: c.Layers}
	report := func(done, total int64) {
		if opt.Progress != nil {
			opt.Progress(bonsai.Progress{Stage: "load", Done: done, Total: total})
		}
	}
	report(0, 3)
	if e.p, err = compile(dev, geo); err != nil {
		return nil, err
	}
	report(1, 3)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := e.bind(); err != nil {
		e.release()
		return nil, err
	}
	report(2, 3)
	if err := e.uploadSigns(); err != nil {
		e.release()
		return nil, err
	}
	report(3, 3)
	return e, nil
}

func (e *engine) release() {
	for _, b := range e.owned {
		b.Release()
	}
	e.owned = nil
}

// Close releases the engine's buffers and its device.
func (e *engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.release()
	return e.dev.Close()
}

// uploadSigns puts the sign vector of every rotation width on the device as float ±1.
func (e *engine) uploadSigns() error {
	widths := e.cfg.RotationWidths()
	total := 0
	for _, wd := range widths {
		total += wd
	}
	buf, err := e.dev.NewBuffer(4 * total)
	if err != nil {
		return fmt.Errorf("metal: signs: %w", err)
	}
	e.owned = append(e.owned, buf)
	e.signs, e.signOff = buf, map[int]int{}
	dst := floats(buf.Contents())
	at := 0
	for _, wd := range widths {
		r := e.w.Rotation(wd)
		if r == nil {
			return fmt.Errorf("metal: the model has no rotation for width %d", wd)
		}
		e.signOff[wd] = 4 * at
		for i, s := range r.Signs() {
			dst[at+i] = float32(s)
		}
		at += wd
	}
	return nil
}

// signsOf returns the signs of rotation width wd.
func (e *engine) signsOf(wd int) ref { return ref{e.signs, e.signOff[wd]} }

// floats views b as float32s (b's length a multiple of 4, its start 4-aligned).
func floats(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// tensorBytes is one tensor's bytes as the weights hold them.
type tensorBytes struct {
	name string
	data []byte
	dst  *ref
}

// bind places every tensor on the device. The ternary matrices are views of the mapped
// file: the span from the first to the last of them, widened to whole pages, is wrapped
// without copying (WrapNoCopy), as one buffer or, when it exceeds the device's largest
// buffer, as overlapping views placed so that every tensor lies wholly inside one. A
// tensor outside that span (a small F32 tensor the loader copied, or one stored beyond
// the last matrix) is copied into a device buffer of its own.
func (e *engine) bind() error {
	w := e.w
	var ts []tensorBytes
	var mats []*qwen35.Matrix
	var matRefs []*ref
	addMat := func(m *qwen35.Matrix, dst *ref) {
		ts = append(ts, tensorBytes{m.Name, m.Data, dst})
		mats = append(mats, m)
		matRefs = append(matRefs, dst)
	}
	addBF := func(m *qwen35.BF16Matrix, dst *ref) { ts = append(ts, tensorBytes{m.Name, m.Data, dst}) }
	addF := func(name string, v []float32, dst *ref) { ts = append(ts, tensorBytes{name, f32Bytes(v), dst}) }

	addMat(&w.TokenEmbedding, &e.emb)
	addMat(&w.Output, &e.out)
	addF("output_norm.weight", w.OutputNorm, &e.outNorm)
	e.layers = make([]layerRefs, len(w.Layers))
	for i := range w.Layers {
		l, r := &w.Layers[i], &e.layers[i]
		r.attn = l.Attention
		addF(qwen35.LayerTensor(i, qwen35.SuffixAttnNorm), l.AttnNorm, &r.attnNorm)
		addF(qwen35.LayerTensor(i, qwen35.SuffixPostAttnNorm), l.PostAttnNorm, &r.postNorm)
		if l.Attention {
			addMat(&l.Q, &r.q)
			addMat(&l.K, &r.k)
			addMat(&l.V, &r.v)
			addMat(&l.O, &r.o)
			addF(qwen35.LayerTensor(i, qwen35.SuffixAttnQNorm), l.QNorm, &r.qNorm)
			addF(qwen35.LayerTensor(i, qwen35.SuffixAttnKNorm), l.KNorm, &r.kNorm)
		} else {
			addMat(&l.QKV, &r.qkv)
			addMat(&l.Gate, &r.gate)
			addMat(&l.SSMOut, &r.ssmOut)
			addBF(&l.Alpha, &r.alpha)
			addBF(&l.Beta, &r.beta)
			addF(qwen35.LayerTensor(i, qwen35.SuffixSSMConv), l.Conv, &r.conv)
			addF(qwen35.LayerTensor(i, qwen35.SuffixSSMDT), l.DTBias, &r.dt)
			addF(qwen35.LayerTensor(i, qwen35.SuffixSSMA), l.A, &r.a)
			addF(qwen35.LayerTensor(i, qwen35.SuffixSSMNorm), l.SSMNorm, &r.ssmNorm)
		}
		addMat(&l.FFNGate, &r.ffnGate)
		addMat(&l.FFNUp, &r.ffnUp)
		addMat(&l.FFNDown, &r.ffnDown)
	}
	for _, m := range mats {
		if m.Format != ternary.PQ2_0 && m.Format != ternary.PTQ1_0 {
			return fmt.Errorf("metal: tensor %s is %s; the Metal kernels read PQ2_0 and PTQ1_0 (transcode the file with examples/transcode)", m.Name, m.Format)
		}
		if len(m.Data) == 0 {
			return fmt.Errorf("metal: tensor %s has no data", m.Name)
		}
	}
	for _, t := range ts {
		if len(t.data) == 0 {
			return fmt.Errorf("metal: tensor %s has no data", t.name)
		}
	}

	// The span of the matrices, in whole pages.
	page := e.dev.PageSize()
	lowest := mats[0].Data
	lo, hi := addr(mats[0].Data), addr(mats[0].Data)+uintptr(len(mats[0].Data))
	for _, m := range mats {
		a := addr(m.Data)
		if a < lo {
			lo, lowest = a, m.Data
		}
		hi = max(hi, a+uintptr(len(m.Data)))
	}
	delta := int(lo % uintptr(page))
	baseAddr := lo - uintptr(delta)
	span := int(hi - baseAddr)
	span = (span + page - 1) / page * page
	inSpan := func(b []byte) bool {
		a := addr(b)
		return a >= baseAddr && a+uintptr(len(b)) <= baseAddr+uintptr(span)
	}
	maxT := 0
	for _, t := range ts {
		if inSpan(t.data) {
			maxT = max(maxT, len(t.data))
		}
	}
	viewLen := e.dev.MaxBufferLength() / page * page
	stride := span
	if span > viewLen {
		stride = viewLen - (maxT+page-1)/page*page
		if stride <= 0 {
			return fmt.Errorf("metal: a %d-byte tensor does not fit the device's largest buffer (%d bytes)", maxT, e.dev.MaxBufferLength())
		}
	} else {
		viewLen = span
	}
	if err := e.checkWeightsFit(int64(span) + outsideBytes(ts, inSpan)); err != nil {
		return err
	}
	var views []gpu.Buffer
	for start := 0; ; start += stride {
		n := min(viewLen, span-start)
		buf, err := e.weightView(lowest, delta, start, n, ts, baseAddr, inSpan)
		if err != nil {
			return err
		}
		e.owned = append(e.owned, buf)
		views = append(views, buf)
		if start+n >= span {
			break
		}
	}
	e.views = len(views)

	// Tensors outside the span go to one buffer, each at a 256-byte aligned offset.
	var outside []tensorBytes
	auxLen := 0
	for _, t := range ts {
		if !inSpan(t.data) {
			outside = append(outside, t)
			auxLen += (len(t.data) + 255) &^ 255
		}
	}
	var aux gpu.Buffer
	if auxLen > 0 {
		var err error
		if aux, err = e.dev.NewBuffer(auxLen); err != nil {
			return fmt.Errorf("metal: weights: %w", err)
		}
		e.owned = append(e.owned, aux)
		e.copied += auxLen
	}
	at := 0
	for _, t := range ts {
		if !inSpan(t.data) {
			copy(aux.Contents()[at:], t.data)
			*t.dst = ref{aux, at}
			at += (len(t.data) + 255) &^ 255
			continue
		}
		off := int(addr(t.data) - baseAddr)
		i := min(off/stride, len(views)-1)
		vo := off - i*stride
		if vo+len(t.data) > views[i].Len() {
			return fmt.Errorf("metal: internal error: tensor %s [%d, %d) straddles view %d", t.name, off, off+len(t.data), i)
		}
		*t.dst = ref{views[i], vo}
	}
	e.ptq1 = map[ref]bool{}
	for i, m := range mats {
		if m.Format == ternary.PTQ1_0 {
			e.ptq1[*matRefs[i]] = true
		}
	}
	return nil
}
