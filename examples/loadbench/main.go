// Command loadbench measures how one model serves many streams at once, against the
// targets of continuous batching, all in one run so that the ratios compare figures
// taken on the same machine in the same state:
//
//   - single: one stream's decode rate and inter-token latency, and the memory's read
//     bandwidth measured right before it (one stream is bound by it);
//   - streams4, streams8: 4 and 8 concurrent streams' aggregate rate, as a multiple of
//     one stream's, and their inter-token latency (median, p90, the worst stream's
//     median) against the lone stream's;
//   - prefill: a prompt's prefill rate, and the 8 streams' aggregate as a fraction of
//     it (a batched decode step does the work of a prefill chunk, so prefill's rate is
//     what batching tends to);
//   - longprompt: the inter-token latency of running streams while another client's
//     long prompt is prefilled, against the same number of streams unloaded;
//   - ttft: the time to the first token of a chat request whose long system prompt the
//     model's prefix cache holds, against the same request uncached.
//
// It drives the SDK directly — sessions of one Model, Prefill and Step, Generate for the
// chat — not HTTP, so the figures are the engine's, not the server's.
//
// Usage:
//
//	loadbench [-model FILE | -preset NAME] [-threads N] [-batch-tokens N] [-gen-tokens G]
//	          [-prompt-tokens P] [-long-prompt L] [-system-tokens S] [-load-streams K]
//	          [-skip longprompt,ttft] [-batch-tiles]
//
// Without -model it measures a synthetic model (-preset, default tiny) whose weights are
// random: its figures show the machinery, not the 27B model's speed. Each line ends with
// its target and "ok" or "MISS". The streams decode greedily with Step (the argmax of
// their logits); the time-to-first-token pair uses Generate with the model's chat
// template and a prefix cache.
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/ternary"
)

// The targets of issue 15, each a ratio of two figures of the same run.
const (
	targetAggregate4   = 2.5  // 4 streams' aggregate ÷ one stream's rate, at least
	targetLatency4     = 1.4  // each of 4 streams' inter-token latency ÷ a lone stream's, at most
	targetPrefillShare = 0.85 // 8 streams' aggregate ÷ the prefill rate, at least
	targetLongPrompt   = 2.0  // inter-token latency under a long prompt ÷ unloaded, at most
	targetCachedTTFT   = 0.10 // cached time to first token ÷ uncached, at most
)

// streamPrompt is the length of each stream's own prompt.
const streamPrompt = 16

// bandwidthBytes is the buffer of the bandwidth measurement: many times a last-level
// cache.
const bandwidthBytes = 512 << 20

// prefixCacheLimit bounds the prefix cache: the run caches a few states only.
const prefixCacheLimit = 16 << 30

type config struct {
	load         cli.ModelFlags
	preset       string
	batch        int // rows of a batched forward pass
	gen          int // tokens each stream decodes
	prompt       int // the prefill measurement's prompt
	longPrompt   int
	systemTokens int
	loadStreams  int             // streams running during the long prompt
	skip         map[string]bool // the phases left out (skippable)
	bwTime       time.Duration   // how long to measure the read bandwidth
}

// skippable are the phases -skip can leave out: the slow ones, which no other ratio
// needs (the long prompt alone takes most of a 27B run).
var skippable = []string{"longprompt", "ttft"}

func main() {
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, os.Stderr, cfg); err != nil {
		cli.Fatal("loadbench", err)
	}
}

