package bonsai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/grammar"
	"github.com/bonsai-go/sdk/internal/prepcount"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prepareCounted prepares in with opt on m and returns its grammar, and whether Prepare
// compiled it (one compilation) or took it from the cache (one hit).
func prepareCounted(t *testing.T, m *bonsai.Model, opt bonsai.GenerateOptions) (g *grammar.Grammar, compiled bool) {
	t.Helper()
	before := prepcount.Read()
	p := prepare(t, m, bonsai.Text("Answer:"), opt)
	d := prepcount.Read().Sub(before)
	require.Equal(t, int64(1), d.Compilations+d.GrammarCacheHits, "one grammar, compiled or found: %+v", d)
	return bonsai.PromptGrammar(p), d.Compilations == 1
}

func schemaOpt(schema string, strict bool) bonsai.GenerateOptions {
	return bonsai.GenerateOptions{MaxTokens: 8, ResponseFormat: &bonsai.ResponseFormat{
		Type: bonsai.ResponseFormatJSONSchema, Schema: json.RawMessage(schema), Strict: strict}}
}

// Prepare calls that ask for the same grammar share one compiled Grammar, and those
// that differ in anything that changes it get their own.
func TestGrammarCacheSharesCompiledGrammar(t *testing.T) {
	m := tiny(t)
	no, yes := false, true
	required := bonsai.ToolChoice{Mode: bonsai.ToolChoiceRequired}
	add := bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: "add"}
	reversed := []bonsai.Tool{weatherTools[1], weatherTools[0]}
	// Each case is prepared twice: the first finds the grammar of the case named by
	// same (compiled then, or earlier), or compiles a new one when same is "".
	for _, c := range []struct {
		name, same string
		opt        bonsai.GenerateOptions
	}{
		{"schema", "", schemaOpt(structuredSchemas[0], false)},
		{"strict schema", "", schemaOpt(structuredSchemas[0], true)},
		{"other schema", "", schemaOpt(structuredSchemas[1], false)},
		// The same schema spelt with a space is another key: bytes are not normalized.
		{"respelt schema", "", schemaOpt(`{"type": "object"}`, false)},
		{"object schema", "", schemaOpt(`{"type":"object"}`, false)},
		// json_object is the schema {"type":"object"}.
		{"json_object", "object schema", bonsai.GenerateOptions{ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONObject}}},
		{"gbnf", "", bonsai.GenerateOptions{Grammar: `root ::= "yes" | "no"`}},
		{"other gbnf", "", bonsai.GenerateOptions{Grammar: `root ::= "no" | "yes"`}},
		{"tools", "", bonsai.GenerateOptions{Tools: weatherTools, ToolChoice: required}},
		// ParallelToolCalls unset is parallel.
		{"tools, parallel", "tools", bonsai.GenerateOptions{Tools: weatherTools, ToolChoice: required, ParallelToolCalls: &yes}},
		{"tools, one call", "", bonsai.GenerateOptions{Tools: weatherTools, ToolChoice: required, ParallelToolCalls: &no}},
		{"tools reversed", "", bonsai.GenerateOptions{Tools: reversed, ToolChoice: required}},
		{"function add", "", bonsai.GenerateOptions{Tools: weatherTools, ToolChoice: add}},
		// The tools the choice leaves out are not in the grammar.
		{"function add alone", "function add", bonsai.GenerateOptions{Tools: weatherTools[1:], ToolChoice: add}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, compiled := prepareCounted(t, m, c.opt)
			require.NotNil(t, g)
			assert.Equal(t, c.same == "", compiled, "compiled")
			again, compiled := prepareCounted(t, m, c.opt)
			assert.False(t, compiled, "compiled again")
			assert.Same(t, g, again)
		})
	}
	seen := map[*grammar.Grammar]string{}
	for _, c := range []struct {
		name string
		opt  bonsai.GenerateOptions
	}{
		{"schema", schemaOpt(structuredSchemas[0], false)},
		{"strict schema", schemaOpt(structuredSchemas[0], true)},
		{"other schema", schemaOpt(structuredSchemas[1], false)},
		{"respelt schema", schemaOpt(`{"type": "object"}`, false)},
		{"object schema", schemaOpt(`{"type":"object"}`, false)},
		{"gbnf", bonsai.GenerateOptions{Grammar: `root ::= "yes" | "no"`}},
		{"other gbnf", bonsai.GenerateOptions{Grammar: `root ::= "no" | "yes"`}},
		{"tools", bonsai.GenerateOptions{Tools: weatherTools, ToolChoice: required}},
		{"tools, one call", bonsai.GenerateOptions{Tools: weatherTools, ToolChoice: required, ParallelToolCalls: &no}},
		{"tools reversed", bonsai.GenerateOptions{Tools: reversed, ToolChoice: required}},
		{"function add", bonsai.GenerateOptions{Tools: weatherTools, ToolChoice: add}},
	} {
		g, compiled := prepareCounted(t, m, c.opt)
		assert.False(t, compiled, "%s is kept", c.name)
		if other, ok := seen[g]; ok {
			t.Errorf("%s and %s share a grammar", c.name, other)
		}
		seen[g] = c.name
	}
	assert.Equal(t, 11, bonsai.GrammarCacheLen(m))

	// No grammar, no compilation.
	before := prepcount.Read()
	p := prepare(t, m, bonsai.Text("Answer:"), bonsai.GenerateOptions{Tools: weatherTools})
	assert.Nil(t, bonsai.PromptGrammar(p))
	assert.Equal(t, prepcount.Counts{Tokenizations: 1}, prepcount.Read().Sub(before))

	// A schema that fails is compiled each time, and not kept.
	bad := schemaOpt(`{"type":"number","minimum":1e-20}`, false)
	for range 2 {
		before := prepcount.Read()
		_, err := m.Prepare(bonsai.Text("Answer:"), bad)
		require.ErrorIs(t, err, bonsai.ErrInvalidSchema)
		assert.Equal(t, prepcount.Counts{Compilations: 1}, prepcount.Read().Sub(before))
	}
	assert.Equal(t, 11, bonsai.GrammarCacheLen(m))
}

