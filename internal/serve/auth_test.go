package serve_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeys: a set accepts exactly its keys (not a prefix, an extension or another
// case of one), Set replaces them all at once and keeps them on an error, and a bad
// key is refused with an error that does not repeat it.
func TestKeys(t *testing.T) {
	k, err := serve.NewKeys("sk-alpha", "sk-beta-0123456789")
	require.NoError(t, err)
	assert.Equal(t, 2, k.Len())
	for key, want := range map[string]bool{
		"sk-alpha": true, "sk-beta-0123456789": true,
		"sk-alph": false, "sk-alphaa": false, "SK-ALPHA": false, "sk-beta": false, "": false, " sk-alpha": false,
	} {
		assert.Equal(t, want, k.Valid(key), "%q", key)
	}

	require.NoError(t, k.Set("sk-gamma"))
	assert.Equal(t, 1, k.Len())
	assert.True(t, k.Valid("sk-gamma"))
	assert.False(t, k.Valid("sk-alpha"), "a key dropped by Set still works")

	for _, bad := range []struct {
		keys []string
		want string
	}{
		{nil, "no API key given"},
		{[]string{"ok-key", ""}, "API key 2: the key is empty"},
		{[]string{"has space"}, "API key 1: the key's character 4 is a space"},
		{[]string{"tab\tkey"}, "character 4"},
		{[]string{"new\nline"}, "character 4"},
		{[]string{"clé"}, "character 3"},
		{[]string{"del\x7f"}, "character 4"},
	} {
		err := k.Set(bad.keys...)
		require.Error(t, err, "%q", bad.keys)
		assert.Contains(t, err.Error(), bad.want)
		for _, key := range bad.keys {
			if len(key) > 2 {
				assert.NotContains(t, err.Error(), key, "the error repeats the key")
			}
		}
		_, err = serve.NewKeys(bad.keys...)
		assert.Error(t, err, "%q", bad.keys)
	}
	assert.True(t, k.Valid("sk-gamma"), "a failed Set dropped the keys held")
	assert.Equal(t, 1, k.Len())

	var zero serve.Keys
	assert.Zero(t, zero.Len())
	assert.False(t, zero.Valid(""))
	assert.False(t, zero.Valid("sk-gamma"))
}

// TestKeysConcurrent: checks run while Set replaces the set (for -race); each sees a
// whole set, the old or the new.
func TestKeysConcurrent(t *testing.T) {
	k, err := serve.NewKeys("a1", "a2")
	require.NoError(t, err)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var partial, sawA, sawB atomic.Bool
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if k.Len() != 2 {
					partial.Store(true)
				}
				if k.Valid("a1") {
					sawA.Store(true)
				}
				if k.Valid("b2") {
					sawB.Store(true)
				}
			}
		})
	}
	// Swap until the checkers have seen both sets, however busy the machine: a count of
	// swaps can run out before a checker is scheduled at all.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; !(sawA.Load() && sawB.Load()) && time.Now().Before(deadline); i++ {
		if i%2 == 0 {
			require.NoError(t, k.Set("b1", "b2"))
		} else {
			require.NoError(t, k.Set("a1", "a2"))
		}
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	assert.False(t, partial.Load(), "a check saw a set of other than two keys")
	assert.True(t, sawA.Load() && sawB.Load(), "the checks did not see both sets")
}

// authServer is a server without dialects that needs keys: a route of its own, an open
// one, and 401 writers on /a (all requests) and /shared (those with X-Client: a).
func authServer(t *testing.T, cfg serve.Config) (*serve.Server, *httptest.Server) {
	t.Helper()
	cfg.ModelName = modelName
	s, err := serve.New(tinyModel, cfg)
	require.NoError(t, err)
	ok := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve.WriteJSON(w, http.StatusOK, map[string]string{"route": name})
		})
	}
	s.Handle("GET /a/thing", ok("thing"))
	s.Handle("GET /shared", ok("shared"))
	s.HandleOpen("GET /{$}", ok("page"))
	writer := func(name string) func(http.ResponseWriter, *http.Request, error) {
		return func(w http.ResponseWriter, r *http.Request, err error) {
			serve.WriteJSON(w, http.StatusUnauthorized, map[string]string{"writer": name, "err": err.Error()})
		}
	}
	s.HandleUnauthorized("/a", nil, writer("a"))
	s.HandleUnauthorized("/shared", func(r *http.Request) bool { return r.Header.Get("X-Client") == "a" }, writer("a"))
	s.HandleUnauthorized("/", nil, writer("root"))
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

