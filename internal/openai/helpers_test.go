package openai

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

// The tests share two models, opened once: the tiny synthetic model with its ChatML
// template, and the same model with a Qwen3-style template that opens a think block
// unless thinking is switched off.
var (
	tinyModel  *bonsai.Model
	thinkModel *bonsai.Model
	tinyPath   string // the tiny model's file, for tests that open it with options of their own
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		path, cleanup, err := synthtest.MainPath("tiny", 1, ternary.PQ2_0)
		if err != nil {
			panic(err)
		}
		defer cleanup()
		tinyPath = path
		if tinyModel, err = bonsai.Open(path, bonsai.WithThreads(2)); err != nil {
			panic(err)
		}
		defer tinyModel.Close()
		if thinkModel, err = bonsai.Open(path, bonsai.WithThreads(2), bonsai.WithChatTemplate(synthtest.ThinkTemplate)); err != nil {
			panic(err)
		}
		defer thinkModel.Close()
		return m.Run()
	}())
}

const modelName = openaitest.ModelName

// newTestServer serves the OpenAI API on m with cfg (ModelName defaults to "tiny") on
// an httptest server.
func newTestServer(t *testing.T, m *bonsai.Model, cfg serve.Config) (*serve.Server, *httptest.Server) {
	t.Helper()
	return newTestServerAPI(t, m, cfg, Config{})
}

// newTestServerAPI is newTestServer with the OpenAI API's configuration oc.
func newTestServerAPI(t *testing.T, m *bonsai.Model, cfg serve.Config, oc Config) (*serve.Server, *httptest.Server) {
	t.Helper()
	if cfg.ModelName == "" {
		cfg.ModelName = modelName
	}
	s, err := serve.New(m, cfg)
	require.NoError(t, err)
	Register(s, oc)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// recorder keeps the raw bytes of every response body the client reads.
type recorder struct {
	mu     sync.Mutex
	bodies []*bytes.Buffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	buf := &bytes.Buffer{}
	r.mu.Lock()
	r.bodies = append(r.bodies, buf)
	r.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &syncWriter{mu: &r.mu, w: buf}), resp.Body}
	return resp, nil
}

func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[len(r.bodies)-1].String()
}

type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// client returns the official OpenAI client pointed at ts, without retries, recording
// the response bodies.
func client(ts *httptest.Server) (oai.Client, *recorder) {
	rec := &recorder{}
	return openaitest.Client(ts.URL, option.WithHTTPClient(&http.Client{Transport: rec})), rec
}

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
