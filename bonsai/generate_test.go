package bonsai_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/spectest"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tiny(t testing.TB, opts ...bonsai.Option) *bonsai.Model {
	t.Helper()
	return open(t, synthtest.Path(t, "tiny", 11, ternary.PQ2_0), append([]bonsai.Option{bonsai.WithThreads(2)}, opts...)...)
}

func session(t testing.TB, m *bonsai.Model) *bonsai.Session {
	t.Helper()
	return spectest.Session(t, m)
}

// collect runs a generation through its token iterator.
func collect(t testing.TB, g *bonsai.Generation) ([]bonsai.Token, bonsai.Result) {
	t.Helper()
	return spectest.Collect(t, g)
}

// prepare prepares a generation on m.
func prepare(t testing.TB, m *bonsai.Model, in bonsai.Input, opt bonsai.GenerateOptions) *bonsai.Prompt {
	t.Helper()
	p, err := m.Prepare(in, opt)
	require.NoError(t, err)
	return p
}

// start prepares a generation on the session's model and starts it on s.
func start(t testing.TB, ctx context.Context, s *bonsai.Session, in bonsai.Input, opt bonsai.GenerateOptions) *bonsai.Generation {
	t.Helper()
	return s.Generate(ctx, prepare(t, bonsai.ModelOf(s), in, opt))
}

func generate(t testing.TB, s *bonsai.Session, in bonsai.Input, opt bonsai.GenerateOptions) bonsai.Result {
	t.Helper()
	res, err := start(t, context.Background(), s, in, opt).Result()
	require.NoError(t, err)
	return res
}

// Greedy generation is the argmax walk a caller would write with Prefill and Step, and
// temperature 0 is greedy.
func TestGenerateGreedyIsArgmax(t *testing.T) {
	m := tiny(t)
	ctx := context.Background()
	const n = 24
	res := generate(t, session(t, m), bonsai.Text("The quick brown fox"), bonsai.GenerateOptions{MaxTokens: n})

	s := session(t, m)
	tk := m.Tokenizer()
	require.NoError(t, s.Prefill(ctx, tk.Encode("The quick brown fox", false)))
	var want []int32
	for len(want) < n {
		id := int32(argmax(s.Logits()))
		want = append(want, id)
		if tk.IsEndOfGeneration(id) {
			break
		}
		require.NoError(t, s.Step(ctx, id))
	}
	assert.Equal(t, want, res.Tokens)
	if len(want) == n {
		assert.Equal(t, bonsai.FinishLength, res.FinishReason)
	}
	greedy := generate(t, session(t, m), bonsai.Text("The quick brown fox"), bonsai.GenerateOptions{MaxTokens: n, SamplerOptions: bonsai.SamplerOptions{Temperature: 1.5, TopK: 3, Greedy: true}})
	assert.Equal(t, want, greedy.Tokens)

	u := res.Usage
	assert.Equal(t, len(tk.Encode("The quick brown fox", false)), u.PromptTokens)
	assert.Zero(t, u.CachedTokens)
	assert.Equal(t, len(res.Tokens), u.CompletionTokens)
	assert.Positive(t, u.PrefillTokensPerSecond)
	assert.Positive(t, u.DecodeTokensPerSecond)
	assert.Positive(t, u.TimeToFirstToken)
	t.Logf("tiny: prefill %.0f tok/s, decode %.0f tok/s, first token after %v", u.PrefillTokensPerSecond, u.DecodeTokensPerSecond, u.TimeToFirstToken)
}

// The same seed gives the same text; another seed another.
func TestGenerateSeed(t *testing.T) {
	m := tiny(t)
	opt := bonsai.GenerateOptions{MaxTokens: 30, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, TopP: 0.95, Seed: 7}}
	a := generate(t, session(t, m), bonsai.Text("Hello"), opt)
	b := generate(t, session(t, m), bonsai.Text("Hello"), opt)
	assert.Equal(t, a.Tokens, b.Tokens)
	assert.Equal(t, a.Text, b.Text)
	opt.Seed = 8
	c := generate(t, session(t, m), bonsai.Text("Hello"), opt)
	assert.NotEqual(t, a.Tokens, c.Tokens)
}

