package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedFlags is a program with every flag that has a shared rule, as the examples
// declare them.
func sharedFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	var m ModelFlags
	m.Register(fs)
	fs.Int("max-tokens", 256, "")
	fs.Int("thinking-budget", 0, "")
	fs.Int("top-k", 20, "")
	fs.Int("batch-tokens", 64, "")
	fs.Int("prompt-tokens", 512, "")
	fs.Int("gen-tokens", 16, "")
	fs.Int64("seed", -1, "")
	fs.Float64("temperature", 0.7, "")
	fs.Float64("top-p", 0.8, "")
	fs.Float64("min-p", 0, "")
	fs.Float64("repeat-penalty", 1, "")
	fs.Float64("presence-penalty", 0, "")
	fs.Float64("frequency-penalty", 0, "")
	fs.String("kv", "f16", "")
	fs.String("activations", "int8", "")
	fs.String("preset", "", "")
	fs.Duration("bandwidth-time", time.Second, "")
	return fs
}

// Every shared flag's rule, at and beyond its bounds: the exact one-line message, on
// the flag set's output, prefixed with the program's name.
func TestCheckFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for accepted
	}{
		{nil, ""},
		{[]string{"-max-tokens", "-1"}, "-max-tokens -1: must be ≥ 0"},
		{[]string{"-max-tokens", "0"}, ""},
		{[]string{"-thinking-budget", "-1"}, "-thinking-budget -1: must be ≥ 0"},
		{[]string{"-thinking-budget", "0"}, ""},
		{[]string{"-temperature", "-1"}, "-temperature -1: must be ≥ 0"},
		{[]string{"-temperature", "0"}, ""},
		{[]string{"-temperature", "NaN"}, "-temperature NaN: must be ≥ 0"},
		{[]string{"-temperature", "Inf"}, "-temperature +Inf: must be ≥ 0"},
		{[]string{"-top-p", "2"}, "-top-p 2: must be in (0, 1]"},
		{[]string{"-top-p", "0"}, "-top-p 0: must be in (0, 1]"},
		{[]string{"-top-p", "1"}, ""},
		{[]string{"-top-k", "-3"}, "-top-k -3: must be ≥ 0"},
		{[]string{"-min-p", "1.5"}, "-min-p 1.5: must be in [0, 1]"},
		{[]string{"-min-p", "1"}, ""},
		{[]string{"-repeat-penalty", "0"}, "-repeat-penalty 0: must be > 0"},
		{[]string{"-presence-penalty", "-2.5"}, "-presence-penalty -2.5: must be in [-2, 2]"},
		{[]string{"-frequency-penalty", "2"}, ""},
		{[]string{"-frequency-penalty", "3"}, "-frequency-penalty 3: must be in [-2, 2]"},
		{[]string{"-seed", "-2"}, "-seed -2: must be ≥ -1"},
		{[]string{"-context", "-5"}, "-context -5: must be ≥ 0"},
		{[]string{"-threads", "-1"}, "-threads -1: must be ≥ 0"},
		{[]string{"-threads", "0"}, ""},
		{[]string{"-batch-tokens", "0"}, "-batch-tokens 0: must be ≥ 1"},
		{[]string{"-prompt-tokens", "-1"}, "-prompt-tokens -1: must be ≥ 0"},
		{[]string{"-gen-tokens", "0"}, "-gen-tokens 0: must be ≥ 1"},
		{[]string{"-kv", "q9"}, `-kv "q9": must be one of f16, f32, int8 (alias q8), q4`},
		{[]string{"-kv", "q8"}, ""},
		{[]string{"-activations", "fp16"}, `-activations "fp16": must be one of int8, float32`},
		{[]string{"-backend", "cuda"}, `-backend "cuda": must be one of auto, cpu, metal, vulkan`},
		{[]string{"-layout", "tiles"}, `-layout "tiles": must be one of auto, file, interleaved`},
		{[]string{"-preset", "huge"}, `-preset "huge": must be one of tiny, small, real-widths, 27b`},
		{[]string{"-preset", "tiny"}, ""},
		{[]string{"-bandwidth-time", "0s"}, "-bandwidth-time 0s: must be > 0"},
	} {
		fs := sharedFlags()
		var out bytes.Buffer
		fs.SetOutput(&out)
		require.NoError(t, fs.Parse(tc.args), "%v", tc.args)
		err := CheckFlags(fs, "prog")
		if tc.want == "" {
			assert.NoError(t, err, "%v", tc.args)
			assert.Empty(t, out.String(), "%v", tc.args)
			continue
		}
		if assert.Error(t, err, "%v", tc.args) {
			assert.Equal(t, tc.want, err.Error())
			assert.Equal(t, "prog: "+tc.want+"\n", out.String())
			var fe *FlagError
			assert.ErrorAs(t, err, &fe)
		}
	}
}

