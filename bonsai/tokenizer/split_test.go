package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func split(f preTokenizer, s string) []string {
	var words []string
	start := 0
	for _, end := range f(s, nil) {
		words = append(words, s[start:end])
		start = end
	}
	return words
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in                         string
		qwen35, qwen2, gpt2, deflt []string
	}{
		{"Hello world", []string{"Hello", " world"}, nil, nil, nil},
		{"I'm here", []string{"I", "'m", " here"}, nil, nil, nil},
		{"I'M HERE", []string{"I", "'M", " HERE"}, nil, []string{"I", "'", "M", " HERE"}, nil},
		{"12345", []string{"1", "2", "3", "4", "5"}, nil, []string{"12345"}, []string{"123", "45"}},
		{"a  b", []string{"a", " ", " b"}, nil, nil, nil},
		{"a   ", []string{"a", "   "}, nil, nil, nil},
		{"x\n\n  y", []string{"x", "\n\n", " ", " y"}, nil, []string{"x", "\n\n ", " y"}, nil},
		{"\t\tif x", []string{"\t", "\tif", " x"}, nil, []string{"\t", "\t", "if", " x"}, nil},
		{"x = (1+2);\n", []string{"x", " =", " (", "1", "+", "2", ");\n"}, nil,
			[]string{"x", " =", " (", "1", "+", "2", ");", "\n"}, []string{"x", " ", "=", " ", "(", "1", "+", "2", ");", "\n"}},
		{"ca\u0301fe\u0301!", []string{"ca\u0301fe\u0301", "!"}, []string{"ca", "\u0301fe", "\u0301!"},
			[]string{"ca", "\u0301", "fe", "\u0301!"}, nil},
		{"नमस्ते", []string{"नमस्ते"}, []string{"नमस", "्त", "े"}, []string{"नमस", "्", "त", "े"}, nil},
		{"日本\u3000語", []string{"日本", "\u3000語"}, nil, []string{"日本", "\u3000", "語"}, nil},
		{"a\u00a0\u00a0b", []string{"a", "\u00a0", "\u00a0b"}, nil, []string{"a", "\u00a0", "\u00a0", "b"}, nil},
		{"🚀 go", []string{"🚀", " go"}, nil, nil, nil},
	} {
		want := func(w []string) []string {
			if w == nil {
				return c.qwen35
			}
			return w
		}
		assert.Equal(t, c.qwen35, split(splitQwen35, c.in), "qwen35 %q", c.in)
		assert.Equal(t, want(c.qwen2), split(splitQwen2, c.in), "qwen2 %q", c.in)
		gpt2 := c.gpt2
		if gpt2 == nil {
			gpt2 = want(c.qwen2)
		}
		assert.Equal(t, gpt2, split(splitGPT2, c.in), "gpt-2 %q", c.in)
		if c.deflt != nil {
			assert.Equal(t, c.deflt, split(splitDefault, c.in), "default %q", c.in)
		}
	}
}
