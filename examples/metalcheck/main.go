// Command metalcheck checks the Metal backend on this machine, the program to run on a
// Mac before trusting it:
//
//  1. every kernel against the Go code that owns its math (ternary, hadamard, qwen35),
//     on random inputs at small odd shapes and at the 27B model's shapes;
//  2. a model (a synthetic one by default) through the CPU backend (float32 activations)
//     and the Metal backend: the logits of every prompt position, a step-by-step walk,
//     and greedy generation, compared;
//  3. the Metal backend's speed: prefill and decode tokens per second, and the decode's
//     weight bandwidth (bytes a token reads × tokens per second) against the device's;
//  4. the model stored as PTQ1_0 (the synthetic one rewritten in that format, or the file
//     given as -ptq1-model): parity with the CPU backend and speed, the decode rated
//     against the PQ2_0 model's (target ≥ 90%);
//  5. the bandwidth of each of the 27B model's matrix-vector product shapes against a
//     streaming read of as many bytes on the same device, timed the same way.
//
// It ends with a summary to paste into an issue (device, OS, GPU families, working set,
// parity, speeds, every failure with its message), and -json FILE writes all of it as
// JSON (the Report type), also when a check fails or an error stops the run.
//
// Usage:
//
//	metalcheck [-device metal|emulator] [-model FILE | -preset NAME] [-real] [-prompt N]
//	           [-gen N] [-kv f16|f32|int8|q8] [-bandwidth GB/s] [-cpu=false] [-variants=false]
//	           [-ptq1=false] [-ptq1-model FILE] [-bench=false] [-json FILE]
//
// -device emulator runs the same kernels and host code on the CPU through the MSL
// emulator (Linux, clang++): slow, for checking this program itself. It exits with
// status 1 when a check fails.
//
// Without -preset (and -model) the synthetic model is chosen from the GPU's recommended
// working set and the disk space free where the temporary model files go ($TMPDIR): the
// 27B model where its weights take at most half the working set (a 24 GB Mac or larger;
// not a 16 GB one, whose working set is about 10.7 GiB) and its file leaves 2 GiB of that
// disk free; otherwise the 27B model's widths with four layers (real-widths) under the
// same two conditions; otherwise tiny. On the emulator it is tiny. The engines it times
// are opened one at a time and each is closed before the next, so that no more than one
// model's weights are on the GPU at once; likewise one temporary model file is on disk
// at a time (the PQ2_0 one is removed before the PTQ1_0 one is written).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/metal"
	"github.com/bonsai-go/sdk/metal/emulator"
	"github.com/bonsai-go/sdk/metal/kernelcheck"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// newEmulator makes the emulated backend (a variable for the tests, which count the
// devices open at once).
var newEmulator = emulator.New

type config struct {
	device, model, preset, kv string
	real, cpu, variants       bool
	ptq1                      bool   // also run the model stored as PTQ1_0
	ptq1Model                 string // the PTQ1_0 file (default: the synthetic model rewritten)
	prompt, gen               int
	bandwidth                 float64
	seed                      uint64
	bench                     bool   // time the product shapes against a streaming read
	json                      string // write the report as JSON to this file
}

func main() {
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // the error is printed: by the flag package with the usage, or on one line
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ok, err := run(ctx, os.Stdout, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "metalcheck:", err)
		os.Exit(1)
	}
	if !ok {
		fmt.Println("FAILED")
		os.Exit(1)
	}
	fmt.Println("ALL OK")
}

