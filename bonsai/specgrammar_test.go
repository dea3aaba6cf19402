package bonsai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/tokenizer"
	"github.com/bonsai-go/sdk/internal/spectest"
)

// counting wraps a Drafter and counts the tokens it proposed, so that a test knows
// how many the generation cut from its drafts.
type counting struct {
	d        bonsai.Drafter
	proposed *int
}

func (c counting) Draft(ctx []int32, k int, dst []int32) []int32 {
	n := len(dst)
	dst = c.d.Draft(ctx, k, dst)
	*c.proposed += min(len(dst)-n, k)
	return dst
}

func (c counting) Accepted(drafted, accepted int) { c.d.Accepted(drafted, accepted) }

// forbidding drafts what a plain run generated, want, with a token the grammar never
// allows at every fifth position (a control token, an end-of-generation token, a
// think marker), so that drafts are cut there; every is set, it drafts only those.
type forbidding struct {
	want      []int32
	prompt    int
	forbidden []int32
	every     bool
}

func (f *forbidding) Draft(ctx []int32, k int, dst []int32) []int32 {
	for i := len(ctx) - f.prompt; i < len(f.want) && k > 0; i, k = i+1, k-1 {
		x := f.want[i]
		if f.every || i%5 == 2 {
			x = f.forbidden[i%len(f.forbidden)]
		}
		dst = append(dst, x)
	}
	return dst
}

func (f *forbidding) Accepted(drafted, accepted int) {}

