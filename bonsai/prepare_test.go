package bonsai_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/prepcount"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Prepare renders, tokenizes and compiles a request once (a second Prepare of it finds
// the grammar compiled); Generate does none of it.
func TestPrepareCountsItsWork(t *testing.T) {
	msgs := []bonsai.Message{{Role: bonsai.RoleSystem, Content: "Be brief."}, {Role: bonsai.RoleUser, Content: "Hi"},
		{Role: bonsai.RoleAssistant, Content: "Hello."}, {Role: bonsai.RoleUser, Content: "The weather?"}}
	opt := bonsai.GenerateOptions{MaxTokens: 8, Tools: weatherTools, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceRequired}}
	for _, c := range []struct {
		name string
		m    *bonsai.Model
		// boundaryRenders: the conversation without the generation prompt, for the
		// checkpoint; with a prefix cache, each of its first k messages.
		boundaryRenders int64
	}{
		{"plain", tiny(t), 1},
		{"prefix cache", tiny(t, bonsai.WithPrefixCache(64<<20)), int64(len(msgs))},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := prepcount.Read()
			p, err := c.m.Prepare(bonsai.Chat(msgs...), opt)
			require.NoError(t, err)
			got := prepcount.Read().Sub(before)
			assert.Equal(t, prepcount.Counts{Renders: 1, BoundaryRenders: c.boundaryRenders, Tokenizations: 1, Compilations: 1}, got)
			// Prepared again, the request finds its grammar in the model's cache.
			before = prepcount.Read()
			_, err = c.m.Prepare(bonsai.Chat(msgs...), opt)
			require.NoError(t, err)
			assert.Equal(t, prepcount.Counts{Renders: 1, BoundaryRenders: c.boundaryRenders, Tokenizations: 1, GrammarCacheHits: 1}, prepcount.Read().Sub(before))

			// The boundaries found without tokenizing again are those the tokens of each
			// rendering give.
			head, err := c.m.RenderChat(msgs, bonsai.ChatOptions{Tools: opt.Tools})
			require.NoError(t, err)
			want := c.m.Tokenizer().Encode(head, true)
			require.Equal(t, want, p.Tokens()[:len(want)])
			assert.Equal(t, len(want), p.Checkpoint())

			before = prepcount.Read()
			for _, s := range []*bonsai.Session{session(t, c.m), session(t, c.m)} {
				_, err := s.Generate(context.Background(), p).Result()
				require.NoError(t, err)
			}
			assert.Equal(t, prepcount.Counts{}, prepcount.Read().Sub(before), "Generate prepares nothing again")
		})
	}
}

// A Prompt is immutable: generated twice, on two sessions or again on the same one, it
// gives the same tokens; and the caller's options may change after Prepare.
func TestPromptReuse(t *testing.T) {
	m := tiny(t)
	stop := []string{"zzz"}
	opt := bonsai.GenerateOptions{MaxTokens: 12, Stop: stop}
	p := prepare(t, m, bonsai.Chat(bonsai.Message{Role: bonsai.RoleUser, Content: "Count to ten."}), opt)
	stop[0] = "e"
	assert.Equal(t, []string{"zzz"}, p.Options().Stop)
	a, b := session(t, m), session(t, m)
	ra, err := a.Generate(context.Background(), p).Result()
	require.NoError(t, err)
	rb, err := b.Generate(context.Background(), p).Result()
	require.NoError(t, err)
	assert.Equal(t, ra.Tokens, rb.Tokens)
	assert.Equal(t, ra.Text, rb.Text)
	assert.Len(t, ra.Tokens, 12)
	again, err := a.Generate(context.Background(), p).Result()
	require.NoError(t, err)
	assert.Equal(t, ra.Tokens, again.Tokens)
	assert.Positive(t, again.Usage.CachedTokens, "the session resumed from its checkpoint")
	assert.Equal(t, p.Len(), ra.Usage.PromptTokens)
}

// streamCase is a generation whose stream is checked against its result.
type streamCase struct {
	name string
	in   bonsai.Input
	opt  bonsai.GenerateOptions
}