// The streamed text adds up to the result, and stop strings that span tokens end the
// generation without being shown.
func TestGenerateStopStrings(t *testing.T) {
	m := tiny(t)
	opt := bonsai.GenerateOptions{MaxTokens: 40, StopTokens: nil, SamplerOptions: bonsai.SamplerOptions{Temperature: 0.9, Seed: 3}}
	toks, res := collect(t, session(t, m).Generate(context.Background(), prepare(t, m, bonsai.Text("Once upon"), opt)))
	var streamed strings.Builder
	for _, tok := range toks {
		streamed.WriteString(tok.Text)
	}
	assert.Equal(t, res.Text, streamed.String())

	// A stop string made of the end of one token's text and the start of the next one's.
	stop := ""
	for i := len(toks) / 2; i+1 < len(toks) && stop == ""; i++ {
		a, b := toks[i].Text, toks[i+1].Text
		if a == "" || b == "" {
			continue
		}
		r1, n1 := utf8.DecodeLastRuneInString(a)
		r2, n2 := utf8.DecodeRuneInString(b)
		if r1 == utf8.RuneError || r2 == utf8.RuneError {
			continue
		}
		stop = a[len(a)-n1:] + b[:n2]
	}
	require.NotEmpty(t, stop, "no two adjacent tokens with text in %q", res.Text)
	cut := strings.Index(res.Text, stop)
	require.Greater(t, cut, 0)

	opt.Stop = []string{"never appears \x00", stop}
	toks2, res2 := collect(t, session(t, m).Generate(context.Background(), prepare(t, m, bonsai.Text("Once upon"), opt)))
	assert.Equal(t, bonsai.FinishStop, res2.FinishReason)
	assert.Equal(t, stop, res2.StopSequence)
	assert.Equal(t, res.Text[:cut], res2.Text)
	streamed.Reset()
	for _, tok := range toks2 {
		streamed.WriteString(tok.Text)
	}
	assert.Equal(t, res2.Text, streamed.String(), "no part of the stop string was streamed")
	t.Logf("stop string %q ended %q after %d tokens", stop, res2.Text, len(res2.Tokens))

	// A stop string whose start ends the text is held back, then let out at the end
	// with a last report of id −1.
	last := toks[len(toks)-1].Text
	require.NotEmpty(t, last)
	_, n := utf8.DecodeLastRuneInString(last)
	opt.Stop = []string{last[len(last)-n:] + "\x00never"}
	toks3, res3 := collect(t, session(t, m).Generate(context.Background(), prepare(t, m, bonsai.Text("Once upon"), opt)))
	assert.Equal(t, res.Text, res3.Text)
	assert.Equal(t, res.FinishReason, res3.FinishReason)
	require.Len(t, toks3, len(toks)+1)
	assert.Equal(t, int32(-1), toks3[len(toks)].ID)
	streamed.Reset()
	for _, tok := range toks3 {
		streamed.WriteString(tok.Text)
	}
	assert.Equal(t, res.Text, streamed.String())
}

func TestGenerateStopTokens(t *testing.T) {
	m := tiny(t)
	opt := bonsai.GenerateOptions{MaxTokens: 30, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: 4}}
	res := generate(t, session(t, m), bonsai.Text("abc"), opt)
	require.Greater(t, len(res.Tokens), 6)
	stopID := res.Tokens[5]
	first := 0
	for res.Tokens[first] != stopID {
		first++
	}
	opt.StopTokens = []int32{stopID}
	toks, res2 := collect(t, session(t, m).Generate(context.Background(), prepare(t, m, bonsai.Text("abc"), opt)))
	assert.Equal(t, bonsai.FinishStop, res2.FinishReason)
	assert.Equal(t, res.Tokens[:first+1], res2.Tokens, "the stop token ends the result's tokens")
	assert.Len(t, toks, first, "the stop token is not streamed")
}

// Cancelling from inside the token loop ends the generation before the next step.
func TestGenerateCancel(t *testing.T) {
	m := tiny(t)
	s := session(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prompt := tokens(10, 512, 1)
	g := s.Generate(ctx, prepare(t, m, bonsai.TokenIDs(prompt...), bonsai.GenerateOptions{MaxTokens: 100, StopTokens: nil}))
	n := 0
	for _, err := range g.Tokens() {
		require.NoError(t, err)
		n++
		if n == 3 {
			cancel()
		}
	}
	res, err := g.Result()
	require.NoError(t, err, "cancellation is a finish, not an error")
	assert.Equal(t, bonsai.FinishCancelled, res.FinishReason)
	assert.Equal(t, 3, n)
	assert.Len(t, res.Tokens, 3)
	assert.Equal(t, len(prompt)+2, s.Len(), "the last token drawn is not fed")

	// Cancelled before it starts: nothing is prefilled.
	s2 := session(t, m)
	res, err = s2.Generate(ctx, prepare(t, m, bonsai.TokenIDs(prompt...), bonsai.GenerateOptions{})).Result()
	require.NoError(t, err)
	assert.Equal(t, bonsai.FinishCancelled, res.FinishReason)
	assert.Empty(t, res.Tokens)
	assert.Zero(t, s2.Len())

	// Leaving the loop early also ends it.
	g = session(t, m).Generate(context.Background(), prepare(t, m, bonsai.TokenIDs(prompt...), bonsai.GenerateOptions{MaxTokens: 100}))
	for range g.Tokens() {
		break
	}
	res, err = g.Result()
	require.NoError(t, err)
	assert.Equal(t, bonsai.FinishCancelled, res.FinishReason)
	assert.Len(t, res.Tokens, 1)
}

// errHookContext is a context that calls hook (once, from whichever goroutine) when its
// Err method has been asked for the n-th time: the CPU engine asks it before each
// prefill chunk, so the hook runs while a long prompt is being prefilled.
type errHookContext struct {
	context.Context
	n     int32
	calls atomic.Int32
	hook  func()
}

func (c *errHookContext) Err() error {
	if c.calls.Add(1) == c.n {
		c.hook()
	}
	return c.Context.Err()
}

// Cancelling from another goroutine while a long prompt is prefilled stops the prefill
// between two chunks: the generation finishes cancelled, with no error and no token, and
// the session holds the chunks it completed, a prefix of the prompt.
func TestGenerateCancelDuringPrefill(t *testing.T) {
	m := tiny(t)
	s := session(t, m)
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan time.Time, 1)
	ctx := &errHookContext{Context: parent, n: 2, hook: func() {
		go func() { // another goroutine, which the prefill does not wait for
			cancel()
			cancelled <- time.Now()
		}()
	}}
	prompt := tokens(4000, 512, 8) // 63 chunks of 64: seconds of work on the tiny model
	start := time.Now()
	var toks []bonsai.Token
	g := s.Generate(ctx, prepare(t, m, bonsai.TokenIDs(prompt...), bonsai.GenerateOptions{MaxTokens: 10}))
	for tok, err := range g.Tokens() {
		require.NoError(t, err)
		toks = append(toks, tok)
	}
	end := time.Now()
	res, err := g.Result()
	require.NoError(t, err, "cancellation is a finish, not an error")
	assert.Equal(t, bonsai.FinishCancelled, res.FinishReason)
	assert.Empty(t, toks)
	assert.Empty(t, res.Tokens)
	held := s.Len()
	assert.Less(t, held, len(prompt), "the prefill stopped before the end of the prompt")
	assert.Equal(t, prompt[:held], s.Tokens(), "the session holds a prefix of the prompt")
	at := <-cancelled
	t.Logf("cancelled after %v of prefill, holding %d of %d prompt tokens; the generation ended %v after the cancel",
		at.Sub(start).Round(time.Microsecond), held, len(prompt), end.Sub(at).Round(time.Microsecond))

	// The next generation resumes from what was prefilled.
	res = generate(t, s, bonsai.TokenIDs(prompt[:held+5]...), bonsai.GenerateOptions{MaxTokens: 2})
	assert.Equal(t, held, res.Usage.CachedTokens)
}