// Greedy speculative generation under a grammar (a JSON schema, a JSON object, a
// required or named tool call, a GBNF grammar; after a think block with the default
// budget, too) is the plain generation, token for token and report for report, and
// leaves the session as plain steps do: with the lookup drafter, with an oracle whose
// every seventh token is another one (which the grammar may or may not allow), with a
// drafter that puts tokens the grammar forbids into its drafts, and with one that
// proposes nothing else. The output is valid under the schema, checked by an
// independent validator.
func TestGenerateSpeculativeGrammarGreedy(t *testing.T) {
	plainModel := specTiny(t)
	thinkModel := specTiny(t, bonsai.WithChatTemplate(thinkTemplate))
	no := false
	required := bonsai.ToolChoice{Mode: bonsai.ToolChoiceRequired}
	schemaOf := func(i int) *bonsai.ResponseFormat {
		return &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema, Schema: json.RawMessage(structuredSchemas[i])}
	}
	cases := []struct {
		name   string
		m      *bonsai.Model
		in     bonsai.Input
		opt    bonsai.GenerateOptions
		schema string // the answer's schema, or the called tools' ("" for none)
	}{
		{"schema 0", plainModel, bonsai.Text("Answer in JSON:"), bonsai.GenerateOptions{MaxTokens: 300, ResponseFormat: schemaOf(0)}, structuredSchemas[0]},
		{"schema 2", plainModel, bonsai.Text("Answer in JSON:"), bonsai.GenerateOptions{MaxTokens: 300, ResponseFormat: schemaOf(2), LogProbs: true, TopLogProbs: 2}, structuredSchemas[2]},
		{"schema 4, penalty", plainModel, bonsai.Text("Answer in JSON:"), bonsai.GenerateOptions{MaxTokens: 300, ResponseFormat: schemaOf(4), SamplerOptions: bonsai.SamplerOptions{RepeatPenalty: 1.3, RepeatLastN: 32}}, structuredSchemas[4]},
		{"json object", plainModel, bonsai.Text("{"), bonsai.GenerateOptions{MaxTokens: 120, ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONObject}}, ""},
		{"tools required", plainModel, bonsai.Text("Call a tool:"), bonsai.GenerateOptions{MaxTokens: 300, Tools: weatherTools, ToolChoice: required, ParallelToolCalls: &no}, "tools"},
		{"tool named", plainModel, bonsai.Text("Call a tool:"), bonsai.GenerateOptions{MaxTokens: 300, Tools: weatherTools, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: "add"}}, "tools"},
		{"gbnf", plainModel, bonsai.Text("a"), bonsai.GenerateOptions{MaxTokens: 60, Grammar: `root ::= ("ab" | "ba" | " ")*`}, ""},
		{"thinking, tool", thinkModel, why, bonsai.GenerateOptions{MaxTokens: 400, Tools: []bonsai.Tool{pickTool}, ToolChoice: required, ParallelToolCalls: &no}, "tools"},
		{"thinking, schema", thinkModel, why, bonsai.GenerateOptions{MaxTokens: 400, ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema, Schema: json.RawMessage(pickSchema)}}, pickSchema},
		// A budget without a grammar: the think block's drafts stop short of the
		// forced </think>, and the answer is free.
		{"thinking budget, free answer", thinkModel, why, bonsai.GenerateOptions{MaxTokens: 120, ThinkingBudget: 30}, ""},
		// The answer ends at a stop token (an invalid JSON then: nothing is validated).
		{"thinking, schema, stop token", thinkModel, why, bonsai.GenerateOptions{MaxTokens: 400, ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema, Schema: json.RawMessage(pickSchema)}, StopTokens: []int32{301}}, ""},
	}
	tools := map[string]string{pickTool.Name: string(pickTool.Parameters)}
	for _, tool := range weatherTools {
		tools[tool.Name] = string(tool.Parameters)
	}
	var drafted, accepted, proposed, forbiddenDrafted int
	for _, c := range cases {
		s := session(t, c.m)
		tok := c.m.Tokenizer()
		imStart, ok := tok.Lookup("<|im_start|>")
		require.True(t, ok)
		thinkOpen, _ := tok.Lookup("<think>")
		thinkClose, _ := tok.Lookup("</think>")
		eos := int32(-1)
		for id := range int32(tok.Len()) {
			if tok.IsEndOfGeneration(id) {
				eos = id
				break
			}
		}
		require.GreaterOrEqual(t, eos, int32(0))
		forbidden := []int32{imStart, eos, thinkOpen, thinkClose}

		plain := noCallIDs(runGen(t, s, c.in, c.opt))
		switch c.schema {
		case "":
		case "tools":
			require.NotEmpty(t, plain.Res.ToolCalls, "%s: %q", c.name, plain.Res.Text)
			for _, call := range plain.Res.ToolCalls {
				assert.NoError(t, validate(t, validator(t, tools[call.Name]), string(call.Arguments)), "%s: %s(%s)", c.name, call.Name, call.Arguments)
			}
		default:
			require.Equal(t, bonsai.FinishStop, plain.Res.FinishReason, "%s: %q", c.name, plain.Res.Text)
			assert.NoError(t, validate(t, validator(t, c.schema), plain.Res.Text), "%s: %q", c.name, plain.Res.Text)
		}
		n := plain.PromptLen()
		o := oracleOf(plain, n)
		always := &bonsai.SpeculativeOptions{Always: true, NewDrafter: o.NewDrafter}
		forb := func(every bool) *bonsai.SpeculativeOptions {
			return &bonsai.SpeculativeOptions{Always: true, NewDrafter: func() bonsai.Drafter {
				return &forbidding{want: plain.Res.Tokens, prompt: n, forbidden: forbidden, every: every}
			}}
		}
		drafters := []*bonsai.SpeculativeOptions{spec, o, always, {MaxDraft: 3, Always: true, NewDrafter: o.NewDrafter}, forb(false), forb(true)}
		if c.m == thinkModel {
			// An oracle of the run whose think block has no cap in reach drafts, at the
			// position where the budget forces </think>, the token the model would
			// write there: no draft may reach that position.
			free := c.opt
			free.ThinkingBudget = free.MaxTokens
			unforced := runGen(t, s, c.in, free)
			block, closed := thinkBlock(t, c.m, plain.Res.Tokens)
			require.True(t, closed, c.name)
			require.Greater(t, len(unforced.Res.Tokens), len(block)+1)
			require.NotEqual(t, plain.Res.Tokens[len(block)], unforced.Res.Tokens[len(block)], "%s: the budget forced </think>", c.name)
			uo := oracleOf(unforced, unforced.PromptLen())
			drafters = append(drafters, &bonsai.SpeculativeOptions{Always: true, NewDrafter: uo.NewDrafter})
		}
		for j, so := range drafters {
			count := 0
			wrapped := *so
			if so.NewDrafter != nil {
				wrapped.NewDrafter = func() bonsai.Drafter { return counting{so.NewDrafter(), &count} }
			}
			msg := fmt.Sprintf("%s, drafter %d", c.name, j)
			d, a := spectest.Same(t, plain, noCallIDs(runGen(t, s, c.in, spectest.With(c.opt, &wrapped))), msg)
			if j == 5 {
				// A think block is not constrained: its drafts are cut at the markers
				// only, and an end-of-generation token is verified and rejected.
				if c.m == thinkModel {
					assert.Less(t, d, count, "%s: drafts are cut", msg)
				} else {
					assert.Zero(t, d, "%s: a draft of forbidden tokens is cut to nothing", msg)
				}
				assert.Positive(t, count, msg)
			}
			if j == 4 {
				forbiddenDrafted += d
			}
			if so.Always {
				proposed += count
			}
			drafted += d
			accepted += a
		}
	}
	t.Logf("proposed %d (by the Always drafters), drafted %d, accepted %d", proposed, drafted, accepted)
	assert.Positive(t, accepted, "drafts were accepted")
	assert.Less(t, accepted, drafted, "drafts were rejected")
	assert.Positive(t, forbiddenDrafted, "the drafts around forbidden tokens were verified")
}

