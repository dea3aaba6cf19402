package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The report's lines, each with its figures: a number, then what it is.
var reportLines = map[string]*regexp.Regexp{
	"single": regexp.MustCompile(`^single     1 stream: (\S+) tok/s; inter-token median (\S+) ms, p90 (\S+) ms; read bandwidth before it (\S+) GB/s$`),
	"streams4": regexp.MustCompile(`^streams4   4 streams: (\S+) tok/s aggregate = (\S+)× single \(target ≥ 2\.5: (ok|MISS)\) \((\S+) sequences a pass\); ` +
		`inter-token median (\S+) ms = (\S+)× single, p90 (\S+) ms = (\S+)×, worst stream's median (\S+)× \(target ≤ 1\.4: (ok|MISS)\)$`),
	"streams8": regexp.MustCompile(`^streams8   8 streams: (\S+) tok/s aggregate = (\S+)× single \((\S+) sequences a pass\); ` +
		`inter-token median (\S+) ms = (\S+)× single, p90 (\S+) ms = (\S+)×, worst stream's median (\S+)×$`),
	"prefill": regexp.MustCompile(`^prefill    (\d+)-token prompt: (\S+) tok/s; 8 streams' aggregate = (\S+) of it \(target ≥ 0\.85: (ok|MISS)\)$`),
	"longprompt": regexp.MustCompile(`^longprompt 4 streams while a (\d+)-token prompt prefills \((\S+) s, (\S+) tok/s\): ` +
		`inter-token median (\S+) ms = (\S+)× unloaded, p90 (\S+) ms = (\S+)×, max (\S+) ms \(target ≤ 2: (ok|MISS)\)$`),
	"ttft": regexp.MustCompile(`^ttft       (\d+)-token system prompt: first token (\S+) ms cached \((\d+) prompt tokens from the cache\) ` +
		`vs (\S+) ms uncached = (\S+) \(target ≤ 0\.1: (ok|MISS)\)$`),
}

// figures parses a line's numbers (the verdicts aside).
func figures(t *testing.T, name string, m []string) []float64 {
	t.Helper()
	var f []float64
	for _, s := range m[1:] {
		if s == "ok" || s == "MISS" {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err, "%s: %q", name, s)
		assert.Positive(t, v, "%s: %q", name, s)
		f = append(f, v)
	}
	return f
}

// TestReport runs the whole measurement on the tiny preset with small numbers: every
// line of the report is there and parses, and its ratios are its figures' quotients.
func TestReport(t *testing.T) {
	var out bytes.Buffer
	cfg := config{batch: 16, gen: 6, prompt: 64, longPrompt: 200, systemTokens: 120, loadStreams: 4}
	cfg.load.Threads = 2
	require.NoError(t, run(context.Background(), &out, io.Discard, cfg))
	report := out.String()
	t.Log("\n" + report)
	assert.Contains(t, report, `the synthetic "tiny" preset, with random weights: NOT the 27B model`)
	assert.Contains(t, report, "batches of 16 tokens")

	got := map[string][]float64{}
	for _, line := range strings.Split(strings.TrimSpace(report), "\n") {
		if strings.HasPrefix(line, "loadbench: ") {
			continue
		}
		name := strings.Fields(line)[0]
		re, ok := reportLines[name]
		require.True(t, ok, "unknown line %q", line)
		m := re.FindStringSubmatch(line)
		require.NotNil(t, m, "line %q does not parse", line)
		got[name] = figures(t, name, m)
	}
	require.Len(t, got, len(reportLines), "every measurement is reported")

	// The ratios, recomputed from the printed figures (rounded as printed).
	near := func(what string, want, printed float64) {
		assert.InEpsilon(t, want, printed, 0.02, "%s: printed %v, recomputed %v", what, printed, want)
	}
	// A ratio of two figures printed to two decimals (times in ms or s): each may be off
	// by 0.005, which on the tiny model's fractions of a millisecond is more than 2%.
	nearRounded := func(what string, num, den, printed float64) {
		eps := 0.02 + 0.005/num + 0.005/den
		assert.InEpsilon(t, num/den, printed, eps, "%s: printed %v, recomputed %v", what, printed, num/den)
	}
	single, s4, s8 := got["single"], got["streams4"], got["streams8"]
	near("4-stream aggregate", s4[0]/single[0], s4[1])
	assert.LessOrEqual(t, s4[2], 4.0)
	assert.LessOrEqual(t, s8[2], 8.0)
	nearRounded("4-stream median", s4[3], single[1], s4[4])
	nearRounded("4-stream p90", s4[5], single[2], s4[6])
	assert.GreaterOrEqual(t, s4[7], s4[4]*0.98, "the worst stream's median is at least the pooled one's")
	near("8-stream aggregate", s8[0]/single[0], s8[1])
	pf := got["prefill"]
	assert.Equal(t, 64.0, pf[0])
	near("8 streams ÷ prefill", s8[0]/pf[1], pf[2])
	lp := got["longprompt"]
	assert.Equal(t, 200.0, lp[0])
	nearRounded("long prompt rate", lp[0], lp[1], lp[2])
	nearRounded("long prompt median", lp[3], s4[3], lp[4])
	nearRounded("long prompt p90", lp[5], s4[5], lp[6])
	assert.GreaterOrEqual(t, lp[7], lp[5], "the max is at least the p90")
	tt := got["ttft"]
	assert.Equal(t, 120.0, tt[0])
	assert.GreaterOrEqual(t, tt[2], 120.0, "the cache served at least the system prompt")
	nearRounded("ttft ratio", tt[1], tt[3], tt[4])
}

