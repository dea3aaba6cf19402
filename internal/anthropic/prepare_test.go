package anthropic

import (
	"testing"

	"github.com/bonsai-go/sdk/internal/prepcount"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnePreparation: a Messages request, and a count_tokens one, are rendered and
// tokenized once, and their grammar compiled once: by the first request (unless an
// earlier test's left it in the model's cache), the others finding it in the cache.
func TestOnePreparation(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{})
	const body = `{"model": "m", "max_tokens": 40, "system": "Add.", "tool_choice": {"type": "any"},
		"tools": [{"name": "add", "input_schema": {"type": "object", "properties": {"a": {"type": "number"}}}}],
		"messages": [{"role": "user", "content": "1 + 2?"}]`
	for i, c := range []struct{ path, extra string }{
		{"/v1/messages", ""}, {"/v1/messages", `, "stream": true`}, {"/v1/messages/count_tokens", ""},
	} {
		before := prepcount.Read()
		code, _, out := post(t, ts.URL+c.path, body+c.extra+"}")
		require.Equal(t, 200, code, "%s", out)
		got := prepcount.Read().Sub(before)
		want := prepcount.Counts{Renders: 1, BoundaryRenders: 1, Tokenizations: 1, GrammarCacheHits: 1}
		if i == 0 && got.Compilations == 1 {
			want.Compilations, want.GrammarCacheHits = 1, 0
		}
		assert.Equal(t, want, got, "%s%s", c.path, c.extra)
	}
}
