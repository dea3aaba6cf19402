package engine

import (
	"math"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/ternary"
)

// workingSet16GB is what Metal's recommendedMaxWorkingSetSize reports on a Mac with
// 16 GB of RAM: two thirds of it, 10.67 GiB (the smallest Mac the 27B model fits).
const workingSet16GB = int64(16<<30) * 2 / 3

// cbBound is the modelled time no command buffer may exceed with the default
// WithCommandBufferTime: half its 100 ms (split.go), at the slowest Apple GPU's rates
// (an M1 with 7 GPU cores: floorBandwidth 60 GB/s, floorFLOPS 1.0 TFLOPS).
const cbBound = 0.050

// TestCommandBufferCost27B records the 27B model's chunks at the largest context a
// 16 GB Mac's working set allows — with an int8 KV cache (the longest context) and an
// f16 one — through the cost-model splitter, on a device that runs nothing, and checks
// that every command buffer stays within cbBound as modelled on the slowest Apple GPU:
// the decode step at the last position, and the last 64-token prefill chunk, asking for
// the last logits and for all of them (the head's GEMM then cut by rows). It checks the
// charges against an independent count — every ternary weight read once a chunk, 2
// FLOPs per weight and row, and attention's 4·HD FLOPs per query and position it sees
// and the cache rows up to the position — so that a dispatch left uncharged, or charged
// too little, fails too.
func TestCommandBufferCost27B(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: encodes the 27B model's chunks at 100K positions (seconds)")
	}
	e, dev, done := loadCounting(t, sparse27B(t), 2<<30)
	defer done()
	dev.workingSet = workingSet16GB
	c := e.cfg
	if lim := e.budget.costLimit(); lim != cbBound {
		t.Fatalf("the default cost limit is %g s, want %g", lim, cbBound)
	}
	// The independent count: the file is PQ2_0, 34 bytes per 128 weights.
	weightBytes := float64(e.w.TernaryBytes())
	params := weightBytes / float64(ternary.PQ2_0.RowBytes(128)) * 128
	A := c.AttentionLayers()
	for _, kv := range []struct {
		p    backend.KVPrecision
		elem int
	}{{backend.KVInt8, 1}, {backend.KVFloat16, 2}} {
		avail := workingSet16GB - e.resident
		ctx := e.maxContext(avail, kv.elem)
		s, err := e.NewState(backend.StateOptions{ContextSize: ctx, KVCache: kv.p})
		if err != nil {
			t.Fatal(err)
		}
		st := s.(*state)
		// The cache bytes of one layer's position: its keys and values (an int8
		// cache's scales too).
		row := float64(2 * c.KVHeads * c.HeadDim * kv.elem)
		if kv.elem == 1 {
			row += float64(2 * 4 * c.KVHeads * c.HeadDim / backend.KVBlock)
		}
		for _, run := range []struct {
			name string
			T    int
			mode outMode
		}{
			{"decode step", 1, outArgmax},
			{"prefill chunk, last logits", 64, outLast},
			{"prefill chunk, all logits", 64, outAll},
		} {
			pos := ctx - run.T
			st.setLen(pos)
			before := dev.dispatched[kAttnF16] + dev.dispatched[kAttnI8]
			sp := e.splitter(run.T)
			e.encodeChunk(sp, st, make([]int32, run.T), run.mode)
			sp.Commit()
			if err := sp.Wait(); err != nil {
				t.Fatalf("%s: %v", run.name, err)
			}
			most, total := 0.0, 0.0
			for _, x := range sp.costs {
				most, total = math.Max(most, x), total+x
			}
			attn := dev.dispatched[kAttnF16] + dev.dispatched[kAttnI8] - before
			t.Logf("KV %s, context %d, %s at position %d: %d command buffers, the largest %.1f ms modelled, %.2f s in all; %d attention dispatches over %d layers",
				kv.p, ctx, run.name, pos, sp.buffers(), 1e3*most, total, attn, A)
			if most > cbBound {
				t.Errorf("KV %s, %s: a command buffer of %.1f ms modelled, over the %.0f ms bound", kv.p, run.name, 1e3*most, 1e3*cbBound)
			}
			// Every weight once; the cache read up to the position by each attention layer.
			wantBytes := weightBytes + float64(A)*float64(pos)*row
			wantFLOPs := 2*float64(run.T)*params + float64(A)*attnFLOPs(c.Heads, c.HeadDim, pos, run.T)
			if run.mode != outAll {
				// The head runs on the last row only.
				head := float64(c.Vocab) * float64(c.Embedding)
				wantFLOPs -= 2 * float64(run.T-1) * head
			}
			got := sp.spent
			t.Logf("  charged %.2f GB and %.3f TFLOP; counted %.2f GB and %.3f TFLOP", got.bytes/1e9, got.flops/1e12, wantBytes/1e9, wantFLOPs/1e12)
			if got.bytes < wantBytes || got.flops < wantFLOPs {
				t.Errorf("KV %s, %s: charged %.3g bytes and %.3g FLOPs, less than the %.3g and %.3g counted", kv.p, run.name, got.bytes, got.flops, wantBytes, wantFLOPs)
			}
			// The FLOPs charged bound the work from above (whole blocks, 32-token GEMM
			// quarters): close to the count. (The bytes are not: each tile of tokens
			// reads the cache again, ⌈64/tt⌉ times a prefill chunk, which the count
			// leaves out.)
			if got.flops > 1.1*wantFLOPs {
				t.Errorf("KV %s, %s: charged %.3g FLOPs, over 1.1 × the %.3g counted", kv.p, run.name, got.flops, wantFLOPs)
			}
			if run.T > 1 && attn <= A {
				t.Errorf("KV %s, %s: attention in %d dispatches over %d layers: not cut below a layer", kv.p, run.name, attn, A)
			}
		}
		s.Close()
	}
}