// Cancelling from another goroutine during decoding stops the generation within one
// step: once the cancel has returned, at most the token of the step already under way
// is reported.
func TestGenerateCancelDuringDecode(t *testing.T) {
	m := tiny(t)
	s := session(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Bool
	var at atomic.Int64
	stored := make(chan struct{}) // the goroutine has recorded the cancel
	prompt := tokens(10, 512, 9)
	g := s.Generate(ctx, prepare(t, m, bonsai.TokenIDs(prompt...), bonsai.GenerateOptions{MaxTokens: 2000, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: 3}}))
	n, after := 0, 0
	for tok, err := range g.Tokens() {
		require.NoError(t, err)
		if tok.ID == bonsai.NoToken {
			continue // the last report, of text held back
		}
		n++
		if done.Load() {
			after++
		}
		if n == 20 {
			go func() {
				cancel()
				at.Store(time.Now().UnixNano())
				done.Store(true)
				close(stored)
			}()
			// Wait for it: the tiny model decodes thousands of tokens a second, and its
			// random weights end a reply by themselves (this one at token 36), which a
			// cancel left to the scheduler could miss.
			<-stored
		}
	}
	end := time.Now()
	res, err := g.Result()
	require.NoError(t, err)
	assert.Equal(t, bonsai.FinishCancelled, res.FinishReason)
	assert.LessOrEqual(t, after, 1, "tokens reported after the cancel returned")
	assert.GreaterOrEqual(t, n, 20)
	assert.Less(t, n, 2000)
	assert.Len(t, res.Tokens, n)
	// The step under way when the cancel came either completed, feeding the last token
	// drawn, or stopped before its work.
	assert.Contains(t, []int{len(prompt) + n - 1, len(prompt) + n}, s.Len())
	<-stored // the generation may end before the goroutine records its cancel
	t.Logf("cancelled after token 20; %d tokens in all, the generation ended %v after the cancel", n, end.Sub(time.Unix(0, at.Load())))
}

func TestGenerateContextFull(t *testing.T) {
	m := tiny(t, bonsai.WithContextSize(24))
	s := session(t, m)
	prompt := tokens(16, 512, 2)
	eog := []int32{}
	for id := range int32(m.Vocab()) {
		if m.Tokenizer().IsEndOfGeneration(id) {
			eog = append(eog, id)
		}
	}
	res := generate(t, s, bonsai.TokenIDs(prompt...), bonsai.GenerateOptions{SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: 1}})
	// The draw is deterministic (seed 1); the seed was chosen so that no end-of-generation
	// token comes first.
	require.NotEqual(t, bonsai.FinishStop, res.FinishReason, "the random model drew an end-of-generation token %v", eog)
	assert.Equal(t, bonsai.FinishContextFull, res.FinishReason)
	assert.Len(t, res.Tokens, 24-16+1, "every position filled, and one more token drawn from the last logits")
	assert.Equal(t, 24, s.Len())

	// A prompt longer than the context is Prepare's error.
	_, err := m.Prepare(bonsai.TokenIDs(tokens(25, 512, 3)...), bonsai.GenerateOptions{})
	require.ErrorIs(t, err, bonsai.ErrContextFull)
	assert.Contains(t, err.Error(), "the prompt has 25 tokens, the context holds 24")

	// A prompt that fills the context exactly still gets one token.
	res = generate(t, session(t, m), bonsai.TokenIDs(tokens(24, 512, 3)...), bonsai.GenerateOptions{})
	assert.Len(t, res.Tokens, 1)
	if res.FinishReason != bonsai.FinishStop {
		assert.Equal(t, bonsai.FinishContextFull, res.FinishReason)
	}
}