func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var cfg config
	cfg.load.Register(fs)
	fs.Lookup("context").Usage = "context size in tokens (0: what the run's prompts and streams need)"
	fs.StringVar(&cfg.preset, "preset", "", "synthetic preset to write and measure when no -model: "+strings.Join(synth.Presets(), ", ")+" (default tiny)")
	fs.IntVar(&cfg.batch, "batch-tokens", 64, "the most tokens one batched forward pass runs (bonsai.WithBatchTokens), more than -load-streams")
	fs.IntVar(&cfg.gen, "gen-tokens", 32, "tokens each stream decodes in the single and concurrent measurements, ≥ 2")
	fs.IntVar(&cfg.prompt, "prompt-tokens", 512, "prompt length of the prefill-rate measurement, ≥ 1")
	fs.IntVar(&cfg.longPrompt, "long-prompt", 4000, "tokens of the prompt sent while streams run, ≥ 1")
	fs.IntVar(&cfg.systemTokens, "system-tokens", 2000, "tokens of the system prompt of the time-to-first-token measurement, ≥ 1")
	fs.IntVar(&cfg.loadStreams, "load-streams", 4, "streams running while the long prompt is prefilled (4 or 8: compared with that many unloaded)")
	fs.DurationVar(&cfg.bwTime, "bandwidth-time", 2*time.Second, "how long to measure the memory's read bandwidth before the lone stream")
	fs.Func("skip", "comma-separated phases to leave out: "+strings.Join(skippable, ", "), func(v string) error {
		cfg.skip = map[string]bool{}
		for _, ph := range strings.Split(v, ",") {
			if ph = strings.TrimSpace(ph); !slices.Contains(skippable, ph) {
				return fmt.Errorf("no phase %q to skip (want some of %s)", ph, strings.Join(skippable, ", "))
			}
			cfg.skip[ph] = true
		}
		return nil
	})
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: loadbench [-model FILE | -preset NAME] [flags]\n\n"+
			"Measures one model serving several streams at once (continuous batching) against\n"+
			"its targets, in one run: streams together against one, the prefill rate, a long\n"+
			"prompt among running streams, a cached system prompt's first token.\n"+
			"Without -model it measures a synthetic model with random weights (not the 27B).\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := cli.ParseFlags(fs, args); err != nil {
		return cfg, err
	}
	if err := cli.CheckFlags(fs, "loadbench", cfg.check()); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// check checks what the shared rules (cli.CheckFlags) do not: run calls it too, for a
// config made without flags.
func (c *config) check() error {
	if c.load.Model != "" && c.preset != "" {
		return errors.New("-model and -preset exclude each other")
	}
	for _, err := range []error{
		cli.AtLeast("batch-tokens", c.batch, 1),
		cli.AtLeast("gen-tokens", c.gen, 2),
		cli.AtLeast("prompt-tokens", c.prompt, 1),
		cli.AtLeast("long-prompt", c.longPrompt, 1),
		cli.AtLeast("system-tokens", c.systemTokens, 1),
	} {
		if err != nil {
			return err
		}
	}
	if c.loadStreams != 4 && c.loadStreams != 8 {
		return &cli.FlagError{Flag: "load-streams", Value: strconv.Itoa(c.loadStreams), Want: "must be 4 or 8"}
	}
	if c.batch <= c.loadStreams {
		// The batcher serves decode rows first: with no row left, the long prompt would
		// wait for the streams to end.
		return fmt.Errorf("-batch-tokens %d: must be more than the %d -load-streams, so that a prompt gets rows beside them", c.batch, c.loadStreams)
	}
	return nil
}

// contextSize is a context that holds every sequence of the run: the long prompts, and
// the streams that decode while the long prompt is prefilled (a token a step, the
// prompt taking at least one row a step).
func (c *config) contextSize() int {
	return max(c.prompt, c.longPrompt, c.systemTokens+64) + streamPrompt + 2*c.gen + 64
}

func run(ctx context.Context, out, stderr io.Writer, cfg config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	synthetic := cfg.load.Model == ""
	if synthetic {
		if cfg.preset == "" {
			cfg.preset = "tiny"
		}
		c, err := synth.Preset(cfg.preset)
		if err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "bonsai-loadbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.load.Model = filepath.Join(dir, cfg.preset+".gguf")
		if err := synth.WriteFile(ctx, cfg.load.Model, synth.Options{Config: c, Seed: 1}, nil); err != nil {
			return fmt.Errorf("writing the synthetic %s model: %w", cfg.preset, err)
		}
	}
	if cfg.load.Context == 0 {
		cfg.load.Context = cfg.contextSize()
	}
	l, err := cli.Load(ctx, stderr, "loadbench", cfg.load, bonsai.WithBatchTokens(cfg.batch), bonsai.WithPrefixCache(prefixCacheLimit))
	if err != nil {
		return err
	}
	defer l.Close()
	m := l.Model
	if synthetic {
		fmt.Fprintf(out, "loadbench: the synthetic %q preset, with random weights: NOT the 27B model; its figures show the machinery (use -model for real ones)\n", cfg.preset)
	} else {
		fmt.Fprintf(out, "loadbench: model %s\n", filepath.Base(cfg.load.Model))
	}
	fmt.Fprintf(out, "loadbench: backend %s, %d threads, batches of %d tokens, context %d\n", m.Backend(), m.Threads(), cfg.batch, m.ContextSize())

	b := &bench{m: m, cfg: cfg}
	return b.run(ctx, out)
}

