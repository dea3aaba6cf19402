// Command inspect prints the model card of a GGUF file: format and architecture, the
// model's sizes, the Hadamard contract, the tensor table, and a scan of every ternary
// tensor's codes and scales (the checks one runs on a downloaded file).
//
// Usage:
//
//	inspect [-scan=false] [-keys] [FILE]
//
// With no FILE it writes a small synthetic Bonsai model to a temporary directory and
// inspects that.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "inspect:", err)
		os.Exit(1)
	}
}

// errUsage marks a command line that was wrong; the usage has been printed.
var errUsage = errors.New("usage")

// run is the program: it parses args (without the program name), writes the model card
// to stdout and the usage to stderr. A bad command line returns errUsage, -h
// flag.ErrHelp.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scan := fs.Bool("scan", true, "scan the codes and scales of every ternary tensor")
	keys := fs.Bool("keys", false, "print every metadata key with its full value")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: inspect [flags] [FILE | hf:ORG/NAME/FILE]\n\n"+
			"Prints the model card of a GGUF file (pulled from the Hugging Face Hub into its\n"+
			"cache first, for hf:ORG/NAME/FILE). With no FILE, writes a small synthetic\n"+
			"Bonsai model to a temporary directory and inspects that.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage // fs.Parse has printed the error and the usage
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return errUsage
	}
	path, err := cli.ModelPath(context.Background(), stderr, "inspect", fs.Arg(0))
	if err != nil {
		return err
	}
	if path == "" {
		dir, err := os.MkdirTemp("", "bonsai-inspect-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "tiny.gguf")
		cfg, _ := synth.Preset("tiny")
		if err := synth.WriteFile(context.Background(), path, synth.Options{Config: cfg, Seed: 1}, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "no FILE given: inspecting a synthetic model (preset tiny, seed 1) written to %s\n\n", path)
	}
	return inspect(stdout, path, *scan, *keys)
}

func inspect(w io.Writer, path string, scan, allKeys bool) error {
	f, err := gguf.Open(path)
	if err != nil {
		return cli.Explain(path, err) // one line: missing, a directory, not GGUF, damaged
	}
	defer f.Close()

	fmt.Fprintf(w, "file        %s (%s)\n", path, human(f.Size()))
	fmt.Fprintf(w, "format      GGUF v%d, alignment %d, %d keys, %d tensors, data at offset %d\n",
		f.Version, f.Alignment, len(f.KV), len(f.Tensors), f.DataOffset)
	name, _ := f.String("general.name")
	fmt.Fprintf(w, "model       %s, architecture %q\n", name, f.Architecture())

	if f.Architecture() == qwen35.Architecture {
		vocab := 0
		if t, ok := f.Tensor(qwen35.NameTokenEmbedding); ok && len(t.Shape) == 2 {
			vocab = int(t.Shape[1])
		}
		if c, err := qwen35.ReadConfig(f, vocab); err != nil {
			fmt.Fprintf(w, "config      INVALID: %v\n", err)
		} else {
			printConfig(w, c)
		}
	}

	fmt.Fprintln(w)
	if allKeys {
		fmt.Fprintln(w, "metadata")
		for _, kv := range f.KV {
			fmt.Fprintf(w, "  %-48s %-8s %s\n", kv.Key, typeName(kv.Value), kv.Value.Interface())
		}
	} else {
		fmt.Fprintln(w, "metadata (long arrays abbreviated; -keys prints them whole)")
		for _, kv := range f.KV {
			fmt.Fprintf(w, "  %-48s %-16s %s\n", kv.Key, typeName(kv.Value), kv.Value)
		}
	}

	fmt.Fprintln(w)
	contract, err := hadamard.ParseContract(f)
	switch {
	case err == nil:
		printContract(w, contract, f)
	default:
		fmt.Fprintf(w, "hadamard    %v\n", err)
	}

	fmt.Fprintln(w)
	printTensors(w, f)

	if scan {
		fmt.Fprintln(w)
		return scanTernary(w, f)
	}
	return nil
}

func typeName(v gguf.Value) string {
	if v.Type() == gguf.ValueArray {
		return fmt.Sprintf("[%d]%s", v.Len(), v.ElemType())
	}
	return v.Type().String()
}

func printConfig(w io.Writer, c *qwen35.Config) {
	fmt.Fprintf(w, "layers      %d: %d Gated DeltaNet + %d full attention (every %d-th)\n",
		c.Layers, c.Layers-c.AttentionLayers(), c.AttentionLayers(), c.FullAttentionInterval)
	fmt.Fprintf(w, "widths      embedding %d, feed-forward %d, vocabulary %d, context %d\n",
		c.Embedding, c.FeedForward, c.Vocab, c.ContextLength)
	fmt.Fprintf(w, "attention   %d query heads, %d KV heads, head dim %d, RoPE on %d dims (base %g, sections %v)\n",
		c.Heads, c.KVHeads, c.HeadDim, c.RopeDims, c.RopeBase, c.RopeSections)
	fmt.Fprintf(w, "gdn         %d V heads over %d K heads (×%d), state %d×%d, conv kernel %d, inner %d\n",
		c.VHeads, c.KHeads, c.HeadRepeat(), c.StateSize, c.StateSize, c.ConvKernel, c.InnerSize)
	fmt.Fprintf(w, "rms eps     %.3g\n", c.RMSEpsilon)
}

