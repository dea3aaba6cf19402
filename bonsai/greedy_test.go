package bonsai_test

import (
	"context"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// greedyBackend wraps the CPU backend in an engine that implements backend.Greedy,
// as a GPU backend does, and counts its greedy steps.
type greedyBackend struct {
	bonsai.Backend
	calls *int
}

func (b greedyBackend) Load(ctx context.Context, w backend.Model, opt backend.LoadOptions) (backend.Engine, error) {
	e, err := b.Backend.Load(ctx, w, opt)
	if err != nil {
		return nil, err
	}
	return &greedyEngine{Engine: e, vocab: w.Vocab(), calls: b.calls}, nil
}

type greedyEngine struct {
	backend.Engine
	vocab int
	calls *int
}

func (e *greedyEngine) ForwardGreedy(ctx context.Context, batch []backend.Sequence, next []int32) error {
	*e.calls++
	for i, seq := range batch {
		logits := make([]float32, e.vocab)
		seq.Logits, seq.Out = backend.LogitsLast, logits
		if err := e.Forward(ctx, []backend.Sequence{seq}); err != nil {
			return err
		}
		best := 0
		for j, v := range logits {
			if v > logits[best] {
				best = j
			}
		}
		next[i] = int32(best)
	}
	return nil
}

// A greedy generation on an engine that takes the argmax itself produces the tokens of
// the logits path; sampling that needs the logits does not use it.
func TestGenerateGreedyEngine(t *testing.T) {
	path := writeModel(t, "tiny", 11, ternary.PQ2_0)
	calls := 0
	plain := open(t, path, bonsai.WithThreads(2))
	dev := open(t, path, bonsai.WithThreads(2), bonsai.WithBackend(greedyBackend{bonsai.CPU(), &calls}))
	in := bonsai.Text("The quick brown fox")
	want := generate(t, session(t, plain), in, bonsai.GenerateOptions{MaxTokens: 12})
	s := session(t, dev)
	got := generate(t, s, in, bonsai.GenerateOptions{MaxTokens: 12})
	assert.Equal(t, want.Tokens, got.Tokens)
	assert.Equal(t, want.Text, got.Text)
	require.Equal(t, len(got.Tokens)-1, calls, "every step but the first token's went through ForwardGreedy")
	assert.Nil(t, s.Logits(), "a greedy step leaves no logits")

	// The next turn continues from the held tokens (it re-feeds the last one).
	want2 := generate(t, session(t, plain), bonsai.TokenIDs(append(tokensOf(t, plain, in), want.Tokens...)...), bonsai.GenerateOptions{MaxTokens: 4})
	got2 := generate(t, s, bonsai.TokenIDs(append(tokensOf(t, dev, in), got.Tokens...)...), bonsai.GenerateOptions{MaxTokens: 4})
	assert.Equal(t, want2.Tokens, got2.Tokens)

	calls = 0
	lp := generate(t, session(t, dev), in, bonsai.GenerateOptions{MaxTokens: 6, LogProbs: true})
	assert.Equal(t, want.Tokens[:len(lp.Tokens)], lp.Tokens)
	assert.Zero(t, calls, "log-probabilities need the logits")
	rp := generate(t, session(t, dev), in, bonsai.GenerateOptions{MaxTokens: 6, SamplerOptions: bonsai.SamplerOptions{RepeatPenalty: 1.3, RepeatLastN: 8}})
	assert.NotEmpty(t, rp.Tokens)
	assert.Zero(t, calls, "penalties need the logits")
}

func tokensOf(t *testing.T, m *bonsai.Model, in bonsai.Input) []int32 {
	t.Helper()
	ids := m.Tokenizer().Encode(in.Text, false)
	if id, ok := m.Tokenizer().BOS(); ok && m.Tokenizer().AddBOS() {
		ids = append([]int32{id}, ids...)
	}
	return ids
}
