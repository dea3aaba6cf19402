package engine

import (
	"errors"
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
)

// state is one sequence on the device: the recurrent states and KV caches, allocated
// once for the context size, and the activation buffers of a chunk.
type state struct {
	e     *engine
	opt   backend.StateOptions
	pos   int
	chunk int

	ssm, conv []ref        // per layer (zero for attention layers)
	kc, vc    []gpu.Buffer // per layer (nil for GDN layers): the cached values or int8 codes
	ks, vs    []gpu.Buffer // per layer, an int8 cache's scales (one per backend.KVBlock values)
	kvElem    int          // bytes per cached value: 2 (f16), 4 (f32) or 1 (int8)
	layers    []backend.Layer
	kv        []*kvView // the attention layers' views (nil for GDN layers)

	acts            // the activations of one chunk of this sequence alone
	ssmBuf, convBuf gpu.Buffer

	kp keeper // the last kept pass (rewind.go)

	all      []gpu.Buffer // every buffer, for Bytes and Close
	reserved int64        // bytes of the device's working set counted for this state
	closed   bool
}

var (
	_ backend.State       = (*state)(nil)
	_ backend.StateCopier = (*state)(nil)
)

// NewState allocates a sequence's state for the context size: the KV caches of the
// attention layers in full (ContextSize positions each), the GDN states, and the
// activations of one chunk.
func (e *engine) NewState(opt backend.StateOptions) (backend.State, error) {
	c := e.cfg
	if opt.ContextSize <= 0 {
		return nil, fmt.Errorf("context size %d must be positive", opt.ContextSize)
	}
	st := &state{e: e, opt: opt, chunk: min(backend.ChunkRows, opt.ContextSize)}
	switch opt.KVCache {
	case backend.KVFloat16:
		st.kvElem = 2
	case backend.KVFloat32:
		st.kvElem = 4
	case backend.KVInt8:
		if c.HeadDim%backend.KVBlock != 0 {
			return nil, fmt.Errorf("the int8 KV cache needs a head dim that is a multiple of %d, not %d (use f16 or f32)", backend.KVBlock, c.HeadDim)
		}
		st.kvElem = 1
	default:
		return nil, fmt.Errorf("KV cache precision %v is not supported by the Metal backend (use f16, f32 or int8)", opt.KVCache)
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, backend.ErrClosed
	}
	need := e.stateBytes(st)
	if err := e.reserve(need, opt); err != nil {
		return nil, err
	}
	st.reserved = need
	alloc := func(n int) (gpu.Buffer, error) {
		b, err := e.dev.NewBuffer(max(n, 16))
		if err != nil {
			return nil, err
		}
		st.all = append(st.all, b)
		return b, nil
	}
	if err := e.layoutState(st, alloc); err != nil {
		st.release()
		return nil, fmt.Errorf("state: %w", err)
	}
	st.views()
	st.Reset()
	return st, nil
}

// acts are the activations of the rows of a command buffer, row-major by row: a
// state's own, for a chunk of its sequence run alone, or the engine's batch buffers,
// for the rows of several sequences run together (batch.go).
type acts struct {
	xa, xb, delta, h, hr gpu.Buffer // rows × the residual stream
	qkv, z               gpu.Buffer // a GDN layer's In products
	qg, k, v             gpu.Buffer // an attention layer's In products
	mix, mixr            gpu.Buffer // rows × the widest mixer output
	gate, up, act        gpu.Buffer // rows × the MLP's width
	logits               gpu.Buffer // rows × Vocab
	rope                 gpu.Buffer // rows × RopeDims: cos then sin per row
	ids                  gpu.Buffer // the rows' token ids (uint32)
	best                 gpu.Buffer // argmaxes (uint32), one per sequence of the rows
	part                 gpu.Buffer // attention's partial softmaxes (attn.go)
}

