package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every bad value is refused by parseFlags, before run loads anything (the -model given
// does not exist), on one line naming the flag and what it accepts.
func TestFlagRanges(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-max-tokens", "-1"}, "serve: -max-tokens -1: must be ≥ 0"},
		{[]string{"-thinking-budget", "-1"}, "serve: -thinking-budget -1: must be ≥ 0"},
		{[]string{"-temperature", "-1"}, "serve: -temperature -1: must be ≥ 0"},
		{[]string{"-top-p", "2"}, "serve: -top-p 2: must be in (0, 1]"},
		{[]string{"-top-k", "-1"}, "serve: -top-k -1: must be ≥ 0"},
		{[]string{"-context", "-5"}, "serve: -context -5: must be ≥ 0"},
		{[]string{"-threads", "-1"}, "serve: -threads -1: must be ≥ 0"},
		{[]string{"-parallel", "0"}, "serve: -parallel 0: must be ≥ 1"},
		{[]string{"-queue", "-1"}, "serve: -queue -1: must be ≥ 0"},
		{[]string{"-max-body", "0"}, "serve: -max-body 0: must be ≥ 1"},
		{[]string{"-batch-tokens", "0"}, "serve: -batch-tokens 0: must be ≥ 1"},
		{[]string{"-drain-timeout", "-1s"}, "serve: -drain-timeout -1s: must be ≥ 0s"},
		{[]string{"-responses-store", "-1"}, "serve: -responses-store -1: must be ≥ 0"},
		{[]string{"-speculative", "on"}, `serve: -speculative "on": must be one of auto, off, lookup, mtp`},
		{[]string{"-parallel", "8", "-batch-tokens", "4"}, "serve: -batch-tokens 4 is less than -parallel 8: a new prompt needs a row beside the running streams"},
	} {
		_, out, err := parse(t, append([]string{"-model", missing}, tc.args...)...)
		require.Error(t, err, "%v", tc.args)
		assert.Equal(t, tc.want+"\n", out, "%v: one line, no usage", tc.args)
	}
}

// The command itself: a bad value exits with status 2 and one line, before the model is
// loaded (nothing else printed).
func TestExitStatus(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgsEnv+"=-top-p 2 -model "+filepath.Join(t.TempDir(), "missing.gguf"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Equal(t, "serve: -top-p 2: must be in (0, 1]\n", stderr.String())
	assert.Empty(t, stdout.String())
}

// -responses-store and -responses-store-memory set the OpenAI API's store bounds;
// either 0 turns the store off (openai.Config's negative count: its 0 is the default).
func TestResponsesStoreFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		count int
		bytes int64
	}{
		{nil, 1024, 64 << 20},
		{[]string{"-responses-store", "2", "-responses-store-memory", "1MiB"}, 2, 1 << 20},
		{[]string{"-responses-store", "0"}, -1, 64 << 20},
		{[]string{"-responses-store-memory", "0"}, -1, 0},
		{[]string{"-responses-store-memory", "1.5GB"}, 1024, 1_500_000_000},
	} {
		cfg, out, err := parse(t, tc.args...)
		require.NoError(t, err, "%v: %s", tc.args, out)
		oc := cfg.openaiConfig()
		assert.Equal(t, tc.count, oc.StoredResponses, "%v", tc.args)
		assert.Equal(t, tc.bytes, oc.StoredResponseBytes, "%v", tc.args)
	}
	_, out, err := parse(t, "-responses-store-memory", "64M")
	require.Error(t, err)
	assert.Contains(t, out, `invalid value "64M" for flag -responses-store-memory: "64M": unknown unit "M"`)
}

// TestServeResponsesStore: the command with -responses-store 2 keeps the 2 most recent
// responses (GET of the first, after three, answers 404); with -responses-store 0 it
// keeps none, and says "store": false.
func TestServeResponsesStore(t *testing.T) {
	post := func(base string) (id, store string) {
		t.Helper()
		code, _, b := request(t, "POST", base+"/v1/responses", `{"input": "Hi", "max_output_tokens": 2}`)
		require.Equal(t, http.StatusOK, code, b)
		var r struct {
			ID    string
			Store json.RawMessage
		}
		require.NoError(t, json.Unmarshal([]byte(b), &r), b)
		return r.ID, string(r.Store)
	}
	base, _, stop := startServe(t, "-addr", "127.0.0.1:0", "-quiet", "-responses-store", "2")
	var ids []string
	for range 3 {
		id, store := post(base)
		assert.Equal(t, "true", store)
		ids = append(ids, id)
	}
	code, _, b := request(t, "GET", base+"/v1/responses/"+ids[0], "")
	assert.Equal(t, http.StatusNotFound, code, b)
	assert.Contains(t, b, "keeps the 2 most recently used responses, up to 67108864 bytes")
	for _, id := range ids[1:] {
		code, _, b := request(t, "GET", base+"/v1/responses/"+id, "")
		assert.Equal(t, http.StatusOK, code, b)
	}

	require.NoError(t, stop())
	base, _, _ = startServe(t, "-addr", "127.0.0.1:0", "-quiet", "-responses-store", "0")
	id, store := post(base)
	assert.Equal(t, "false", store)
	code, _, b = request(t, "GET", base+"/v1/responses/"+id, "")
	assert.Equal(t, http.StatusNotFound, code, b)
	assert.Contains(t, b, "this server keeps no responses")
}
