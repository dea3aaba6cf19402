package serve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/openai"
	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	oai "github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"
)

// The server's tests run it with the OpenAI API mounted, on the tiny synthetic model,
// opened once.
var (
	tinyModel *bonsai.Model
	tinyPath  string // the tiny model's file, for tests that open it with options of their own
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		var cleanup func()
		var err error
		if tinyPath, cleanup, err = synthtest.MainPath("tiny", 1, ternary.PQ2_0); err != nil {
			panic(err)
		}
		defer cleanup()
		if tinyModel, err = bonsai.Open(tinyPath, bonsai.WithThreads(2)); err != nil {
			panic(err)
		}
		defer tinyModel.Close()
		return m.Run()
	}())
}

const modelName = openaitest.ModelName

// newServer returns a server for m with cfg (ModelName defaults to "tiny"), the
// OpenAI API mounted.
func newServer(t *testing.T, m *bonsai.Model, cfg serve.Config) *serve.Server {
	t.Helper()
	if cfg.ModelName == "" {
		cfg.ModelName = modelName
	}
	s, err := serve.New(m, cfg)
	require.NoError(t, err)
	openai.Register(s, openai.Config{})
	return s
}

// newTestServer serves newServer's server on an httptest server.
func newTestServer(t *testing.T, m *bonsai.Model, cfg serve.Config) (*serve.Server, *httptest.Server) {
	t.Helper()
	s := newServer(t, m, cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// withTokenHook is cfg whose generations call hook after each token.
func withTokenHook(cfg serve.Config, hook func(context.Context)) serve.Config {
	serve.SetTokenHook(&cfg, hook)
	return cfg
}

func client(ts *httptest.Server) oai.Client { return openaitest.Client(ts.URL) }

// post sends a JSON body and returns the response's status, headers and body.
func post(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}
