package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// The per-layer views of a state: the GDN states alias the device buffers in
// qwen35.GDNState's sizes, and a KV row appended through the view, encoded by the seam's
// codec, lands in the device layout the attention kernels read ([head][position][dim],
// read here as the kernel checks read it) and reads back as the same bytes.
func TestStateViews(t *testing.T) {
	e, _, done := loadCounting(t, synthtest.Path(t, "tiny", 1, ternary.PQ2_0), 1<<30)
	defer done()
	c := e.cfg
	gs := qwen35.NewGDN(c).NewState()
	rng := rand.New(rand.NewPCG(1, 2))
	const ctx = 8
	for _, p := range []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8} {
		s, err := e.NewState(backend.StateOptions{ContextSize: ctx, KVCache: p})
		if err != nil {
			t.Fatal(err)
		}
		st := s.(*state)
		if s.Layers() != c.Layers {
			t.Fatalf("%v: %d layers, want %d", p, s.Layers(), c.Layers)
		}
		codec := backend.NewKVRowCodec(c.KVHeads, c.HeadDim)
		rb := p.RowBytes(c.KVHeads, c.HeadDim)
		rows := map[int][][2][]byte{} // layer → position → key, value rows
		for i := range s.Layers() {
			l := s.Layer(i)
			if !c.IsAttention(i) {
				if l.KV != nil || len(l.Recurrent) != 2 || len(l.Recurrent[0]) != len(gs.Conv) || len(l.Recurrent[1]) != len(gs.S) {
					t.Fatalf("%v: GDN layer %d: view %d arrays (want conv %d, state %d)", p, i, len(l.Recurrent), len(gs.Conv), len(gs.S))
				}
				l.Recurrent[0][1], l.Recurrent[1][2] = 3, 4
				if floats(st.conv[i].bytes(8))[1] != 3 || floats(st.ssm[i].bytes(12))[2] != 4 {
					t.Errorf("%v: GDN layer %d: the view does not alias the device's state", p, i)
				}
				continue
			}
			kv := l.KV
			if kv == nil || kv.Precision() != p || kv.Heads() != c.KVHeads || kv.HeadDim() != c.HeadDim || kv.MaxLen() != ctx || kv.Len() != 0 {
				t.Fatalf("%v: attention layer %d: view %+v", p, i, l)
			}
			for pos := range ctx {
				var pair [2][]byte
				for j := range pair {
					x := make([]float32, c.KVHeads*c.HeadDim)
					for k := range x {
						x[k] = float32(rng.NormFloat64())
					}
					pair[j] = make([]byte, rb)
					codec.Encode(p, pair[j], x)
				}
				if err := kv.AppendRow(pair[0], pair[1]); err != nil {
					t.Fatalf("%v: layer %d position %d: %v", p, i, pos, err)
				}
				rows[i] = append(rows[i], pair)
			}
			if err := kv.AppendRow(rows[i][0][0], rows[i][0][1]); !errors.Is(err, backend.ErrContextFull) {
				t.Errorf("%v: append past MaxLen: %v, want ErrContextFull", p, err)
			}
			// The device holds each decoded value at [head][position][dim].
			want := make([]float32, c.KVHeads*c.HeadDim)
			for pos, pair := range rows[i] {
				for j, dev := range [2][2]gpu.Buffer{{st.kc[i], st.ks[i]}, {st.vc[i], st.vs[i]}} {
					if err := codec.Decode(p, want, pair[j]); err != nil {
						t.Fatal(err)
					}
					vals, scales := dev[0], dev[1]
					for h := range c.KVHeads {
						for d := range c.HeadDim {
							got := cacheValue(vals, scales, st.kvElem, (h*ctx+pos)*c.HeadDim+d)
							if w := want[h*c.HeadDim+d]; got != w {
								t.Fatalf("%v: layer %d position %d head %d value %d: device %g, row %g", p, i, pos, h, d, got, w)
							}
						}
					}
				}
				k, v := make([]byte, rb), make([]byte, rb)
				kv.ReadRow(pos, k, v)
				if string(k) != string(pair[0]) || string(v) != string(pair[1]) {
					t.Fatalf("%v: layer %d position %d: ReadRow differs from the row appended", p, i, pos)
				}
			}
		}
		if err := s.SetLen(ctx - 1); err == nil {
			t.Errorf("%v: SetLen(%d) with %d positions in each KV layer succeeded", p, ctx-1, ctx)
		}
		if err := s.SetLen(ctx + 1); !errors.Is(err, backend.ErrContextFull) {
			t.Errorf("%v: SetLen past the context: %v, want ErrContextFull", p, err)
		}
		if err := s.SetLen(ctx); err != nil || s.Len() != ctx {
			t.Fatalf("%v: SetLen(%d): %v, Len %d", p, ctx, err, s.Len())
		}

		// A copy holds the same rows; Truncate and Reset empty the views.
		s2, err := e.NewState(backend.StateOptions{ContextSize: ctx, KVCache: p})
		if err != nil {
			t.Fatal(err)
		}
		if err := s2.(backend.StateCopier).CopyFrom(s); err != nil || s2.Len() != ctx {
			t.Fatalf("%v: CopyFrom: %v, Len %d", p, err, s2.Len())
		}
		for i, pos := range rows {
			kv := s2.Layer(i).KV
			k, v := make([]byte, rb), make([]byte, rb)
			kv.ReadRow(ctx-1, k, v)
			if kv.Len() != ctx || string(k) != string(pos[ctx-1][0]) || string(v) != string(pos[ctx-1][1]) {
				t.Errorf("%v: layer %d of the copy differs", p, i)
			}
			kv.Truncate(3)
			if kv.Len() != 3 {
				t.Errorf("%v: Truncate(3): Len %d", p, kv.Len())
			}
		}
		if err := s2.SetLen(3); err != nil {
			t.Errorf("%v: SetLen after Truncate: %v", p, err)
		}
		s2.Reset()
		for i := range rows {
			if n := s2.Layer(i).KV.Len(); n != 0 || s2.Len() != 0 {
				t.Errorf("%v: after Reset layer %d holds %d positions", p, i, n)
			}
		}

		// Closed states: ErrClosed, from the state and from Forward.
		s2.Close()
		if err := s2.(backend.StateCopier).CopyFrom(s); !errors.Is(err, backend.ErrClosed) {
			t.Errorf("%v: CopyFrom into a closed state: %v", p, err)
		}
		if err := e.Forward(context.Background(), []backend.Sequence{{State: s2, Tokens: []int32{1}}}); !errors.Is(err, backend.ErrClosed) {
			t.Errorf("%v: Forward on a closed state: %v", p, err)
		}
		if err := s2.SetLen(0); !errors.Is(err, backend.ErrClosed) {
			t.Errorf("%v: SetLen on a closed state: %v", p, err)
		}
		s.Close()
	}

	// A state of another engine is refused, and no error names the package first.
	e2, _, done2 := loadCounting(t, synthtest.Path(t, "tiny", 1, ternary.PQ2_0), 1<<30)
	defer done2()
	other, err := e2.NewState(backend.StateOptions{ContextSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = e.Forward(context.Background(), []backend.Sequence{{State: other, Tokens: []int32{1}}})
	if err == nil || !strings.Contains(err.Error(), "another engine") || strings.HasPrefix(err.Error(), "metal:") {
		t.Errorf("Forward with another engine's state: %v", err)
	}
}
