package cli

import (
	"testing"

	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
)

// LayoutNote names the interleaved kernels of the model's own format (the base-3 ones
// for PTQ1_0), wherever the layout interleaves that format on this CPU.
func TestLayoutNote(t *testing.T) {
	kernels := map[ternary.Format]string{ternary.PQ2_0: ternary.InterleavedKernel(), ternary.PTQ1_0: ternary.Interleaved3Kernel()}
	for f, k := range kernels {
		w := &qwen35.Weights{Output: qwen35.Matrix{Format: f}}
		for _, name := range []string{"", "auto", "file", "interleaved"} {
			l := cpu.LayoutAuto
			if name != "" {
				l, _ = cpu.ParseLayout(name)
			}
			want := "as in the file"
			if l.Resolve(f) == cpu.LayoutInterleaved {
				want = "interleaved (" + k + " kernels)"
			}
			assert.Equal(t, want, LayoutNote(name, w), "%s, -layout %q", f, name)
			assert.Equal(t, want, LayoutNoteFormat(name, f), "%s, -layout %q", f, name)
		}
	}
	assert.Equal(t, "as in the file", LayoutNote("auto", "not qwen35 weights"))
}
