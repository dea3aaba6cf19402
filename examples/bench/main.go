// Command bench measures a model on this machine: prefill and decode speed, where a
// decoded token's time goes by kind of operation, the machine's streaming read bandwidth
// measured in the same run, and the decode speed as a fraction of the bandwidth ceiling
// (bandwidth ÷ the weight bytes a token reads).
//
// Usage:
//
//	bench [-model FILE | -preset NAME] [-threads N] [-prompt-tokens P] [-gen-tokens G] [-warmup]
//	      [-context N] [-kv f16|f32|int8|q8|q4]
//	      [-speculative [-spec-prompt FILE] [-temperature T] [-spec-max-draft K] [-spec-replay N] [-spec-mtp]]
//
// With -speculative it then generates -gen-tokens after the prompt three times, in
// fresh sessions: with plain steps, with the automatic speculative decoding (lookup
// drafts, the cost model choosing each pass's draft length k from the pass times it
// measured and the drafts' acceptance) and with lookup drafts at every pass; it
// reports each one's tok/s against the plain one, the tokens drafted and accepted, the
// mean k and the tokens a pass gave, and the pass times by width the cost model used.
// With -spec-replay N (greedy) a fourth run drafts the plain run's own continuation,
// every Nth drafted token wrong: the speed-up where the output repeats what the drafter
// sees, at a known acceptance — a random-weight model's output seldom repeats itself.
// With -spec-mtp two more runs draft with the model file's multi-token-prediction head
// (at every pass, "mtp", and under the cost model, "mtp-auto"); a file without a head
// is refused, and with -preset the synthetic model is written with one.
//
// With -context N it then decodes at position N: the KV caches and GDN states are filled
// with synthetic values (backendtest.FillSynthetic; their content does not change the speed),
// so a 32k or 128k context takes seconds to measure instead of a long prefill. The report
// gives the decode speed against the short-context one of the same run, and the
// attention time per token next to the time to read the KV cache once at the bandwidth
// measured in the same run.
//
// With -preset it writes that synthetic model (internal presets tiny, small,
// real-widths, 27b) to a temporary directory first; -keep FILE keeps it for later runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/bonsai/vulkan"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/metal"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

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
	if err := run(ctx, os.Stdout, os.Stderr, cfg); err != nil {
		cli.Fatal("bench", err)
	}
}

