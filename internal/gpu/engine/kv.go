package engine

import (
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
)

// kvView is one attention layer's KV cache as the seam sees it (backend.KVCache). The
// device holds a layer's keys and values as [head][position][dim] (an int8 cache its
// scales as [head][position][block]), the layout the attention kernels read; a row
// crosses the seam head-major in the encoding of backend.KVPrecision.RowBytes. For the
// precisions the device holds (f32, f16, int8) that encoding is the device's own bytes
// (little-endian, as Apple GPUs and the emulator's hosts are), so a row is gathered from
// and scattered to the heads' places without conversion.
type kvView struct {
	st *state
	li int
	n  int // positions held
}

var _ backend.KVCache = (*kvView)(nil)

func (v *kvView) Precision() backend.KVPrecision { return v.st.opt.KVCache }
func (v *kvView) Heads() int                     { return v.st.e.cfg.KVHeads }
func (v *kvView) HeadDim() int                   { return v.st.e.cfg.HeadDim }
func (v *kvView) Len() int                       { return v.n }
func (v *kvView) MaxLen() int                    { return v.st.opt.ContextSize }

// ReadRow copies position pos's key and value rows into k and v.
func (v *kvView) ReadRow(pos int, k, val []byte) {
	if pos < 0 || pos >= v.n {
		panic(fmt.Sprintf("metal: KVCache.ReadRow(%d) with %d positions", pos, v.n))
	}
	st := v.st
	v.move(k, st.kc[v.li], st.ks[v.li], pos, false)
	v.move(val, st.vc[v.li], st.vs[v.li], pos, false)
}

// AppendRow adds one position from encoded rows.
func (v *kvView) AppendRow(k, val []byte) error {
	if n := v.Precision().RowBytes(v.Heads(), v.HeadDim()); len(k) < n || len(val) < n {
		return fmt.Errorf("KV rows of %d and %d bytes, want %d", len(k), len(val), n)
	}
	if v.n >= v.MaxLen() {
		return fmt.Errorf("%w: all %d positions used", backend.ErrContextFull, v.MaxLen())
	}
	st := v.st
	v.move(k, st.kc[v.li], st.ks[v.li], v.n, true)
	v.move(val, st.vc[v.li], st.vs[v.li], v.n, true)
	v.n++
	return nil
}

// Truncate keeps the first n positions.
func (v *kvView) Truncate(n int) {
	if n < 0 || n > v.n {
		panic(fmt.Sprintf("metal: KVCache.Truncate(%d) with %d positions", n, v.n))
	}
	v.n = n
}

// move copies position pos of a cache (its values or codes, then an int8 cache's
// scales) between the device and the encoded row b: into the device when in is set.
func (v *kvView) move(b []byte, vals, scales gpu.Buffer, pos int, in bool) {
	st := v.st
	heads, ctx := v.Heads(), st.opt.ContextSize
	part := func(b, dev []byte, per int) {
		for h := range heads {
			at := (h*ctx + pos) * per
			if in {
				copy(dev[at:at+per], b[h*per:(h+1)*per])
			} else {
				copy(b[h*per:(h+1)*per], dev[at:at+per])
			}
		}
	}
	hb := v.HeadDim() * st.kvElem
	part(b, vals.Contents(), hb)
	if scales != nil {
		part(b[heads*hb:], scales.Contents(), 4*v.HeadDim()/backend.KVBlock)
	}
}
