package backend_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// layerSpec shapes one layer of a fake state: recurrent arrays of the given lengths,
// or, when heads > 0, a KV cache of heads × dim rows.
type layerSpec struct {
	recurrent []int
	heads     int
	dim       int
}

// fakeLayout is a small hybrid model: recurrent layers of two arrays between attention
// layers whose heads end in a short block (40 = 32 + 8 values).
var fakeLayout = []layerSpec{
	{recurrent: []int{6, 10}},
	{heads: 2, dim: 40},
	{recurrent: []int{6, 10}},
	{heads: 2, dim: 40},
}

// fakeState is a backend.State in memory: what the codec sees of a real one.
type fakeState struct {
	layers []backend.Layer
	n, max int
}

func newFakeState(layout []layerSpec, p backend.KVPrecision, max int) *fakeState {
	st := &fakeState{max: max}
	for _, l := range layout {
		if l.heads > 0 {
			st.layers = append(st.layers, backend.Layer{KV: &fakeKV{prec: p, heads: l.heads, dim: l.dim, maxLen: max}})
			continue
		}
		var arrays [][]float32
		for _, n := range l.recurrent {
			arrays = append(arrays, make([]float32, n))
		}
		st.layers = append(st.layers, backend.Layer{Recurrent: arrays})
	}
	return st
}

func (st *fakeState) Len() int                  { return st.n }
func (st *fakeState) Layers() int               { return len(st.layers) }
func (st *fakeState) Layer(i int) backend.Layer { return st.layers[i] }
func (st *fakeState) Bytes() int64              { return 0 }
func (st *fakeState) Close() error              { return nil }

func (st *fakeState) Reset() {
	st.n = 0
	for _, l := range st.layers {
		for _, a := range l.Recurrent {
			clear(a)
		}
		if l.KV != nil {
			l.KV.Truncate(0)
		}
	}
}

func (st *fakeState) SetLen(n int) error {
	if n < 0 || n > st.max {
		return fmt.Errorf("%w: %d tokens, the context holds %d", backend.ErrContextFull, n, st.max)
	}
	st.n = n
	return nil
}

// fill replaces st's contents with n tokens' worth of random state.
func (st *fakeState) fill(rng *rand.Rand, n int) {
	st.Reset()
	for _, l := range st.layers {
		for _, a := range l.Recurrent {
			for i := range a {
				a[i] = 2*rng.Float32() - 1
			}
		}
		if kv := l.KV; kv != nil {
			c := backend.NewKVRowCodec(kv.Heads(), kv.HeadDim())
			rb := kv.Precision().RowBytes(kv.Heads(), kv.HeadDim())
			k, v := make([]byte, rb), make([]byte, rb)
			for range n {
				c.Encode(kv.Precision(), k, randomRow(rng, kv.Heads(), kv.HeadDim()))
				c.Encode(kv.Precision(), v, randomRow(rng, kv.Heads(), kv.HeadDim()))
				if err := kv.AppendRow(k, v); err != nil {
					panic(err)
				}
			}
		}
	}
	if err := st.SetLen(n); err != nil {
		panic(err)
	}
}

// fakeKV keeps each position's encoded key and value rows, as they cross the view.
type fakeKV struct {
	prec       backend.KVPrecision
	heads, dim int
	maxLen     int
	k, v       [][]byte
}

func (c *fakeKV) Precision() backend.KVPrecision { return c.prec }
func (c *fakeKV) Heads() int                     { return c.heads }
func (c *fakeKV) HeadDim() int                   { return c.dim }
func (c *fakeKV) Len() int                       { return len(c.k) }
func (c *fakeKV) MaxLen() int                    { return c.maxLen }

func (c *fakeKV) ReadRow(pos int, k, v []byte) {
	copy(k, c.k[pos])
	copy(v, c.v[pos])
}

func (c *fakeKV) AppendRow(k, v []byte) error {
	rb := c.prec.RowBytes(c.heads, c.dim)
	if len(k) != rb || len(v) != rb {
		return fmt.Errorf("rows of %d and %d bytes, want %d", len(k), len(v), rb)
	}
	if len(c.k) >= c.maxLen {
		return fmt.Errorf("%w: all %d positions used", backend.ErrContextFull, c.maxLen)
	}
	c.k = append(c.k, append([]byte(nil), k...))
	c.v = append(c.v, append([]byte(nil), v...))
	return nil
}

func (c *fakeKV) Truncate(n int) { c.k, c.v = c.k[:n], c.v[:n] }
