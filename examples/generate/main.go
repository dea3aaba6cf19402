// Command generate writes the continuation of a prompt, or the reply to it as a chat
// message, streaming the text as the model produces it.
//
// Usage:
//
//	generate -prompt "..." [-model FILE] [-chat] [-think] [-max-tokens N] [-temperature T]
//	         [-top-k K] [-top-p P] [-min-p M] [-repeat-penalty R] [-presence-penalty P]
//	         [-frequency-penalty F] [-greedy] [-seed S] [-threads N] [-context N]
//	         [-verify] [-warmup] [-stop STR]...
//
// The answer goes to standard output; the model's thinking (with -chat -think), the
// load's progress, the backend and thread count, the notices and the usage figures go
// to standard error. With no -model it builds a small
// synthetic model whose weights are random, so its text is gibberish: it shows the
// machinery, not the model.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/cli"
)

// stopFlags collects repeated -stop flags.
type stopFlags []string

func (s *stopFlags) String() string     { return strings.Join(*s, ", ") }
func (s *stopFlags) Set(v string) error { *s = append(*s, v); return nil }

type config struct {
	load   cli.ModelFlags
	prompt string
	chat   bool
	think  bool
	opt    bonsai.GenerateOptions
}

func main() {
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // the error is printed: by the flag package with the usage, or on one line
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, os.Stderr, cfg); err != nil {
		cli.Fatal("generate", err)
	}
}

func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var cfg config
	var stops stopFlags
	var seed int64
	fs.StringVar(&cfg.prompt, "prompt", "", "the prompt (required)")
	cfg.load.Register(fs)
	fs.BoolVar(&cfg.chat, "chat", false, "send the prompt as a chat message, through the model's chat template")
	fs.BoolVar(&cfg.think, "think", false, "with -chat: let the model think before it answers (thinking goes to standard error)")
	fs.IntVar(&cfg.opt.MaxTokens, "max-tokens", 256, "most tokens to generate, thinking included, ≥ 0 (0: until the context is full)")
	temp := fs.Float64("temperature", 0.7, "sampling temperature, ≥ 0 (0: greedy)")
	fs.IntVar(&cfg.opt.TopK, "top-k", 20, "keep the K most likely tokens, ≥ 0 (0: off)")
	topP := fs.Float64("top-p", 0.8, "keep the most likely tokens up to this total probability, in (0, 1] (1: off)")
	minP := fs.Float64("min-p", 0, "keep tokens at least this fraction as likely as the best, in [0, 1] (0: off)")
	repeat := fs.Float64("repeat-penalty", 1, "divide the positive logits of the last 64 tokens by this, multiply the negative ones, > 0 (1: off)")
	presence := fs.Float64("presence-penalty", 0, "lower the logit of every token generated so far by this, in [-2, 2] (0: off)")
	frequency := fs.Float64("frequency-penalty", 0, "lower the logit of a generated token by this times its count, in [-2, 2] (0: off)")
	fs.BoolVar(&cfg.opt.Greedy, "greedy", false, "take the most likely token each time, whatever the temperature")
	fs.Int64Var(&seed, "seed", -1, "random seed, ≥ -1 (-1: from the clock)")
	fs.Var(&stops, "stop", "stop when the answer contains this string (repeatable)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: generate -prompt \"...\" [flags]\n\n"+
			"Streams the model's continuation of the prompt (with -chat, its reply) to standard\n"+
			"output, and the usage figures to standard error. Without -model it runs a small\n"+
			"synthetic model with random weights: the text is gibberish.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.prompt == "" || fs.NArg() > 0 {
		err := errors.New("-prompt is required")
		if fs.NArg() > 0 {
			err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return cfg, err
	}
	var thinkAlone error
	if cfg.think && !cfg.chat {
		thinkAlone = errors.New("-think needs -chat")
	}
	if err := cli.CheckFlags(fs, "generate", thinkAlone); err != nil {
		return cfg, err
	}
	cfg.opt.Temperature, cfg.opt.TopP, cfg.opt.MinP = float32(*temp), float32(*topP), float32(*minP)
	cfg.opt.RepeatPenalty, cfg.opt.PresencePenalty, cfg.opt.FrequencyPenalty = float32(*repeat), float32(*presence), float32(*frequency)
	cfg.opt.Stop = stops
	if seed < 0 {
		seed = time.Now().UnixNano() & (1<<63 - 1)
	}
	cfg.opt.Seed = uint64(seed)
	return cfg, nil
}

func run(ctx context.Context, stdout, stderr io.Writer, cfg config) error {
	if cfg.think && !cfg.chat {
		return errors.New("-think needs -chat")
	}
	l, err := cli.Load(ctx, stderr, "generate", cfg.load)
	if err != nil {
		return err
	}
	defer l.Close()
	s, err := l.Model.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()

	in := bonsai.Text(cfg.prompt)
	if cfg.chat {
		in = bonsai.Chat(bonsai.Message{Role: bonsai.RoleUser, Content: cfg.prompt})
		cfg.opt.Thinking = &cfg.think
	}
	p, err := l.Model.Prepare(in, cfg.opt)
	if err != nil {
		return err
	}
	g := s.Generate(ctx, p)
	thinking := false
	for tok, err := range g.Tokens() {
		if err != nil {
			return err
		}
		if tok.Thinking != "" {
			thinking = true
			io.WriteString(stderr, tok.Thinking)
		}
		if tok.Text != "" {
			if thinking {
				io.WriteString(stderr, "\n")
				thinking = false
			}
			if _, err := io.WriteString(stdout, tok.Text); err != nil {
				return err
			}
		}
	}
	res, err := g.Result()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	u := res.Usage
	fmt.Fprintf(stderr, "generate: finish: %s", res.FinishReason)
	if res.StopSequence != "" {
		fmt.Fprintf(stderr, " (%q)", res.StopSequence)
	}
	fmt.Fprintf(stderr, "; prompt %d tokens at %.1f tok/s; first token after %v; %d tokens at %.1f tok/s\n",
		u.PromptTokens, u.PrefillTokensPerSecond, u.TimeToFirstToken.Round(time.Millisecond),
		u.CompletionTokens, u.DecodeTokensPerSecond)
	return nil
}