// parseFlags parses args into fs and checks every flag's value before anything runs.
func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var cfg config
	fs.StringVar(&cfg.device, "device", "metal", "metal (this Mac's GPU) or emulator (the MSL emulator on the CPU)")
	fs.StringVar(&cfg.model, "model", "", "GGUF model `file`, or hf:ORG/NAME/FILE to pull from the Hugging Face Hub (default: a synthetic model, see -preset)")
	fs.StringVar(&cfg.preset, "preset", "", "synthetic preset when no -model: "+strings.Join(synth.Presets(), ", ")+presetDefault())
	fs.BoolVar(&cfg.real, "real", true, "also check the kernels at the 27B model's shapes")
	fs.BoolVar(&cfg.cpu, "cpu", true, "compare with the CPU backend (slow for the 27B model)")
	fs.BoolVar(&cfg.variants, "variants", true, "also time the decode with the GDN layers split in two dispatches and with the prefill kernels (unfused)")
	fs.IntVar(&cfg.prompt, "prompt", 24, "prompt tokens for the parity and prefill measurements, ≥ 1")
	fs.IntVar(&cfg.gen, "gen", 32, "tokens to generate greedily, ≥ 0")
	fs.StringVar(&cfg.kv, "kv", "f16", "KV cache precision: "+metalKV+" (the Metal backend has no q4 cache)")
	fs.Float64Var(&cfg.bandwidth, "bandwidth", 0, "the device's practical read bandwidth in GB/s, to rate the decode, ≥ 0 (0: none; an M4 Pro's is about 245)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the kernel checks' inputs and the synthetic model")
	fs.BoolVar(&cfg.ptq1, "ptq1", true, "also check and time the model stored as PTQ1_0 (the synthetic model rewritten in that format, or -ptq1-model)")
	fs.BoolVar(&cfg.bench, "bench", true, "time the 27B model's product shapes against a streaming read of the same bytes (subsampled on the emulator)")
	fs.StringVar(&cfg.json, "json", "", "also write the report as JSON to `file` (written at the end, also when a check fails)")
	fs.StringVar(&cfg.ptq1Model, "ptq1-model", "", "the PTQ1_0 GGUF `file` to check with -ptq1 when -model is given")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: metalcheck [flags]\n\nChecks the Metal kernels, the backend's parity with the CPU backend, and its speed.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := cli.ParseFlags(fs, args); err != nil {
		return cfg, err
	}
	_, err := validate(cfg)
	if err := cli.CheckFlags(fs, "metalcheck", err); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// run performs the checks, writing the report to w and, with cfg.json, to that file; it
// returns false when one failed.
func run(ctx context.Context, w io.Writer, cfg config) (bool, error) {
	rep := newReport(cfg)
	ok, err := check(ctx, w, cfg, rep)
	if err != nil {
		rep.fail("stopped: %v", err)
	}
	rep.OK = ok && err == nil && len(rep.Failures) == 0
	rep.summary(w)
	if cfg.json != "" {
		if jerr := rep.writeJSON(cfg.json); jerr != nil {
			return false, errors.Join(err, fmt.Errorf("-json: %w", jerr))
		}
		fmt.Fprintln(w, "report written to", cfg.json)
	}
	return ok && rep.OK, err
}

