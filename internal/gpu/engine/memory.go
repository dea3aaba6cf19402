package engine

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
)

// The working set. Apple GPUs share the RAM, but Metal keeps a budget of what a
// process's GPU work may hold resident at once: recommendedMaxWorkingSetSize (about two
// thirds of the RAM of an 8 or 16 GB Mac, three quarters of a larger one). Past it the
// GPU pages, or the first command buffer fails with MTLCommandBufferStatusError (5) and
// an out-of-memory error, long after Load returned. So Load counts the weights (the
// wrapped file counts: its pages are resident while the GPU reads them) and NewState
// each sequence's buffers against it, before anything is allocated, and refuse with
// the sizes and what would fit.

// ErrWorkingSet is metal.ErrWorkingSet: the model or a sequence does not fit the
// device's recommended working set.
var ErrWorkingSet = errors.New("does not fit the GPU's working set")

// workingSet is the device's recommended working set in bytes, 0 when it does not say.
func (e *engine) workingSet() int64 {
	if ws, ok := e.dev.(gpu.WorkingSet); ok {
		return ws.RecommendedWorkingSet()
	}
	return 0
}

// workingSetSource names where the device's working set comes from, for the messages.
func (e *engine) workingSetSource() string {
	if s, ok := e.dev.(interface{ WorkingSetSource() string }); ok {
		return s.WorkingSetSource()
	}
	return "recommendedMaxWorkingSetSize"
}

// countBuf is a buffer that only has a length: stateBytes's allocator returns it.
type countBuf int

func (b countBuf) Len() int         { return int(b) }
func (b countBuf) Contents() []byte { return nil }
func (b countBuf) Release()         {}

// stateBytes is what NewState allocates for a state like st (its options, chunk and KV
// element size), as the device rounds each buffer (at least 16 bytes).
func (e *engine) stateBytes(st *state) int64 {
	tmp := &state{e: e, opt: st.opt, chunk: st.chunk, kvElem: st.kvElem}
	return countBytes(func(alloc func(int) (gpu.Buffer, error)) error { return e.layoutState(tmp, alloc) })
}

// actsBytes is what batchActs allocates: the activations of T rows of seqs sequences.
func (e *engine) actsBytes(T, seqs int) int64 {
	return countBytes(func(alloc func(int) (gpu.Buffer, error)) error { return e.layoutActs(&acts{}, T, seqs, alloc) })
}

// countBytes is what layout allocates, as the device rounds each buffer (at least 16
// bytes).
func countBytes(layout func(alloc func(int) (gpu.Buffer, error)) error) int64 {
	var n int64
	_ = layout(func(k int) (gpu.Buffer, error) {
		k = max(k, 16)
		n += int64(k)
		return countBuf(k), nil
	})
	return n
}

// kvChoice is a KV precision and its bytes per cached value.
type kvChoice struct {
	p    backend.KVPrecision
	elem int
}

// kvChoices are the KV precisions the backend offers for this model, smallest first.
func (e *engine) kvChoices() []kvChoice {
	var out []kvChoice
	if e.cfg.HeadDim%backend.KVBlock == 0 {
		out = append(out, kvChoice{backend.KVInt8, 1})
	}
	return append(out, kvChoice{backend.KVFloat16, 2}, kvChoice{backend.KVFloat32, 4})
}

// bytesFor is the size of a state of ctx positions with KV elements of elem bytes.
func (e *engine) bytesFor(ctx, elem int) int64 {
	return e.stateBytes(&state{opt: backend.StateOptions{ContextSize: ctx}, chunk: min(backend.ChunkRows, ctx), kvElem: elem})
}