// layoutActs allocates the activations of T rows of at most seqs sequences through
// alloc, in one fixed order.
func (e *engine) layoutActs(a *acts, T, seqs int, alloc func(n int) (gpu.Buffer, error)) error {
	c, s := e.cfg, &e.sizes
	sizes := []struct {
		dst *gpu.Buffer
		n   int
	}{
		{&a.xa, T * s.embed}, {&a.xb, T * s.embed}, {&a.delta, T * s.embed},
		{&a.h, T * s.embed}, {&a.hr, T * s.embed},
		{&a.qkv, T * s.gdnIn[0]}, {&a.z, T * s.gdnIn[1]},
		{&a.mix, T * s.mix}, {&a.mixr, T * s.mix},
		{&a.qg, T * s.attnIn[0]}, {&a.k, T * s.attnIn[1]}, {&a.v, T * s.attnIn[2]},
		{&a.gate, T * s.ffn}, {&a.up, T * s.ffn}, {&a.act, T * s.ffn},
		{&a.logits, T * s.vocab}, {&a.rope, T * c.RopeDims}, {&a.ids, T}, {&a.best, seqs},
		{&a.part, attnPartFloats(T, c.Heads, c.HeadDim)},
	}
	for _, s := range sizes {
		b, err := alloc(4 * s.n)
		if err != nil {
			return err
		}
		*s.dst = b
	}
	return nil
}

// layoutState allocates st's buffers through alloc, in one fixed order; stateBytes
// runs it with an allocator that only counts, so that the size check and the
// allocation cannot disagree.
func (e *engine) layoutState(st *state, alloc func(n int) (gpu.Buffer, error)) error {
	c, s := e.cfg, &e.sizes
	opt := st.opt
	if err := e.layoutActs(&st.acts, st.chunk, 1, alloc); err != nil {
		return err
	}
	// GDN states: one buffer for the recurrent states, one for the conv windows, each
	// layer's in the layout of qwen35.GDNState.
	ssmPer, convPer := 4*s.ssm, 4*s.conv
	var err error
	if st.ssmBuf, err = alloc(s.gdnLayers * ssmPer); err != nil {
		return err
	}
	if st.convBuf, err = alloc(s.gdnLayers * convPer); err != nil {
		return err
	}
	L := len(e.layers)
	st.ssm, st.conv = make([]ref, L), make([]ref, L)
	st.kc, st.vc = make([]gpu.Buffer, L), make([]gpu.Buffer, L)
	st.ks, st.vs = make([]gpu.Buffer, L), make([]gpu.Buffer, L)
	g := 0
	kvValues := opt.ContextSize * c.KVHeads * c.HeadDim
	for i := range L {
		if e.layers[i].mixer == qwen35.MixerAttention {
			if st.kc[i], err = alloc(kvValues * st.kvElem); err != nil {
				return err
			}
			if st.vc[i], err = alloc(kvValues * st.kvElem); err != nil {
				return err
			}
			if st.kvElem == 1 {
				sb := 4 * kvValues / backend.KVBlock
				if st.ks[i], err = alloc(sb); err != nil {
					return err
				}
				if st.vs[i], err = alloc(sb); err != nil {
					return err
				}
			}
			continue
		}
		st.ssm[i] = ref{st.ssmBuf, g * ssmPer}
		st.conv[i] = ref{st.convBuf, g * convPer}
		g++
	}
	return nil
}

func (st *state) release() {
	st.releaseKeep()
	for _, b := range st.all {
		b.Release()
	}
	st.all = nil
	st.e.unreserve(st.reserved)
	st.reserved = 0
}

// views makes the per-layer views of the state (backend.State.Layer): a GDN layer's
// convolution and recurrent states as float32 views of the device buffers, whose
// layouts are qwen35.GDNState's, and an attention layer's KV cache.
func (st *state) views() {
	s := &st.e.sizes
	st.layers = make([]backend.Layer, len(st.kc))
	st.kv = make([]*kvView, len(st.kc))
	for i := range st.layers {
		if st.kc[i] != nil {
			st.kv[i] = &kvView{st: st, li: i}
			st.layers[i] = backend.Layer{KV: st.kv[i]}
			continue
		}
		st.layers[i] = backend.Layer{Recurrent: [][]float32{
			floats(st.conv[i].bytes(4 * s.conv)),
			floats(st.ssm[i].bytes(4 * s.ssm)),
		}}
	}
}

