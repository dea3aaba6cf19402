package bonsai_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// thinkBlock returns the tokens a generation wrote inside the think block its prompt
// opened: those before the first </think>, and whether one came.
func thinkBlock(t testing.TB, m *bonsai.Model, tokens []int32) ([]int32, bool) {
	t.Helper()
	closeID, ok := m.Tokenizer().Lookup("</think>")
	require.True(t, ok, "the tokenizer has </think>")
	i := slices.Index(tokens, closeID)
	if i < 0 {
		return tokens, false
	}
	return tokens[:i], true
}

// thinkBlocks returns the lengths of every think block of a generation whose prompt
// opened one, the markers left out, and whether the last was closed: the first runs
// from the start, the others from each <think> written outside a block.
func thinkBlocks(t testing.TB, m *bonsai.Model, tokens []int32) ([]int, bool) {
	t.Helper()
	openID, ok1 := m.Tokenizer().Lookup("<think>")
	closeID, ok2 := m.Tokenizer().Lookup("</think>")
	require.True(t, ok1 && ok2, "the tokenizer has <think> and </think>")
	lens := []int{0}
	inside := true
	for _, id := range tokens {
		switch {
		case inside && id == closeID:
			inside = false
		case inside:
			lens[len(lens)-1]++
		case id == openID:
			inside = true
			lens = append(lens, 0)
		}
	}
	return lens, !inside
}

var why = bonsai.Chat(bonsai.Message{Role: "user", Content: "Why?"})

// A think block holds at most ThinkingBudget tokens; the next is </think>, reported as a
// reasoning token with the model's log-probability, and the answer follows. The random
// model almost never writes </think> itself, so the budget is what closes the block.
func TestThinkingBudgetCloses(t *testing.T) {
	m := tiny(t, bonsai.WithChatTemplate(thinkTemplate))
	closeID, _ := m.Tokenizer().Lookup("</think>")
	forced := 0
	for _, budget := range []int{1, 5, 17} {
		for seed := range uint64(4) {
			opt := bonsai.GenerateOptions{MaxTokens: 40, ThinkingBudget: budget, LogProbs: true, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: seed}}
			toks, res := collect(t, session(t, m).Generate(context.Background(), prepare(t, m, why, opt)))
			lens, closed := thinkBlocks(t, m, res.Tokens)
			for i, n := range lens {
				// The model may open a block of its own in the answer: each has
				// the budget.
				assert.LessOrEqual(t, n, budget, "budget %d seed %d block %d", budget, seed, i)
			}
			if !closed && res.FinishReason != bonsai.FinishLength {
				// Only an end token inside the block can stop it before the budget.
				assert.Equal(t, bonsai.FinishStop, res.FinishReason, "budget %d seed %d", budget, seed)
			}
			if _, first := thinkBlock(t, m, res.Tokens); first && lens[0] == budget {
				forced++
			}
			for _, tk := range toks {
				if tk.ID == closeID {
					assert.True(t, tk.Reasoning)
					assert.Less(t, tk.LogProb, float32(0))
					assert.False(t, math.IsInf(float64(tk.LogProb), 0), "the model's log-probability, finite")
				}
			}
		}
	}
	assert.Equal(t, 12, forced, "the budget closed every first block")
}

// The forced </think> carries the model's log-probability at that position, computed
// here by hand from the logits of a session fed the same tokens.
func TestThinkingBudgetLogProb(t *testing.T) {
	m := tiny(t, bonsai.WithChatTemplate(thinkTemplate))
	closeID, _ := m.Tokenizer().Lookup("</think>")
	const budget = 6
	p := prepare(t, m, why, bonsai.GenerateOptions{MaxTokens: 10, ThinkingBudget: budget, LogProbs: true, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: 3}})
	toks, res := collect(t, session(t, m).Generate(context.Background(), p))
	require.Greater(t, len(res.Tokens), budget)
	require.Equal(t, closeID, res.Tokens[budget])

	s := session(t, m)
	ctx := context.Background()
	require.NoError(t, s.Prefill(ctx, p.Tokens()))
	for _, id := range res.Tokens[:budget] {
		require.NoError(t, s.Step(ctx, id))
	}
	logits := s.Logits()
	hi := logits[0]
	for _, l := range logits {
		hi = max(hi, l)
	}
	sum := 0.0
	for _, l := range logits {
		sum += math.Exp(float64(l - hi))
	}
	want := float64(logits[closeID]-hi) - math.Log(sum)
	var got *bonsai.Token
	for i := range toks {
		if toks[i].ID == closeID {
			got = &toks[i]
			break
		}
	}
	require.NotNil(t, got)
	assert.InDelta(t, want, got.LogProb, 1e-4)
}

