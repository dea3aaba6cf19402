package metal

import (
	"fmt"
	"io"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/metal/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
)

// prefillChunk is the most tokens one command buffer carries through the layers, as the
// CPU backend's chunk: the activations of a chunk live in the state's buffers.
const prefillChunk = 64

// state is one sequence on the device: the recurrent states and KV caches, allocated
// once for the context size, and the activation buffers of a chunk.
type state struct {
	e     *engine
	opt   bonsai.StateOptions
	pos   int
	chunk int

	ssm, conv []ref        // per layer (zero for attention layers)
	kc, vc    []gpu.Buffer // per layer (nil for GDN layers): the cached values or int8 codes
	ks, vs    []gpu.Buffer // per layer, an int8 cache's scales (one per 32 values)
	kvElem    int          // bytes per cached value: 2 (f16), 4 (f32) or 1 (int8)

	// Activations, row-major by token.
	xa, xb, delta, h, hr gpu.Buffer // chunk × Embedding
	qkv, z               gpu.Buffer // chunk × QKVWidth, chunk × InnerSize
	mix, mixr            gpu.Buffer // chunk × max(InnerSize, AttentionWidth)
	qg, k, v             gpu.Buffer // chunk × 2·Heads·HeadDim, chunk × KVHeads·HeadDim
	gate, up, act        gpu.Buffer // chunk × FeedForward
	logits               gpu.Buffer // chunk × Vocab
	rope                 gpu.Buffer // chunk × RopeDims: cos then sin per token
	ids                  gpu.Buffer // chunk token ids (uint32)
	best                 gpu.Buffer // the argmax (uint32)
	ssmBuf, convBuf      gpu.Buffer

	all      []gpu.Buffer // every buffer, for Bytes and Close
	reserved int64        // bytes of the device's working set counted for this state
	closed   bool
}

var _ bonsai.State = (*state)(nil)

// NewState allocates a sequence's state for the context size: the KV caches of the
// attention layers in full (ContextSize positions each), the GDN states, and the
// activations of one chunk.
func (e *engine) NewState(opt bonsai.StateOptions) (bonsai.State, error) {
	c := e.cfg
	if opt.ContextSize <= 0 {
		return nil, fmt.Errorf("metal: context size %d must be positive", opt.ContextSize)
	}
	st := &state{e: e, opt: opt, chunk: min(prefillChunk, opt.ContextSize)}
	switch opt.KVCache {
	case qwen35.KVFloat16:
		st.kvElem = 2
	case qwen35.KVFloat32:
		st.kvElem = 4
	case qwen35.KVInt8:
		if c.HeadDim%kvBlock != 0 {
			return nil, fmt.Errorf("metal: the int8 KV cache needs a head dim that is a multiple of %d, not %d (use f16 or f32)", kvBlock, c.HeadDim)
		}
		st.kvElem = 1
	default:
		return nil, fmt.Errorf("metal: KV cache precision %v is not supported by the Metal backend (use f16, f32 or int8)", opt.KVCache)
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, bonsai.ErrClosed
	}
	need := e.stateBytes(st)
	if err := e.reserve(need, opt); err != nil {
		return nil, err
	}
	st.reserved = need
	fail := func(err error) (bonsai.State, error) {
		st.release()
		return nil, fmt.Errorf("metal: state: %w", err)
	}
	alloc := func(n int) (gpu.Buffer, error) {
		b, err := e.dev.NewBuffer(max(n, 16))
		if err != nil {
			return nil, err
		}
		st.all = append(st.all, b)
		return b, nil
	}
	if err := e.layoutState(st, alloc); err != nil {
		return fail(err)
	}
	st.Reset()
	return st, nil
}

