package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCalculate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{
		{"2+2", 4},
		{" 1 + 2 * 3 ", 7},
		{"(1 + 2) * 3", 9},
		{"2^3^2", 512}, // right-associative: 2^9
		{"-2^2", 4},    // the sign binds to the number, as the page's calculator has it
		{"10 / 4", 2.5},
		{"10 % 4", 2},
		{"1.5e2 - 50", 100},
		{"2e-1 * 10", 2},
		{"-(3 - 5)", 2},
		{"1/0", math.Inf(1)},
	} {
		got, err := calculate(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	for _, bad := range []string{"", "2+", "(1", "1)", "abc", "2 2", strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200)} {
		_, err := calculate(bad)
		assert.Error(t, err, bad)
	}
}

func TestCallTool(t *testing.T) {
	now = func() time.Time { return time.Date(2026, 12, 2, 6, 30, 0, 0, time.UTC) }
	defer func() { now = time.Now }()
	for _, c := range []struct {
		call bonsai.ToolCall
		want string
	}{
		{bonsai.ToolCall{Name: "get_time", Arguments: json.RawMessage(`{"timezone": "Asia/Tokyo"}`)}, `{"time":"2026-12-02T15:30:00+09:00","timezone":"Asia/Tokyo"}`},
		{bonsai.ToolCall{Name: "get_time", Arguments: json.RawMessage(`{"timezone": "Mars/Olympus"}`)}, `{"error":"unknown time zone \"Mars/Olympus\""}`},
		{bonsai.ToolCall{Name: "calculate", Arguments: json.RawMessage(`{"expression": "6*7"}`)}, `{"result":42}`},
		{bonsai.ToolCall{Name: "launch", Arguments: json.RawMessage(`{}`)}, `{"error":"no tool \"launch\""}`},
	} {
		assert.Equal(t, c.want, callTool(c.call), c.call.Name)
	}
}

// TestChatTools: with -tools required the synthetic model's first reply is a call of
// a demo tool (the grammar sees to it), which runs; its result goes back, and the
// model answers.
func TestChatTools(t *testing.T) {
	cfg, err := parseFlags(flag.NewFlagSet("chat", flag.ContinueOnError), []string{"-tools", "required", "-max-tokens", "200", "-seed", "5", "-threads", "2"})
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), strings.NewReader("What time is it in Paris?\n/tools off\n/quit\n"), &stdout, &stderr, cfg))
	out := stdout.String()
	t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr.String())
	m := regexp.MustCompile(`\[tool\] (get_time|calculate)\((\{.*\})\) → (\{.*\})\n`).FindAllStringSubmatch(out, -1)
	require.NotEmpty(t, m, "no tool call")
	for _, call := range m {
		assert.True(t, json.Valid([]byte(call[2])), call[2])
		assert.True(t, json.Valid([]byte(call[3])), call[3])
	}
	assert.Contains(t, out, "(tools off)")
	// A reply after the results: one more generation than calls' replies.
	assert.GreaterOrEqual(t, strings.Count(stderr.String(), "new prompt tokens"), 2)

	_, err = parseFlags(flag.NewFlagSet("chat", flag.ContinueOnError), []string{"-tools", "sometimes"})
	assert.Error(t, err)
}
