package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/stretchr/testify/require"
)

// qwen3VocabPath is the vocabulary-only GGUF of Qwen3's tokenizer (see
// testdata/README.md), with tokenizer.ggml.pre "qwen35".
const qwen3VocabPath = "testdata/qwen3-vocab.gguf.gz"

// qwen3GGUF parses the test vocabulary once.
var qwen3GGUF = sync.OnceValues(func() (*gguf.File, error) {
	data, err := os.ReadFile(qwen3VocabPath)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	return gguf.Parse(raw)
})

// withPre is a GGUF's metadata with tokenizer.ggml.pre replaced.
type withPre struct {
	*gguf.File
	pre string
}

func (m withPre) String(key string) (string, error) {
	if key == keyPre {
		return m.pre, nil
	}
	return m.File.String(key)
}

var qwen3Tokenizers sync.Map // pre → *Tokenizer

// qwen3 returns the tokenizer of the test vocabulary with pre-tokenizer pre.
func qwen3(t testing.TB, pre string) *Tokenizer {
	t.Helper()
	if tk, ok := qwen3Tokenizers.Load(pre); ok {
		return tk.(*Tokenizer)
	}
	f, err := qwen3GGUF()
	require.NoError(t, err)
	tk, err := FromGGUF(withPre{f, pre})
	require.NoError(t, err)
	qwen3Tokenizers.Store(pre, tk)
	return tk
}

// A corpusEntry is one string of testdata/corpus.json: text, or, for bytes that are not
// valid UTF-8, base64.
type corpusEntry struct {
	Name   string `json:"name"`
	Text   string `json:"text"`
	Base64 string `json:"base64"`
}

func (e corpusEntry) bytes(t testing.TB) string {
	if e.Base64 == "" {
		return e.Text
	}
	b, err := base64.StdEncoding.DecodeString(e.Base64)
	require.NoError(t, err, e.Name)
	return string(b)
}

func loadCorpus(t testing.TB) []corpusEntry {
	t.Helper()
	data, err := os.ReadFile("testdata/corpus.json")
	require.NoError(t, err)
	var c []corpusEntry
	require.NoError(t, json.Unmarshal(data, &c))
	return c
}