// layoutState allocates st's buffers through alloc, in one fixed order; stateBytes
// runs it with an allocator that only counts, so that the size check and the
// allocation cannot disagree.
func (e *engine) layoutState(st *state, alloc func(n int) (gpu.Buffer, error)) error {
	c := e.cfg
	opt := st.opt
	T := st.chunk
	sizes := []struct {
		dst *gpu.Buffer
		n   int
	}{
		{&st.xa, T * c.Embedding}, {&st.xb, T * c.Embedding}, {&st.delta, T * c.Embedding},
		{&st.h, T * c.Embedding}, {&st.hr, T * c.Embedding},
		{&st.qkv, T * c.QKVWidth()}, {&st.z, T * c.InnerSize},
		{&st.mix, T * max(c.InnerSize, c.AttentionWidth())}, {&st.mixr, T * max(c.InnerSize, c.AttentionWidth())},
		{&st.qg, T * 2 * c.Heads * c.HeadDim}, {&st.k, T * c.KVHeads * c.HeadDim}, {&st.v, T * c.KVHeads * c.HeadDim},
		{&st.gate, T * c.FeedForward}, {&st.up, T * c.FeedForward}, {&st.act, T * c.FeedForward},
		{&st.logits, T * c.Vocab}, {&st.rope, T * c.RopeDims}, {&st.ids, T}, {&st.best, 1},
	}
	for _, s := range sizes {
		b, err := alloc(4 * s.n)
		if err != nil {
			return err
		}
		*s.dst = b
	}
	// GDN states: one buffer for the recurrent states, one for the conv windows.
	gdnLayers := 0
	for i := 0; i < c.Layers; i++ {
		if !c.IsAttention(i) {
			gdnLayers++
		}
	}
	ssmPer := 4 * c.VHeads * c.StateSize * c.StateSize
	convPer := 4 * (c.ConvKernel - 1) * c.QKVWidth()
	var err error
	if st.ssmBuf, err = alloc(gdnLayers * ssmPer); err != nil {
		return err
	}
	if st.convBuf, err = alloc(gdnLayers * convPer); err != nil {
		return err
	}
	st.ssm, st.conv = make([]ref, c.Layers), make([]ref, c.Layers)
	st.kc, st.vc = make([]gpu.Buffer, c.Layers), make([]gpu.Buffer, c.Layers)
	st.ks, st.vs = make([]gpu.Buffer, c.Layers), make([]gpu.Buffer, c.Layers)
	g := 0
	kvBytes := opt.ContextSize * c.KVHeads * c.HeadDim * st.kvElem
	for i := 0; i < c.Layers; i++ {
		if c.IsAttention(i) {
			if st.kc[i], err = alloc(kvBytes); err != nil {
				return err
			}
			if st.vc[i], err = alloc(kvBytes); err != nil {
				return err
			}
			if st.kvElem == 1 {
				sb := 4 * opt.ContextSize * c.KVHeads * c.HeadDim / kvBlock
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
	for _, b := range st.all {
		b.Release()
	}
	st.all = nil
	st.e.unreserve(st.reserved)
	st.reserved = 0
}

// Len returns the number of tokens the sequence holds.
func (st *state) Len() int { return st.pos }

// Reset empties the sequence: the GDN states are zeroed (the KV caches need not be).
func (st *state) Reset() {
	st.pos = 0
	if st.closed || st.ssmBuf == nil {
		return
	}
	clear(st.ssmBuf.Contents())
	clear(st.convBuf.Contents())
}

// Clone returns an independent copy.
func (st *state) Clone() (bonsai.State, error) {
	if st.closed {
		return nil, bonsai.ErrClosed
	}
	n, err := st.e.NewState(st.opt)
	if err != nil {
		return nil, err
	}
	c := n.(*state)
	if err := c.CopyFrom(st); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// CopyFrom makes st a copy of o, a state of the same engine and sizes, in place.
func (st *state) CopyFrom(o bonsai.State) error {
	src, ok := o.(*state)
	if !ok || src.e != st.e {
		return fmt.Errorf("metal: state belongs to another engine")
	}
	if st.closed || src.closed {
		return bonsai.ErrClosed
	}
	if src.opt != st.opt {
		return fmt.Errorf("metal: states of different sizes")
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
				a, b := 4*a/kvBlock, 4*b/kvBlock // the scales: 4 bytes per 32 one-byte codes
				copy(st.ks[i].Contents()[a:b], src.ks[i].Contents()[a:b])
				copy(st.vs[i].Contents()[a:b], src.vs[i].Contents()[a:b])
			}
		}
	}
	st.pos = src.pos
	return nil
}

// Save writes the state in bonsai's shared snapshot encoding.
func (st *state) Save(w io.Writer) error {
	if st.closed {
		return bonsai.ErrClosed
	}
	return newCodec(st).save(w)
}

// Load replaces the state with a snapshot; on error the state is left empty.
func (st *state) Load(r io.Reader) error {
	if st.closed {
		return bonsai.ErrClosed
	}
	st.Reset()
	n, err := newCodec(st).load(r)
	if err != nil {
		st.Reset()
		return err
	}
	st.pos = n
	return nil
}

// Bytes returns the device memory the state holds.
func (st *state) Bytes() int64 {
	var n int64
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