// A second turn prefills only what extends the tokens the session holds, and continues
// exactly as a fresh session given the whole prompt does.
func TestGenerateReuse(t *testing.T) {
	m := tiny(t, bonsai.WithKVCache(bonsai.KVFloat32))
	s := session(t, m)
	opt := bonsai.GenerateOptions{MaxTokens: 6}
	p := tokens(20, 512, 5)
	first := generate(t, s, bonsai.TokenIDs(p...), opt)
	require.Len(t, first.Tokens, 6)
	next := append(append(append([]int32{}, p...), first.Tokens...), tokens(7, 512, 6)...)
	second := generate(t, s, bonsai.TokenIDs(next...), opt)
	assert.Equal(t, len(next), second.Usage.PromptTokens)
	assert.Equal(t, len(p)+len(first.Tokens)-1, second.Usage.CachedTokens, "all but the last token drawn were fed")
	fresh := generate(t, session(t, m), bonsai.TokenIDs(next...), opt)
	assert.Equal(t, fresh.Tokens, second.Tokens)
	assert.Zero(t, fresh.Usage.CachedTokens)

	// A prompt that departs from the held tokens starts afresh.
	third := generate(t, s, bonsai.TokenIDs(tokens(9, 512, 7)...), opt)
	assert.Zero(t, third.Usage.CachedTokens)
	assert.Equal(t, append(tokens(9, 512, 7), third.Tokens[:len(third.Tokens)-1]...), s.Tokens())
}

// A chat's second turn resumes from the checkpoint at the end of the first turn's
// messages, since the template renders the first reply differently from how the model
// produced it (the think block of the generation prompt is gone).
func TestGenerateChatReuse(t *testing.T) {
	m := tiny(t, bonsai.WithKVCache(bonsai.KVFloat32))
	s := session(t, m)
	off := false
	opt := bonsai.GenerateOptions{MaxTokens: 5, Thinking: &off}
	msgs := []bonsai.Message{{Role: bonsai.RoleSystem, Content: "Be brief."}, {Role: bonsai.RoleUser, Content: "Hi there"}}
	first := generate(t, s, bonsai.Chat(msgs...), opt)
	head, err := m.RenderChat(msgs, bonsai.ChatOptions{})
	require.NoError(t, err)
	headLen := len(m.Tokenizer().Encode(head, true))

	msgs = append(msgs, bonsai.Message{Role: bonsai.RoleAssistant, Content: first.Text}, bonsai.Message{Role: bonsai.RoleUser, Content: "More"})
	second := generate(t, s, bonsai.Chat(msgs...), opt)
	assert.Equal(t, headLen, second.Usage.CachedTokens, "resumed from the end of the first turn's messages")
	fresh := generate(t, session(t, m), bonsai.Chat(msgs...), opt)
	assert.Equal(t, fresh.Tokens, second.Tokens)
	assert.Equal(t, second.Usage.PromptTokens, fresh.Usage.PromptTokens)
	t.Logf("turn 2: %d prompt tokens, %d reused", second.Usage.PromptTokens, second.Usage.CachedTokens)
}

// Log-probabilities are the model's: log-softmax of the raw logits.
func TestGenerateLogProbs(t *testing.T) {
	m := tiny(t)
	ctx := context.Background()
	opt := bonsai.GenerateOptions{MaxTokens: 8, TopLogProbs: 5, SamplerOptions: bonsai.SamplerOptions{Temperature: 0.8, TopK: 10, RepeatPenalty: 1.3, Seed: 2}}
	toks, res := collect(t, session(t, m).Generate(ctx, prepare(t, m, bonsai.Text("log probs"), opt)))

	s := session(t, m)
	require.NoError(t, s.Prefill(ctx, m.Tokenizer().Encode("log probs", false)))
	for i, tok := range toks {
		l := s.Logits()
		hi := math.Inf(-1)
		for _, v := range l {
			hi = max(hi, float64(v))
		}
		var sum float64
		for _, v := range l {
			sum += math.Exp(float64(v) - hi)
		}
		want := float64(l[tok.ID]) - hi - math.Log(sum)
		assert.InDelta(t, want, tok.LogProb, 1e-4, "token %d", i)
		require.Len(t, tok.TopLogProbs, 5)
		assert.Equal(t, int32(argmax(l)), tok.TopLogProbs[0].ID)
		for j := 1; j < 5; j++ {
			assert.LessOrEqual(t, tok.TopLogProbs[j].LogProb, tok.TopLogProbs[j-1].LogProb)
		}
		assert.Equal(t, m.Tokenizer().Decode([]int32{tok.TopLogProbs[0].ID}), tok.TopLogProbs[0].Text)
		require.NoError(t, s.Step(ctx, tok.ID))
	}
	assert.Equal(t, len(toks), len(res.Tokens))
}

