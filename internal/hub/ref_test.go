package hub_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/hub"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRef(t *testing.T) {
	for _, c := range []struct {
		in   string
		want hub.Ref
	}{
		{"hf:prism-ml/Ternary-Bonsai-2-27B-GGUF/Ternary-Bonsai-2-27B-PQ2_0.gguf",
			hub.Ref{Repo: "prism-ml/Ternary-Bonsai-2-27B-GGUF", File: "Ternary-Bonsai-2-27B-PQ2_0.gguf"}},
		{"hf://org/name/sub/dir/m.gguf", hub.Ref{Repo: "org/name", File: "sub/dir/m.gguf"}},
		{"hf:org/name@v1.0/m.gguf", hub.Ref{Repo: "org/name", Revision: "v1.0", File: "m.gguf"}},
		{"hf:org/name@refs%2Fpr%2F1/m.gguf", hub.Ref{Repo: "org/name", Revision: "refs/pr/1", File: "m.gguf"}},
		{"hf:org/name/m@2.gguf", hub.Ref{Repo: "org/name", File: "m@2.gguf"}},
	} {
		got, err := hub.ParseRef(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	for _, c := range []struct{ in, want string }{
		{"org/name/m.gguf", `does not start with "hf:"`},
		{"hf:org/name", "want hf:ORG/NAME/FILE"},
		{"hf:org//m.gguf", "want hf:ORG/NAME/FILE"},
		{"hf:org/name/", "want hf:ORG/NAME/FILE"},
		{"hf:org/name/../../etc/passwd", `".."`},
		{"hf:org/name/a//b", "no empty"},
		{"hf:o--g/name/m", "not ORG/NAME"},
		{"hf:org/-name/m", "not ORG/NAME"},
		{"hf:org/name@/m", "revision"},
		{"hf:org/name@%zz/m", "revision"},
		{"hf:org/name@..%2F..%2Fx/m", "revision"},
		{"hf:org/name@a%01b/m", "git refuses"},
		{"hf:org/name@a b/m", "git refuses"},
		{"hf:org/name/a\x01b", "control character"},
		{"hf:org/name/a\\b", "backslash"},
	} {
		_, err := hub.ParseRef(c.in)
		require.Error(t, err, c.in)
		assert.Contains(t, err.Error(), c.want, c.in)
		assert.Contains(t, err.Error(), strconv.Quote(c.in), "the error quotes the reference")
	}
	assert.True(t, hub.IsRef("hf:x"))
	assert.False(t, hub.IsRef("./hf:x"))
}

// FuzzParseRef checks that what ParseRef accepts is a repository and paths that stay
// inside the cache's directories, and that String gives it back.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"hf:org/name/m.gguf", "hf://org/name@refs%2Fpr%2F1/a/b.gguf", "hf:a/b@..%2F/c", "hf:a/b/./c", "hf:a.b/c_d/e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := hub.ParseRef(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error on several lines: %v", s, err)
			}
			return
		}
		if err := hub.CheckRepo(r.Repo); err != nil || strings.Count(r.Repo, "/") != 1 {
			t.Fatalf("%q: accepted repository %q: %v", s, r.Repo, err)
		}
		for _, p := range []string{r.File, r.Revision} {
			if p == "" {
				continue
			}
			j := filepath.Join("cache", filepath.FromSlash(p))
			if !strings.HasPrefix(j, "cache"+string(filepath.Separator)) {
				t.Fatalf("%q: %q leaves the cache's directory: %q", s, p, j)
			}
		}
		back, err := hub.ParseRef(r.String())
		if err != nil || back != r {
			t.Fatalf("%q: String %q parses as %+v, %v; want %+v", s, r.String(), back, err, r)
		}
	})
}