type authCase struct {
	method, path string
	header       map[string]string
	status       int
	writer       string // the 401 writer that answered; "" for none of the test's
	err          error
	challenge    string
}

func (c authCase) String() string { return fmt.Sprintf("%s %s %v", c.method, c.path, c.header) }

func doAuth(t *testing.T, base string, c authCase) {
	t.Helper()
	req, err := http.NewRequest(c.method, base+c.path, nil)
	require.NoError(t, err)
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, c.status, resp.StatusCode, "%s: %s", c, body)
	assert.Equal(t, c.challenge, resp.Header.Get("WWW-Authenticate"), c.String())
	if c.status != http.StatusUnauthorized {
		return
	}
	var got map[string]any
	require.NoError(t, json.Unmarshal(body, &got), "%s: %s", c, body)
	if c.writer == "" { // the bare error
		e, _ := got["error"].(map[string]any)
		assert.Equal(t, c.err.Error(), e["message"], c.String())
		return
	}
	assert.Equal(t, c.writer, got["writer"], c.String())
	assert.Equal(t, c.err.Error(), got["err"], c.String())
}

// TestAuth: with keys, a request gets through with a valid key in either header, and
// is refused with 401 from the writer of its path (and, on a shared path, of its
// client) with none or a wrong one, before routing; the probes, /metrics and the open
// routes need none; each refusal is counted under outcome "unauthorized".
func TestAuth(t *testing.T) {
	keys, err := serve.NewKeys("sk-one", "sk-two")
	require.NoError(t, err)
	_, ts := authServer(t, serve.Config{Keys: keys})
	const none, bad = `Bearer realm="bonsai"`, `Bearer realm="bonsai", error="invalid_token"`
	h := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []authCase{
		{"GET", "/a/thing", h("Authorization", "Bearer sk-one"), 200, "", nil, ""},
		{"GET", "/a/thing", h("Authorization", "bearer sk-two"), 200, "", nil, ""},
		{"GET", "/a/thing", h("X-Api-Key", "sk-two"), 200, "", nil, ""},
		// A wrong key beside a right one: the right one lets it through.
		{"GET", "/a/thing", h("X-Api-Key", "sk-wrong", "Authorization", "Bearer sk-one"), 200, "", nil, ""},
		{"GET", "/a/thing/", h("X-Api-Key", "sk-one"), 200, "", nil, ""},
		{"GET", "/a/thing", nil, 401, "a", serve.ErrNoAPIKey, none},
		{"GET", "/a/thing", h("Authorization", "Bearer "), 401, "a", serve.ErrNoAPIKey, none},
		{"GET", "/a/thing", h("Authorization", "Basic c2stb25lOg=="), 401, "a", serve.ErrNoAPIKey, none},
		{"GET", "/a/thing", h("Authorization", "sk-one"), 401, "a", serve.ErrNoAPIKey, none},
		{"GET", "/a/thing", h("Authorization", "Bearer sk-on"), 401, "a", serve.ErrBadAPIKey, bad},
		{"GET", "/a/thing", h("X-Api-Key", "sk-one2"), 401, "a", serve.ErrBadAPIKey, bad},
		// Refused before routing: an unknown path or method says nothing of the routes.
		{"GET", "/a/nothing", nil, 401, "a", serve.ErrNoAPIKey, none},
		{"POST", "/a/thing", nil, 401, "a", serve.ErrNoAPIKey, none},
		{"GET", "/a/nothing", h("X-Api-Key", "sk-one"), 404, "", nil, ""},
		{"GET", "/elsewhere", nil, 401, "root", serve.ErrNoAPIKey, none},
		{"GET", "/shared", h("X-Client", "a"), 401, "a", serve.ErrNoAPIKey, none},
		{"GET", "/shared", h("X-Client", "b"), 401, "root", serve.ErrNoAPIKey, none},
		{"GET", "/shared", h("X-Client", "a", "Authorization", "Bearer sk-two"), 200, "", nil, ""},
		// The open paths.
		{"GET", "/", nil, 200, "", nil, ""},
		{"HEAD", "/", nil, 200, "", nil, ""},
		{"POST", "/", nil, 401, "root", serve.ErrNoAPIKey, none}, // open is GET /, not the path
		{"GET", "/health", nil, 200, "", nil, ""},
		{"GET", "/v1/health", h("Authorization", "Bearer wrong"), 200, "", nil, ""},
		{"GET", "/health/", nil, 200, "", nil, ""},
		{"GET", "/metrics", nil, 200, "", nil, ""},
		{"GET", "/metrics", h("X-Api-Key", "wrong"), 200, "", nil, ""},
	} {
		doAuth(t, ts.URL, c)
	}
	// The readiness probes need no key either.
	for _, path := range []string{"/ready", "/v1/ready"} {
		resp, err := http.Get(ts.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
	}

	fams := scrape(t, ts.URL)
	unauthorized := func(endpoint string) float64 {
		return metric(t, fams, "bonsai_requests_total", "endpoint", endpoint, "outcome", "unauthorized", "code", "401")
	}
	// Counted by the route their path and method name, before the key was checked.
	assert.Equal(t, 6.0, unauthorized("a.thing"))
	assert.Equal(t, 2.0, unauthorized("shared"))
	assert.Equal(t, 4.0, unauthorized("other")) // POST /a/thing, /a/nothing, /elsewhere, POST /
	assert.Equal(t, 5.0, metric(t, fams, "bonsai_requests_total", "endpoint", "a.thing", "outcome", "completed", "code", "200"))
}

// scrapeWith gets /metrics with the headers given (name, value pairs) and parses it.
func scrapeWith(t *testing.T, base string, header ...string) map[string]*promFamily {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/metrics", nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	fams, err := parseExposition(string(b))
	require.NoError(t, err, "%s", b)
	return fams
}

// TestMetricsAuth: with MetricsAuth, /metrics needs a key like any route; the probes
// still do not; MetricsAuth without keys is refused.
func TestMetricsAuth(t *testing.T) {
	_, err := serve.New(tinyModel, serve.Config{ModelName: modelName, MetricsAuth: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MetricsAuth needs Config.Keys")

	keys, err := serve.NewKeys("sk-metrics")
	require.NoError(t, err)
	_, ts := authServer(t, serve.Config{Keys: keys, MetricsAuth: true})
	for _, c := range []authCase{
		{"GET", "/metrics", nil, 401, "root", serve.ErrNoAPIKey, `Bearer realm="bonsai"`},
		{"GET", "/metrics", map[string]string{"Authorization": "Bearer sk-other"}, 401, "root", serve.ErrBadAPIKey, `Bearer realm="bonsai", error="invalid_token"`},
		{"GET", "/metrics", map[string]string{"Authorization": "Bearer sk-metrics"}, 200, "", nil, ""},
		{"GET", "/health", nil, 200, "", nil, ""},
	} {
		doAuth(t, ts.URL, c)
	}
	fams := scrapeWith(t, ts.URL, "X-Api-Key", "sk-metrics")
	assert.Equal(t, 2.0, metric(t, fams, "bonsai_requests_total", "endpoint", "metrics", "outcome", "unauthorized", "code", "401"))
}

// TestNoKeys: without keys nothing is asked, whatever the headers say.
func TestNoKeys(t *testing.T) {
	_, ts := authServer(t, serve.Config{})
	for _, c := range []authCase{
		{"GET", "/a/thing", nil, 200, "", nil, ""},
		{"GET", "/a/thing", map[string]string{"Authorization": "Bearer anything"}, 200, "", nil, ""},
		{"GET", "/a/nothing", nil, 404, "", nil, ""},
	} {
		doAuth(t, ts.URL, c)
	}
	assert.False(t, errors.Is(serve.ErrNoAPIKey, serve.ErrBadAPIKey))
}