// thinkTemplate is ChatML whose generation prompt opens a think block, as Qwen3.5's does.
const thinkTemplate = `{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n<think>\n' -}}
{%- endif -%}`

// A prompt that leaves the model inside <think> marks the tokens as thinking until
// </think>; the result separates the two.
func TestGenerateThinkingPrompt(t *testing.T) {
	m := tiny(t, bonsai.WithChatTemplate(thinkTemplate))
	toks, res := collect(t, session(t, m).Generate(context.Background(), prepare(t, m, bonsai.Chat(bonsai.Message{Role: bonsai.RoleUser, Content: "Why?"}), bonsai.GenerateOptions{MaxTokens: 30, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: 9}})))
	closeID, _ := m.Tokenizer().Lookup("</think>")
	var thought, answer strings.Builder
	inside := true
	for _, tok := range toks {
		thought.WriteString(tok.Thinking)
		answer.WriteString(tok.Text)
		if tok.ID == bonsai.NoToken {
			assert.False(t, tok.Reasoning, "a release of held text is no token")
			continue
		}
		if tok.ID == closeID {
			assert.True(t, tok.Reasoning)
			inside = false
			continue
		}
		assert.Equal(t, inside, tok.Reasoning)
		if inside {
			assert.Empty(t, tok.Text, "no answer text inside the block")
		} else {
			assert.Empty(t, tok.Thinking, "no thinking text after it")
		}
	}
	assert.Equal(t, res.Thinking, thought.String())
	assert.Equal(t, res.Text, answer.String())
	assert.NotEmpty(t, res.Thinking)
	assert.Equal(t, strings.TrimSpace(res.Thinking), res.Thinking)
}