// With -skip the slow phases are left out and the others still report.
func TestReportSkip(t *testing.T) {
	var out bytes.Buffer
	cfg := config{batch: 16, gen: 3, prompt: 32, longPrompt: 200, systemTokens: 120, loadStreams: 4,
		skip: map[string]bool{"longprompt": true, "ttft": true}}
	cfg.load.Threads = 2
	require.NoError(t, run(context.Background(), &out, io.Discard, cfg))
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(line, "loadbench: ") {
			names = append(names, strings.Fields(line)[0])
		}
	}
	assert.Equal(t, []string{"single", "streams4", "streams8", "prefill"}, names)
}

func TestFlags(t *testing.T) {
	parse := func(args ...string) (config, string, error) {
		fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		cfg, err := parseFlags(fs, args)
		return cfg, out.String(), err
	}
	cfg, _, err := parse()
	require.NoError(t, err)
	assert.Equal(t, config{load: cfg.load, batch: 64, gen: 32, prompt: 512, longPrompt: 4000, systemTokens: 2000, loadStreams: 4, bwTime: 2 * time.Second}, cfg)
	_, out, err := parse("-h")
	assert.ErrorIs(t, err, flag.ErrHelp)
	for _, f := range []string{"-model", "-preset", "-batch-tokens", "-gen-tokens", "-prompt-tokens", "-long-prompt", "-system-tokens",
		"-load-streams", "-skip", "-batch-tiles", "-bandwidth-time", "not the 27B"} {
		assert.Contains(t, out, f)
	}
	for bad, msg := range map[string][]string{
		"-model and -preset exclude each other":                                   {"-model", "m.gguf", "-preset", "tiny"},
		"loadbench: -gen-tokens 1: must be ≥ 2":                                   {"-gen-tokens", "1"},
		"loadbench: -load-streams 3: must be 4 or 8":                              {"-load-streams", "3"},
		"must be more than the 8 -load-streams":                                   {"-load-streams", "8", "-batch-tokens", "8"},
		"loadbench: -batch-tokens 0: must be ≥ 1":                                 {"-batch-tokens", "0"},
		"loadbench: -system-tokens 0: must be ≥ 1":                                {"-system-tokens", "0"},
		"loadbench: -threads -1: must be ≥ 0":                                     {"-threads", "-1"},
		"loadbench: -context -5: must be ≥ 0":                                     {"-context", "-5"},
		`loadbench: -preset "huge": must be one of tiny, small, real-widths, 27b`: {"-preset", "huge"},
		`loadbench: -layout "tiles": must be one of auto, file, interleaved`:      {"-layout", "tiles"},
		`loadbench: -backend "cuda": must be one of auto, cpu, metal, vulkan`:     {"-backend", "cuda"},
		"loadbench: -bandwidth-time 0s: must be > 0":                              {"-bandwidth-time", "0"},
		`no phase "streams4" to skip`:                                             {"-skip", "ttft,streams4"},
	} {
		_, out, err := parse(msg...)
		if assert.Error(t, err, bad) {
			assert.Contains(t, "loadbench: "+err.Error(), bad)
			assert.Contains(t, out, bad)
		}
	}
	cfg, _, err = parse("-skip", "longprompt, ttft")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"longprompt": true, "ttft": true}, cfg.skip)
	err = run(context.Background(), io.Discard, io.Discard, config{preset: "huge", batch: 16, gen: 2, prompt: 1, longPrompt: 1, systemTokens: 1, loadStreams: 4})
	assert.ErrorContains(t, err, `unknown preset "huge"`)
}
