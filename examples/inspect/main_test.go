package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/cli/clitest"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInspectSynthetic(t *testing.T) {
	path := synthtest.Path(t, "tiny", 7, ternary.PQ2_0)

	var out bytes.Buffer
	require.NoError(t, inspect(&out, path, true, false))
	s := out.String()
	for _, want := range []string{
		"GGUF v3, alignment 32",
		"layers      4: 3 Gated DeltaNet + 1 full attention",
		"gdn         12 V heads over 4 K heads (×3), state 32×32",
		"hadamard    version 1, normalized-sylvester-walsh-hadamard, block 64",
		"folded      26 tensors",
		"inverse     token_embd.weight",
		"blk.3.attn_q.weight",
		"all 27 tensors",
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "WARNING")
	assert.NotContains(t, s, "INVALID")
	// Uniform random codes: each of the three codes near a third of the weights, no code 3.
	fields := strings.Fields(lineWith(s, "all 27 tensors"))
	require.GreaterOrEqual(t, len(fields), 8, s)
	for _, f := range fields[4:7] {
		pct, err := strconv.ParseFloat(strings.TrimSuffix(f, "%"), 64)
		require.NoError(t, err, f)
		assert.InDelta(t, 100.0/3, pct, 1.0, "code share %s", f)
	}
	assert.Equal(t, "0", fields[7], "code-3 count")
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func TestInspectRejectsGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk.gguf")
	require.NoError(t, os.WriteFile(path, []byte("GGUF\x03\x00\x00\x00garbage"), 0o644))
	var out bytes.Buffer
	err := inspect(&out, path, true, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "junk.gguf")
}

// With no FILE, run writes the synthetic tiny model (seed 1) to a temporary directory,
// says so, prints that file's card and scans its ternary tensors, then removes the
// directory. The facts printed are checked against the same model written here.
func TestRunNoFile(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run(nil, &out, &errOut))
	assert.Empty(t, errOut.String())
	s := out.String()
	lines := strings.Split(s, "\n")

	const intro = "no FILE given: inspecting a synthetic model (preset tiny, seed 1) written to "
	require.True(t, strings.HasPrefix(lines[0], intro), "first line: %q", lines[0])
	path := strings.TrimPrefix(lines[0], intro)
	assert.Equal(t, "tiny.gguf", filepath.Base(path))
	assert.Empty(t, lines[1], "a blank line after the note")
	_, err := os.Stat(filepath.Dir(path))
	assert.True(t, os.IsNotExist(err), "temporary directory %s removed: %v", filepath.Dir(path), err)

	// The same model, written here, to compare with.
	f := synthtest.File(t, "tiny", 1, ternary.PQ2_0)
	name, err := f.String("general.name")
	require.NoError(t, err)

	assert.Equal(t, fmt.Sprintf("file        %s (%s)", path, human(f.Size())), lines[2])
	assert.Equal(t, fmt.Sprintf("format      GGUF v%d, alignment %d, %d keys, %d tensors, data at offset %d",
		f.Version, f.Alignment, len(f.KV), len(f.Tensors), f.DataOffset), lines[3])
	assert.Equal(t, fmt.Sprintf("model       %s, architecture %q", name, "qwen35"), lines[4])
	assert.Contains(t, name, "seed 1")
	assert.NotContains(t, s, "WARNING")
	assert.NotContains(t, s, "INVALID")
	for _, kv := range f.KV {
		assert.NotEmpty(t, lineWith(s, "  "+kv.Key+" "), "metadata key %s listed", kv.Key)
	}

	// The tensor table: a header, then one row per tensor in file order, name and type.
	start := indexOf(lines, func(l string) bool { return strings.HasPrefix(l, "tensor ") })
	require.GreaterOrEqual(t, start, 0, s)
	rows := lines[start+1:]
	require.Greater(t, len(rows), len(f.Tensors), s)
	ternaryTensors := 0
	for i, ti := range f.Tensors {
		fields := strings.Fields(rows[i])
		require.GreaterOrEqual(t, len(fields), 2, rows[i])
		assert.Equal(t, ti.Name, fields[0], "row %d", i)
		assert.Equal(t, ti.Type.String(), fields[1], "row %d", i)
		if _, ok := ternary.FormatOf(ti.Type); ok {
			ternaryTensors++
		}
	}
	assert.True(t, strings.HasPrefix(rows[len(f.Tensors)], "totals "), "the table has %d rows: %q", len(f.Tensors), rows[len(f.Tensors)])
	assert.Contains(t, rows[len(f.Tensors)], fmt.Sprintf("PQ2_0: %d tensors", ternaryTensors))

	// The scan: one row per ternary tensor, then the total.
	require.Equal(t, 27, ternaryTensors)
	scan := indexOf(lines, func(l string) bool { return strings.Contains(l, "ternary scan") })
	require.Greater(t, scan, start, s)
	scanned := 0
	for _, ti := range f.Tensors {
		if _, ok := ternary.FormatOf(ti.Type); ok {
			assert.Equal(t, ti.Name, strings.Fields(lines[scan+1+scanned])[0])
			scanned++
		}
	}
	total := strings.Fields(lines[scan+1+scanned])
	require.GreaterOrEqual(t, len(total), 8, lines[scan+1+scanned])
	assert.Equal(t, []string{"all", fmt.Sprint(ternaryTensors), "tensors"}, total[:3])
	assert.Equal(t, "0", total[7], "code-3 count")
}

