package backendtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// FillSynthetic writes n positions of synthetic state into st — random keys and values
// in every attention layer's cache, random recurrent states — without running the model,
// and sets its length to n, so that the next forward pass runs at position n. A decode
// step's cost does not depend on what the state holds, so this measures a long context's
// decode speed in the seconds it takes to write the state instead of the minutes or
// hours of a prefill; the logits it leads to mean nothing. It writes through the seam's
// layer views, so every backend's states accept it. st must be empty (bonsai's
// Driver.Fill passes it so); n beyond its context size is an error wrapping
// backend.ErrContextFull.
func FillSynthetic(st backend.State, n int, seed uint64) error {
	if n < 0 {
		return fmt.Errorf("backendtest: FillSynthetic(%d): a negative length", n)
	}
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
				return fmt.Errorf("backendtest: FillSynthetic(%d): layer %d: %w", n, i, err)
			}
		}
	}
	if err := st.SetLen(n); err != nil {
		return fmt.Errorf("backendtest: FillSynthetic(%d): %w", n, err)
	}
	return nil
}