// What the stream reports adds up to the Result, for every seed and mix of options:
// the texts, the thinking, the calls and their fragments; every generated token but a
// final stop token has one report, and the others (NoToken) only release held text.
func TestStreamSaysWhatResultSays(t *testing.T) {
	m := tiny(t, bonsai.WithChatTemplate(thinkTemplate))
	tk := m.Tokenizer()
	thinkOpen, _ := tk.Lookup("<think>")
	user := bonsai.Chat(bonsai.Message{Role: bonsai.RoleUser, Content: "Why?"})
	no := false
	var cases []streamCase
	for seed := range uint64(6) {
		smp := bonsai.SamplerOptions{Temperature: 1, TopK: 50, Seed: seed}
		cases = append(cases,
			streamCase{"stop strings", bonsai.Text("Once upon a time"), bonsai.GenerateOptions{MaxTokens: 40, Stop: []string{" a", "e", "zzzz"}, SamplerOptions: smp}},
			streamCase{"thinking", user, bonsai.GenerateOptions{MaxTokens: 40, SamplerOptions: smp}},
			streamCase{"thinking, stop", user, bonsai.GenerateOptions{MaxTokens: 40, Stop: []string{"a"}, SamplerOptions: smp}},
			streamCase{"cut short", bonsai.Text("x"), bonsai.GenerateOptions{MaxTokens: 3, SamplerOptions: smp, LogProbs: true}},
			streamCase{"held text before <think>", bonsai.Text("x"), bonsai.GenerateOptions{MaxTokens: 12, Stop: []string{"SX"}, SamplerOptions: smp,
				Grammar: `root ::= "ab S" "<think>" "y"`}},
			streamCase{"tools auto, whitespace", bonsai.Text("x"), bonsai.GenerateOptions{MaxTokens: 300, Tools: weatherTools, SamplerOptions: smp,
				Grammar: `root ::= "  \n Checking. " "\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n<parameter=days>\n" [1-9] "\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call> \n "`}},
			streamCase{"tools required", bonsai.Text("Call:"), bonsai.GenerateOptions{MaxTokens: 400, Tools: weatherTools, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceRequired}, SamplerOptions: smp}},
			streamCase{"tools required, one", user, bonsai.GenerateOptions{MaxTokens: 400, Tools: weatherTools, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: "add"}, ParallelToolCalls: &no, SamplerOptions: smp}},
			streamCase{"json", bonsai.Text("{"), bonsai.GenerateOptions{MaxTokens: 60, ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONObject}, SamplerOptions: smp}},
		)
	}
	released, heldBeforeThink := 0, 0
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/seed=%d", c.name, c.opt.Seed), func(t *testing.T) {
			toks, res := collect(t, start(t, context.Background(), session(t, m), c.in, c.opt))
			var text, thinking strings.Builder
			var calls []bonsai.ToolCall
			args := map[int]string{}
			var ids []int32
			for i, r := range toks {
				text.WriteString(r.Text)
				thinking.WriteString(r.Thinking)
				calls = append(calls, r.ToolCalls...)
				for _, f := range r.ToolCallFragments {
					args[f.Index] += f.Arguments
				}
				if r.ID != bonsai.NoToken {
					ids = append(ids, r.ID)
					continue
				}
				// A release: of text, at the end or just before a <think>.
				released++
				assert.False(t, r.Text == "" && r.Thinking == "" && len(r.ToolCalls) == 0 && len(r.ToolCallFragments) == 0, "an empty release")
				assert.False(t, r.Reasoning)
				assert.Zero(t, r.LogProb)
				assert.True(t, i == len(toks)-1 || toks[i+1].ID == thinkOpen, "report %d of %d releases text mid-stream", i, len(toks))
			}
			assert.Equal(t, res.Text, text.String())
			assert.Equal(t, res.Thinking, thinking.String())
			assert.Equal(t, res.ToolCalls, calls)
			for i, call := range res.ToolCalls {
				assert.Equal(t, string(call.Arguments), args[i], "call %d", i)
			}
			want := res.Tokens
			if n := len(want); n > 0 && (tk.IsEndOfGeneration(want[n-1]) || slices.Contains(c.opt.StopTokens, want[n-1])) {
				want = want[:n-1]
			}
			assert.Equal(t, want, ids, "one report per generated token, the final stop token aside")
			if len(res.ToolCalls) > 0 {
				assert.Equal(t, strings.TrimSpace(res.Text), res.Text)
			}
			if c.name == "held text before <think>" {
				if i := slices.Index(ids, thinkOpen); i >= 0 {
					j := slices.IndexFunc(toks, func(r bonsai.Token) bool { return r.ID == thinkOpen })
					require.Positive(t, j)
					assert.Equal(t, bonsai.Token{ID: bonsai.NoToken, Text: "S"}, toks[j-1], "the held S goes out before <think>")
					assert.True(t, toks[j].Reasoning)
					assert.Empty(t, toks[j].Text)
					heldBeforeThink++
				}
			}
		})
	}
	assert.Positive(t, released, "some generation released held text")
	assert.Positive(t, heldBeforeThink, "some generation drew <think> after held text")
}