func printContract(w io.Writer, c *hadamard.Contract, f *gguf.File) {
	fmt.Fprintf(w, "hadamard    version %d, %s, block %d, axis %s, signs %s, gdn_v_grouped %v\n",
		c.Version, c.Transform, c.BlockSize, c.Axis, c.SignMode, c.GDNVGrouped)
	for i, width := range c.Widths {
		neg := 0
		for _, s := range c.Signs[i] {
			if s < 0 {
				neg++
			}
		}
		fmt.Fprintf(w, "  width %-6d %d blocks, %d of %d signs negative\n", width, width/c.BlockSize, neg, width)
	}
	fmt.Fprintf(w, "  folded      %d tensors\n", len(c.WeightNames))
	fmt.Fprintf(w, "  inverse     %s\n", strings.Join(c.InverseWeightNames, ", "))
	// The checks a loader makes: every listed tensor exists, and every ternary tensor is listed.
	var missing, unlisted []string
	for _, n := range append(append([]string{}, c.WeightNames...), c.InverseWeightNames...) {
		if _, ok := f.Tensor(n); !ok {
			missing = append(missing, n)
		}
	}
	for _, t := range f.Tensors {
		if _, ok := ternary.FormatOf(t.Type); ok && !c.IsFolded(t.Name) && !c.IsInverse(t.Name) {
			unlisted = append(unlisted, t.Name)
		}
		if len(t.Shape) > 0 && (c.IsFolded(t.Name) || c.IsInverse(t.Name)) {
			if _, err := c.Rotation(int(t.Shape[0])); err != nil {
				fmt.Fprintf(w, "  WARNING     %s: %v\n", t.Name, err)
			}
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "  WARNING     %d listed tensors are not in the file, e.g. %s\n", len(missing), missing[0])
	}
	if len(unlisted) > 0 {
		fmt.Fprintf(w, "  WARNING     %d ternary tensors are not in the contract, e.g. %s\n", len(unlisted), unlisted[0])
	}
}

func printTensors(w io.Writer, f *gguf.File) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "tensor\ttype\tshape\tbytes\t")
	bytesBy := map[gguf.TensorType]int64{}
	countBy := map[gguf.TensorType]int{}
	for _, t := range f.Tensors {
		size, err := t.Size()
		sz := human(size)
		if err != nil {
			sz = "?"
		}
		dims := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			dims[i] = fmt.Sprint(d)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", t.Name, t.Type, strings.Join(dims, " × "), sz)
		bytesBy[t.Type] += size
		countBy[t.Type]++
	}
	tw.Flush()
	types := make([]gguf.TensorType, 0, len(bytesBy))
	for t := range bytesBy {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool { return bytesBy[types[i]] > bytesBy[types[j]] })
	fmt.Fprint(w, "totals     ")
	for _, t := range types {
		fmt.Fprintf(w, " %s: %d tensors, %s;", t, countBy[t], human(bytesBy[t]))
	}
	fmt.Fprintln(w)
}

func scanTernary(w io.Writer, f *gguf.File) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ternary scan\tblocks\tcode 0\tcode 1 (zero)\tcode 2\tcode 3\tscale min\tscale max\tzero d\tsubnormal d\tnon-finite d\t")
	var all ternary.Stats
	n := 0
	for _, t := range f.Tensors {
		format, ok := ternary.FormatOf(t.Type)
		if !ok {
			continue
		}
		data, err := f.TensorData(t.Name)
		if err != nil {
			return err
		}
		s, err := ternary.Scan(format, data)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		all.Merge(s)
		n++
		printStats(tw, t.Name, s)
	}
	if n == 0 {
		fmt.Fprintln(w, "ternary scan: no ternary tensors")
		return nil
	}
	printStats(tw, fmt.Sprintf("all %d tensors", n), all)
	tw.Flush()
	if all.Codes[3] > 0 || all.NonFiniteScales > 0 {
		fmt.Fprintf(w, "WARNING: %d code-3 weights and %d non-finite scales: not a clean ternary file\n", all.Codes[3], all.NonFiniteScales)
	}
	return nil
}

func printStats(w io.Writer, name string, s ternary.Stats) {
	total := float64(s.Codes[0] + s.Codes[1] + s.Codes[2] + s.Codes[3])
	pct := func(c int64) string {
		if total == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f%%", 100*float64(c)/total)
	}
	fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%d\t%.4g\t%.4g\t%d\t%d\t%d\t\n", name, s.Blocks,
		pct(s.Codes[0]), pct(s.Codes[1]), pct(s.Codes[2]), s.Codes[3], s.MinScale, s.MaxScale,
		s.ZeroScales, s.SubnormalScales, s.NonFiniteScales)
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
