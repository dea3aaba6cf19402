package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
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

// bytes returns n bytes of the buffer from the reference's offset.
func (r ref) bytes(n int) []byte { return r.buf.Contents()[r.off : r.off+n] }

// siteRefs are one activation site's tensors on the device, in the plan's order
// (qwen35.Site): the norm gain (when the site has one), the products that read the
// rotated input and those that read it unrotated.
type siteRefs struct {
	norm      ref
	products  []ref
	unrotated []ref
}

// layerRefs are one decoder layer's tensors on the device: its sites', and the mixer's
// own, which its kernels bind by role.
type layerRefs struct {
	mixer                  qwen35.Mixer
	in, out, ffnIn, ffnOut siteRefs
	// Gated DeltaNet: the convolution, the dt bias, A and the gated norm's gain.
	conv, dt, a, ssmNorm ref
	// Attention: the q and k head norms.
	qNorm, kNorm ref
}

// engine is a model loaded on a device.
type engine struct {
	b     *Backend
	dev   gpu.Device
	w     *qwen35.Weights
	cfg   *qwen35.Config
	plan  *qwen35.Plan
	att   *qwen35.Attention // the RoPE table
	sizes actSizes
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
	resident int64    // bytes counted against the working set: weights and live states (memory.go)
	budget   cbBudget // the size of prefill command buffers (split.go), under mu
	batch    *acts    // the rows of batches of several sequences, once allocated (batch.go), under mu

	owned   []gpu.Buffer // released at Close
	views   int          // how many of owned are views of the mapped file
	copied  int          // bytes of weights copied rather than wrapped
	signs   gpu.Buffer
	signOff map[int]int // rotation width → byte offset in signs

	emb    ref      // the plan's Embedding
	head   siteRefs // the plan's Head
	layers []layerRefs
	// ptq1 holds the ternary matrices stored as PTQ1_0 (the others are PQ2_0): their
	// products run the _t1 kernels, which read the base-3 bytes as they lie.
	ptq1 map[ref]bool
}

// actSizes are the sizes of a state's buffers as the plan gives them: the activation
// buffers' widths, one token's row each (the widest any layer writes into the buffer),
// and the GDN states.
type actSizes struct {
	embed     int    // the residual stream
	gdnIn     [2]int // a GDN layer's In products: qkv, z
	attnIn    [3]int // an attention layer's In products: q|gate, k, v
	mix       int    // the mixers' outputs (the Out sites' widths)
	ffn       int    // the FFNIn products (gate, up) and FFNOut's input
	vocab     int    // the head's rows
	conv, ssm int    // a GDN layer's states (qwen35.GDNState's arrays)
	gdnLayers int
}

// isPTQ1 reports whether the matrix at r is stored as PTQ1_0.
func (e *engine) isPTQ1(r ref) bool { return e.ptq1[r] }

var (
	_ backend.Engine = (*engine)(nil)
	_ backend.Greedy = (*engine)(nil)
)

func newEngine(ctx context.Context, b *Backend, dev gpu.Device, w *qwen35.Weights, opt backend.LoadOptions) (*engine, error) {
	c := &w.Config
	if w.Contract == nil {
		return nil, errors.New("the weights have no Hadamard contract")
	}
	blk := w.Contract.BlockSize
	geo, err := newGeometry(c, blk)
	if err != nil {
		return nil, err
	}
	plan := w.Plan()
	sizes, err := planSizes(plan, c)
	if err != nil {
		return nil, err
	}
	geo = geo.withProducts(planWidths(plan), blk, 0)
	e := &engine{
		b: b, dev: dev, w: w, cfg: c, plan: plan, att: qwen35.NewAttention(c), sizes: sizes, geo: geo, blk: blk,
		scale: float32(1 / math.Sqrt(float64(blk))),
		eps:   float32(c.RMSEpsilon),
		fused: geo.fusedGDN && !b.cfg.Unfused,
	}
	e.budget = cbBudget{target: b.cfg.CBTime, layers: len(plan.Layers)}
	report := func(done, total int64) {
		if opt.Progress != nil {
			opt.Progress(done, total)
		}
	}
	// Three stages — compile, bind (on a device that copies the weights, by their
	// bytes), the signs — each stageUnits of progress.
	const stageUnits = 1 << 20
	report(0, 3*stageUnits)
	if e.p, err = compile(dev, geo); err != nil {
		return nil, err
	}
	report(stageUnits, 3*stageUnits)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bound := func(done, total int64) {
		if total > 0 { // views may overlap: the bytes copied can pass the span's
			report(stageUnits+min(done, total)*stageUnits/total, 3*stageUnits)
		}
	}
	if err := e.bind(ctx, bound); err != nil {
		e.release()
		return nil, err
	}
	report(2*stageUnits, 3*stageUnits)
	if err := e.uploadSigns(); err != nil {
		e.release()
		return nil, err
	}
	report(3*stageUnits, 3*stageUnits)
	return e, nil
}

