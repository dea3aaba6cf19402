// Command chat is an interactive chat with a model in the terminal: each line read is a
// user message, and the reply streams back as the model writes it. The session keeps the
// conversation, so each turn prefills only the new message.
//
// Usage:
//
//	chat [-model FILE] [-system TEXT] [-think] [-tools MODE] [-max-tokens N] [-temperature T] [-top-k K]
//	     [-top-p P] [-min-p M] [-repeat-penalty R] [-presence-penalty P]
//	     [-frequency-penalty F] [-greedy] [-seed S] [-threads N] [-context N] [-verify]
//	     [-warmup]
//
// Commands, on a line of their own:
//
//	/reset          forget the conversation
//	/think on|off   let the model think before it answers, or not
//	/tools MODE     the demo tools (a clock, a calculator): off, auto (the model may
//	                call them) or required (each turn's first reply is a call)
//	/save FILE      save the conversation and the model's state to FILE
//	/load FILE      resume a conversation saved with /save
//	/quit           leave (so does the end of input)
//
// With no -model it builds a small synthetic model whose weights are random, so its
// replies are gibberish: it shows the machinery, not the model.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/cli"
)

type config struct {
	load   cli.ModelFlags
	system string
	think  bool
	tools  string
	opt    bonsai.GenerateOptions
}

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
	if err := run(ctx, os.Stdin, os.Stdout, os.Stderr, cfg); err != nil {
		cli.Fatal("chat", err)
	}
}

func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var cfg config
	var seed int64
	cfg.load.Register(fs)
	fs.StringVar(&cfg.system, "system", "", "system message that opens the conversation")
	fs.BoolVar(&cfg.think, "think", false, "let the model think before it answers (toggle with /think on|off)")
	fs.StringVar(&cfg.tools, "tools", "off", "demo tools (a clock, a calculator): off, auto or required (change with /tools)")
	fs.IntVar(&cfg.opt.MaxTokens, "max-tokens", 1024, "most tokens per reply, thinking included, ≥ 0 (0: until the context is full)")
	temp := fs.Float64("temperature", 0.7, "sampling temperature, ≥ 0 (0: greedy)")
	topP := fs.Float64("top-p", 0.8, "keep the most likely tokens up to this total probability, in (0, 1] (1: off)")
	fs.IntVar(&cfg.opt.TopK, "top-k", 20, "keep the K most likely tokens, ≥ 0 (0: off)")
	minP := fs.Float64("min-p", 0, "keep tokens at least this fraction as likely as the best, in [0, 1] (0: off)")
	repeat := fs.Float64("repeat-penalty", 1, "divide the positive logits of the last 64 tokens by this, multiply the negative ones, > 0 (1: off)")
	presence := fs.Float64("presence-penalty", 0, "lower the logit of every token generated so far in a reply by this, in [-2, 2] (0: off)")
	frequency := fs.Float64("frequency-penalty", 0, "lower the logit of a token generated in a reply by this times its count, in [-2, 2] (0: off)")
	fs.BoolVar(&cfg.opt.Greedy, "greedy", false, "take the most likely token each time, whatever the temperature")
	fs.Int64Var(&seed, "seed", -1, "random seed, ≥ -1 (-1: from the clock)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: chat [flags]\n\n"+
			"An interactive chat: type a message and press enter. Commands: /reset,\n"+
			"/think on|off, /tools off|auto|required, /save FILE, /load FILE, /quit. Without -model it runs a small\n"+
			"synthetic model with random weights: the replies are gibberish.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := cli.ParseFlags(fs, args); err != nil {
		return cfg, err
	}
	if err := cli.CheckFlags(fs, "chat", cli.OneOf("tools", cfg.tools, "off", "auto", "required")); err != nil {
		return cfg, err
	}
	cfg.opt.Temperature, cfg.opt.TopP, cfg.opt.MinP = float32(*temp), float32(*topP), float32(*minP)
	cfg.opt.RepeatPenalty, cfg.opt.PresencePenalty, cfg.opt.FrequencyPenalty = float32(*repeat), float32(*presence), float32(*frequency)
	if seed < 0 {
		seed = time.Now().UnixNano() & (1<<63 - 1)
	}
	cfg.opt.Seed = uint64(seed)
	return cfg, nil
}

// chat is the conversation: the messages and the session that holds them.
type chat struct {
	m        *bonsai.Model
	s        *bonsai.Session
	system   string
	history  []bonsai.Message
	think    bool
	tools    string // off, auto or required
	opt      bonsai.GenerateOptions
	out, err io.Writer
}

func validToolMode(m string) bool { return m == "off" || m == "auto" || m == "required" }