// check performs the checks, writing the report to w and recording it in rep.
func check(ctx context.Context, w io.Writer, cfg config, rep *Report) (bool, error) {
	kv, err := validate(cfg)
	if err != nil {
		return false, err
	}
	var newB func(...metal.Option) bonsai.Backend
	switch cfg.device {
	case "metal":
		newB = metal.New
		info, err := metal.DeviceInfo()
		if err != nil {
			return false, err
		}
		fmt.Fprintln(w, "device:", info)
		sys, err := metal.System()
		if err != nil {
			return false, err
		}
		rep.System = &sys
		fmt.Fprintf(w, "OS: %s; GPU families: %v\n", sys.OS, sys.Families)
		if cfg.preset == "" && cfg.model == "" {
			ws, err := metal.RecommendedWorkingSet()
			if err != nil {
				return false, err
			}
			dir := tempDir()
			free := freeDisk(dir)
			if cfg.preset, err = choosePreset(ws, free); err != nil {
				return false, err
			}
			disk := "unknown free disk"
			if free >= 0 {
				disk = fmt.Sprintf("%.1f GiB free", float64(free)/(1<<30))
			}
			fmt.Fprintf(w, "model: the synthetic %s preset, chosen for a working set of %.1f GiB and %s in %s (-preset to choose)\n", cfg.preset, float64(ws)/(1<<30), disk, dir)
		}
	case "emulator":
		newB = newEmulator
		fmt.Fprintln(w, "device: the MSL emulator (CPU); speeds below are the emulator's, not a GPU's")
		host, _ := os.Hostname()
		rep.System = &metal.SystemInfo{Device: "emulator", OS: fmt.Sprintf("%s/%s on %s", runtime.GOOS, runtime.GOARCH, host)}
		if cfg.preset == "" {
			cfg.preset = "tiny"
		}
	default:
		return false, fmt.Errorf("-device %q: want metal or emulator", cfg.device)
	}
	// Before the kernel checks, which take minutes: what would stop the run later.
	if err := checkModel(cfg); err != nil {
		return false, err
	}
	b := newB()
	ok := true

	// 1. Kernels.
	fmt.Fprintln(w, "\n== kernels against their Go references")
	checks, err := kernelcheck.Run(b, kernelcheck.Options{Real: cfg.real, Seed: cfg.seed, Log: func(c kernelcheck.Check) {
		fmt.Fprintln(w, c)
		rep.addKernel(c)
	}})
	if err != nil {
		return false, err
	}
	failed := 0
	for _, c := range checks {
		if !c.OK() {
			failed++
		}
	}
	fmt.Fprintf(w, "%d checks, %d failed\n", len(checks), failed)
	ok = ok && failed == 0

	// 1b. The products' bandwidth against the streaming read.
	if cfg.bench {
		shapes := kernelcheck.ProductShapes
		if cfg.device == "emulator" {
			// Emulated speed means nothing: the real shapes' inputs, 16 rows each, to
			// run the same code.
			rep.RatesNote = "emulated, each shape subsampled to 16 rows: the speeds are the CPU emulator's and mean nothing for a GPU"
			shapes = nil
			for _, s := range kernelcheck.ProductShapes {
				shapes = append(shapes, kernelcheck.Shape{K: s.K, N: 16})
			}
		}
		fmt.Fprintln(w, "\n== product shapes (PQ2_0) against a streaming read of the same bytes, medians of 5")
		if rep.RatesNote != "" {
			fmt.Fprintln(w, rep.RatesNote)
		}
		rates, err := kernelcheck.Bench(b, kernelcheck.BenchOptions{Shapes: shapes, Seed: cfg.seed, Log: func(r kernelcheck.Rate) {
			fmt.Fprintln(w, r)
			rep.addRate(r, kernelcheck.ProductShapes[len(rep.Rates)].N)
		}})
		if err != nil {
			return false, err
		}
		for _, r := range rates {
			ok = ok && r.Failure == nil
		}
	}

	// 2. The model.
	path, err := cli.ModelPath(ctx, os.Stderr, "metalcheck", cfg.model)
	if err != nil {
		return false, err
	}
	// The synthetic model's directory, removed before the PTQ1_0 model is written (one
	// 27B file, 6.7 GiB, on disk at a time) or, on an error, when check returns.
	tmp := ""
	removeTmp := func() {
		if tmp != "" {
			os.RemoveAll(tmp)
			tmp = ""
		}
	}
	defer removeTmp()
	if path == "" {
		if tmp, err = os.MkdirTemp(tempRoot, "metalcheck-"); err != nil {
			return false, err
		}
		c, err := synth.Preset(cfg.preset)
		if err != nil {
			return false, err
		}
		path = filepath.Join(tmp, cfg.preset+".gguf")
		rep.Model = "synthetic " + cfg.preset
		fmt.Fprintf(w, "\nwriting the synthetic %s model (random weights) ...\n", cfg.preset)
		if err := writeModel(ctx, path, synth.Options{Config: c, Seed: cfg.seed}, nil); err != nil {
			return false, err
		}
	}
	if rep.Model == "" {
		rep.Model = path
	}
	c, bytesPerToken, err := describe(path)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "\n== model %s: %d layers, embedding %d, vocabulary %d; a decode step reads %.3f GB of weights in %d dispatches (%d with the logits read back)\n",
		filepath.Base(path), c.Layers, c.Embedding, c.Vocab, float64(bytesPerToken)/1e9, metal.DecodeDispatches(c, true), metal.DecodeDispatches(c, false))
	ctxSize := cfg.prompt + cfg.gen + 1
	dev, err := bonsai.Open(path, bonsai.WithBackend(b), bonsai.WithKVCache(kv), bonsai.WithContextSize(ctxSize), bonsai.WithLoadContext(ctx))
	if err != nil {
		return false, err
	}
	devOpen := true
	closeDev := func() {
		if devOpen {
			dev.Close()
			devOpen = false
		}
	}
	defer closeDev()
	prompt := promptIDs(cfg, c.Vocab)
	if cfg.cpu {
		cpu, err := bonsai.Open(path, bonsai.WithActivations(bonsai.ActivationsFloat32), bonsai.WithKVCache(kv),
			bonsai.WithContextSize(ctxSize), bonsai.WithLoadContext(ctx))
		if err != nil {
			return false, err
		}
		pr, err := parity(ctx, w, cpu, dev, prompt, cfg.gen)
		cpu.Close()
		if err != nil {
			return false, err
		}
		pr.Format = "PQ2_0"
		rep.addParity(pr)
		ok = ok && pr.OK
	}

	// 3. Speed.
	var pq2Decode float64 // the default plan's decode tok/s, the PTQ1_0 model's reference
	if cfg.gen > 0 {
		// One engine at a time: the default one (already open), then each variant,
		// opened after the one before is closed.
		variants := []struct {
			name string
			opt  metal.Option
			n    int
		}{{"fused (default)", nil, metal.DecodeDispatches(c, true)}}
		if cfg.variants {
			variants = append(variants, []struct {
				name string
				opt  metal.Option
				n    int
			}{
				{"GDN recurrence per head group", metal.WithSplitGDNDecode(true), metal.DecodeDispatches(c, true)},
				{"unfused (prefill kernels)", metal.WithUnfusedDecode(true), 0},
			}...)
		}
		fmt.Fprintf(w, "\n== speed (%s KV cache, greedy, the argmax on the device)\n", cfg.kv)
		for _, v := range variants {
			m := dev
			if v.opt != nil {
				closeDev()
				if m, err = bonsai.Open(path, bonsai.WithBackend(newB(v.opt)), bonsai.WithKVCache(kv), bonsai.WithContextSize(ctxSize), bonsai.WithLoadContext(ctx)); err != nil {
					return false, err
				}
			}
			u, err := speed(ctx, m, prompt, cfg.gen)
			if v.opt != nil {
				m.Close()
			} else {
				closeDev()
			}
			if err != nil {
				return false, err
			}
			if v.opt == nil {
				pq2Decode = u.DecodeTokensPerSecond
			}
			gbs := u.DecodeTokensPerSecond * float64(bytesPerToken) / 1e9
			disp := ""
			if v.n > 0 {
				disp = fmt.Sprintf(", %d dispatches", v.n)
			}
			fmt.Fprintf(w, "%-26s prefill %d tokens at %.1f tok/s; decode %d tokens at %.2f tok/s = %.1f GB/s of weights%s",
				v.name+":", u.PromptTokens, u.PrefillTokensPerSecond, u.CompletionTokens, u.DecodeTokensPerSecond, gbs, disp)
			if cfg.bandwidth > 0 {
				fmt.Fprintf(w, " = %.0f%% of %.0f GB/s", 100*gbs/cfg.bandwidth, cfg.bandwidth)
			}
			fmt.Fprintln(w)
			rep.Speed = append(rep.Speed, SpeedResult{Format: "PQ2_0", Plan: v.name, PrefillTokens: u.PromptTokens, PrefillTokS: u.PrefillTokensPerSecond,
				DecodeTokens: u.CompletionTokens, DecodeTokS: u.DecodeTokensPerSecond, WeightGBps: gbs, Dispatches: v.n})
		}
		if cfg.bandwidth > 0 {
			fmt.Fprintf(w, "target: ≥ 85%% of %.0f GB/s = %.1f tok/s (ceiling %.1f tok/s)\n", cfg.bandwidth,
				0.85*cfg.bandwidth*1e9/float64(bytesPerToken), cfg.bandwidth*1e9/float64(bytesPerToken))
		}
	}
	// 4. PTQ1_0, on a device of its own: the PQ2_0 model's is closed first, and its
	// temporary file removed.
	closeDev()
	removeTmp()
	if cfg.ptq1 {
		pass, err := ptq1Check(ctx, w, cfg, rep, newB, kv, pq2Decode)
		if err != nil {
			return false, fmt.Errorf("PTQ1_0: %w", err)
		}
		ok = ok && pass
	}
	return ok, nil
}