// planSizes checks that the plan is one the kernels run — each site with the norm, the
// number of products and the widths its kernel takes — and returns the activation widths
// it needs.
func planSizes(p *qwen35.Plan, c *qwen35.Config) (actSizes, error) {
	E := p.EmbeddingWidth
	g := qwen35.NewGDN(c).NewState()
	s := actSizes{embed: E, conv: len(g.Conv), ssm: len(g.S)}
	// shape is what a site's kernel takes: a norm (then at the stream's width) or none,
	// and how many products read the site rotated and unrotated.
	type shape struct {
		norm                bool
		products, unrotated int
	}
	check := func(where string, site *qwen35.Site, want shape) error {
		got := shape{site.Norm != nil, len(site.Products), len(site.Unrotated)}
		if got != want || want.norm && site.Width != E {
			return fmt.Errorf("%s %s site (norm %v, %d products, %d unrotated, width %d) is not one the Metal kernels run (norm %v, %d products, %d unrotated)",
				where, site.Name, got.norm, got.products, got.unrotated, site.Width, want.norm, want.products, want.unrotated)
		}
		for _, m := range site.Products {
			if m.K != site.Width || site.Residual && m.N != E {
				return fmt.Errorf("%s %s site (width %d, stream %d): product %s is %d × %d", where, site.Name, site.Width, E, m.Name, m.N, m.K)
			}
		}
		for _, m := range site.Unrotated {
			if m.K != site.Width {
				return fmt.Errorf("%s %s site (width %d): product %s is %d × %d", where, site.Name, site.Width, m.Name, m.N, m.K)
			}
		}
		return nil
	}
	if err := check("the head's", &p.Head, shape{true, 1, 0}); err != nil {
		return s, err
	}
	s.vocab = p.Head.Products[0].N
	for i := range p.Layers {
		lp := &p.Layers[i]
		where := fmt.Sprintf("layer %d's", i)
		var in shape
		var rows []int // the widest of each In product's rows, per mixer
		switch lp.Mixer {
		case qwen35.MixerGDN:
			s.gdnLayers++
			in, rows = shape{true, len(s.gdnIn), 2}, s.gdnIn[:]
		case qwen35.MixerAttention:
			in, rows = shape{true, len(s.attnIn), 0}, s.attnIn[:]
		default:
			return s, fmt.Errorf("layer %d: mixer %v, which the Metal kernels do not run", i, lp.Mixer)
		}
		for _, sc := range []struct {
			site *qwen35.Site
			want shape
		}{{&lp.In, in}, {&lp.Out, shape{false, 1, 0}}, {&lp.FFNIn, shape{true, 2, 0}}, {&lp.FFNOut, shape{false, 1, 0}}} {
			if err := check(where, sc.site, sc.want); err != nil {
				return s, err
			}
		}
		for j, m := range lp.In.Products {
			rows[j] = max(rows[j], m.N)
		}
		for _, m := range lp.FFNIn.Products {
			if m.N != lp.FFNOut.Width { // SwiGLU(gate, up) is FFNOut's input
				return s, fmt.Errorf("%s %s site: product %s has %d rows, the %s site is %d wide", where, lp.FFNIn.Name, m.Name, m.N, lp.FFNOut.Name, lp.FFNOut.Width)
			}
		}
		s.mix = max(s.mix, lp.Out.Width)
		s.ffn = max(s.ffn, lp.FFNOut.Width)
	}
	return s, nil
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

// rotationWidths returns the rotation widths of the plan, each once: the embedding's
// and every site's.
func rotationWidths(p *qwen35.Plan) []int {
	ws := []int{p.EmbeddingWidth, p.Head.Width}
	for i := range p.Layers {
		lp := &p.Layers[i]
		ws = append(ws, lp.In.Width, lp.Out.Width, lp.FFNIn.Width, lp.FFNOut.Width)
	}
	slices.Sort(ws)
	return slices.Compact(ws)
}

// uploadSigns puts the sign vector of every rotation width on the device as float ±1.
func (e *engine) uploadSigns() error {
	widths := rotationWidths(e.plan)
	total := 0
	for _, wd := range widths {
		total += wd
	}
	buf, err := e.dev.NewBuffer(4 * total)
	if err != nil {
		return fmt.Errorf("signs: %w", err)
	}
	e.owned = append(e.owned, buf)
	e.signs, e.signOff = buf, map[int]int{}
	dst := floats(buf.Contents())
	at := 0
	for _, wd := range widths {
		r := e.w.Rotation(wd)
		if r == nil {
			return fmt.Errorf("the model has no rotation for width %d", wd)
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

// bind places every tensor on the device, walking the plan: the embedding, each layer's
// sites and its mixer's own tensors, the head. The ternary matrices are views of the
// mapped file: the span from the first to the last of them, widened to whole pages, is
// wrapped without copying (WrapNoCopy), as one buffer or, when it exceeds the device's
// largest buffer, as overlapping views placed so that every tensor lies wholly inside
// one. A tensor outside that span (a small F32 tensor the loader copied, or one stored
// beyond the last matrix) is copied into a device buffer of its own.
//
// On a device that copies the weights (gpu.Uploader), ctx stops the copy and progress
// receives the bytes copied of the span's.
func (e *engine) bind(ctx context.Context, progress func(done, total int64)) error {
	p := e.plan
	var ts []tensorBytes
	var mats []*qwen35.Matrix
	var matRefs []*ref
	addMat := func(m *qwen35.Matrix, dst *ref) {
		ts = append(ts, tensorBytes{m.Name, m.Data, dst})
		mats = append(mats, m)
		matRefs = append(matRefs, dst)
	}
	addF := func(name string, v []float32, dst *ref) { ts = append(ts, tensorBytes{name, f32Bytes(v), dst}) }
	addSite := func(where string, s *qwen35.Site, r *siteRefs) {
		if s.Norm != nil {
			addF(where+" "+s.Name+" norm", s.Norm, &r.norm)
		}
		r.products = make([]ref, len(s.Products))
		for j, m := range s.Products {
			addMat(m, &r.products[j])
		}
		r.unrotated = make([]ref, len(s.Unrotated))
		for j, m := range s.Unrotated {
			ts = append(ts, tensorBytes{m.Name, m.Data, &r.unrotated[j]})
		}
	}

	addMat(p.Embedding, &e.emb)
	addSite("the head's", &p.Head, &e.head)
	e.layers = make([]layerRefs, len(p.Layers))
	for i := range p.Layers {
		lp, r := &p.Layers[i], &e.layers[i]
		r.mixer = lp.Mixer
		where := fmt.Sprintf("layer %d's", i)
		addSite(where, &lp.In, &r.in)
		addSite(where, &lp.Out, &r.out)
		addSite(where, &lp.FFNIn, &r.ffnIn)
		addSite(where, &lp.FFNOut, &r.ffnOut)
		l := lp.Layer
		switch lp.Mixer {
		case qwen35.MixerGDN:
			addF(where+" convolution", l.Conv, &r.conv)
			addF(where+" dt bias", l.DTBias, &r.dt)
			addF(where+" A", l.A, &r.a)
			addF(where+" gated norm", l.SSMNorm, &r.ssmNorm)
		case qwen35.MixerAttention:
			addF(where+" q norm", l.QNorm, &r.qNorm)
			addF(where+" k norm", l.KNorm, &r.kNorm)
		}
	}
	for _, m := range mats {
		if m.Format != ternary.PQ2_0 && m.Format != ternary.PTQ1_0 {
			return fmt.Errorf("tensor %s is %s; the Metal kernels read PQ2_0 and PTQ1_0 (transcode the file with examples/transcode)", m.Name, m.Format)
		}
	}
	for _, t := range ts {
		if len(t.data) == 0 {
			return fmt.Errorf("tensor %s has no data", t.name)
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
			return fmt.Errorf("a %d-byte tensor does not fit the device's largest buffer (%d bytes)", maxT, e.dev.MaxBufferLength())
		}
	} else {
		viewLen = span
	}
	if err := e.checkWeightsFit(int64(span) + outsideBytes(ts, inSpan)); err != nil {
		return err
	}
	var views []gpu.Buffer
	var copied int64 // bytes of the views before this one
	for start := 0; ; start += stride {
		n := min(viewLen, span-start)
		before := copied
		buf, err := e.weightView(ctx, func(done int64) { progress(before+done, int64(span)) }, lowest, delta, start, n, ts, baseAddr, inSpan)
		copied += int64(n)
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
			return fmt.Errorf("weights: %w", err)
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
			return fmt.Errorf("internal error: tensor %s [%d, %d) straddles view %d", t.name, off, off+len(t.data), i)
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