func run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, cfg config) error {
	l, err := cli.Load(ctx, stderr, "chat", cfg.load)
	if err != nil {
		return err
	}
	defer l.Close()
	m := l.Model
	s, err := m.NewSession()
	if err != nil {
		return err
	}
	c := &chat{m: m, s: s, system: cfg.system, think: cfg.think, tools: cfg.tools, opt: cfg.opt, out: stdout, err: stderr}
	defer func() { c.s.Close() }()
	c.reset()

	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for {
		fmt.Fprint(stdout, "> ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") {
			quit, err := c.command(line)
			if err != nil {
				fmt.Fprintln(stderr, "chat:", err)
			}
			if quit {
				return nil
			}
			continue
		}
		if err := c.turn(ctx, line); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

func (c *chat) reset() {
	c.history = c.history[:0]
	if c.system != "" {
		c.history = append(c.history, bonsai.Message{Role: bonsai.RoleSystem, Content: c.system})
	}
	c.s.Reset()
}

// command runs a /command; it reports whether to quit.
func (c *chat) command(line string) (bool, error) {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/quit", "/exit":
		return true, nil
	case "/reset":
		c.reset()
		fmt.Fprintln(c.out, "(conversation reset)")
	case "/think":
		switch arg {
		case "on":
			c.think = true
		case "off":
			c.think = false
		default:
			return false, errors.New("usage: /think on|off")
		}
		fmt.Fprintf(c.out, "(thinking %s)\n", arg)
	case "/tools":
		if !validToolMode(arg) {
			return false, errors.New("usage: /tools off|auto|required")
		}
		c.tools = arg
		fmt.Fprintf(c.out, "(tools %s)\n", arg)
	case "/save":
		if arg == "" {
			return false, errors.New("usage: /save FILE")
		}
		if err := c.save(arg); err != nil {
			return false, err
		}
		fmt.Fprintf(c.out, "(saved %d messages to %s)\n", len(c.history), arg)
	case "/load":
		if arg == "" {
			return false, errors.New("usage: /load FILE")
		}
		if err := c.load(arg); err != nil {
			return false, err
		}
		fmt.Fprintf(c.out, "(loaded %d messages from %s)\n", len(c.history), arg)
	default:
		return false, fmt.Errorf("unknown command %s (have /reset, /think on|off, /tools off|auto|required, /save FILE, /load FILE, /quit)", name)
	}
	return false, nil
}

// maxToolRounds bounds the replies of one turn that call tools.
const maxToolRounds = 4

// turn sends one user message and streams the reply. A reply that calls the demo
// tools gets their results, and the model goes on.
func (c *chat) turn(ctx context.Context, text string) error {
	start := len(c.history)
	c.history = append(c.history, bonsai.Message{Role: bonsai.RoleUser, Content: text})
	for round := 0; ; round++ {
		opt := c.opt
		opt.Thinking = &c.think
		if c.tools != "off" {
			opt.Tools = toolDefs()
			if c.tools == "required" && round == 0 {
				opt.ToolChoice.Mode = bonsai.ToolChoiceRequired
			}
			if round == maxToolRounds {
				opt.ToolChoice.Mode = bonsai.ToolChoiceNone
			}
		}
		res, err := c.reply(ctx, opt)
		if err != nil {
			c.history = c.history[:start]
			return err
		}
		c.history = append(c.history, bonsai.Message{Role: bonsai.RoleAssistant, Content: res.Text, ReasoningContent: res.Thinking, ToolCalls: res.ToolCalls})
		if len(res.ToolCalls) == 0 || ctx.Err() != nil {
			return nil
		}
		for _, call := range res.ToolCalls {
			out := callTool(call)
			fmt.Fprintf(c.out, "[tool] %s(%s) → %s\n", call.Name, call.Arguments, out)
			c.history = append(c.history, bonsai.Message{Role: bonsai.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: out})
		}
	}
}

// reply streams one reply to the conversation.
func (c *chat) reply(ctx context.Context, opt bonsai.GenerateOptions) (bonsai.Result, error) {
	p, err := c.m.Prepare(bonsai.Chat(c.history...), opt)
	if err != nil {
		return bonsai.Result{}, err
	}
	g := c.s.Generate(ctx, p)
	thinking := false
	for tok, err := range g.Tokens() {
		if err != nil {
			return bonsai.Result{}, err
		}
		if tok.Thinking != "" {
			if !thinking {
				fmt.Fprint(c.out, "[thinking] ")
				thinking = true
			}
			fmt.Fprint(c.out, tok.Thinking)
		}
		if tok.Text != "" {
			if thinking {
				fmt.Fprint(c.out, "\n[answer] ")
				thinking = false
			}
			fmt.Fprint(c.out, tok.Text)
		}
	}
	res, err := g.Result()
	if err != nil {
		return res, err
	}
	fmt.Fprintln(c.out)
	if res.FinishReason != bonsai.FinishStop && res.FinishReason != bonsai.FinishToolCalls {
		fmt.Fprintf(c.err, "chat: reply ended: %s\n", res.FinishReason)
	}
	for _, m := range res.MalformedToolCalls {
		fmt.Fprintf(c.err, "chat: a tool call could not be read: %v\n", m.Err)
	}
	u := res.Usage
	fmt.Fprintf(c.err, "chat: %d new prompt tokens (%d reused), %d generated at %.1f tok/s\n",
		u.PromptTokens-u.CachedTokens, u.CachedTokens, u.CompletionTokens, u.DecodeTokensPerSecond)
	return res, nil
}

// saved is the head of a /save file: the conversation as JSON on the first line, then
// the session snapshot.
type saved struct {
	System   string           `json:"system"`
	Think    bool             `json:"think"`
	Messages []bonsai.Message `json:"messages"`
}

func (c *chat) save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	head, err := json.Marshal(saved{System: c.system, Think: c.think, Messages: c.history})
	if err != nil {
		f.Close()
		return err
	}
	w := bufio.NewWriter(f)
	w.Write(head)
	w.WriteByte('\n')
	if err := c.s.Save(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (c *chat) load(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("%s: not a chat save file", path)
	}
	var sv saved
	if err := json.Unmarshal(line, &sv); err != nil {
		return fmt.Errorf("%s: not a chat save file: %v", path, err)
	}
	s, err := c.m.LoadSession(r)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	c.s.Close()
	c.s, c.system, c.think, c.history = s, sv.System, sv.Think, sv.Messages
	return nil
}