// Prepare refuses a bad input or option at once, with the sentinel a caller tests; the
// generation is never started.
func TestPrepareErrors(t *testing.T) {
	m := tiny(t)
	weather := []bonsai.Tool{{Name: "f"}, {Name: "g", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"not":{}}}}`)}}
	required := bonsai.ToolChoice{Mode: bonsai.ToolChoiceRequired}
	for _, c := range []struct {
		in     bonsai.Input
		opt    bonsai.GenerateOptions
		is     error
		option string // the *OptionError's, when it is one
		tool   int
		want   string
	}{
		{bonsai.Input{Text: "a", Tokens: []int32{1}}, bonsai.GenerateOptions{}, bonsai.ErrInvalidInput, "", 0, "set one of Text, Messages and Tokens"},
		{bonsai.Input{}, bonsai.GenerateOptions{}, bonsai.ErrInvalidInput, "", 0, "empty prompt"},
		{bonsai.TokenIDs(1, 512), bonsai.GenerateOptions{}, bonsai.ErrInvalidInput, "", 0, "prompt token 512 at index 1 out of range"},
		{bonsai.Chat(bonsai.Message{Content: "no role"}), bonsai.GenerateOptions{}, bonsai.ErrInvalidInput, "", 0, "message 0 has no role"},
		{bonsai.TokenIDs(tokens(4097, 512, 3)...), bonsai.GenerateOptions{}, bonsai.ErrContextFull, "", 0, "the prompt has 4097 tokens, the context holds 4096"},
		{bonsai.Text("a"), bonsai.GenerateOptions{SamplerOptions: bonsai.SamplerOptions{TopK: -1}}, bonsai.ErrInvalidOptions, "TopK", -1, "option TopK: -1 is negative"},
		{bonsai.Text("a"), bonsai.GenerateOptions{SamplerOptions: bonsai.SamplerOptions{Temperature: float32(math.NaN())}}, bonsai.ErrInvalidOptions, "Temperature", -1, "NaN"},
		{bonsai.Text("a"), bonsai.GenerateOptions{MaxTokens: -1}, bonsai.ErrInvalidOptions, "MaxTokens", -1, "-1 is negative"},
		{bonsai.Text("a"), bonsai.GenerateOptions{TopLogProbs: -2}, bonsai.ErrInvalidOptions, "TopLogProbs", -1, "-2 is negative"},
		{bonsai.Text("a"), bonsai.GenerateOptions{Speculative: &bonsai.SpeculativeOptions{MaxDraft: -1}}, bonsai.ErrInvalidOptions, "Speculative", -1, "MaxDraft -1 is negative"},
		{bonsai.Text("a"), bonsai.GenerateOptions{Tools: []bonsai.Tool{{Name: "f"}, {}}}, bonsai.ErrInvalidOptions, "Tools", 1, "no name"},
		{bonsai.Text("a"), bonsai.GenerateOptions{Tools: []bonsai.Tool{{Name: "f"}, {Name: "g"}, {Name: "f"}}}, bonsai.ErrInvalidOptions, "Tools", 2, `"f" is defined twice`},
		{bonsai.Text("a"), bonsai.GenerateOptions{ToolChoice: required}, bonsai.ErrInvalidOptions, "ToolChoice", -1, "no tools"},
		{bonsai.Text("a"), bonsai.GenerateOptions{Tools: weather, ToolChoice: bonsai.ToolChoice{Mode: "sometimes"}}, bonsai.ErrInvalidOptions, "ToolChoice", -1, `unknown mode "sometimes"`},
		{bonsai.Text("a"), bonsai.GenerateOptions{Tools: weather, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: "h"}}, bonsai.ErrInvalidOptions, "ToolChoice", -1, `function "h" is not among the tools`},
		{bonsai.Text("a"), bonsai.GenerateOptions{ResponseFormat: &bonsai.ResponseFormat{Type: "yaml"}}, bonsai.ErrInvalidOptions, "ResponseFormat", -1, `unknown type "yaml"`},
		{bonsai.Text("a"), bonsai.GenerateOptions{Grammar: `root ::= "x"`, ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONObject}}, bonsai.ErrInvalidOptions, "Grammar", -1, "at most one"},
		{bonsai.Text("a"), bonsai.GenerateOptions{ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema}}, bonsai.ErrInvalidSchema, "ResponseFormat", -1, "no schema given"},
		{bonsai.Text("a"), bonsai.GenerateOptions{ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema, Schema: json.RawMessage(`{"type":"number","minimum":1e-20}`)}}, bonsai.ErrInvalidSchema, "ResponseFormat", -1, "minimum at /minimum"},
		{bonsai.Text("a"), bonsai.GenerateOptions{Grammar: `root ::= missing`}, bonsai.ErrInvalidSchema, "Grammar", -1, "missing"},
		// The tool at fault in a required choice's grammar, and the path within its schema.
		{bonsai.Text("a"), bonsai.GenerateOptions{Tools: weather, ToolChoice: required}, bonsai.ErrInvalidSchema, "Tools", 1, "not at /properties/x/not"},
	} {
		p, err := m.Prepare(c.in, c.opt)
		require.Error(t, err, c.want)
		assert.Nil(t, p)
		assert.ErrorIs(t, err, c.is, c.want)
		assert.ErrorContains(t, err, c.want)
		assert.True(t, strings.HasPrefix(err.Error(), "bonsai: "), err.Error())
		oe, ok := errors.AsType[*bonsai.OptionError](err)
		assert.Equal(t, c.option != "", ok, "%v", err)
		if ok {
			assert.ErrorIs(t, err, bonsai.ErrInvalidOptions)
			assert.Equal(t, c.option, oe.Option, "%v", err)
			assert.Equal(t, c.tool, oe.Tool, "%v", err)
		}
	}
	// A schema error within a tool says where in that tool's schema, as the tool's own.
	_, err := m.Prepare(bonsai.Text("a"), bonsai.GenerateOptions{Tools: weather, ToolChoice: required})
	se, ok := errors.AsType[*bonsai.SchemaError](err)
	require.True(t, ok)
	assert.Equal(t, bonsai.SchemaError{Keyword: "not", Path: "/properties/x/not", Reason: se.Reason}, *se)
}

func TestGenerateErrors(t *testing.T) {
	m := tiny(t)
	s := session(t, m)
	ctx := context.Background()
	g := s.Generate(ctx, prepare(t, m, bonsai.Text("x"), bonsai.GenerateOptions{MaxTokens: 2}))
	_, err := g.Result()
	require.NoError(t, err)
	for _, err := range g.Tokens() {
		require.ErrorContains(t, err, "already run")
	}

	// A prompt prepared by another model is refused, before any work.
	other := tiny(t)
	before := s.Tokens()
	var errs []error
	for _, err := range s.Generate(ctx, prepare(t, other, bonsai.Text("x"), bonsai.GenerateOptions{})).Tokens() {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	assert.ErrorContains(t, errs[0], "prepared by another model")
	assert.Equal(t, before, s.Tokens())
	_, err = s.Generate(ctx, nil).Result()
	assert.ErrorContains(t, err, "no prompt")

	p := prepare(t, m, bonsai.Text("x"), bonsai.GenerateOptions{})
	require.NoError(t, m.Close())
	_, err = s.Generate(ctx, p).Result()
	require.ErrorIs(t, err, bonsai.ErrClosed)
}

// BenchmarkGenerate measures a whole generation on the tiny model: prefill, sampling with
// the usual truncations, decoding to text, and the allocations per token.
func BenchmarkGenerate(b *testing.B) {
	m := tiny(b)
	s := session(b, m)
	prompt := tokens(32, 512, 1)
	opt := bonsai.GenerateOptions{MaxTokens: 64, StopTokens: nil, SamplerOptions: bonsai.SamplerOptions{Temperature: 0.7, TopK: 20, TopP: 0.8, RepeatPenalty: 1.1, Seed: 1}}
	var generated int
	var decode float64
	p := prepare(b, m, bonsai.TokenIDs(prompt...), opt)
	for b.Loop() {
		s.Reset()
		res, err := s.Generate(context.Background(), p).Result()
		if err != nil {
			b.Fatal(err)
		}
		generated += len(res.Tokens)
		decode += res.Usage.DecodeTokensPerSecond
	}
	b.ReportMetric(float64(generated)/float64(b.N), "tokens/op")
	b.ReportMetric(decode/float64(b.N), "decode-tok/s")
}

// forceBackend wraps the CPU backend in an engine that rewrites the logits of the last
// position of every forward pass: while the sequence holds fewer than at tokens, the
// end-of-generation tokens eog are masked with −∞; from at on, token id gets the logit
// value.
type forceBackend struct {
	bonsai.Backend
	id    int32
	at    int
	value float32
	eog   []int32
}

func (b forceBackend) Load(ctx context.Context, w backend.Model, opt backend.LoadOptions) (backend.Engine, error) {
	e, err := b.Backend.Load(ctx, w, opt)
	if err != nil {
		return nil, err
	}
	return &forceEngine{Engine: e, b: b, vocab: w.Vocab()}, nil
}

type forceEngine struct {
	backend.Engine
	b     forceBackend
	vocab int
}

func (e *forceEngine) Forward(ctx context.Context, batch []backend.Sequence) error {
	if err := e.Engine.Forward(ctx, batch); err != nil {
		return err
	}
	for _, seq := range batch {
		if seq.Logits == backend.LogitsNone {
			continue
		}
		last := seq.Out[:e.vocab]
		if seq.Logits == backend.LogitsAll {
			last = seq.Out[(len(seq.Tokens)-1)*e.vocab : len(seq.Tokens)*e.vocab]
		}
		if seq.State.Len() >= e.b.at {
			last[e.b.id] = e.b.value
			continue
		}
		for _, id := range e.b.eog {
			last[id] = float32(math.Inf(-1))
		}
	}
	return nil
}

// An end-of-generation token (EOS, <|im_end|>, <|endoftext|>) ends a generation with
// FinishStop: it is the last of the result's tokens, but it is neither streamed nor part
// of the text, and it is not fed to the model.
func TestGenerateEndOfGeneration(t *testing.T) {
	path := synthtest.Path(t, "tiny", 11, ternary.PQ2_0)
	probe := open(t, path, bonsai.WithThreads(2))
	tk := probe.Tokenizer()
	eos, ok := tk.EOS()
	require.True(t, ok)
	endOfText, ok := tk.Lookup("<|endoftext|>")
	require.True(t, ok)
	require.True(t, tk.IsEndOfGeneration(endOfText))
	var eog []int32
	for id := range int32(tk.Len()) {
		if tk.IsEndOfGeneration(id) {
			eog = append(eog, id)
		}
	}
	const n = 7 // tokens before the forced one
	prompt := tokens(12, 512, 21)
	for _, c := range []struct {
		name  string
		id    int32
		value float32
		opt   bonsai.GenerateOptions
	}{
		{"EOS greedy", eos, 1e4, bonsai.GenerateOptions{MaxTokens: 50}},
		{"EOS sampled", eos, 1e4, bonsai.GenerateOptions{MaxTokens: 50, SamplerOptions: bonsai.SamplerOptions{Temperature: 1.2, TopK: 40, TopP: 0.95, MinP: 0.01, Seed: 5}}},
		{"EOS +Inf with log-probabilities", eos, float32(math.Inf(1)), bonsai.GenerateOptions{MaxTokens: 50, TopLogProbs: 3, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, TopP: 0.9, Seed: 6}}},
		{"<|endoftext|>", endOfText, 1e4, bonsai.GenerateOptions{MaxTokens: 50, SamplerOptions: bonsai.SamplerOptions{Temperature: 0.8, Seed: 7}}},
		{"<|im_end|> in a chat", eos, 1e4, bonsai.GenerateOptions{MaxTokens: 50, SamplerOptions: bonsai.SamplerOptions{Temperature: 0.7, Seed: 8}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, promptLen := bonsai.TokenIDs(prompt...), len(prompt)
			if strings.Contains(c.name, "chat") {
				msg := bonsai.Message{Role: bonsai.RoleUser, Content: "Say something."}
				in = bonsai.Chat(msg)
				text, err := probe.RenderChat([]bonsai.Message{msg}, bonsai.ChatOptions{AddGenerationPrompt: true})
				require.NoError(t, err)
				promptLen = len(tk.Encode(text, true))
			}
			// Token k (from 1) is drawn from the logits of the sequence of promptLen+k−1.
			m := open(t, path, bonsai.WithThreads(2), bonsai.WithBackend(forceBackend{Backend: bonsai.CPU(), id: c.id, at: promptLen + n, value: c.value, eog: eog}))
			s := session(t, m)
			toks, res := collect(t, s.Generate(context.Background(), prepare(t, m, in, c.opt)))
			assert.Equal(t, bonsai.FinishStop, res.FinishReason)
			assert.Empty(t, res.StopSequence)
			require.Len(t, res.Tokens, n+1)
			assert.Equal(t, c.id, res.Tokens[n], "the end token is the result's last")
			assert.NotContains(t, res.Tokens[:n], c.id)
			assert.Equal(t, n+1, res.Usage.CompletionTokens)
			var streamed strings.Builder
			reported := 0
			for _, tok := range toks {
				assert.NotEqual(t, c.id, tok.ID, "the end token is not streamed")
				streamed.WriteString(tok.Text)
				if tok.ID != bonsai.NoToken { // not the last report of held-back text
					reported++
				}
			}
			assert.Equal(t, n, reported)
			assert.Equal(t, res.Text, streamed.String())
			assert.NotContains(t, res.Text, tk.Text(c.id))
			assert.Equal(t, promptLen, res.Usage.PromptTokens)
			assert.Equal(t, promptLen+n, s.Len(), "the end token is not fed")
			for _, tok := range toks {
				if c.opt.TopLogProbs > 0 {
					assert.False(t, math.IsNaN(float64(tok.LogProb)) || math.IsInf(float64(tok.LogProb), 0), "log-probability %v", tok.LogProb)
				}
			}
		})
	}
}

// withKV rewrites the GGUF file src as a new file with the metadata keys of set added or
// replaced, and returns its path.
func withKV(t *testing.T, src string, set ...gguf.KV) string {
	t.Helper()
	f, err := gguf.Open(src)
	require.NoError(t, err)
	defer f.Close()
	var kv []gguf.KV
	for _, x := range f.KV {
		if !slices.ContainsFunc(set, func(y gguf.KV) bool { return y.Key == x.Key }) {
			kv = append(kv, x)
		}
	}
	kv = append(kv, set...)
	dst := filepath.Join(t.TempDir(), "with-kv.gguf")
	out, err := os.Create(dst)
	require.NoError(t, err)
	defer out.Close()
	w, err := gguf.NewWriter(out, kv, f.Tensors)
	require.NoError(t, err)
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		require.NoError(t, err)
		require.NoError(t, w.WriteTensor(ti.Name, data))
	}
	require.NoError(t, w.Close())
	require.NoError(t, out.Close())
	return dst
}

// A vocabulary that sets tokenizer.ggml.add_eos_token (and add_bos_token) gets EOS at
// the end of a Text prompt (and BOS at its start), as llama.cpp tokenizes a prompt; a
// chat rendering gets no EOS, and token ids are fed as they are.
func TestGenerateAddEOS(t *testing.T) {
	path := synthtest.Path(t, "tiny", 11, ternary.PQ2_0)
	plain := open(t, path, bonsai.WithThreads(2))
	assert.False(t, plain.Tokenizer().AddEOS())
	flag := func(key string, v bool) gguf.KV { return gguf.KV{Key: key, Value: gguf.MustValue(v)} }
	for _, addBOS := range []bool{false, true} {
		m := open(t, withKV(t, path, flag("tokenizer.ggml.add_eos_token", true), flag("tokenizer.ggml.add_bos_token", addBOS)), bonsai.WithThreads(2))
		tk := m.Tokenizer()
		require.True(t, tk.AddEOS())
		require.Equal(t, addBOS, tk.AddBOS())
		eos, _ := tk.EOS()
		bos, _ := tk.BOS()
		var head []int32
		if addBOS {
			head = []int32{bos}
		}
		opt := bonsai.GenerateOptions{MaxTokens: 1}

		// Text: [BOS] text EOS. With one token drawn, the session holds the prompt.
		s := session(t, m)
		res := generate(t, s, bonsai.Text("Hello there"), opt)
		want := append(append(slices.Clone(head), tk.Encode("Hello there", false)...), eos)
		assert.Equal(t, want, s.Tokens(), "add_bos %v", addBOS)
		assert.Equal(t, len(want), res.Usage.PromptTokens)
		// ... and the file without the keys: no EOS.
		s0 := session(t, plain)
		generate(t, s0, bonsai.Text("Hello there"), opt)
		assert.Equal(t, tk.Encode("Hello there", false), s0.Tokens())

		// A text that already ends with EOS (parsed as a special token) gets no second one.
		s = session(t, m)
		generate(t, s, bonsai.Text("Hello there"+tk.Text(eos)), bonsai.GenerateOptions{MaxTokens: 1, ParseSpecial: true})
		assert.Equal(t, want, s.Tokens())

		// Chat: the template's rendering, with BOS as for a text but no EOS.
		msgs := []bonsai.Message{{Role: bonsai.RoleUser, Content: "Hi"}}
		text, err := m.RenderChat(msgs, bonsai.ChatOptions{AddGenerationPrompt: true})
		require.NoError(t, err)
		s = session(t, m)
		res = generate(t, s, bonsai.Chat(msgs...), opt)
		want = append(slices.Clone(head), tk.Encode(text, true)...)
		assert.Equal(t, want, s.Tokens())
		assert.NotEqual(t, eos, s.Tokens()[s.Len()-1])
		assert.Equal(t, len(want), res.Usage.PromptTokens)

		// Token ids: as they are.
		s = session(t, m)
		generate(t, s, bonsai.TokenIDs(5, 6, 7), opt)
		assert.Equal(t, []int32{5, 6, 7}, s.Tokens())
	}
}
