// Command logits runs token ids through a model and prints the logits of every position:
// one line per position, the position and then every logit, space-separated, formatted
// "%.9g". This output format is a contract other tools read.
//
// Usage:
//
//	logits [-model FILE] -tokens 1,2,3 [-mode prefill|step] [-backend cpu|metal|metal-emulator|vulkan] [-threads N]
//	       [-activations int8|float32] [-kv f16|f32|int8|q8|q4] [-verify] [-warmup]
//
// -activations sets the precision in which the CPU backend's activations meet the ternary
// weights: int8 (the default, the library's) or float32. -kv sets the KV cache's: f16
// (the default), f32, int8 (8-bit blocks; "q8" is accepted too, as everywhere) or q4 (4-bit blocks; the
// Metal backend refuses it). The golden logits of
// qwen35/testdata/golden (upstream llama.cpp on the unfolded F32 twin) are reproduced to
// about 2e-5 with -activations float32 -kv f32; int8 activations are about 0.8 away.
//
// -backend metal runs on the Mac's GPU; metal-emulator runs the same Metal kernels on the
// CPU through the MSL emulator (Linux, clang++ needed; slow). vulkan runs the same kernels,
// in GLSL, on a Vulkan GPU (or on Mesa's lavapipe where that is the only device;
// BONSAI_VULKAN_DEVICE picks one). The GPU backends keep activations in float32, whatever
// -activations says.
//
// With no -model it runs a small synthetic model (preset tiny, seed 1) and says so on
// standard error, where the load's progress and the backend and thread count go too.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/metal/emulator"
)

func main() {
	cfg, ids, err := parseFlags(flag.CommandLine, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // the error is printed: by the flag package with the usage, or on one line
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg.stderr = os.Stderr
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	if err := run(ctx, w, cfg, ids); err != nil {
		w.Flush()
		cli.Fatal("logits", err)
	}
	if err := w.Flush(); err != nil {
		cli.Fatal("logits", err)
	}
}

// backends are the values of -backend: every program's, and the emulator.
var backends = append(slices.Clone(cli.Backends), emulator.Name)

// parseFlags parses args into fs and checks every flag, the token ids included, before
// anything is loaded.
func parseFlags(fs *flag.FlagSet, args []string) (config, []int32, error) {
	var cfg config
	fs.StringVar(&cfg.model, "model", "", cli.ModelUsage)
	tokens := fs.String("tokens", "", "comma-separated token ids (required)")
	fs.StringVar(&cfg.mode, "mode", "prefill", "prefill: all tokens in one pass; step: one token at a time")
	fs.StringVar(&cfg.backend, "backend", "cpu", "backend: "+strings.Join(backends, ", ")+" (auto as every program's -backend)")
	fs.IntVar(&cfg.threads, "threads", 0, cli.ThreadsUsage)
	fs.StringVar(&cfg.kv, "kv", "f16", cli.KVUsage+"; q4 on the CPU only")
	fs.StringVar(&cfg.acts, "activations", "int8", "precision of the activations fed to the ternary products (cpu backend): int8 or float32")
	fs.BoolVar(&cfg.verify, "verify", false, "scan every ternary weight at load and refuse a damaged file")
	fs.BoolVar(&cfg.warmup, "warmup", false, "read every weight page at load")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: logits [-model FILE] -tokens 1,2,3 [flags]\n\n"+
			"Prints one line per position: the position, then every logit (%%.9g).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := cli.ParseFlags(fs, args); err != nil {
		return cfg, nil, err
	}
	if *tokens == "" {
		err := errors.New("-tokens is required")
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return cfg, nil, err
	}
	ids, idsErr := parseTokens(*tokens)
	if err := cli.CheckFlags(fs, "logits", cli.OwnRule("backend", cli.OneOf("backend", cfg.backend, backends...)),
		cli.OneOf("mode", cfg.mode, "prefill", "step"), idsErr); err != nil {
		return cfg, nil, err
	}
	return cfg, ids, nil
}

type config struct {
	model, mode, backend, kv string
	acts                     string // "int8" (also ""), or "float32"
	threads                  int
	verify, warmup           bool
	stderr                   io.Writer // the load's messages; nil: none
}

func parseTokens(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("-tokens: %q is not a token id", f)
		}
		ids = append(ids, int32(v))
	}
	if len(ids) == 0 {
		return nil, errors.New("-tokens: no token ids")
	}
	return ids, nil
}

func backendByName(name string) (bonsai.Backend, error) {
	if name == emulator.Name {
		return emulator.New(), nil
	}
	if err := cli.OneOf("backend", name, backends...); err != nil {
		return nil, err
	}
	b, _, err := cli.ChooseBackend(name, nil)
	return b, err
}

func run(ctx context.Context, w io.Writer, cfg config, ids []int32) error {
	b, err := backendByName(cfg.backend)
	if err != nil {
		return err
	}
	kv, err := cli.ParseKV(cfg.kv)
	if err != nil {
		return err
	}
	if cfg.acts == "" {
		cfg.acts = "int8"
	}
	acts, err := cli.ParseActivations(cfg.acts)
	if err != nil {
		return err
	}
	if err := cli.OneOf("mode", cfg.mode, "prefill", "step"); err != nil {
		return err
	}
	stderr := cfg.stderr
	if stderr == nil {
		stderr = io.Discard
	}
	l, err := cli.Load(ctx, stderr, "logits", cli.ModelFlags{Model: cfg.model, Threads: cfg.threads, Context: max(len(ids), 1),
		Verify: cfg.verify, Warmup: cfg.warmup}, bonsai.WithBackend(b), bonsai.WithKVCache(kv), bonsai.WithActivations(acts))
	if err != nil {
		return err
	}
	defer l.Close()
	s, err := l.Model.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	var buf []byte
	emit := func(pos int, logits []float32) error {
		buf = strconv.AppendInt(buf[:0], int64(pos), 10)
		for _, v := range logits {
			buf = append(buf, ' ')
			buf = strconv.AppendFloat(buf, float64(v), 'g', 9, 32)
		}
		buf = append(buf, '\n')
		_, err := w.Write(buf)
		return err
	}
	if cfg.mode == "prefill" {
		rows, err := s.PrefillAll(ctx, ids)
		if err != nil {
			return err
		}
		for i, r := range rows {
			if err := emit(i, r); err != nil {
				return err
			}
		}
		return nil
	}
	for i, id := range ids {
		if err := s.Step(ctx, id); err != nil {
			return err
		}
		if err := emit(i, s.Logits()); err != nil {
			return err
		}
	}
	return nil
}