// parseFlags parses args into fs, and checks every flag before anything is loaded.
func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var cfg config
	fs.StringVar(&cfg.model, "model", "", cli.ModelUsage)
	fs.StringVar(&cfg.preset, "preset", "", "synthetic preset to write and measure: "+strings.Join(synth.Presets(), ", ")+" (default real-widths when no -model)")
	fs.StringVar(&cfg.keep, "keep", "", "with -preset: write the model to this file and keep it (reused if it exists)")
	fs.IntVar(&cfg.threads, "threads", 0, cli.ThreadsUsage)
	fs.IntVar(&cfg.prompt, "prompt-tokens", 512, "prompt length for the prefill measurement, ≥ 0 (0 skips it)")
	fs.IntVar(&cfg.gen, "gen-tokens", 16, "tokens to decode, ≥ 1")
	fs.StringVar(&cfg.acts, "activations", "int8", "activation precision: int8 or float32")
	fs.DurationVar(&cfg.bwTime, "bandwidth-time", 3*time.Second, "how long to measure the read bandwidth, > 0")
	fs.StringVar(&cfg.cpuprofile, "cpuprofile", "", "write a CPU profile of the decode steps to this file")
	fs.BoolVar(&cfg.mmap, "mmap", true, "memory-map the model (false: read it into memory, in huge pages where the OS allows)")
	fs.IntVar(&cfg.context, "context", 0, "also decode at this position, with the state filled synthetically, ≥ 0 (0: no)")
	fs.StringVar(&cfg.kv, "kv", "f16", cli.KVUsage)
	fs.StringVar(&cfg.weightFormat, "weight-format", "", cli.WeightFormatUsage)
	fs.StringVar(&cfg.layout, "layout", "auto", cli.LayoutUsage)
	fs.BoolVar(&cfg.amx, "amx", true, "multiply batches (prefill) with Intel AMX where the CPU has it (false: the AVX-512 VNNI kernels, for comparison; the same results)")
	fs.StringVar(&cfg.backend, "backend", "auto", "where the model runs: "+strings.Join(cli.Backends, ", ")+" (auto: Metal on Apple silicon, else a Vulkan GPU, else the CPU); on a GPU the bandwidth is the device's, read by a kernel in the same run")
	fs.BoolVar(&cfg.speculative, "speculative", false, "also generate -gen-tokens after the prompt (or -spec-prompt) without speculative decoding, with the automatic policy (lookup drafts, the cost model choosing k) and with lookup drafts at every pass, and compare: tok/s, acceptance, tokens per pass, the mean k drafted, the pass times by width")
	fs.StringVar(&cfg.specPrompt, "spec-prompt", "", "with -speculative: a text `file` whose contents are the prompt (tokenized as a plain text), instead of the synthetic -prompt-tokens")
	fs.Float64Var(&cfg.specTemp, "temperature", 0, "with -speculative: the sampling temperature of the generations, seeded (0: greedy, and the tokens are compared)")
	fs.IntVar(&cfg.specReplay, "spec-replay", 0, "with -speculative, greedy: also a run whose drafter proposes the plain run's own continuation with every `N`th drafted token wrong, the cost model choosing k (0: no such run)")
	fs.BoolVar(&cfg.specMTP, "spec-mtp", false, "with -speculative: also draft with the model file's multi-token-prediction head, at every pass and under the cost model (a model without a head is refused); with -preset: write the synthetic model with a head")
	fs.IntVar(&cfg.specMaxDraft, "spec-max-draft", 0, "with -speculative: SpeculativeOptions.MaxDraft, the most tokens drafted a pass (0: the default, 8)")
	fs.BoolVar(&cfg.warmup, "warmup", false, "read every weight page at load, so that the first measurements do not wait for the disk")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bench [-model FILE | -preset NAME] [flags]\n\n"+
			"Measures prefill and decode speed against the machine's read bandwidth.\n\nflags:\n")
		fs.PrintDefaults()
	}
	cfg.pairedBytes = 1 << 30
	if err := cli.ParseFlags(fs, args); err != nil {
		return cfg, err
	}
	if err := cli.CheckFlags(fs, "bench", cfg.check()); err != nil {
		return cfg, err
	}
	return cfg, nil
}

type config struct {
	amx                       bool
	model, preset, keep, acts string
	kv, weightFormat, backend string
	context                   int
	cpuprofile                string
	mmap, warmup, speculative bool
	specPrompt                string  // -spec-prompt
	specTemp                  float64 // -temperature
	specMaxDraft              int     // -spec-max-draft
	specReplay                int     // -spec-replay
	specMTP                   bool    // -spec-mtp
	layout                    string
	threads, prompt, gen      int
	bwTime                    time.Duration
	pairedBytes               int // the buffer of the bandwidth pass after each long-context step
}

// check checks the flags' values (cli.CheckFlags runs it, with the shared rules; run
// again, for a config made without flags).
func (cfg *config) check() error {
	if cfg.model != "" && cfg.preset != "" {
		return errors.New("-model and -preset exclude each other")
	}
	if _, err := cli.ParseActivations(cfg.acts); err != nil {
		return err
	}
	if _, err := cli.ParseKV(cfg.kv); err != nil {
		return err
	}
	if cfg.weightFormat != "" {
		if _, err := ternary.ParseFormat(cfg.weightFormat); err != nil {
			return &cli.FlagError{Flag: "weight-format", Value: strconv.Quote(cfg.weightFormat), Want: "must be pq2_0 or ptq1_0"}
		}
	}
	if cfg.layout != "" {
		if err := cli.OneOf("layout", cfg.layout, cli.Layouts...); err != nil {
			return err
		}
	}
	for _, err := range []error{cli.AtLeast("threads", cfg.threads, 0), cli.AtLeast("gen-tokens", cfg.gen, 1),
		cli.AtLeast("prompt-tokens", cfg.prompt, 0), cli.AtLeast("context", cfg.context, 0),
		cli.AtLeast("temperature", cfg.specTemp, 0), cli.AtLeast("spec-max-draft", cfg.specMaxDraft, 0), cli.AtLeast("spec-replay", cfg.specReplay, 0)} {
		if err != nil {
			return err
		}
	}
	return nil
}