// bench holds the run's model and what each measurement found, for the ratios.
type bench struct {
	m   *bonsai.Model
	cfg config
}

func (b *bench) run(ctx context.Context, out io.Writer) error {
	// A short stream first: the weights' pages, the engine's buffers.
	if _, err := b.streams(ctx, 1, 2); err != nil {
		return err
	}
	// The memory's read rate right before the lone stream: one stream is bound by it
	// and the batches mostly by arithmetic, so every ratio to the lone stream moves with
	// it (this VM's swings 15–20 GB/s and more within minutes).
	bw := ternary.ReadBandwidth(b.m.Threads(), bandwidthBytes, b.cfg.bwTime)
	single, err := b.streams(ctx, 1, b.cfg.gen)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "single     1 stream: %.1f tok/s; inter-token median %s, p90 %s; read bandwidth before it %.1f GB/s\n",
		single.rate(), ms(single.median()), ms(single.quantile(0.9)), bw/1e9)
	concurrent := map[int]streamRun{}
	for _, n := range []int{4, 8} {
		r, err := b.streams(ctx, n, b.cfg.gen)
		if err != nil {
			return err
		}
		concurrent[n] = r
		agg := r.rate() / single.rate()
		worst := r.worstMedian() / single.median()
		line := fmt.Sprintf("streams%d   %d streams: %.1f tok/s aggregate = %.2f× single", n, n, r.rate(), agg)
		if n == 4 {
			line += verdict(agg, targetAggregate4, true)
		}
		line += fmt.Sprintf(" (%.2f sequences a pass); inter-token median %s = %.2f× single, p90 %s = %.2f×, worst stream's median %.2f×",
			r.batch, ms(r.median()), r.median()/single.median(), ms(r.quantile(0.9)), r.quantile(0.9)/single.quantile(0.9), worst)
		if n == 4 {
			line += verdict(worst, targetLatency4, false)
		}
		fmt.Fprintln(out, line)
	}

	prefill, err := b.prefill(ctx, b.cfg.prompt)
	if err != nil {
		return err
	}
	share := concurrent[8].rate() / prefill
	fmt.Fprintf(out, "prefill    %d-token prompt: %.1f tok/s; 8 streams' aggregate = %.3f of it%s\n",
		b.cfg.prompt, prefill, share, verdict(share, targetPrefillShare, true))

	if !b.cfg.skip["longprompt"] {
		loaded, window, err := b.underLongPrompt(ctx)
		if err != nil {
			return err
		}
		unloaded := concurrent[b.cfg.loadStreams]
		ratio := loaded.median() / unloaded.median()
		fmt.Fprintf(out, "longprompt %d streams while a %d-token prompt prefills (%.2f s, %.1f tok/s): inter-token median %s = %.2f× unloaded, p90 %s = %.2f×, max %s%s\n",
			b.cfg.loadStreams, b.cfg.longPrompt, window.Seconds(), float64(b.cfg.longPrompt)/window.Seconds(),
			ms(loaded.median()), ratio, ms(loaded.quantile(0.9)), loaded.quantile(0.9)/unloaded.quantile(0.9), ms(loaded.quantile(1)),
			verdict(ratio, targetLongPrompt, false))
	}
	if b.cfg.skip["ttft"] {
		return nil
	}
	cached, uncached, hit, err := b.cachedFirstToken(ctx)
	if err != nil {
		return err
	}
	ttft := cached.Seconds() / uncached.Seconds()
	fmt.Fprintf(out, "ttft       %d-token system prompt: first token %s cached (%d prompt tokens from the cache) vs %s uncached = %.4f%s\n",
		b.cfg.systemTokens, ms(cached.Seconds()), hit, ms(uncached.Seconds()), ttft, verdict(ttft, targetCachedTTFT, false))
	return nil
}

// verdict says whether ratio meets a target, at least or at most.
func verdict(ratio, target float64, atLeast bool) string {
	ok := ratio <= target
	op := "≤"
	if atLeast {
		ok, op = ratio >= target, "≥"
	}
	word := "MISS"
	if ok {
		word = "ok"
	}
	return fmt.Sprintf(" (target %s %g: %s)", op, target, word)
}

// ms writes seconds as milliseconds.
func ms(s float64) string { return fmt.Sprintf("%.2f ms", 1000*s) }