// noCallIDs clears the tool calls' IDs, which are random, from a run's result and
// reports.
func noCallIDs(r spectest.Run) spectest.Run {
	for i := range r.Res.ToolCalls {
		r.Res.ToolCalls[i].ID = ""
	}
	for i := range r.Reports {
		tk := &r.Reports[i]
		for j := range tk.ToolCalls {
			tk.ToolCalls[j].ID = ""
		}
		for j := range tk.ToolCallFragments {
			tk.ToolCallFragments[j].ID = ""
		}
	}
	return r
}

// wordsGrammar is the language of lowercase letters and spaces, at least one, then a
// full stop; wordsPrefix is its reference: whether s is a prefix of one of its strings
// (whole: one of them).
const wordsGrammar = `root ::= [a-z ]+ "."`

func wordsPrefix(s string, whole bool) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			return i > 0 && i == len(s)-1
		case c != ' ' && (c < 'a' || c > 'z'):
			return false
		}
	}
	return !whole
}

// Speculative sampling under a grammar draws each sequence with the probability of
// plain constrained sampling. As TestGenerateSpeculativeSamplingDistribution, with the
// exact distribution of the first three tokens computed with Step and Distribution
// over the logits masked by the reference language wordsPrefix (not the grammar
// package), and a drafter that proposes after the first token the most likely allowed
// token and then the least likely allowed one, or a token the grammar forbids (cut
// from the draft). Both runs are held to the chi-square bound at p = 1e-4.
func TestGenerateSpeculativeGrammarSamplingDistribution(t *testing.T) {
	m := specTiny(t)
	prompt := tokens(8, 512, 41)
	so := bonsai.SamplerOptions{Temperature: 1, TopK: 3}
	smp, err := bonsai.NewSampler(512, so)
	require.NoError(t, err)
	tok := m.Tokenizer()
	imStart, ok := tok.Lookup("<|im_start|>")
	require.True(t, ok)
	// masked returns the logits after the text of seq with the tokens the language
	// does not allow next at −Inf; end-of-generation ones are allowed where the text is
	// whole.
	masked := func(logits []float32, seq []int32) []float32 {
		text := tok.Decode(seq)
		out := slices.Clone(logits)
		for id := range int32(len(out)) {
			var ok bool
			switch {
			case tok.IsEndOfGeneration(id):
				ok = wordsPrefix(text, true)
			case tok.IsSpecial(id) && tok.Type(id) != tokenizer.UserDefined:
			default:
				p := tok.Piece(id)
				ok = p != "" && wordsPrefix(text+p, false)
			}
			if !ok {
				out[id] = float32(math.Inf(-1))
			}
		}
		return out
	}
	exact, best, worst := spectest.ExactFirstTokens(t, m, prompt, smp, func(s *bonsai.Session, seq []int32) []float32 { return masked(s.Logits(), seq) })
	require.Greater(t, len(exact), 4, "the grammar leaves a choice")

	drafter := func() bonsai.Drafter {
		return &spectest.Table{Prompt: len(prompt), Next: func(gen []int32) []int32 {
			if len(gen) != 1 || tok.IsEndOfGeneration(gen[0]) {
				return nil
			}
			second := best[fmt.Sprint(gen)]
			if gen[0]%2 == 0 || tok.IsEndOfGeneration(second) {
				return []int32{second, imStart}
			}
			return []int32{second, worst[fmt.Sprint([]int32{gen[0], second})]}
		}}
	}
	const n = 2000
	s := session(t, m)
	for _, c := range []struct {
		name string
		sp   *bonsai.SpeculativeOptions
	}{{"plain", nil}, {"speculative", &bonsai.SpeculativeOptions{NewDrafter: drafter}}} {
		counts := map[string]int{}
		var drafted, accepted int
		for seed := range n {
			opt := bonsai.GenerateOptions{MaxTokens: 4, SamplerOptions: so, Speculative: c.sp, Grammar: wordsGrammar}
			opt.Seed = uint64(seed) + 1
			r := runGen(t, s, bonsai.TokenIDs(prompt...), opt)
			require.True(t, wordsPrefix(r.Res.Text, false), "%s: %q", c.name, r.Res.Text)
			counts[fmt.Sprint(r.Res.Tokens[:min(3, len(r.Res.Tokens))])]++
			drafted += r.Res.Usage.DraftedTokens
			accepted += r.Res.Usage.AcceptedTokens
		}
		chi, cells := spectest.ChiSquare(t, c.name, exact, counts, n)
		crit := spectest.ChiSquareCritical(cells-1, 3.719)
		t.Logf("%s: chi-square %.1f (critical %.1f, %d cells); drafted %d, accepted %d", c.name, chi, crit, cells, drafted, accepted)
		assert.Less(t, chi, crit, c.name)
		if c.sp != nil {
			assert.Greater(t, accepted, n/10, "drafts were accepted")
			assert.Less(t, accepted, drafted-n/10, "drafts were rejected")
		}
	}
}