// Greedy decoding closes the block at the budget on an engine that takes the argmax
// itself too: the tokens before </think> are the unbudgeted greedy run's, and the fast
// path was used.
func TestThinkingBudgetGreedyEngine(t *testing.T) {
	path := synthtest.Path(t, "tiny", 11, ternary.PQ2_0)
	calls := 0
	plain := open(t, path, bonsai.WithThreads(2), bonsai.WithChatTemplate(thinkTemplate))
	dev := open(t, path, bonsai.WithThreads(2), bonsai.WithChatTemplate(thinkTemplate), bonsai.WithBackend(greedyBackend{bonsai.CPU(), &calls}))
	closeID, _ := plain.Tokenizer().Lookup("</think>")
	const budget = 5
	free := generate(t, session(t, plain), why, bonsai.GenerateOptions{MaxTokens: 12})
	block, _ := thinkBlock(t, plain, free.Tokens)
	require.GreaterOrEqual(t, len(block), budget, "the unbudgeted greedy block is longer than the budget")

	want := generate(t, session(t, plain), why, bonsai.GenerateOptions{MaxTokens: 12, ThinkingBudget: budget})
	got := generate(t, session(t, dev), why, bonsai.GenerateOptions{MaxTokens: 12, ThinkingBudget: budget})
	require.Greater(t, len(got.Tokens), budget)
	assert.Equal(t, free.Tokens[:budget], got.Tokens[:budget])
	assert.Equal(t, closeID, got.Tokens[budget])
	assert.Equal(t, want.Tokens, got.Tokens)
	assert.Positive(t, calls, "the engine's greedy path ran")
}

// pickTool's arguments are bounded (an enum, a small integer, a short string), so that a
// call fits in what the thinking leaves of MaxTokens.
var pickTool = bonsai.Tool{Name: "pick", Description: "Pick a colour",
	Parameters: json.RawMessage(`{"type":"object","properties":{"color":{"enum":["red","green","blue"]},"n":{"type":"integer","minimum":0,"maximum":9},"note":{"type":"string","maxLength":4}},"required":["color","n"],"additionalProperties":false}`)}

const pickSchema = `{"type":"object","properties":{"ok":{"type":"boolean"},"unit":{"enum":["c","f"]},"tag":{"type":"string","maxLength":4}},"required":["ok","unit","tag"],"additionalProperties":false}`

// forcedRuns is the number of seeds of the property test, unbudgetedRuns of its
// negative check (the first seeds).
const forcedRuns, unbudgetedRuns = 16, 4

// The property: on a random model, which thinks at length and almost never
// closes its think block, every request with a required tool choice ends with a valid
// call within MaxTokens, and every request with a JSON schema with valid JSON, under
// the default budget. With a budget as long as MaxTokens (the old behaviour: nothing
// closes the thinking) the same requests end at the length with no answer.
func TestThinkingBudgetForcedAnswer(t *testing.T) {
	m := tiny(t, bonsai.WithChatTemplate(thinkTemplate))
	callSchema := validator(t, string(pickTool.Parameters))
	jsonSchema := validator(t, pickSchema)
	const maxTokens = 400
	no := false
	cases := []struct {
		name string
		opt  bonsai.GenerateOptions
	}{
		{"required", bonsai.GenerateOptions{Tools: []bonsai.Tool{pickTool}, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceRequired}, ParallelToolCalls: &no}},
		{"named", bonsai.GenerateOptions{Tools: []bonsai.Tool{weatherTools[0], pickTool}, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: "pick"}, ParallelToolCalls: &no}},
		{"json_schema", bonsai.GenerateOptions{ResponseFormat: &bonsai.ResponseFormat{Type: "json_schema", Schema: json.RawMessage(pickSchema)}}},
	}
	for _, c := range cases {
		longest := 0
		unbudgeted := 0 // seeds that answered with no cap on the thinking
		for seed := range uint64(forcedRuns) {
			opt := c.opt
			opt.MaxTokens = maxTokens
			opt.SamplerOptions = bonsai.SamplerOptions{Temperature: 1, Seed: seed}
			res := generate(t, session(t, m), why, opt)
			block, closed := thinkBlock(t, m, res.Tokens)
			require.True(t, closed, "%s seed %d: the block was closed", c.name, seed)
			assert.LessOrEqual(t, len(block), maxTokens/2, "%s seed %d: the default budget", c.name, seed)
			assert.LessOrEqual(t, len(res.Tokens), maxTokens)
			longest = max(longest, len(res.Tokens)-len(block)-1)
			if c.opt.ResponseFormat != nil {
				require.Equal(t, bonsai.FinishStop, res.FinishReason, "%s seed %d: %q", c.name, seed, res.Text)
				assert.NoError(t, validate(t, jsonSchema, res.Text), "%s seed %d: %q", c.name, seed, res.Text)
			} else {
				require.Equal(t, bonsai.FinishToolCalls, res.FinishReason, "%s seed %d: %q", c.name, seed, res.Text)
				require.Len(t, res.ToolCalls, 1)
				assert.Equal(t, "pick", res.ToolCalls[0].Name)
				assert.NoError(t, validate(t, callSchema, string(res.ToolCalls[0].Arguments)), "%s seed %d: %s", c.name, seed, res.ToolCalls[0].Arguments)
			}

			if seed >= unbudgetedRuns {
				continue
			}
			opt.ThinkingBudget = maxTokens
			old := generate(t, session(t, m), why, opt)
			if old.FinishReason == bonsai.FinishToolCalls || (c.opt.ResponseFormat != nil && old.FinishReason == bonsai.FinishStop) {
				unbudgeted++
			}
		}
		t.Logf("%s: %d/%d seeds answered with the default budget, the longest answer %d tokens; %d/%d with a budget of MaxTokens", c.name, forcedRuns, forcedRuns, longest, unbudgeted, unbudgetedRuns)
		assert.Less(t, unbudgeted, unbudgetedRuns, "%s: without the budget some seeds think to the end", c.name)
	}
}

