// Command logits runs token ids through a model and prints the logits of every position:
// one line per position, the position and then every logit, space-separated, formatted
// "%.9g". This output format is a contract other tools read.
//
// Usage:
//
//	logits [-model FILE] -tokens 1,2,3 [-mode prefill|step] [-backend cpu|metal|metal-emulator|vulkan] [-threads N]
//	       [-activations int8|float32] [-kv f16|f32|q8|q4] [-verify] [-warmup]
//
// -activations sets the precision in which the CPU backend's activations meet the ternary
// weights: int8 (the default, the library's) or float32. -kv sets the KV cache's: f16
// (the default), f32, q8 (8-bit; "int8" is accepted too) or q4 (4-bit blocks; the
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
	"runtime"
	"strconv"
	"strings"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/vulkan"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/metal"
	"github.com/bonsai-go/sdk/metal/emulator"
)

func main() {
	model := flag.String("model", "", "GGUF model `file`, or hf:ORG/NAME/FILE to pull from the Hugging Face Hub (default: a synthetic tiny model)")
	tokens := flag.String("tokens", "", "comma-separated token ids (required)")
	mode := flag.String("mode", "prefill", "prefill: all tokens in one pass; step: one token at a time")
	backend := flag.String("backend", "cpu", "backend: cpu, metal, metal-emulator or vulkan")
	threads := flag.Int("threads", runtime.NumCPU(), "CPU threads")
	kv := flag.String("kv", "f16", "KV cache precision: f16, f32, q8 (alias int8) or q4 (the CPU only)")
	acts := flag.String("activations", "int8", "precision of the activations fed to the ternary products (cpu backend): int8 or float32")
	verify := flag.Bool("verify", false, "scan every ternary weight at load and refuse a damaged file")
	warmup := flag.Bool("warmup", false, "read every weight page at load")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: logits [-model FILE] -tokens 1,2,3 [flags]\n\n"+
			"Prints one line per position: the position, then every logit (%%.9g).\n\nflags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *tokens == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ids, err := parseTokens(*tokens)
	if err != nil {
		cli.Fatal("logits", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := config{model: *model, mode: *mode, backend: *backend, threads: *threads, kv: *kv, acts: *acts, verify: *verify, warmup: *warmup, stderr: os.Stderr}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	if err := run(ctx, w, cfg, ids); err != nil {
		w.Flush()
		cli.Fatal("logits", err)
	}
	if err := w.Flush(); err != nil {
		cli.Fatal("logits", err)
	}
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
	switch name {
	case "cpu":
		return bonsai.CPU(), nil
	case "metal":
		return metal.New(), nil
	case "metal-emulator":
		return emulator.New(), nil
	case "vulkan":
		return vulkan.New(), nil
	}
	return nil, fmt.Errorf("-backend %q: unknown (have: cpu, metal, metal-emulator, vulkan)", name)
}

func kvByName(name string) (bonsai.KVPrecision, error) {
	switch name {
	case "f16":
		return bonsai.KVFloat16, nil
	case "f32":
		return bonsai.KVFloat32, nil
	case "q8", "int8":
		return bonsai.KVInt8, nil
	case "q4":
		return bonsai.KVQ4, nil
	}
	return 0, fmt.Errorf("-kv %q: want f16, f32, q8 or q4", name)
}

func activationsByName(name string) (bonsai.Activations, error) {
	switch name {
	case "int8", "":
		return bonsai.ActivationsInt8, nil
	case "float32":
		return bonsai.ActivationsFloat32, nil
	}
	return 0, fmt.Errorf("-activations %q: want int8 or float32", name)
}

func run(ctx context.Context, w io.Writer, cfg config, ids []int32) error {
	b, err := backendByName(cfg.backend)
	if err != nil {
		return err
	}
	kv, err := kvByName(cfg.kv)
	if err != nil {
		return err
	}
	acts, err := activationsByName(cfg.acts)
	if err != nil {
		return err
	}
	if cfg.mode != "prefill" && cfg.mode != "step" {
		return fmt.Errorf("-mode %q: want prefill or step", cfg.mode)
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