// setLen sets the tokens held, in the state and in every KV view.
func (st *state) setLen(n int) {
	st.pos = n
	for _, kv := range st.kv {
		if kv != nil {
			kv.n = n
		}
	}
}

// Len returns the number of tokens the sequence holds.
func (st *state) Len() int { return st.pos }

// Reset empties the sequence: the GDN states are zeroed (the KV caches need not be).
func (st *state) Reset() {
	st.setLen(0)
	st.kp.on = false
	if st.closed || st.ssmBuf == nil {
		return
	}
	clear(st.ssmBuf.Contents())
	clear(st.convBuf.Contents())
}

// Layers returns the number of decoder layers.
func (st *state) Layers() int { return len(st.layers) }

// Layer returns the view of layer i's state (backend.State): a GDN layer's convolution
// and recurrent states, or an attention layer's KV cache. A closed state has none.
func (st *state) Layer(i int) backend.Layer {
	if st.closed {
		return backend.Layer{}
	}
	return st.layers[i]
}

// SetLen sets the tokens the sequence holds after a load has written every layer
// through its view: each attention layer must hold n positions.
func (st *state) SetLen(n int) error {
	if st.closed {
		return backend.ErrClosed
	}
	if n < 0 || n > st.opt.ContextSize {
		return fmt.Errorf("%w: %d tokens, the context holds %d", backend.ErrContextFull, n, st.opt.ContextSize)
	}
	for i, kv := range st.kv {
		if kv != nil && kv.n != n {
			return fmt.Errorf("layer %d holds %d positions, not %d", i, kv.n, n)
		}
	}
	st.pos, st.kp.on = n, false
	return nil
}

// CopyFrom makes st a copy of o, a state of the same engine and sizes, in place.
func (st *state) CopyFrom(o backend.State) error {
	src, ok := o.(*state)
	if !ok || src.e != st.e {
		return backend.ErrForeignState
	}
	if st.closed || src.closed {
		return backend.ErrClosed
	}
	if src.opt != st.opt {
		return errors.New("states of different sizes")
	}
	copy(st.ssmBuf.Contents(), src.ssmBuf.Contents())
	copy(st.convBuf.Contents(), src.convBuf.Contents())
	c := st.e.cfg
	for i := range st.kc {
		if st.kc[i] == nil {
			continue
		}
		// Only the positions held: [head][position][dim].
		row := c.HeadDim * st.kvElem
		for g := 0; g < c.KVHeads; g++ {
			a := g * st.opt.ContextSize * row
			b := a + src.pos*row
			copy(st.kc[i].Contents()[a:b], src.kc[i].Contents()[a:b])
			copy(st.vc[i].Contents()[a:b], src.vc[i].Contents()[a:b])
			if st.ks[i] != nil {
				a, b := 4*a/backend.KVBlock, 4*b/backend.KVBlock // the scales: 4 bytes per block of one-byte codes
				copy(st.ks[i].Contents()[a:b], src.ks[i].Contents()[a:b])
				copy(st.vs[i].Contents()[a:b], src.vs[i].Contents()[a:b])
			}
		}
	}
	st.setLen(src.pos)
	st.kp.on = false
	return nil
}

// Bytes returns the device memory the state holds, a kept pass's included.
func (st *state) Bytes() int64 {
	n := st.kp.bytes()
	for _, b := range st.all {
		n += int64(b.Len())
	}
	return n
}

// Close releases the state's buffers.
func (st *state) Close() error {
	if st.closed {
		return nil
	}
	st.closed = true
	st.release()
	return nil
}