func run(ctx context.Context, out, stderr io.Writer, cfg config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	ternary.SetAMX(cfg.amx)
	acts, _ := cli.ParseActivations(cfg.acts)
	kv, _ := cli.ParseKV(cfg.kv)
	var transcodeTo ternary.Format
	if cfg.weightFormat != "" {
		transcodeTo, _ = ternary.ParseFormat(cfg.weightFormat)
	}
	path, err := cli.ModelPath(ctx, stderr, "bench", cfg.model)
	if err != nil {
		return err
	}
	if path == "" {
		if cfg.preset == "" {
			cfg.preset = "real-widths"
		}
		c, err := synth.Preset(cfg.preset)
		if err != nil {
			return err
		}
		if cfg.specMTP {
			c.NextN = 1
		}
		path = cfg.keep
		if path == "" {
			dir, err := os.MkdirTemp("", "bonsai-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			path = filepath.Join(dir, cfg.preset+".gguf")
		}
		if _, err := os.Stat(path); err != nil {
			fmt.Fprintf(out, "writing the synthetic %s model to %s …\n", cfg.preset, path)
			start := time.Now()
			if err := synth.WriteFile(ctx, path, synth.Options{Config: c, Seed: 1}, nil); err != nil {
				return err
			}
			fmt.Fprintf(out, "  written in %.1f s\n", time.Since(start).Seconds())
		} else {
			fmt.Fprintf(out, "using the synthetic %s model in %s\n", cfg.preset, path)
		}
	}

	var specText []byte
	if cfg.specPrompt != "" {
		if specText, err = os.ReadFile(cfg.specPrompt); err != nil {
			return err
		}
	}
	// A text has no more tokens than bytes (and a BOS).
	l, err := cli.Load(ctx, stderr, "bench", cli.ModelFlags{Model: path, Threads: cfg.threads, Context: max(cfg.prompt, cfg.context, len(specText)+1) + 2*cfg.gen + 1,
		Warmup: cfg.warmup, Backend: cfg.backend, Layout: cfg.layout, WeightFormat: cfg.weightFormat},
		bonsai.WithProfiling(true), bonsai.WithActivations(acts), bonsai.WithMmap(cfg.mmap), bonsai.WithKVCache(kv))
	if err != nil {
		return err
	}
	defer l.Close()
	m := l.Model
	w, ok := m.Driver().Weights().(*qwen35.Weights)
	if !ok {
		return fmt.Errorf("%s: bench measures qwen35 models, not %s", path, m.Architecture())
	}
	if err := checkMTP(cfg, m); err != nil {
		return err
	}
	c := w.Config
	perToken := weightBytesPerToken(w, transcodeTo)
	macs := macsPerToken(w)
	fmt.Fprintf(out, "model       %s: %d layers, embedding %d, vocabulary %d\n", filepath.Base(path), c.Layers, c.Embedding, c.Vocab)
	load := "memory-mapped"
	if !cfg.mmap {
		load = "read into memory"
	}
	if acts == bonsai.ActivationsInt8 {
		load += ", " + cli.WeightsNote(cfg.layout, cfg.weightFormat, w)
	}
	if m.Backend() == "cpu" {
		kern := ternary.Q8Kernel()
		if ternary.InterleavedBatchAMX() {
			kern += ", batches by AMX"
		}
		fmt.Fprintf(out, "machine     %s/%s, %d CPUs; backend %s, %d threads, %s activations (kernel %s), weights %s, KV cache %v\n",
			runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), m.Backend(), m.Threads(), acts, kern, load, kv)
	} else {
		fmt.Fprintf(out, "machine     %s/%s, %d CPUs; backend %s (float32 activations, weights copied to the device), KV cache %v\n",
			runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), m.Backend(), kv)
	}
	fmt.Fprintf(out, "weights     %.3f GB read per decoded token; %.3g G multiply-adds per token\n", float64(perToken)/1e9, float64(macs)/1e9)
	if total, file, anon, ok := residentMemory(); ok {
		size := int64(-1)
		if st, err := os.Stat(path); err == nil {
			size = st.Size()
		}
		fmt.Fprintf(out, "memory      %.2f GB resident after load (%.2f GB of mapped files, %.2f GB anonymous) = %.3f× the file's %.2f GB\n",
			float64(total)/1e9, float64(file)/1e9, float64(anon)/1e9, float64(total)/float64(size), float64(size)/1e9)
	}

	var bw float64
	if gpu := m.Backend(); gpu == "vulkan" || gpu == "metal" {
		// The device's own read rate, by the kernel the products are rated against.
		if gpu == "vulkan" {
			bw, err = vulkan.Bandwidth(ctx, vulkan.Options{}, 1<<30, cfg.bwTime)
		} else {
			bw, err = metal.Bandwidth(ctx, 1<<30, cfg.bwTime)
		}
		if err != nil {
			return fmt.Errorf("measuring the GPU's bandwidth: %w", err)
		}
		fmt.Fprintf(out, "bandwidth   %.2f GB/s streaming read on the GPU (stream_read kernel, 1 GiB, median command buffer); ceiling %.2f tok/s\n",
			bw/1e9, bw/float64(perToken))
	} else {
		bw = ternary.ReadBandwidth(m.Threads(), 1<<30, cfg.bwTime)
		fmt.Fprintf(out, "bandwidth   %.2f GB/s streaming read (%d threads, median pass); ceiling %.2f tok/s\n",
			bw/1e9, m.Threads(), bw/float64(perToken))
	}

	s, err := m.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	prompt := make([]int32, cfg.prompt)
	for i := range prompt {
		prompt[i] = int32((i*7919 + 13) % c.Vocab)
	}
	if cfg.prompt > 0 {
		before := m.Stats().Profile
		start := time.Now()
		if err := s.Prefill(ctx, prompt); err != nil {
			return err
		}
		el := time.Since(start)
		tps := float64(cfg.prompt) / el.Seconds()
		fmt.Fprintf(out, "prefill     %d tokens in %.2f s: %.2f tok/s, %.3g G int8 multiply-adds/s\n",
			cfg.prompt, el.Seconds(), tps, tps*float64(macs)/1e9)
		printProfile(out, "  ", m.Stats().Profile.Sub(before))
	} else if err := s.Prefill(ctx, []int32{1}); err != nil {
		return err
	}

	if cfg.cpuprofile != "" {
		f, err := os.Create(cfg.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	short, _, err := decode(ctx, out, m, s, cfg.gen, perToken, bw)
	if err != nil {
		return err
	}
	if r, ok := m.Driver().Engine().(backend.WeightReader); ok {
		if err := pairedDecode(ctx, out, m, s, r, min(cfg.gen, 12)); err != nil {
			return err
		}
	}
	if cfg.speculative {
		in := bonsai.TokenIDs(prompt...)
		if len(prompt) == 0 {
			in = bonsai.TokenIDs(1)
		}
		if cfg.specPrompt != "" {
			in = bonsai.Text(string(specText))
		}
		if err := speculate(ctx, out, m, in, cfg); err != nil {
			return err
		}
	}
	if cfg.context == 0 {
		return nil
	}
	start := time.Now()
	fill := func(st backend.State) error { return backendtest.FillSynthetic(st, cfg.context, 1) }
	if err := m.Driver().Fill(s, fill); err != nil {
		return err
	}
	fmt.Fprintf(out, "context     %d positions of synthetic state written in %.1f s\n", cfg.context, time.Since(start).Seconds())
	long, p, err := decode(ctx, out, m, s, cfg.gen, perToken, bw)
	if err != nil {
		return err
	}
	kvBytes := int64(c.AttentionLayers()) * int64(cfg.context) * kvBytesPerPosition(&c, kv)
	attn := p.Attention.Seconds() / float64(p.Tokens)
	read := float64(kvBytes) / bw
	fmt.Fprintf(out, "long ctx    decode at %d ÷ decode at %d = %.1f%%\n", cfg.context, max(cfg.prompt, 1), 100*long/short)
	fmt.Fprintf(out, "attention   %.2f ms/token; KV cache %.1f MB (%v) read once at %.2f GB/s: %.2f ms; attention ÷ KV read = %.2f×\n",
		attn*1000, float64(kvBytes)/1e6, kv, bw/1e9, read*1000, attn/read)

	// The machine's load moves both figures; pairing each step's attention time with a
	// bandwidth pass right after it makes the ratio steadier than either.
	var ratios, attns, bws []float64
	for range min(cfg.gen, 8) {
		before := m.Stats().Profile.Attention
		if err := s.Step(ctx, 1); err != nil {
			return err
		}
		a := (m.Stats().Profile.Attention - before).Seconds()
		b := ternary.ReadBandwidth(m.Threads(), cfg.pairedBytes, 0)
		attns, bws = append(attns, a), append(bws, b)
		ratios = append(ratios, a/(float64(kvBytes)/b))
	}
	fmt.Fprintf(out, "paired      %d steps, each against a bandwidth pass right after it: attention median %.2f ms, bandwidth median %.2f GB/s, attention ÷ KV read median %.2f× (range %.2f–%.2f)\n",
		len(ratios), 1000*medianF(attns), medianF(bws)/1e9, medianF(ratios), slices.Min(ratios), slices.Max(ratios))
	return nil
}

// pairedDecode runs n decode steps of s, each followed by a read of the weights a step
// reads, from the memory the step read them from, on the engine's workers
// (backend.WeightReader), and prints the step's time against the read's: the decode
// rate as a share of the ceiling of its own pages at that moment, which on a VM whose
// bandwidth swings within seconds means more than a ceiling measured once on a buffer
// of bench's own.
func pairedDecode(ctx context.Context, out io.Writer, m *bonsai.Model, s *bonsai.Session, r backend.WeightReader, n int) error {
	var steps, reads, ratios []float64
	var bytes int64
	tok := argmax(s.Logits())
	for range n {
		t0 := time.Now()
		if err := s.Step(ctx, tok); err != nil {
			return err
		}
		t1 := time.Now()
		b, err := r.ReadWeights(ctx)
		if err != nil {
			return err
		}
		step, read := t1.Sub(t0).Seconds(), time.Since(t1).Seconds()
		steps, reads, ratios = append(steps, step), append(reads, read), append(ratios, read/step)
		bytes = b
		tok = argmax(s.Logits())
	}
	if n == 0 {
		return nil
	}
	fmt.Fprintf(out, "paired      %d steps, each against a read of its %.3f GB of weights right after it (the same pages, %d workers): step median %.1f ms, read median %.1f ms (%.2f GB/s); decode ÷ that ceiling median %.1f%% (range %.1f–%.1f%%)\n",
		n, float64(bytes)/1e9, m.Threads(), 1000*medianF(steps), 1000*medianF(reads), float64(bytes)/medianF(reads)/1e9,
		100*medianF(ratios), 100*slices.Min(ratios), 100*slices.Max(ratios))
	return nil
}

func medianF(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}

// decode runs gen decode steps of s, m's only session, from its position and prints
// their speed and profile; it returns the tokens per second and the profile.
func decode(ctx context.Context, out io.Writer, m *bonsai.Model, s *bonsai.Session, gen int, perToken int64, bw float64) (float64, bonsai.OpProfile, error) {
	pos := s.Len()
	before := m.Stats().Profile
	tok := int32(1)
	start := time.Now()
	var lat []time.Duration
	for range gen {
		t0 := time.Now()
		if err := s.Step(ctx, tok); err != nil {
			return 0, bonsai.OpProfile{}, err
		}
		lat = append(lat, time.Since(t0))
		tok = argmax(s.Logits())
	}
	el := time.Since(start)
	tps := float64(gen) / el.Seconds()
	fmt.Fprintf(out, "decode      %d tokens at position %d in %.2f s: %.3f tok/s (median step %.1f ms), %.2f GB/s of weights\n",
		gen, pos, el.Seconds(), tps, float64(median(lat).Microseconds())/1000, tps*float64(perToken)/1e9)
	fmt.Fprintf(out, "ratio       decode ÷ bandwidth ceiling = %.1f%%\n", 100*tps*float64(perToken)/bw)
	p := m.Stats().Profile.Sub(before)
	printProfile(out, "  ", p)
	return tps, p, nil
}

// checkMTP refuses -spec-mtp for a model file without a multi-token-prediction head,
// before any measuring.
func checkMTP(cfg config, m *bonsai.Model) error {
	if cfg.specMTP && !m.HasMTP() {
		return fmt.Errorf("-spec-mtp: %w: the file's qwen35.nextn_predict_layers is 0 (the published Bonsai 2 file has no head; synth -mtp or bench -preset … -spec-mtp writes one)", bonsai.ErrNoMTP)
	}
	return nil
}

// mtpRuns are the speculative runs of -spec-mtp: the MTP head drafting at every pass,
// and under the cost model.
func mtpRuns(maxDraft int) []struct {
	name string
	sp   *bonsai.SpeculativeOptions
} {
	return []struct {
		name string
		sp   *bonsai.SpeculativeOptions
	}{
		{"mtp", &bonsai.SpeculativeOptions{MaxDraft: maxDraft, MTP: true, Always: true}},
		{"mtp-auto", &bonsai.SpeculativeOptions{MaxDraft: maxDraft, MTP: true}},
	}
}

// speculate generates cfg.gen tokens after in, in fresh sessions: with plain steps,
// with the automatic policy (the lookup drafter, the cost model choosing each pass's
// draft length) and with lookup drafts at every pass, in that order, so that the
// automatic run decides from what the plain run measured, as a server would. It
// reports each one's decode rate against the plain one's, the drafts' fate, the tokens
// a pass gave and the mean draft length, then the pass times by width that the cost
// model estimated.
func speculate(ctx context.Context, out io.Writer, m *bonsai.Model, in bonsai.Input, cfg config) error {
	maxDraft := cfg.specMaxDraft
	if maxDraft == 0 {
		maxDraft = 8
	}
	sampler := bonsai.SamplerOptions{Temperature: float32(cfg.specTemp), Seed: 1}
	draw := "greedily"
	if cfg.specTemp > 0 {
		draw = fmt.Sprintf("sampled at temperature %g, seed 1", cfg.specTemp)
	}
	var plain []int32
	var plainRate float64
	var promptLen int
	runs := []struct {
		name string
		sp   *bonsai.SpeculativeOptions
	}{
		{"plain", nil},
		{"auto", &bonsai.SpeculativeOptions{MaxDraft: maxDraft}},
		{"lookup", &bonsai.SpeculativeOptions{MaxDraft: maxDraft, Always: true}},
	}
	if cfg.specReplay > 0 && cfg.specTemp == 0 {
		// Drafts that are the greedy continuation itself, every specReplay-th drafted
		// token wrong: what the mechanism gives where the output repeats something
		// the drafter can see, at a known acceptance, the cost model choosing k.
		runs = append(runs, struct {
			name string
			sp   *bonsai.SpeculativeOptions
		}{"replay", &bonsai.SpeculativeOptions{MaxDraft: maxDraft, NewDrafter: func() bonsai.Drafter {
			return &replayDrafter{tokens: plain, prompt: promptLen, miss: cfg.specReplay, vocab: int32(m.Vocab())}
		}}})
	}
	if cfg.specMTP {
		runs = append(runs, mtpRuns(maxDraft)...)
	}
	for _, run := range runs {
		p, err := m.Prepare(in, bonsai.GenerateOptions{MaxTokens: cfg.gen, SamplerOptions: sampler, Speculative: run.sp})
		if err != nil {
			return err
		}
		s, err := m.NewSession()
		if err != nil {
			return err
		}
		res, err := s.Generate(ctx, p).Result()
		s.Close()
		if err != nil {
			return err
		}
		u := res.Usage
		if run.sp == nil {
			plain, plainRate, promptLen = res.Tokens, u.DecodeTokensPerSecond, u.PromptTokens
			fmt.Fprintf(out, "generate    %d tokens (%s) after a prompt of %d, %s, plain steps: %.3f tok/s\n",
				u.CompletionTokens, res.FinishReason, u.PromptTokens, draw, u.DecodeTokensPerSecond)
			continue
		}
		// Each pass, a step or a verification, gives one token of the model's own
		// plus the drafted tokens it accepted.
		passes := u.CompletionTokens - u.AcceptedTokens
		acc, meanK := 0.0, 0.0
		if u.DraftedTokens > 0 {
			acc = float64(u.AcceptedTokens) / float64(u.DraftedTokens)
			meanK = float64(u.DraftedTokens) / float64(u.DraftPasses)
		}
		same := ""
		if cfg.specTemp == 0 {
			same = fmt.Sprintf("; same tokens as plain: %v", slices.Equal(plain, res.Tokens))
		}
		fmt.Fprintf(out, "spec %-6s %d tokens (%s): %.3f tok/s = %.3f× plain; %d drafted in %d of %d passes (mean k %.2f), %d accepted (%.0f%%), %.2f tokens per pass%s\n",
			run.name, u.CompletionTokens, res.FinishReason, u.DecodeTokensPerSecond, u.DecodeTokensPerSecond/plainRate,
			u.DraftedTokens, u.DraftPasses, passes, meanK, u.AcceptedTokens, 100*acc, float64(u.CompletionTokens)/float64(max(passes, 1)), same)
	}
	if pt := m.PassTimes(maxDraft + 1); pt != nil {
		var b strings.Builder
		for t, d := range pt {
			fmt.Fprintf(&b, " %d:%.2f", t+1, float64(d)/float64(pt[0]))
		}
		fmt.Fprintf(out, "pass times  a step %.2f ms; a pass of t tokens ÷ a step, t:ratio (measured or interpolated):%s\n",
			float64(pt[0].Microseconds())/1000, b.String())
	}
	return nil
}

// replayDrafter drafts the tokens a plain greedy run generated after the same prompt,
// every miss-th one (counted over the whole continuation) changed to another token.
type replayDrafter struct {
	tokens []int32
	prompt int
	miss   int
	vocab  int32
}

func (d *replayDrafter) Draft(ctx []int32, k int, dst []int32) []int32 {
	for g := len(ctx) - d.prompt; k > 0 && g >= 0 && g < len(d.tokens); g, k = g+1, k-1 {
		t := d.tokens[g]
		if (g+1)%d.miss == 0 {
			t = (t + 1) % d.vocab
		}
		dst = append(dst, t)
	}
	return dst
}

func (d *replayDrafter) Accepted(drafted, accepted int) {}

// kvBytesPerPosition is what one attention layer's cache holds per position: a key and
// a value row at precision p (codes and scales for the blocked ones).
func kvBytesPerPosition(c *qwen35.Config, p bonsai.KVPrecision) int64 {
	n := int64(c.KVHeads * c.HeadDim)
	blocks := int64(c.KVHeads * ((c.HeadDim + 31) / 32))
	switch p {
	case bonsai.KVFloat32:
		return 2 * 4 * n
	case bonsai.KVInt8:
		return 2 * (n + 4*blocks)
	case bonsai.KVQ4:
		return 2 * (16 + 2) * blocks
	}
	return 2 * 2 * n
}

func printProfile(out io.Writer, indent string, p bonsai.OpProfile) {
	if p.Tokens == 0 {
		return
	}
	per := func(d time.Duration) string {
		return fmt.Sprintf("%7.2f ms/token (%4.1f%%)", float64(d.Microseconds())/1000/float64(p.Tokens), 100*d.Seconds()/p.Total().Seconds())
	}
	fmt.Fprintf(out, "%sternary products %s\n", indent, per(p.Ternary))
	fmt.Fprintf(out, "%stransforms       %s\n", indent, per(p.Transforms))
	fmt.Fprintf(out, "%sGDN              %s\n", indent, per(p.GDN))
	fmt.Fprintf(out, "%sattention        %s\n", indent, per(p.Attention))
	fmt.Fprintf(out, "%sother            %s\n", indent, per(p.Other))
}

// weightBytesPerToken counts the bytes one decoded token reads: every product's weights
// (in format to where they were transcoded to it at load, as stored otherwise), the
// embedding table's one row, the norms and the small BF16 GDN projections.
func weightBytesPerToken(w *qwen35.Weights, to ternary.Format) int64 {
	n := w.TernaryBytes() + int64(w.TokenEmbedding.Format.RowBytes(w.TokenEmbedding.K))
	if to != 0 {
		n = int64(w.TokenEmbedding.Format.RowBytes(w.TokenEmbedding.K))
		for _, m := range productsOf(w) {
			n += int64(m.N) * int64(to.RowBytes(m.K))
		}
	}
	n += int64(4 * len(w.OutputNorm))
	for i := range w.Layers {
		l := &w.Layers[i]
		n += int64(len(l.Alpha.Data) + len(l.Beta.Data))
		for _, v := range [][]float32{l.AttnNorm, l.PostAttnNorm, l.Conv, l.DTBias, l.A, l.SSMNorm, l.QNorm, l.KNorm} {
			n += int64(4 * len(v))
		}
	}
	return n
}

// productsOf returns the ternary products of a token (the model's present matrices
// other than the embedding).
func productsOf(w *qwen35.Weights) []*qwen35.Matrix {
	ms := []*qwen35.Matrix{&w.Output}
	for i := range w.Layers {
		l := &w.Layers[i]
		for _, m := range []*qwen35.Matrix{&l.QKV, &l.Gate, &l.SSMOut, &l.Q, &l.K, &l.V, &l.O, &l.FFNGate, &l.FFNUp, &l.FFNDown} {
			if m.N > 0 {
				ms = append(ms, m)
			}
		}
	}
	return ms
}

// macsPerToken counts the ternary multiply-adds of one token.
func macsPerToken(w *qwen35.Weights) int64 {
	var n int64
	for _, m := range productsOf(w) {
		n += int64(m.K) * int64(m.N)
	}
	return n
}

func argmax(v []float32) int32 {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return int32(best)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}