// A program's own checks run after the shared rules, the first failing one reported;
// a flag of another type under a shared name (metalcheck's -prompt is a count, not
// text) is left to its program.
func TestCheckFlagsOwnChecks(t *testing.T) {
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.String("threads", "many", "") // not an int: no shared rule applies
	fs.Float64("top-p", 2, "")
	require.NoError(t, fs.Parse(nil))
	err := CheckFlags(fs, "prog", nil, AtLeast("n", -1, 0), AtLeast("m", -1, 0))
	assert.EqualError(t, err, "-top-p 2: must be in (0, 1]", "the shared rules first")

	fs = flag.NewFlagSet("prog", flag.ContinueOnError)
	fs.SetOutput(&out)
	fs.String("threads", "many", "")
	out.Reset()
	err = CheckFlags(fs, "prog", nil, AtLeast("n", -1, 0), AtLeast("m", -1, 0))
	assert.EqualError(t, err, "-n -1: must be ≥ 0")
	assert.Equal(t, "prog: -n -1: must be ≥ 0\n", out.String())
	assert.NoError(t, CheckFlags(fs, "prog", nil, AtLeast("n", 0, 0), Within("d", time.Second, 0, time.Minute)))
	assert.EqualError(t, Within("d", 2*time.Minute, 0, time.Minute), "-d 2m0s: must be in [0s, 1m0s]")
	assert.EqualError(t, OneOf("tools", "", "off", "auto"), `-tools "": must be one of off, auto`)
}

// -kv: the same names in every program, int8's alias q8 included.
func TestParseKV(t *testing.T) {
	for name, want := range map[string]bonsai.KVPrecision{"f16": bonsai.KVFloat16, "f32": bonsai.KVFloat32,
		"int8": bonsai.KVInt8, "q8": bonsai.KVInt8, "q4": bonsai.KVQ4} {
		got, err := ParseKV(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
	for _, p := range []bonsai.KVPrecision{bonsai.KVFloat16, bonsai.KVFloat32, bonsai.KVInt8, bonsai.KVQ4} {
		got, err := ParseKV(p.String())
		require.NoError(t, err, "every precision's own name is accepted")
		assert.Equal(t, p, got)
		assert.Contains(t, KVUsage, p.String())
	}
	for _, bad := range []string{"", "F16", "q5", "fp16"} {
		_, err := ParseKV(bad)
		assert.ErrorContains(t, err, "must be one of f16, f32, int8 (alias q8), q4", bad)
	}
}

// -threads 0 is every core: the default, passed to bonsai as such.
func TestThreadsFlag(t *testing.T) {
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	var m ModelFlags
	m.Register(fs)
	require.NoError(t, fs.Parse(nil))
	assert.Zero(t, m.Threads)
	assert.True(t, strings.Contains(fs.Lookup("threads").Usage, "0: every core"))

	// Loaded with it: every core, not one (as -threads 0 used to run).
	var stderr bytes.Buffer
	l, err := Load(context.Background(), &stderr, "test", m)
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, runtime.NumCPU(), l.Model.Threads())
	assert.Contains(t, stderr.String(), fmt.Sprintf(", %d threads,", runtime.NumCPU()))
}

// OwnRule replaces a shared rule for one program: its check decides, the others stay.
func TestOwnRule(t *testing.T) {
	for _, tc := range []struct {
		value, want string
	}{
		{"metal-emulator", ""},
		{"cpu", ""},
		{"tpu", `-backend "tpu": must be one of cpu, metal-emulator`},
	} {
		fs := flag.NewFlagSet("logits", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		b := fs.String("backend", "cpu", "")
		fs.Int("threads", 0, "")
		require.NoError(t, fs.Parse([]string{"-backend", tc.value}))
		err := CheckFlags(fs, "logits", OwnRule("backend", OneOf("backend", *b, "cpu", "metal-emulator")))
		if tc.want == "" {
			assert.NoError(t, err, tc.value)
		} else {
			assert.EqualError(t, err, tc.want)
			assert.Equal(t, "logits: "+tc.want+"\n", out.String())
		}
		require.NoError(t, fs.Parse([]string{"-threads", "-1"}))
		assert.EqualError(t, CheckFlags(fs, "logits", OwnRule("backend", nil)), "-threads -1: must be ≥ 0", "the other rules stay")
	}
}
