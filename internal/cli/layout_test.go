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

// WeightsNote says what a -weight-format transcode gives (the layout of the format
// transcoded to), and, for a PTQ1_0 model kept as in the file where PQ2_0 would be
// interleaved (AVX2, NEON), what -weight-format pq2_0 would do; nothing more where the
// layout is the file's by request or the format is the model's own.
func TestWeightsNote(t *testing.T) {
	ptq1 := &qwen35.Weights{Output: qwen35.Matrix{Format: ternary.PTQ1_0}}
	pq2 := &qwen35.Weights{Output: qwen35.Matrix{Format: ternary.PQ2_0}}
	for _, layout := range []string{"", "auto", "file", "interleaved"} {
		assert.Equal(t, LayoutNote(layout, pq2), WeightsNote(layout, "", pq2), "-layout %q", layout)
		assert.Equal(t, LayoutNote(layout, pq2), WeightsNote(layout, "PQ2_0", pq2), "-layout %q: the model's own format", layout)
		assert.Equal(t, LayoutNoteFormat(layout, ternary.PQ2_0)+" as PQ2_0 (transcoded at load)", WeightsNote(layout, "pq2_0", ptq1), "-layout %q", layout)
		assert.Equal(t, LayoutNoteFormat(layout, ternary.PTQ1_0)+" as PTQ1_0 (transcoded at load)", WeightsNote(layout, "ptq1_0", pq2), "-layout %q", layout)
		want := LayoutNote(layout, ptq1)
		if want == "as in the file" && LayoutNoteFormat(layout, ternary.PQ2_0) != "as in the file" {
			want += " (no interleaved PTQ1_0 kernels on this CPU: -weight-format pq2_0 runs it in PQ2_0's, on AVX2 about twice as fast, for 16% more memory)"
		}
		assert.Equal(t, want, WeightsNote(layout, "", ptq1), "-layout %q", layout)
	}
	assert.Equal(t, "as in the file", WeightsNote("file", "", ptq1), "the file's layout asked for")
	assert.Equal(t, "as in the file", WeightsNote("auto", "pq2_0", "not qwen35 weights"))
	// Where this CPU interleaves PQ2_0 but not PTQ1_0, the hint is there.
	if cpu.LayoutAuto.Resolve(ternary.PQ2_0) == cpu.LayoutInterleaved && cpu.LayoutAuto.Resolve(ternary.PTQ1_0) == cpu.LayoutFile {
		assert.Contains(t, WeightsNote("auto", "", ptq1), "-weight-format pq2_0")
	}
}
