package anthropic

import (
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
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

// TestSpeculativeMTPWithoutHead: this API has no per-request speculative mode (the
// server's applies, and serve.New refuses "mtp" on a model without an MTP head), so a
// request carrying "speculative": "mtp" is answered as any other — never a 500; and
// should Prepare refuse the MTP drafter all the same, the refusal is a 400 naming the
// field.
func TestSpeculativeMTPWithoutHead(t *testing.T) {
	srv, ts := newTestServer(t, serve.Config{})
	require.False(t, srv.Model().HasMTP(), "the test model has no MTP head")
	code, _, out := post(t, ts.URL+"/v1/messages", `{"model": "m", "max_tokens": 4, "speculative": "mtp",
		"messages": [{"role": "user", "content": "Hi"}]}`)
	assert.Equal(t, 200, code, "%s", out)

	opt := bonsai.GenerateOptions{Speculative: &bonsai.SpeculativeOptions{MTP: true}}
	_, err := srv.Model().Prepare(bonsai.Text("Hi"), opt)
	require.ErrorIs(t, err, bonsai.ErrNoMTP)
	e := prepareError(err, opt)
	require.NotNil(t, e)
	assert.Equal(t, 400, e.status)
	assert.Equal(t, typeInvalidRequest, e.Type)
	assert.True(t, strings.HasPrefix(e.Message, "speculative: "), "%s", e.Message)
}