// promptIDs is the prompt of the parity and speed measurements.
func promptIDs(cfg config, vocab int) []int32 {
	prompt := make([]int32, cfg.prompt)
	for i := range prompt {
		prompt[i] = int32((uint64(i)*7919 + cfg.seed*104729 + 13) % uint64(min(vocab, 1<<20)))
	}
	return prompt
}

// ptq1Check runs the model stored as PTQ1_0 — the synthetic model written again in that
// format (the same values), or cfg.ptq1Model — through the Metal backend: its parity
// with the CPU backend on the same file and its speed, the decode rated against the
// PQ2_0 model's (pq2Decode tok/s, when measured; the target is ≥ 90%).
func ptq1Check(ctx context.Context, w io.Writer, cfg config, rep *Report, newB func(...metal.Option) bonsai.Backend, kv bonsai.KVPrecision, pq2Decode float64) (bool, error) {
	path := cfg.ptq1Model
	if path == "" {
		if cfg.model != "" {
			fmt.Fprintln(w, "\n== PTQ1_0: skipped (give the PTQ1_0 file as -ptq1-model)")
			return true, nil
		}
		dir, err := os.MkdirTemp(tempRoot, "metalcheck-ptq1-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(dir)
		c, err := synth.Preset(cfg.preset)
		if err != nil {
			return false, err
		}
		path = filepath.Join(dir, cfg.preset+"-ptq1.gguf")
		fmt.Fprintf(w, "\nwriting the synthetic %s model as PTQ1_0 ...\n", cfg.preset)
		if err := writeModel(ctx, path, synth.Options{Config: c, Seed: cfg.seed, Format: ternary.PTQ1_0}, nil); err != nil {
			return false, err
		}
	}
	c, bytesPerToken, err := describe(path)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "\n== PTQ1_0 model %s: a decode step reads %.3f GB of weights in %d dispatches\n",
		filepath.Base(path), float64(bytesPerToken)/1e9, metal.DecodeDispatches(c, true))
	ctxSize := cfg.prompt + cfg.gen + 1
	dev, err := bonsai.Open(path, bonsai.WithBackend(newB()), bonsai.WithKVCache(kv), bonsai.WithContextSize(ctxSize), bonsai.WithLoadContext(ctx))
	if err != nil {
		return false, err
	}
	defer dev.Close()
	prompt := promptIDs(cfg, c.Vocab)
	ok := true
	if cfg.cpu {
		cpu, err := bonsai.Open(path, bonsai.WithActivations(bonsai.ActivationsFloat32), bonsai.WithKVCache(kv),
			bonsai.WithContextSize(ctxSize), bonsai.WithLoadContext(ctx))
		if err != nil {
			return false, err
		}
		pr, err := parity(ctx, w, cpu, dev, prompt, cfg.gen)
		cpu.Close()
		if err != nil {
			return false, err
		}
		pr.Format = "PTQ1_0"
		rep.addParity(pr)
		ok = pr.OK
	}
	if cfg.gen > 0 {
		u, err := speed(ctx, dev, prompt, cfg.gen)
		if err != nil {
			return false, err
		}
		gbs := u.DecodeTokensPerSecond * float64(bytesPerToken) / 1e9
		fmt.Fprintf(w, "PTQ1_0 fused (default):    prefill %d tokens at %.1f tok/s; decode %d tokens at %.2f tok/s = %.1f GB/s of weights",
			u.PromptTokens, u.PrefillTokensPerSecond, u.CompletionTokens, u.DecodeTokensPerSecond, gbs)
		if pq2Decode > 0 {
			fmt.Fprintf(w, " = %.0f%% of the PQ2_0 model's decode (target ≥ 90%%)", 100*u.DecodeTokensPerSecond/pq2Decode)
		}
		fmt.Fprintln(w)
		rep.Speed = append(rep.Speed, SpeedResult{Format: "PTQ1_0", Plan: "fused (default)", PrefillTokens: u.PromptTokens, PrefillTokS: u.PrefillTokensPerSecond,
			DecodeTokens: u.CompletionTokens, DecodeTokS: u.DecodeTokensPerSecond, WeightGBps: gbs, Dispatches: metal.DecodeDispatches(c, true)})
	}
	return ok, nil
}