// maxContext is the largest context whose state fits in avail bytes with KV elements of
// elem bytes, 0 when not even one position fits. State size grows with the context
// (the KV caches) and is constant in it beyond one chunk, so a binary search finds it.
func (e *engine) maxContext(avail int64, elem int) int {
	if e.bytesFor(1, elem) > avail {
		return 0
	}
	lo, hi := 1, 1
	for e.bytesFor(hi, elem) <= avail {
		lo = hi
		if hi > 1<<30 {
			return hi
		}
		hi *= 2
	}
	for hi-lo > 1 { // bytesFor(lo) fits, bytesFor(hi) does not
		mid := lo + (hi-lo)/2
		if e.bytesFor(mid, elem) <= avail {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// fits lists, for each KV precision, the largest context that fits avail bytes.
func (e *engine) fits(avail int64) string {
	s := ""
	for i, k := range e.kvChoices() {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d tokens with KV cache %v", e.maxContext(avail, k.elem), k.p)
	}
	return s
}

// checkWeightsFit runs at Load, before the weights are wrapped or copied: the weights
// (n bytes) and the smallest sequence (one chunk, the smallest KV precision) must fit.
// It counts the weights as resident for the states that follow.
func (e *engine) checkWeightsFit(n int64) error {
	ws := e.workingSet()
	small := e.kvChoices()[0]
	seq := e.bytesFor(backend.ChunkRows, small.elem)
	if ws > 0 && n+seq > ws {
		return fmt.Errorf("%w: the model's weights take %s and a sequence of %d tokens (KV cache %v) %s more; the device (%s) recommends at most %s (%s): use a device with more memory, or the CPU backend",
			ErrWorkingSet, gib(n), backend.ChunkRows, small.p, gib(seq), e.dev.Name(), gib(ws), e.workingSetSource())
	}
	e.mu.Lock()
	e.resident = n
	e.mu.Unlock()
	return nil
}

// reserve counts a new state of need bytes against the working set.
func (e *engine) reserve(need int64, opt backend.StateOptions) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ws := e.workingSet()
	if ws > 0 && e.resident+need > ws {
		avail := max(ws-e.resident, 0)
		return fmt.Errorf("%w: a sequence of %d tokens (KV cache %v) needs %s; the device recommends at most %s (%s), of which the weights, the open sequences and the batch activations hold %s: %s are left, enough for a context of %s",
			ErrWorkingSet, opt.ContextSize, opt.KVCache, gib(need), gib(ws), e.workingSetSource(), gib(e.resident), gib(avail), e.fits(avail))
	}
	e.resident += need
	return nil
}

func (e *engine) unreserve(n int64) {
	if n == 0 {
		return
	}
	e.mu.Lock()
	e.resident -= n
	e.mu.Unlock()
}

// gib formats a byte count for the messages.
func gib(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// outsideBytes is what bind copies into its auxiliary buffer: the tensors outside the
// wrapped span, each at a 256-byte aligned offset.
func outsideBytes(ts []tensorBytes, inSpan func([]byte) bool) int64 {
	var n int64
	for _, t := range ts {
		if !inSpan(t.data) {
			n += int64((len(t.data) + 255) &^ 255)
		}
	}
	return n
}

// weightView makes the view of the weights' span [start, start+n) (span offsets;
// lowest is the lowest matrix, delta its distance from the span's page-aligned start).
// A mapped file (qwen35.Weights.Mapped) is wrapped without copying: the pages around
// the tensors are the file's. Weights read into memory are copied, tensor by tensor,
// into a buffer the device allocates: the page-rounded span would reach before and
// past the Go allocation holding the file, and no slice or pointer may point outside a
// Go object (the garbage collector can abort on one), nor may a copy read beyond it.
// A device that copies (gpu.Uploader) copies in pieces, honouring ctx and reporting the
// bytes through progress.
func (e *engine) weightView(ctx context.Context, progress func(int64), lowest []byte, delta, start, n int, ts []tensorBytes, baseAddr uintptr, inSpan func([]byte) bool) (gpu.Buffer, error) {
	if e.w.Mapped() {
		mem := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(lowest)), start-delta)), n)
		if up, ok := e.dev.(gpu.Uploader); ok {
			buf, err := up.Upload(ctx, mem, progress)
			if err == nil {
				e.copied += n
			}
			return buf, err
		}
		if buf, err := e.dev.WrapNoCopy(mem); err == nil {
			return buf, nil
		}
		// The device cannot wrap this memory: copy it (all of it is the mapping's).
		buf, err := e.dev.NewBuffer(n)
		if err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
		copy(buf.Contents(), mem)
		e.copied += n
		return buf, nil
	}
	buf, err := e.dev.NewBuffer(n)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	dst := buf.Contents()
	for _, t := range ts {
		if !inSpan(t.data) {
			continue
		}
		off := int(addr(t.data)-baseAddr) - start
		if off >= 0 && off+len(t.data) <= n {
			copy(dst[off:], t.data)
			e.copied += len(t.data)
		}
	}
	return buf, nil
}
