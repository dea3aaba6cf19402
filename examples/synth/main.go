// Command synth writes a synthetic Ternary Bonsai 2 model: a GGUF file laid out exactly as
// PrismML's converter lays out the real one (qwen35 architecture, ternary weights folded
// with the prism.hadamard rotation, tiled GDN V heads, a byte-level BPE vocabulary),
// filled with values that depend only on the seed. With -f32-twin it also writes the
// unfolded float32 twin of the same model, which upstream llama.cpp runs as it is.
//
// Usage:
//
//	synth -preset NAME -seed N -format pq2_0|ptq1_0 -out FILE [-f32-twin FILE] [-mtp] [-q]
//
// With -mtp the model carries Qwen3.5's multi-token-prediction head (one "nextn" block
// after the decoder layers, qwen35.nextn_predict_layers = 1), as community files
// re-bundle it, with random weights in the same ternary formats.
//
// Presets: tiny (a few hundred kilobytes), small, real-widths (the 27B model's widths in
// four layers) and 27b (the full shape, about 7.2 GB as PQ2_0; its twin would be about
// 108 GB).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/ternary"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		msg := err.Error()
		if !strings.HasPrefix(msg, "synth: ") {
			msg = "synth: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

// errUsage marks a command line that was wrong; the usage has been printed.
var errUsage = errors.New("usage")

// run is the command: it parses args, writes the files and reports to stdout; the
// progress bar and the usage go to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	preset := fs.String("preset", "tiny", "model shape: "+strings.Join(synth.Presets(), ", "))
	seed := fs.Uint64("seed", 1, "seed; every tensor's values derive from the seed and the tensor's name")
	format := fs.String("format", "pq2_0", "ternary format: pq2_0 or ptq1_0")
	out := fs.String("out", "", "the model file to write (required)")
	twin := fs.String("f32-twin", "", "also write the unfolded float32 twin of the model to this file")
	quiet := fs.Bool("q", false, "no progress bar")
	mtp := fs.Bool("mtp", false, "also write a multi-token-prediction (nextn) head: one MTP block after the decoder layers")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: synth -preset NAME -seed N -format pq2_0|ptq1_0 -out FILE [-f32-twin FILE] [-mtp] [-q]\n\n"+
			"Writes a synthetic Ternary Bonsai 2 model (GGUF, qwen35). The twin is the same model\n"+
			"with the Hadamard rotation unfolded, every tensor F32 and ssm_out's columns tiled: the\n"+
			"file upstream llama.cpp runs as it is.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	f, ferr := ternary.ParseFormat(*format)
	if ferr != nil {
		ferr = &cli.FlagError{Flag: "format", Value: strconv.Quote(*format), Want: "must be pq2_0 or ptq1_0"}
	}
	var same error
	if *twin != "" && *twin == *out {
		same = errors.New("-out and -f32-twin name the same file")
	}
	if err := cli.CheckFlags(fs, "synth", cli.OneOf("preset", *preset, synth.Presets()...), ferr, same); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err) // printed on one line
	}
	cfg, err := synth.Preset(*preset)
	if err != nil {
		return err
	}
	if *mtp {
		cfg.NextN = 1
	}
	opt := synth.Options{Config: cfg, Seed: *seed, Format: f}

	type job struct {
		path  string
		what  string
		write func(context.Context, string, synth.Options, synth.Progress) error
	}
	jobs := []job{{*out, fmt.Sprintf("%s model", f), synth.WriteFile}}
	if *twin != "" {
		jobs = append(jobs, job{*twin, "F32 twin", synth.WriteTwinFile})
	}
	for _, j := range jobs {
		var progress synth.Progress
		if !*quiet {
			progress = bar(stderr, j.path)
		}
		err := j.write(ctx, j.path, opt, progress)
		if progress != nil {
			fmt.Fprintln(stderr)
		}
		if err != nil {
			return err
		}
		size := int64(0)
		if fi, err := os.Stat(j.path); err == nil {
			size = fi.Size()
		}
		fmt.Fprintf(stdout, "wrote %s: %s, preset %s, seed %d, %s\n", j.path, j.what, *preset, *seed, human(size))
	}
	return nil
}

// bar returns a progress function drawing a one-line bar for path on w. It redraws
// only when the shown tenth of a percent changes: a model has hundreds of tensors.
func bar(w io.Writer, path string) synth.Progress {
	shown := int64(-1)
	return func(done, total int64) {
		const width = 40
		frac := float64(done) / float64(max(total, 1))
		if permille := int64(frac * 1000); permille != shown {
			shown = permille
			fill := int(frac * width)
			fmt.Fprintf(w, "\r%s [%s%s] %5.1f%% %s / %s", path,
				strings.Repeat("=", fill), strings.Repeat(" ", width-fill), 100*frac, human(done), human(total))
		}
	}
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