// The default model's limits (choosePreset): the weights at most weightShare of the
// GPU's recommended working set, and diskSpare bytes left free after the temporary model
// file is written.
//
// Half the working set, because the run holds more than the weights: the KV cache and
// activations, the CPU backend's parity run over the same file (its own mapping of the
// same pages, its float32 activations), and what the rest of the system keeps on the GPU
// — all in the same unified memory. A 16 GB Mac's working set (about 10.7 GiB, two
// thirds of its memory) would leave under 4 GiB for all that beside the 27B model's
// 6.7 GiB, and the run would swap for tens of minutes.
//
// 2 GiB of disk, because on macOS the swap files share the disk the temporary directory
// is on: a file that filled the disk would make the system, not the check, fail.
const (
	weightShare = 0.5
	diskSpare   = 2 << 30
)

// defaultPresets are choosePreset's candidates, largest first; tiny (under 1 MiB) is the
// last resort.
var defaultPresets = []string{"27b", "real-widths"}

// choosePreset picks the synthetic model for a GPU whose recommended working set is ws
// bytes (≤ 0: unknown) and a temporary directory with free bytes free (< 0: unknown):
// the largest of defaultPresets whose weights take at most weightShare of ws
// and whose largest temporary file leaves diskSpare free, tiny when none does. The 27B
// preset needs both figures known; real-widths (under 0.4 GiB) is taken on an unknown
// one, as before the disk was looked at.
func choosePreset(ws, free int64) (string, error) {
	for _, name := range defaultPresets {
		weights, err := presetBytes(name, ternary.PQ2_0)
		if err != nil {
			return "", err
		}
		file, err := tempBytes(name, true)
		if err != nil {
			return "", err
		}
		known := ws > 0 && free >= 0
		if name == "27b" && !known {
			continue
		}
		if (ws <= 0 || float64(weights) <= weightShare*float64(ws)) && (free < 0 || free-file >= diskSpare) {
			return name, nil
		}
	}
	return "tiny", nil
}