// streamRun is what a measurement of concurrent streams saw.
type streamRun struct {
	tokens  int
	elapsed time.Duration
	gaps    [][]float64 // each stream's inter-token intervals, seconds
	batch   float64     // sequences per forward pass, on average
}

func (r streamRun) rate() float64 { return float64(r.tokens) / r.elapsed.Seconds() }

func (r streamRun) all() []float64 { return slices.Concat(r.gaps...) }

func (r streamRun) median() float64 { return quantile(r.all(), 0.5) }

func (r streamRun) quantile(q float64) float64 { return quantile(r.all(), q) }

// worstMedian is the largest of the streams' median intervals.
func (r streamRun) worstMedian() float64 {
	worst := 0.0
	for _, g := range r.gaps {
		worst = max(worst, quantile(g, 0.5))
	}
	return worst
}

// quantile is the q-quantile of x by the nearest rank (q = 0.5: the median, 1: the
// largest).
func quantile(x []float64, q float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// tokens is a prompt of n token ids, a different one for each seed.
func (b *bench) tokens(n, seed int) []int32 {
	v := b.m.Vocab()
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32((i*7919 + seed*104729 + 13) % v)
	}
	return ids
}

// greedy is the argmax of the session's logits: the next token of a greedy stream.
func greedy(s *bonsai.Session) int32 {
	lg := s.Logits()
	best := 0
	for i, v := range lg {
		if v > lg[best] {
			best = i
		}
	}
	return int32(best)
}

// ready returns n sessions, each holding its own prompt and one decoded token, so that
// what is measured next is decode steps alone.
func (b *bench) ready(ctx context.Context, n int) ([]*bonsai.Session, error) {
	var ss []*bonsai.Session
	for i := range n {
		s, err := b.m.NewSession()
		if err == nil {
			ss = append(ss, s)
			err = s.Prefill(ctx, b.tokens(streamPrompt, i+1))
		}
		if err == nil {
			err = s.Step(ctx, greedy(s))
		}
		if err != nil {
			closeAll(ss)
			return nil, err
		}
	}
	return ss, nil
}

func closeAll(ss []*bonsai.Session) {
	for _, s := range ss {
		s.Close()
	}
}

// streams runs n streams together, each decoding gen tokens from the same start, and
// times each token.
func (b *bench) streams(ctx context.Context, n, gen int) (streamRun, error) {
	ss, err := b.ready(ctx, n)
	if err != nil {
		return streamRun{}, err
	}
	defer closeAll(ss)
	done := make([][]time.Time, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() {
			<-start
			for range gen {
				if errs[i] = s.Step(ctx, greedy(s)); errs[i] != nil {
					return
				}
				done[i] = append(done[i], time.Now())
			}
		})
	}
	before := b.m.Stats().Batch
	t0 := time.Now()
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return streamRun{}, err
	}
	r := streamRun{tokens: n * gen, batch: perPass(before, b.m.Stats().Batch)}
	for _, d := range done {
		r.elapsed = max(r.elapsed, d[len(d)-1].Sub(t0))
		r.gaps = append(r.gaps, intervals(t0, d))
	}
	return r, nil
}

// perPass is the sequences per forward pass between two readings of the batcher's
// counters.
func perPass(before, after bonsai.BatchStats) float64 {
	if after.Steps == before.Steps {
		return 0
	}
	return float64(after.Sequences-before.Sequences) / float64(after.Steps-before.Steps)
}

// intervals are the times between t0 and the first stamp and between each stamp and the
// next, in seconds.
func intervals(t0 time.Time, stamps []time.Time) []float64 {
	g := make([]float64, len(stamps))
	prev := t0
	for i, t := range stamps {
		g[i], prev = t.Sub(prev).Seconds(), t
	}
	return g
}