// The cache keeps the most recently used grammars, up to its bound; without a cache
// every Prepare compiles.
func TestGrammarCacheEvictsLeastRecentlyUsed(t *testing.T) {
	m := tiny(t, bonsai.WithGrammarCache(2))
	a, b, c := schemaOpt(structuredSchemas[0], false), schemaOpt(structuredSchemas[1], false), schemaOpt(structuredSchemas[2], false)
	ga, compiled := prepareCounted(t, m, a)
	assert.True(t, compiled)
	gb, compiled := prepareCounted(t, m, b)
	assert.True(t, compiled)
	g, compiled := prepareCounted(t, m, a) // a is now the most recently used
	assert.False(t, compiled)
	assert.Same(t, ga, g)
	gc, compiled := prepareCounted(t, m, c) // b goes
	assert.True(t, compiled)
	assert.Equal(t, 2, bonsai.GrammarCacheLen(m))
	g, compiled = prepareCounted(t, m, a)
	assert.False(t, compiled)
	assert.Same(t, ga, g)
	g, compiled = prepareCounted(t, m, c)
	assert.False(t, compiled)
	assert.Same(t, gc, g)
	g, compiled = prepareCounted(t, m, b) // compiled anew; a goes
	assert.True(t, compiled)
	assert.NotSame(t, gb, g)
	g, compiled = prepareCounted(t, m, a)
	assert.True(t, compiled)
	assert.NotSame(t, ga, g)
	assert.Equal(t, 2, bonsai.GrammarCacheLen(m))

	off := tiny(t, bonsai.WithGrammarCache(0))
	g1, compiled := prepareCounted(t, off, a)
	assert.True(t, compiled)
	g2, compiled := prepareCounted(t, off, a)
	assert.True(t, compiled)
	assert.NotSame(t, g1, g2)
	assert.Zero(t, bonsai.GrammarCacheLen(off))
}

// Prepare calls from many goroutines at once compile each grammar once and share it
// (run with -race).
func TestGrammarCacheConcurrentPrepare(t *testing.T) {
	m := tiny(t)
	const goroutines, each = 16, 6
	opts := []bonsai.GenerateOptions{
		schemaOpt(structuredSchemas[0], false), schemaOpt(structuredSchemas[3], true),
		{Tools: weatherTools, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceRequired}},
	}
	got := make([][]*grammar.Grammar, goroutines)
	errs := make([]error, goroutines)
	before := prepcount.Read()
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			for j := range each {
				p, err := m.Prepare(bonsai.Text(fmt.Sprint("Answer ", i, j)), opts[(i+j)%len(opts)])
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], bonsai.PromptGrammar(p))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	d := prepcount.Read().Sub(before)
	assert.Equal(t, int64(len(opts)), d.Compilations, "each grammar compiled once")
	assert.Equal(t, int64(goroutines*each-len(opts)), d.GrammarCacheHits)
	first := map[int]*grammar.Grammar{}
	for i := range goroutines {
		for j, g := range got[i] {
			k := (i + j) % len(opts)
			if first[k] == nil {
				first[k] = g
			}
			assert.Same(t, first[k], g, "goroutine %d, prepare %d", i, j)
		}
	}
	assert.Len(t, first, len(opts))
}

