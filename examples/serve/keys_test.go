package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServe runs the server as main does with args (and the tiny synthetic model, on
// two threads), and returns its base URL, its stderr, and a stop that ends it as a
// signal would and returns run's error.
func startServe(t *testing.T, args ...string) (string, *syncBuffer, func() error) {
	t.Helper()
	cfg, out, err := parse(t, append([]string{"-threads", "2", "-parallel", "1", "-batch-tokens", "8"}, args...)...)
	require.NoError(t, err, out)
	addr := make(chan string, 1)
	cfg.onReady = func(a string) { addr <- a }
	ctx, cancel := context.WithCancel(context.Background())
	stderr := new(syncBuffer)
	done := make(chan error, 1)
	go func() { done <- run(ctx, stderr, cfg) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("run did not return after the signal")
			return nil
		}
	}
	t.Cleanup(func() { stop() })
	select {
	case a := <-addr:
		return "http://" + a, stderr, stop
	case err := <-done:
		stopped = true
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	return "", nil, nil
}

// get sends a GET with the headers given (name, value pairs) and returns the status
// and the body.
func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// bearer is the status of GET /v1/models with key as a bearer token.
func bearer(t *testing.T, base, key string) int {
	t.Helper()
	code, _ := get(t, base+"/v1/models", "Authorization", "Bearer "+key)
	return code
}

// writeFile writes text to name in a fresh temporary directory and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestKeyFlags(t *testing.T) {
	_, out, _ := parse(t, "-h")
	for _, f := range []string{"-api-key key", "-api-key-file file", "-metrics-auth", "BONSAI_API_KEY", "re-read on SIGHUP",
		"Authorization: Bearer KEY", "x-api-key: KEY", "anyone who can reach the port"} {
		assert.Contains(t, out, f)
	}
	cfg, _, err := parse(t, "-api-key", "k1", "-api-key", "k2", "-api-key-file", "keys.txt", "-metrics-auth")
	require.NoError(t, err)
	assert.Equal(t, keyFlags{keys: []string{"k1", "k2"}, file: "keys.txt", metricsAuth: true}, cfg.keys)
	cfg, _, err = parse(t)
	require.NoError(t, err)
	assert.Equal(t, keyFlags{}, cfg.keys)
}

// TestReadKeyFile: keys one a line, comments, blank lines, spaces and CRLF skipped;
// an empty file, a file of comments, a missing file and a bad key are errors naming
// the file (and the line), not the key.
func TestReadKeyFile(t *testing.T) {
	keys, err := readKeyFile(writeFile(t, "keys", "# the team's keys\n\nsk-one\n  sk-two  \r\n\t# sk-commented\nsk-three"))
	require.NoError(t, err)
	assert.Equal(t, []string{"sk-one", "sk-two", "sk-three"}, keys)

	for _, c := range []struct{ name, text, want string }{
		{"empty", "", "no API key in the file"},
		{"comments", "# nothing yet\n\n  \n", "no API key in the file"},
		{"space", "sk-one\nsk two\n", ":2: the key's character 3 is a space"},
		{"control", "sk-one\x00\n", ":1: the key's character 7"},
	} {
		path := writeFile(t, c.name, c.text)
		_, err := readKeyFile(path)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), "-api-key-file "+path, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
		assert.NotContains(t, err.Error(), "sk", c.name)
	}
	missing := filepath.Join(t.TempDir(), "absent")
	_, err = readKeyFile(missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestServeKeys: keys from -api-key (twice), BONSAI_API_KEY and the file all work, in
// either header; a wrong or missing key gets 401 in the API's shape; /health and the
// page stay open; -metrics-auth closes /metrics; the start-up line says so, the keys
// are not shown, and no warning is given.
func TestServeKeys(t *testing.T) {
	t.Setenv(keyEnv, "sk-env")
	file := writeFile(t, "keys", "# keys\nsk-file-1\n\nsk-file-2\n")
	base, stderr, stop := startServe(t, "-addr", "127.0.0.1:0", "-api-key", "sk-flag-1", "-api-key", "sk-flag-2",
		"-api-key-file", file, "-metrics-auth")

	for _, key := range []string{"sk-flag-1", "sk-flag-2", "sk-env", "sk-file-1", "sk-file-2"} {
		assert.Equal(t, http.StatusOK, bearer(t, base, key), key)
		code, _ := get(t, base+"/v1/models", "x-api-key", key)
		assert.Equal(t, http.StatusOK, code, key)
	}
	for _, key := range []string{"sk-flag", "sk-file-3", "# keys", "sk-env2"} {
		assert.Equal(t, http.StatusUnauthorized, bearer(t, base, key), "%q", key)
	}
	code, body := get(t, base+"/v1/models")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, `"code":"invalid_api_key"`)
	resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, string(b), `"type":"authentication_error"`)
	resp, err = http.Post(base+"/v1/messages", "application/json", strings.NewReader(
		`{"model": "any", "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(
		`{"model": "any", "max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}]}`))
	req.Header.Set("x-api-key", "sk-file-2")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)

	for path, want := range map[string]int{"/health": 200, "/": 200, "/metrics": 401} {
		code, _ := get(t, base+path)
		assert.Equal(t, want, code, path)
	}
	code, body = get(t, base+"/metrics", "Authorization", "Bearer sk-env")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `bonsai_requests_total{endpoint="models",outcome="unauthorized",code="401"} 5`)

	require.NoError(t, stop())
	out := stderr.String()
	assert.Contains(t, out, "serve: 5 API keys; requests need one (Authorization: Bearer KEY or x-api-key: KEY), but /health and /ready; /metrics needs one too\n")
	assert.NotContains(t, out, "WARNING")
	assert.NotContains(t, out, "sk-")
	assert.Contains(t, out, "GET /v1/models 401")
}

