package openai

import (
	"testing"

	"github.com/bonsai-go/sdk/internal/prepcount"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnePreparation: a chat request is rendered, tokenized and its grammar compiled
// or found in the model's cache once, from its body to the end of its generation,
// streamed or not. The second request finds the grammar the first compiled (or an
// earlier test left in the cache).
func TestOnePreparation(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	const tool = `{"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}}`
	for i, stream := range []string{"false", "true"} {
		before := prepcount.Read()
		code, _, body := post(t, ts.URL+"/v1/chat/completions", `{"max_tokens": 40, "stream": `+stream+`, "tools": [`+tool+`], "tool_choice": "required",
			"messages": [{"role": "system", "content": "Add."}, {"role": "user", "content": "1 + 2?"}]}`)
		require.Equal(t, 200, code, "%s", body)
		// One rendering of the prompt, one of the conversation without the generation
		// prompt (where the session keeps its checkpoint), one tokenization, one grammar.
		got := prepcount.Read().Sub(before)
		want := prepcount.Counts{Renders: 1, BoundaryRenders: 1, Tokenizations: 1, GrammarCacheHits: 1}
		if i == 0 && got.Compilations == 1 {
			want.Compilations, want.GrammarCacheHits = 1, 0
		}
		assert.Equal(t, want, got, "stream %s", stream)
	}
}