// Sessions generating at once from one prepared prompt under a grammar, whose
// matchers and their clones share one automaton, speculate as one alone does, each
// drafting with the oracle of the plain run at every pass.
func TestGenerateSpeculativeGrammarConcurrent(t *testing.T) {
	m := specTiny(t)
	const n = 4
	opt := bonsai.GenerateOptions{MaxTokens: 200, ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema, Schema: json.RawMessage(structuredSchemas[1])}}
	in := bonsai.TokenIDs(tokens(10, 512, 20)...)
	want := runGen(t, session(t, m), in, opt)
	o := oracleOf(want, want.PromptLen())
	p := prepare(t, m, in, spectest.With(opt, &bonsai.SpeculativeOptions{Always: true, NewDrafter: o.NewDrafter}))
	sessions := make([]*bonsai.Session, n)
	for i := range sessions {
		sessions[i] = session(t, m)
	}
	got := make([]spectest.Run, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			reports, res := collect(t, sessions[i].Generate(context.Background(), p))
			u := &res.Usage
			u.PrefillTokensPerSecond, u.DecodeTokensPerSecond, u.TimeToFirstToken = 0, 0, 0
			got[i] = spectest.Run{Reports: reports, Res: res, Held: sessions[i].Tokens()}
		})
	}
	wg.Wait()
	accepted := 0
	for i := range n {
		_, a := spectest.Same(t, want, got[i], fmt.Sprintf("session %d", i))
		accepted += a
	}
	assert.Positive(t, accepted)
}
