package synthtest_test

import (
	"testing"

	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/require"
)

// testTwinMatchesPacked is a test as the SDK's packages write them with synthtest (it runs
// as TestExample): the float64 reference reads the packed tiny model and its F32 twin,
// the file upstream llama.cpp runs, to the same weights, so they give the same logits.
func testTwinMatchesPacked(t *testing.T) {
	packed, err := qwen35.NewReference(synthtest.File(t, "tiny", 1, ternary.PQ2_0))
	require.NoError(t, err)
	twin, err := qwen35.NewReference(synthtest.Twin(t, "tiny", 1, ternary.PQ2_0))
	require.NoError(t, err)
	tokens := []int{1, 17, 300, 5}
	want, err := packed.Forward(tokens)
	require.NoError(t, err)
	got, err := twin.Forward(tokens)
	require.NoError(t, err)
	require.Len(t, got, len(tokens))
	require.Len(t, got[0], synthtest.Weights(t, "tiny", 1, ternary.PQ2_0).Vocab())
	require.Equal(t, want, got)
}

// A test asks for a model by preset, seed and format; the files live in its temporary
// directory.
func Example() {
	_ = testTwinMatchesPacked // a test function: func TestTwinMatchesPacked(t *testing.T)
}