// presetDefault is the -preset flag's account of the default, with the 27B file's size.
func presetDefault() string {
	size := "a 7 GB"
	if n, err := tempBytes("27b", true); err == nil {
		size = fmt.Sprintf("its %.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf(" (default on metal: 27b where its weights take at most %.0f%% of the GPU's working set and %s file leaves %d GiB free in the temporary directory, else real-widths on the same terms, else tiny; tiny on the emulator)",
		100*weightShare, size, diskSpare>>30)
}

// presetBytes is the size of a synthetic preset's tensors in a format, from its tensor
// table (the file adds its header: a few MB of vocabulary for the 27B preset).
func presetBytes(name string, format ternary.Format) (int64, error) {
	c, err := synth.Preset(name)
	if err != nil {
		return 0, err
	}
	infos, err := synth.TensorInfos(synth.Options{Config: c, Seed: 1, Format: format})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range infos {
		sz, err := t.Size()
		if err != nil {
			return 0, err
		}
		n += sz
	}
	return n, nil
}

// tempBytes is the most disk a preset's temporary model files take at once: one file at
// a time, the PQ2_0 one, then (with ptq1) the PTQ1_0 one, with 16 MiB for the header.
func tempBytes(name string, ptq1 bool) (int64, error) {
	n, err := presetBytes(name, ternary.PQ2_0)
	if err != nil {
		return 0, err
	}
	if ptq1 {
		m, err := presetBytes(name, ternary.PTQ1_0)
		if err != nil {
			return 0, err
		}
		n = max(n, m)
	}
	return n + 16<<20, nil
}

// tempRoot is where the temporary models go ("": the system's temporary directory); a
// variable for the tests.
var tempRoot = ""

// writeModel writes a synthetic model (a variable for the tests, which count the
// temporary models on disk).
var writeModel = synth.WriteFile

// freeDisk is the bytes free on the disk that holds a directory, -1 when unknown (a
// variable for the tests, which make the disk small).
var freeDisk = diskFree

// tempDir is the directory the temporary models go in.
func tempDir() string {
	if tempRoot != "" {
		return tempRoot
	}
	return os.TempDir()
}

// metalKV are the values of -kv the Metal backend takes: every program's, but q4.
const metalKV = "f16, f32, int8 (alias q8)"

// validate checks the flags' values on their own, before anything runs (a value that
// would make the run panic or mean nothing stops it with one line), and returns the KV
// cache precision -kv names.
func validate(cfg config) (bonsai.KVPrecision, error) {
	if err := cli.OneOf("device", cfg.device, "metal", "emulator"); err != nil {
		return 0, err
	}
	kv, err := cli.ParseKV(cfg.kv)
	if err == nil && kv == bonsai.KVQ4 {
		err = &cli.FlagError{Flag: "kv", Value: strconv.Quote(cfg.kv), Want: "must be one of " + metalKV + ": the Metal backend has no q4 cache"}
	}
	if err != nil {
		return 0, err
	}
	for _, err := range []error{
		cli.AtLeast("prompt", cfg.prompt, 1), // the parity, prefill and warm-up runs need a prompt
		cli.AtLeast("gen", cfg.gen, 0),
		cli.AtLeast("bandwidth", cfg.bandwidth, 0),
	} {
		if err != nil {
			return 0, err
		}
	}
	switch {
	case cfg.model != "" && cfg.preset != "":
		return 0, fmt.Errorf("-model and -preset %s: give one (-preset chooses a synthetic model instead of the file)", cfg.preset)
	case cfg.ptq1Model != "" && !cfg.ptq1:
		return 0, fmt.Errorf("-ptq1-model with -ptq1=false: the PTQ1_0 model would not be checked")
	}
	if cfg.preset != "" {
		if err := cli.OneOf("preset", cfg.preset, synth.Presets()...); err != nil {
			return 0, err
		}
	}
	return kv, nil
}

// checkModel checks, once the preset is chosen, what would otherwise stop the run after
// the kernel checks: that the model files open, that the prompt and generation fit in the
// model's context, and that the temporary model files fit on the disk.
func checkModel(cfg config) error {
	var contexts []int
	for _, f := range []struct{ flag, path string }{{"-model", cfg.model}, {"-ptq1-model", cfg.ptq1Model}} {
		if f.path == "" {
			continue
		}
		c, _, err := describe(f.path)
		if err != nil {
			return fmt.Errorf("%s: %w", f.flag, err)
		}
		contexts = append(contexts, c.ContextLength)
	}
	if cfg.model == "" {
		c, err := synth.Preset(cfg.preset)
		if err != nil {
			return err
		}
		contexts = append(contexts, c.ContextLength)
		// ptq1Check writes the PTQ1_0 model unless it is given.
		need, err := tempBytes(cfg.preset, cfg.ptq1 && cfg.ptq1Model == "")
		if err != nil {
			return err
		}
		dir := tempDir()
		if free := freeDisk(dir); free >= 0 && need > free {
			return fmt.Errorf("-preset %s: its temporary model takes %.2f GiB, %s has %.2f GiB free (set TMPDIR, choose a smaller -preset, or give -model FILE)",
				cfg.preset, float64(need)/(1<<30), dir, float64(free)/(1<<30))
		}
	}
	for _, n := range contexts {
		// Each alone first: their sum could overflow.
		if cfg.prompt > n || cfg.gen > n || cfg.prompt+cfg.gen+1 > n {
			return fmt.Errorf("-prompt %d and -gen %d: more than the model's context of %d tokens", cfg.prompt, cfg.gen, n)
		}
	}
	return nil
}

// speed times a greedy generation of gen tokens after the prompt, after a warm-up step.
func speed(ctx context.Context, m *bonsai.Model, prompt []int32, gen int) (bonsai.Usage, error) {
	s, err := m.NewSession()
	if err != nil {
		return bonsai.Usage{}, err
	}
	defer s.Close()
	if err := s.Prefill(ctx, prompt[:1]); err != nil {
		return bonsai.Usage{}, err
	}
	s.Reset()
	p, err := m.Prepare(bonsai.TokenIDs(prompt...), bonsai.GenerateOptions{MaxTokens: gen, SamplerOptions: bonsai.SamplerOptions{Greedy: true}})
	if err != nil {
		return bonsai.Usage{}, err
	}
	res, err := s.Generate(ctx, p).Result()
	return res.Usage, err
}

// describe reads the model's configuration and the bytes of weights a decode step
// reads: every ternary matrix but the embedding table, the BF16 GDN projections and the
// F32 vectors.
func describe(path string) (*qwen35.Config, int64, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	wts, err := qwen35.Bind(f)
	if err != nil {
		return nil, 0, err
	}
	n := wts.TernaryBytes()
	for i := range wts.Layers {
		l := &wts.Layers[i]
		n += int64(len(l.Alpha.Data) + len(l.Beta.Data))
		n += 4 * int64(len(l.AttnNorm)+len(l.PostAttnNorm)+len(l.Conv)+len(l.DTBias)+len(l.A)+len(l.SSMNorm)+len(l.QNorm)+len(l.KNorm))
	}
	c := wts.Config
	return &c, n, nil
}

// parity compares the two models' logits on a prompt (every position), on a step walk
// and on a greedy generation.
func parity(ctx context.Context, w io.Writer, cpu, dev *bonsai.Model, prompt []int32, gen int) (ParityResult, error) {
	var pr ParityResult
	fmt.Fprintln(w, "\n== parity with the CPU backend (float32 activations)")
	rows := func(m *bonsai.Model) ([][]float32, error) {
		s, err := m.NewSession()
		if err != nil {
			return nil, err
		}
		defer s.Close()
		return s.PrefillAll(ctx, prompt)
	}
	want, err := rows(cpu)
	if err != nil {
		return pr, err
	}
	got, err := rows(dev)
	if err != nil {
		return pr, err
	}
	dPre, scale := maxDiff(want, got)
	walk := prompt[:min(len(prompt), 16)]
	steps := func(m *bonsai.Model) ([][]float32, error) {
		s, err := m.NewSession()
		if err != nil {
			return nil, err
		}
		defer s.Close()
		var out [][]float32
		for _, id := range walk {
			if err := s.Step(ctx, id); err != nil {
				return nil, err
			}
			out = append(out, append([]float32(nil), s.Logits()...))
		}
		return out, nil
	}
	wantS, err := steps(cpu)
	if err != nil {
		return pr, err
	}
	gotS, err := steps(dev)
	if err != nil {
		return pr, err
	}
	dStep, _ := maxDiff(wantS, gotS)
	agree := 0
	for i := range wantS {
		if argmax(wantS[i]) == argmax(gotS[i]) {
			agree++
		}
	}
	// A generous bound: float32 sums in another order through every layer, relative to
	// the logits' size.
	tol := 1e-3 * math.Max(scale, 1)
	pass := dPre <= tol && dStep <= tol
	pr = ParityResult{PrefillDiff: finite(dPre), StepDiff: finite(dStep), Bound: tol, ArgmaxAgree: agree, Steps: len(walk), GreedyDiverges: -1, OK: pass}
	fmt.Fprintf(w, "prefill %d positions: max |Δlogit| %.2e (logits up to %.1f; bound %.1e)\nstep walk %d:         max |Δlogit| %.2e, argmax agrees %d/%d\n",
		len(prompt), dPre, scale, tol, len(walk), dStep, agree, len(walk))
	if gen > 0 {
		g := func(m *bonsai.Model) ([]int32, error) {
			s, err := m.NewSession()
			if err != nil {
				return nil, err
			}
			defer s.Close()
			p, err := m.Prepare(bonsai.TokenIDs(prompt...), bonsai.GenerateOptions{MaxTokens: min(gen, 16), SamplerOptions: bonsai.SamplerOptions{Greedy: true}})
			if err != nil {
				return nil, err
			}
			r, err := s.Generate(ctx, p).Result()
			return r.Tokens, err
		}
		a, err := g(cpu)
		if err != nil {
			return pr, err
		}
		b, err := g(dev)
		if err != nil {
			return pr, err
		}
		pr.GreedyTokens = len(a)
		same := len(a) == len(b)
		first := -1
		for i := 0; i < min(len(a), len(b)); i++ {
			if a[i] != b[i] {
				same, first = false, i
				break
			}
		}
		if same {
			fmt.Fprintf(w, "greedy generation:   %d tokens identical\n", len(a))
		} else {
			// A near-tie can flip one token: not a failure by itself, but reported.
			if first < 0 { // one is a prefix of the other
				first = min(len(a), len(b))
			}
			pr.GreedyDiverges = first
			fmt.Fprintf(w, "greedy generation:   differs from token %d (cpu %v, metal %v)\n", first, a, b)
		}
	}
	if !pass {
		fmt.Fprintln(w, "PARITY FAILED")
	}
	return pr, nil
}

func maxDiff(a, b [][]float32) (d, scale float64) {
	for i := range a {
		for j := range a[i] {
			x := math.Abs(float64(a[i][j]) - float64(b[i][j]))
			if math.IsNaN(x) {
				x = math.Inf(1)
			}
			d = math.Max(d, x)
			scale = math.Max(scale, math.Abs(float64(a[i][j])))
		}
	}
	return d, scale
}

func argmax(v []float32) int {
	b := 0
	for i, x := range v {
		if x > v[b] {
			b = i
		}
	}
	return b
}
