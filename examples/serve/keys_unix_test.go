//go:build unix

package main

import (
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeKeyReload: SIGHUP re-reads the key file: a key added works and a key
// removed does not; a reload that fails (the file empty, then gone) keeps the keys
// held and says why; the -api-key keys stay through all of it.
//
// The test sends the signal to its own process, as an operator would to the server's.
// It listens for SIGHUP itself for its whole length, so that a signal arriving when the
// server does not listen is dropped instead of ending the test binary: the test then
// fails on the key that did not change.
func TestServeKeyReload(t *testing.T) {
	t.Setenv(keyEnv, "")
	guard := make(chan os.Signal, 8)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)

	file := writeFile(t, "keys", "sk-old\n")
	base, stderr, stop := startServe(t, "-addr", "127.0.0.1:0", "-api-key", "sk-flag", "-api-key-file", file)
	require.Equal(t, http.StatusOK, bearer(t, base, "sk-old"))
	require.Equal(t, http.StatusUnauthorized, bearer(t, base, "sk-new"))

	hup := func() {
		t.Helper()
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	}
	// waitLog waits for the server to log a line containing s for the n-th time.
	waitLog := func(s string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(stderr.String(), s) < n {
			if time.Now().After(deadline) {
				t.Fatalf("the server did not log %q %d times:\n%s", s, n, stderr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	require.NoError(t, os.WriteFile(file, []byte("# rotated\nsk-new\nsk-newer\n"), 0o600))
	hup()
	waitLog("API keys reloaded from "+file+": 3 in all", 1)
	for key, want := range map[string]int{"sk-new": 200, "sk-newer": 200, "sk-flag": 200, "sk-old": 401} {
		assert.Equal(t, want, bearer(t, base, key), key)
	}

	require.NoError(t, os.WriteFile(file, []byte("# all keys revoked by mistake\n"), 0o600))
	hup()
	waitLog("API keys not reloaded, keeping the 3 held: -api-key-file "+file+": no API key in the file", 1)
	require.NoError(t, os.Remove(file))
	hup()
	waitLog("API keys not reloaded, keeping the 3 held: -api-key-file: open "+file+": no such file", 1)
	for key, want := range map[string]int{"sk-new": 200, "sk-newer": 200, "sk-flag": 200, "sk-old": 401} {
		assert.Equal(t, want, bearer(t, base, key), key)
	}

	require.NoError(t, os.WriteFile(file, []byte("sk-back\n"), 0o600))
	hup()
	waitLog("API keys reloaded from "+file+": 2 in all", 1)
	for key, want := range map[string]int{"sk-back": 200, "sk-flag": 200, "sk-new": 401} {
		assert.Equal(t, want, bearer(t, base, key), key)
	}
	require.NoError(t, stop())
	assert.NotContains(t, stderr.String(), "sk-")
}