func indexOf(lines []string, ok func(string) bool) int {
	for i, l := range lines {
		if ok(l) {
			return i
		}
	}
	return -1
}

// The flags and the command line's errors: -scan=false drops the scan, -keys prints
// whole arrays, -h prints the usage, and a second argument or an unknown flag is a
// usage error; a file that cannot be opened is an error naming it.
func TestRunFlags(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)

	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-scan=false", path}, &out, &errOut))
	assert.True(t, strings.HasPrefix(out.String(), "file        "+path+" "), out.String())
	assert.Contains(t, out.String(), "metadata (long arrays abbreviated; -keys prints them whole)")
	assert.Contains(t, out.String(), "totals ")
	assert.NotContains(t, out.String(), "ternary scan")
	assert.NotContains(t, out.String(), "no FILE given")
	assert.Empty(t, errOut.String())

	out.Reset()
	require.NoError(t, run([]string{"-keys", "-scan=false", path}, &out, &errOut))
	assert.Contains(t, out.String(), "\nmetadata\n")
	assert.NotContains(t, out.String(), "abbreviated")

	for _, c := range []struct {
		args []string
		want error
	}{
		{[]string{"-h"}, flag.ErrHelp},
		{[]string{path, path}, errUsage},
		{[]string{"-bogus"}, errUsage},
	} {
		out.Reset()
		errOut.Reset()
		err := run(c.args, &out, &errOut)
		assert.True(t, errors.Is(err, c.want), "%v: %v", c.args, err)
		assert.Empty(t, out.String(), "%v", c.args)
		assert.True(t, strings.HasPrefix(lineWith(errOut.String(), "usage:"), "usage: inspect [flags] [FILE | hf:ORG/NAME/FILE]"), "%v: %s", c.args, errOut.String())
	}

	// A model reference is parsed (and would be pulled) before the file is opened.
	err := run([]string{"hf:org/name"}, &out, &errOut)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `pulling model reference "hf:org/name": `)
	assert.Contains(t, err.Error(), "want hf:ORG/NAME/FILE")

	missing := filepath.Join(t.TempDir(), "missing.gguf")
	err = run([]string{missing}, &out, &errOut)
	require.Error(t, err)
	assert.False(t, errors.Is(err, errUsage))
	assert.Contains(t, err.Error(), "missing.gguf")
}

// inspect DIR, a missing file, a file that is not GGUF: one line that says which.
func TestInspectBadPaths(t *testing.T) {
	for _, bad := range clitest.BadModels(t) {
		var out, errOut bytes.Buffer
		err := run([]string{bad.Path}, &out, &errOut)
		switch bad.Name {
		case "not Bonsai":
			assert.NoError(t, err, "inspect reads any GGUF file")
			continue
		case "truncated", "corrupt": // what inspect finds there is TestInspectSynthetic's
			continue
		}
		require.Error(t, err, bad.Name)
		assert.Contains(t, err.Error(), bad.Want, bad.Name)
		assert.Contains(t, err.Error(), bad.Path, bad.Name)
		assert.NotContains(t, err.Error(), "\n", bad.Name)
		assert.NotContains(t, err.Error(), "mmap", bad.Name)
	}
	dir := t.TempDir()
	err := run([]string{dir}, io.Discard, io.Discard)
	assert.EqualError(t, err, dir+" is a directory, not a model file")
}