// With no MaxTokens the default budget is half of the context's room after the prompt,
// so that a JSON answer still comes before the context is full.
func TestThinkingBudgetContextRoom(t *testing.T) {
	const ctxSize = 300
	m := tiny(t, bonsai.WithChatTemplate(thinkTemplate), bonsai.WithContextSize(ctxSize))
	v := validator(t, pickSchema)
	for seed := range uint64(4) {
		p := prepare(t, m, why, bonsai.GenerateOptions{ResponseFormat: &bonsai.ResponseFormat{Type: "json_schema", Schema: json.RawMessage(pickSchema)},
			SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: seed}})
		res, err := session(t, m).Generate(context.Background(), p).Result()
		require.NoError(t, err)
		block, closed := thinkBlock(t, m, res.Tokens)
		require.True(t, closed, "seed %d", seed)
		assert.LessOrEqual(t, len(block), (ctxSize-p.Len())/2, "seed %d", seed)
		require.Equal(t, bonsai.FinishStop, res.FinishReason, "seed %d: %q", seed, res.Text)
		assert.NoError(t, validate(t, v, res.Text), "seed %d: %q", seed, res.Text)
	}
}

// The end-of-generation and stop tokens are masked out of a think block only when an
// enforced answer follows it. Half the vocabulary is made stop tokens: free thinking
// meets one within a few tokens and stops inside the block; under a JSON schema the
// block runs to its budget with none of them, and </think> follows.
func TestThinkingBudgetMasksStopsWhenEnforced(t *testing.T) {
	m := tiny(t, bonsai.WithChatTemplate(thinkTemplate))
	tk := m.Tokenizer()
	openID, _ := tk.Lookup("<think>")
	closeID, _ := tk.Lookup("</think>")
	var stops []int32
	for id := int32(0); id < int32(tk.Len()); id += 2 {
		if id != openID && id != closeID {
			stops = append(stops, id)
		}
	}
	stopped := func(id int32) bool { return tk.IsEndOfGeneration(id) || slices.Contains(stops, id) }
	const budget = 24
	freeStops := 0
	for seed := range uint64(8) {
		sampler := bonsai.SamplerOptions{Temperature: 1, Seed: seed}
		free := generate(t, session(t, m), why, bonsai.GenerateOptions{MaxTokens: 60, ThinkingBudget: budget, StopTokens: stops, SamplerOptions: sampler})
		if block, closed := thinkBlock(t, m, free.Tokens); !closed {
			assert.Equal(t, bonsai.FinishStop, free.FinishReason)
			require.NotEmpty(t, block)
			assert.True(t, stopped(block[len(block)-1]), "seed %d: a stop token ended the free block", seed)
			freeStops++
		}

		enforced := generate(t, session(t, m), why, bonsai.GenerateOptions{MaxTokens: 60, ThinkingBudget: budget, StopTokens: stops, SamplerOptions: sampler,
			ResponseFormat: &bonsai.ResponseFormat{Type: "json_schema", Schema: json.RawMessage(pickSchema)}})
		block, closed := thinkBlock(t, m, enforced.Tokens)
		require.True(t, closed, "seed %d: the enforced block reached </think>", seed)
		assert.Len(t, block, budget, "seed %d", seed)
		for _, id := range block {
			assert.False(t, stopped(id), "seed %d: stop token %d inside the enforced block", seed, id)
		}
	}
	assert.Equal(t, 8, freeStops, "every free block met a stop token")
}

// A negative budget is Prepare's error, naming the option.
func TestThinkingBudgetNegative(t *testing.T) {
	m := tiny(t)
	_, err := m.Prepare(bonsai.Text("a"), bonsai.GenerateOptions{ThinkingBudget: -1})
	require.ErrorIs(t, err, bonsai.ErrInvalidOptions)
	assert.EqualError(t, err, "bonsai: option ThinkingBudget: -1 is negative")
}
