package tokenizer

import (
	"encoding/json"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParityLlamaCpp checks the ids of every corpus string against those llama.cpp's
// llama-tokenize produced (testdata/README.md), for each pre-tokenizer and both
// parse-special settings, and that decoding gives back every valid UTF-8 string.
func TestParityLlamaCpp(t *testing.T) {
	corpus := loadCorpus(t)
	data, err := os.ReadFile("testdata/expected.json")
	require.NoError(t, err)
	var expected map[string]map[string][][]int32
	require.NoError(t, json.Unmarshal(data, &expected))
	require.Len(t, expected, 4)

	for _, pre := range []string{"qwen35", "qwen2", "gpt-2", "default"} {
		for _, special := range []bool{true, false} {
			mode := map[bool]string{true: "parse_special", false: "no_parse_special"}[special]
			t.Run(pre+"/"+mode, func(t *testing.T) {
				want := expected[pre][mode]
				require.Len(t, want, len(corpus))
				tk := qwen3(t, pre)
				bad := 0
				for i, e := range corpus {
					text := e.bytes(t)
					got := tk.Encode(text, special)
					if want[i] == nil {
						want[i] = []int32{}
					}
					if got == nil {
						got = []int32{}
					}
					if !assert.Equal(t, want[i], got, "%s %q", e.Name, text) {
						bad++
					}
					if utf8.ValidString(text) {
						assert.Equal(t, text, tk.Decode(got), "round trip of %s", e.Name)
					}
				}
				if bad > 0 {
					t.Logf("%d of %d strings differ", bad, len(corpus))
				}
			})
		}
	}
}

// TestCorpusComposition keeps the corpus what testdata/README.md says it is.
func TestCorpusComposition(t *testing.T) {
	corpus := loadCorpus(t)
	assert.GreaterOrEqual(t, len(corpus), 300)
	names := map[string]bool{}
	invalid := 0
	for _, e := range corpus {
		assert.False(t, names[e.Name], "duplicate name %s", e.Name)
		names[e.Name] = true
		if !utf8.ValidString(e.bytes(t)) {
			invalid++
		}
	}
	assert.Positive(t, invalid)
}