// TestServeKeyErrors: a bad key or key file stops the server before it loads the
// model, with one line naming the flag, the file or the variable.
func TestServeKeyErrors(t *testing.T) {
	empty := writeFile(t, "empty", "# none yet\n")
	missing := filepath.Join(t.TempDir(), "absent")
	for _, c := range []struct {
		args []string
		env  string
		want []string
	}{
		{[]string{"-api-key-file", empty}, "", []string{"-api-key-file " + empty, "no API key in the file"}},
		{[]string{"-api-key-file", missing}, "", []string{"-api-key-file", missing, "no such file"}},
		{[]string{"-api-key", "good", "-api-key", "b@d key"}, "", []string{"-api-key 2: the key's character 4 is a space"}},
		{[]string{"-api-key", ""}, "", []string{"-api-key 1: the key is empty"}},
		{nil, "two words", []string{keyEnv + ": the key's character 4 is a space"}},
		{[]string{"-metrics-auth"}, "", []string{"-metrics-auth needs an API key"}},
	} {
		t.Setenv(keyEnv, c.env)
		cfg, _, err := parse(t, append([]string{"-addr", "127.0.0.1:0", "-model", "/nonexistent/model.gguf"}, c.args...)...)
		require.NoError(t, err)
		cfg.onListen = func(string) { t.Errorf("%v: listening", c.args) }
		var stderr syncBuffer
		err = run(context.Background(), &stderr, cfg)
		require.Error(t, err, "%v", c.args)
		for _, w := range c.want {
			assert.Contains(t, err.Error(), w, "%v", c.args)
		}
		assert.NotContains(t, err.Error(), "model.gguf", "the model was loaded first")
		assert.NotContains(t, err.Error(), "b@d")
		assert.NotContains(t, err.Error(), "\n")
	}
}

// TestReachable: loopback addresses are not reachable from elsewhere; every other,
// the unspecified 0.0.0.0 and :: included, is.
func TestReachable(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": false, "127.0.0.2:80": false, "[::1]:8080": false, "[::ffff:127.0.0.1]:8080": false,
		"0.0.0.0:8080": true, "[::]:8080": true, "192.168.1.20:8080": true, "[2001:db8::1]:8080": true,
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		require.NoError(t, err)
		assert.Equal(t, want, reachable(a), addr)
	}
	assert.True(t, reachable(&net.UnixAddr{Name: "/tmp/sock", Net: "unix"}))
}

// TestServeOpenWarning: without a key, the server warns at start-up when it listens
// on every address, not when it listens on loopback, nor with a key.
func TestServeOpenWarning(t *testing.T) {
	t.Setenv(keyEnv, "")
	const warning = "WARNING: no API key, and listening on "
	for _, c := range []struct {
		args []string
		warn bool
	}{
		{[]string{"-addr", "127.0.0.1:0"}, false},
		{[]string{"-addr", "0.0.0.0:0"}, true},
		{[]string{"-addr", "0.0.0.0:0", "-api-key", "sk-x"}, false},
	} {
		_, stderr, stop := startServe(t, c.args...)
		require.NoError(t, stop())
		out := stderr.String()
		if !c.warn {
			assert.NotContains(t, out, warning, "%v", c.args)
			continue
		}
		assert.Regexp(t, warning+`(0\.0\.0\.0|\[::\]):\d+, not a loopback address`, out, "%v", c.args) // Go listens on both stacks for 0.0.0.0
		assert.Contains(t, out, "anyone who can reach this port can use the model", "%v", c.args)
	}
}
