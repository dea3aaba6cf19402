package bonsai

import (
	"fmt"
	"math/rand/v2"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// FillSynthetic replaces the session's contents with n positions of synthetic state —
// random keys and values in every attention layer's cache, random recurrent states —
// without running the model, so that the next Step runs at position n. A decode step's
// cost does not depend on what the state holds, so this measures a long context's decode
// speed in the seconds it takes to write the state instead of the minutes or hours of a
// prefill; the logits it produces mean nothing. The state is written through the seam's
// layer views, so every backend accepts it. The tokens are all 0.
func (s *Session) FillSynthetic(n int, seed uint64) error {
	if n < 0 || n > s.m.opts.ctxSize {
		return fmt.Errorf("bonsai: FillSynthetic(%d): the context holds %d tokens", n, s.m.opts.ctxSize)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return errClosed
	}
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	if s.m.closed {
		return errClosed
	}
	s.dropCheckpoint()
	s.st.Reset()
	s.tokens, s.hasLogits = s.tokens[:0], false
	if err := fillSynthetic(s.st, n, seed); err != nil {
		s.st.Reset()
		return s.m.backendErr(err)
	}
	s.tokens = append(s.tokens, make([]int32, n)...)
	return nil
}

func fillSynthetic(st backend.State, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	random := func(x []float32, scale float64) {
		for i := range x {
			x[i] = float32(rng.NormFloat64() * scale)
		}
	}
	// A few distinct rows, encoded once, repeated: writing is not what is measured.
	const variants = 64
	var rows [variants][]byte
	for i := range st.Layers() {
		l := st.Layer(i)
		if l.KV == nil {
			// The first array (a GDN layer's convolution window) at unit scale, the
			// recurrent state small, as a trained model's stay.
			for j, a := range l.Recurrent {
				scale := 0.02
				if j == 0 {
					scale = 1
				}
				random(a, scale)
			}
			continue
		}
		kv := l.KV
		if rows[0] == nil || len(rows[0]) != kv.Precision().RowBytes(kv.Heads(), kv.HeadDim()) {
			codec := backend.NewKVRowCodec(kv.Heads(), kv.HeadDim())
			x := make([]float32, kv.Heads()*kv.HeadDim())
			for v := range rows {
				random(x, 1)
				rows[v] = make([]byte, kv.Precision().RowBytes(kv.Heads(), kv.HeadDim()))
				codec.Encode(kv.Precision(), rows[v], x)
			}
		}
		for range n {
			if err := kv.AppendRow(rows[rng.IntN(variants)], rows[rng.IntN(variants)]); err != nil {
				return err
			}
		}
	}
	return st.SetLen(n)
}
