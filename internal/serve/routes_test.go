package serve_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRoutes: requests reach their routes without a trailing slash and with HEAD for
// GET; those no route takes get JSON from the error writer of the longest prefix of
// their path, a 405 with the route's methods in Allow, and the bare JSON error where
// no writer claims the path.
func TestRoutes(t *testing.T) {
	s, err := serve.New(tinyModel, serve.Config{ModelName: modelName})
	require.NoError(t, err)
	defer s.Close()
	reply := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve.WriteJSON(w, http.StatusOK, map[string]string{"route": body, "id": r.PathValue("id")})
		})
	}
	s.Handle("POST /a/b", reply("a.b"))
	s.Handle("GET /a/items/{id}", reply("item"))
	writer := func(name string) func(http.ResponseWriter, *http.Request, int) {
		return func(w http.ResponseWriter, r *http.Request, status int) {
			serve.WriteJSON(w, status, map[string]string{"writer": name, "path": r.URL.Path})
		}
	}
	s.HandleErrors("/a", writer("a"))
	s.HandleErrors("/a/items/", writer("items"))
	ts := httptest.NewServer(s)
	defer ts.Close()

	for _, c := range []struct {
		method, path string
		status       int
		allow        string
		want         map[string]string
	}{
		{"POST", "/a/b", 200, "", map[string]string{"route": "a.b", "id": ""}},
		{"POST", "/a/b/", 200, "", map[string]string{"route": "a.b", "id": ""}},
		{"GET", "/a/items/7", 200, "", map[string]string{"route": "item", "id": "7"}},
		{"GET", "/a/items/7/", 200, "", map[string]string{"route": "item", "id": "7"}},
		{"HEAD", "/a/items/7", 200, "", nil},
		{"GET", "/a/b", 405, "POST", map[string]string{"writer": "a", "path": "/a/b"}},
		{"DELETE", "/a/items/7", 405, "GET, HEAD", map[string]string{"writer": "items", "path": "/a/items/7"}},
		{"GET", "/a/c", 404, "", map[string]string{"writer": "a", "path": "/a/c"}},
		{"GET", "/a/items/7/8", 404, "", map[string]string{"writer": "items", "path": "/a/items/7/8"}},
		{"GET", "/ab", 404, "", nil},
		{"POST", "/health", 405, "GET, HEAD", nil},
	} {
		req, err := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var got map[string]any
		decodeErr := json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		at := c.method + " " + c.path
		assert.Equal(t, c.status, resp.StatusCode, at)
		assert.Equal(t, c.allow, resp.Header.Get("Allow"), at)
		if c.method == "HEAD" {
			continue
		}
		require.NoError(t, decodeErr, at)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), at)
		if c.want == nil { // the bare error: {"error": {"message": ...}}
			e, _ := got["error"].(map[string]any)
			assert.Contains(t, e["message"], c.path, at)
			continue
		}
		for k, v := range c.want {
			assert.Equal(t, v, got[k], "%s: %s", at, k)
		}
	}
}

// TestDialectsApart: openai and anthropic import nothing from each other, and serve
// neither of them.
func TestDialectsApart(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	const mod = "github.com/bonsai-go/sdk/internal/"
	for pkg, banned := range map[string][]string{
		"serve": {"openai", "anthropic"}, "openai": {"anthropic"}, "anthropic": {"openai"},
	} {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		require.NoError(t, err, pkg)
		deps := strings.Fields(string(out))
		require.Contains(t, deps, mod+"serve", pkg)
		for _, b := range banned {
			for _, d := range deps {
				assert.False(t, d == mod+b || strings.HasPrefix(d, mod+b+"/"), "%s imports %s", pkg, d)
			}
		}
	}
}

// TestHandleFrom: a pattern two dialects share goes to the alternative whose match
// accepts the request, else to Handle's handler, in either order of registration; an
// alternative alone leaves the others a 404 from the path's error writer. The request
// counts under the pattern either way.
func TestHandleFrom(t *testing.T) {
	s, err := serve.New(tinyModel, serve.Config{ModelName: modelName})
	require.NoError(t, err)
	defer s.Close()
	reply := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve.WriteJSON(w, http.StatusOK, map[string]string{"by": body, "id": r.PathValue("id")})
		})
	}
	fromB := func(r *http.Request) bool { return r.Header.Get("X-Dialect") == "b" }
	s.Handle("GET /m", reply("a"))
	s.HandleFrom("GET /m", fromB, reply("b"))
	s.HandleFrom("GET /m/{id}", fromB, reply("b"))
	s.HandleErrors("/m", func(w http.ResponseWriter, r *http.Request, status int) {
		serve.WriteJSON(w, status, map[string]string{"writer": "m"})
	})
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, c := range []struct {
		path, dialect string
		status        int
		want          map[string]string
	}{
		{"/m", "", 200, map[string]string{"by": "a", "id": ""}},
		{"/m", "b", 200, map[string]string{"by": "b", "id": ""}},
		{"/m/7", "b", 200, map[string]string{"by": "b", "id": "7"}},
		{"/m/7", "", 404, map[string]string{"writer": "m"}},
	} {
		req, err := http.NewRequest("GET", ts.URL+c.path, nil)
		require.NoError(t, err)
		if c.dialect != "" {
			req.Header.Set("X-Dialect", c.dialect)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var got map[string]string
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
		resp.Body.Close()
		assert.Equal(t, c.status, resp.StatusCode, "%s %q", c.path, c.dialect)
		assert.Equal(t, c.want, got, "%s %q", c.path, c.dialect)
	}
}

// TestModelAliases: the ids the models endpoints list, and the aliases refused.
func TestModelAliases(t *testing.T) {
	cfg := serve.Config{ModelName: "m", ModelAliases: []string{"gpt-4o", "claude-x"}}
	assert.Equal(t, []string{"m", "gpt-4o", "claude-x"}, cfg.ModelIDs())
	assert.True(t, cfg.Lists("claude-x"))
	assert.False(t, cfg.Lists("claude-y"))
	for _, bad := range []string{"", " ", "a/b", "a?b"} {
		_, err := serve.New(tinyModel, serve.Config{ModelName: "m", ModelAliases: []string{"ok", bad}})
		assert.ErrorContains(t, err, "ModelAliases[1]", "%q", bad)
	}
}