// The second request with a schema starts on the masks the first remembered: its first
// mask is warm. Without the cache its grammar is a new one, its first mask cold.
func TestGrammarCacheSecondRequestStartsWarm(t *testing.T) {
	for _, c := range []struct {
		name   string
		cache  int
		shared bool
	}{{"cache", bonsai.DefaultGrammarCache, true}, {"no cache", 0, false}} {
		t.Run(c.name, func(t *testing.T) {
			m := tiny(t, bonsai.WithGrammarCache(c.cache))
			opt := schemaOpt(structuredSchemas[0], false)
			opt.MaxTokens, opt.Temperature = 40, 0
			first := prepare(t, m, bonsai.Text("Answer in JSON:"), opt)
			generate2(t, m, first)
			g1 := bonsai.PromptGrammar(first)
			masks, cold := g1.MaskStats()
			require.Positive(t, masks)
			assert.Positive(t, cold)

			opt.MaxTokens = 1
			second := prepare(t, m, bonsai.Text("Answer in JSON:"), opt)
			g2 := bonsai.PromptGrammar(second)
			assert.Equal(t, c.shared, g1 == g2, "the same grammar")
			m0, c0 := g2.MaskStats()
			generate2(t, m, second)
			m1, c1 := g2.MaskStats()
			require.Equal(t, int64(1), m1-m0, "one token, one mask")
			if c.shared {
				assert.Zero(t, c1-c0, "the first mask is warm")
			} else {
				assert.Equal(t, int64(1), c1-c0, "the first mask is cold")
			}
		})
	}
}

func generate2(t *testing.T, m *bonsai.Model, p *bonsai.Prompt) bonsai.Result {
	t.Helper()
	res, err := session(t, m).Generate(context.Background(), p).Result()
	require.NoError(t, err)
	return res
}

// Over two requests with one schema (sampled with different seeds, so that they write
// different answers), the second computes fewer masks with the cache than without:
// without it, every distinct state it meets is new; with it, only those the first
// request did not meet. Generation is deterministic, so both runs write the same
// tokens. go test ./bonsai/ -run TestGrammarCacheColdMasks -v prints the figures.
func TestGrammarCacheColdMasks(t *testing.T) {
	with, without := tiny(t), tiny(t, bonsai.WithGrammarCache(0))
	var total [2][2]int64 // [without, with][masks, cold] of the second requests
	for i, schema := range structuredSchemas {
		var cold [2]int64
		var text [2]string
		for k, m := range []*bonsai.Model{without, with} {
			var masks int64
			for seed := range uint64(2) {
				opt := schemaOpt(schema, false)
				opt.MaxTokens = 500
				opt.SamplerOptions = bonsai.SamplerOptions{Temperature: 1, TopK: 40, Seed: seed}
				p := prepare(t, m, bonsai.Text("Answer in JSON:"), opt)
				g := bonsai.PromptGrammar(p)
				m0, c0 := g.MaskStats()
				res := generate2(t, m, p)
				m1, c1 := g.MaskStats()
				masks, cold[k] = m1-m0, c1-c0
				text[k] = res.Text
			}
			total[k][0] += masks
			total[k][1] += cold[k]
		}
		assert.Equal(t, text[0], text[1], "schema %d: the cache changes no token", i)
		assert.Less(t, cold[1], cold[0], "schema %d: the second request's cold masks", i)
		t.Logf("schema %d: second request cold masks %d without the cache, %d with", i, cold[0], cold[1])
	}
	for k, name := range []string{"without", "with"} {
		t.Logf("%s the cache: second requests made %d masks, %d cold (%.0f%%)", name, total[k][0], total[k][1], 100*float64(total[k][1])/float64(total[k][0]))
	}
}