// prefill times the prefill of an n-token prompt on a fresh session, in tokens a
// second.
func (b *bench) prefill(ctx context.Context, n int) (float64, error) {
	s, err := b.m.NewSession()
	if err != nil {
		return 0, err
	}
	defer s.Close()
	prompt := b.tokens(n, 1000)
	t0 := time.Now()
	if err := s.Prefill(ctx, prompt); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// underLongPrompt runs cfg.loadStreams streams, and once each has decoded a few tokens
// prefills the long prompt on another session; it returns the streams' intervals that
// overlap the prefill, and how long the prefill took.
func (b *bench) underLongPrompt(ctx context.Context) (streamRun, time.Duration, error) {
	n := b.cfg.loadStreams
	ss, err := b.ready(ctx, n)
	if err != nil {
		return streamRun{}, 0, err
	}
	defer closeAll(ss)
	long, err := b.m.NewSession()
	if err != nil {
		return streamRun{}, 0, err
	}
	defer long.Close()

	const lead = 4 // tokens each stream decodes before the prompt comes
	var stop atomic.Bool
	var started sync.WaitGroup
	started.Add(n)
	stamps := make([][]time.Time, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, s := range ss {
		wg.Go(func() {
			for k := 0; !stop.Load() && s.Len() < b.m.ContextSize()-1; k++ {
				if errs[i] = s.Step(ctx, greedy(s)); errs[i] != nil {
					break
				}
				stamps[i] = append(stamps[i], time.Now())
				if k == lead-1 {
					started.Done()
				}
			}
			if len(stamps[i]) < lead {
				started.Done()
			}
		})
	}
	started.Wait()
	p0 := time.Now()
	perr := long.Prefill(ctx, b.tokens(b.cfg.longPrompt, 2000))
	p1 := time.Now()
	stop.Store(true)
	wg.Wait()
	if err := errors.Join(append(errs, perr)...); err != nil {
		return streamRun{}, 0, err
	}
	r := streamRun{}
	for _, st := range stamps {
		var g []float64
		prev := t0
		for _, t := range st {
			if t.After(p0) && prev.Before(p1) {
				g = append(g, t.Sub(prev).Seconds())
			}
			prev = t
		}
		r.gaps = append(r.gaps, g)
		r.tokens += len(g)
	}
	if r.tokens == 0 {
		return streamRun{}, 0, errors.New("no stream decoded while the long prompt was prefilled")
	}
	return r, p1.Sub(p0), nil
}

// cachedFirstToken times the first token of a chat whose system prompt has about
// cfg.systemTokens tokens, first uncached, then, on another session, with a different
// user message, from the prefix cache the first filled. It returns both times and the
// prompt tokens the second took from the cache.
func (b *bench) cachedFirstToken(ctx context.Context) (cached, uncached time.Duration, hit int, err error) {
	system, err := b.systemPrompt(b.cfg.systemTokens)
	if err != nil {
		return 0, 0, 0, err
	}
	first := func(user string) (bonsai.Usage, error) {
		s, err := b.m.NewSession()
		if err != nil {
			return bonsai.Usage{}, err
		}
		defer s.Close()
		p, err := b.m.Prepare(bonsai.Chat(bonsai.Message{Role: bonsai.RoleSystem, Content: system}, bonsai.Message{Role: bonsai.RoleUser, Content: user}),
			bonsai.GenerateOptions{MaxTokens: 1, SamplerOptions: bonsai.SamplerOptions{Greedy: true}})
		if err != nil {
			return bonsai.Usage{}, err
		}
		res, err := s.Generate(ctx, p).Result()
		return res.Usage, err
	}
	u, err := first("What is the capital of France?")
	if err != nil {
		return 0, 0, 0, err
	}
	if u.CachedTokens != 0 {
		return 0, 0, 0, fmt.Errorf("the uncached request found %d tokens cached", u.CachedTokens)
	}
	c, err := first("Name three rivers of Europe.")
	if err != nil {
		return 0, 0, 0, err
	}
	if c.CachedTokens == 0 {
		return 0, 0, 0, errors.New("the system prompt was not served from the prefix cache")
	}
	return c.TimeToFirstToken, u.TimeToFirstToken, c.CachedTokens, nil
}

// systemPrompt returns a system prompt whose rendering alone has at least n tokens, and
// as few more as its words allow.
func (b *bench) systemPrompt(n int) (string, error) {
	words := strings.Fields("You are a helpful assistant for a library of technical books . Answer questions about " +
		"programming , networks , databases and operating systems with care , cite the chapter when you can , " +
		"and say plainly when a question falls outside the collection .")
	text := func(k int) string {
		var sb strings.Builder
		for i := range k {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[i%len(words)])
		}
		return sb.String()
	}
	count := func(k int) (int, error) {
		r, err := b.m.RenderChat([]bonsai.Message{{Role: bonsai.RoleSystem, Content: text(k)}}, bonsai.ChatOptions{})
		return len(b.m.Tokenizer().Encode(r, true)), err
	}
	// Words are at least a token each: the least k with count(k) ≥ n lies in [0, n].
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi) / 2
		c, err := count(mid)
		if err != nil {
			return "", err
		}
		if c >= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return text(lo), nil
}
