// Command serve serves a Ternary Bonsai model over HTTP with the OpenAI API, for the
// clients written against it — the official SDKs, LangChain, curl — and with
// Anthropic's Messages API, for coding agents; a chat page is served at /.
//
// Usage:
//
//	serve [-model FILE] [-addr HOST:PORT] [-parallel N] [-queue N] [-batch-tokens N]
//	      [-prefix-cache SIZE] [-threads N] [-context N] [-model-name NAME] [-model-alias NAME]...
//	      [-max-body BYTES] [-api-key KEY]... [-api-key-file FILE] [-metrics-auth]
//	      [-drain-timeout D] [-responses-store N] [-responses-store-memory SIZE]
//	      [-max-tokens N] [-thinking-budget N] [-speculative auto|off|lookup|mtp] [-temperature T] ...
//
// Endpoints:
//
//	POST /v1/chat/completions   a chat turn; "stream": true for server-sent events
//	POST /v1/completions        a plain-text continuation, also streamed
//	POST /v1/responses          the Responses API, whole or streamed; GET and DELETE
//	                            /v1/responses/{id} a stored response
//	POST /v1/messages           Anthropic's Messages API, whole or streamed
//	GET  /v1/models             the model served (in Anthropic's shape for Anthropic's clients)
//	GET  /health                liveness and load (also /v1/health): 200 while the process serves
//	GET  /ready                 readiness (also /v1/ready): 200 once the model is loaded and warmed,
//	                            503 while it loads and while the server drains
//	GET  /metrics               Prometheus metrics: requests, tokens, queue, batches, prefix cache,
//	                            and vllm:num_requests_waiting, vllm:num_requests_running,
//	                            vllm:kv_cache_usage_perc, vllm:cache_config_info for Kubernetes'
//	                            Gateway API Inference Extension
//	GET  /                      a chat page: streamed replies, thinking, tool calls, and
//	                            under each reply why it ended, its usage and speed
//
// Each request runs on one of -parallel sessions (default 4), kept between requests so
// that a conversation's next turn prefills only its new messages. The sessions generate
// together: their decode steps share each forward pass, which reads the weights once for
// all of them, and a new prompt is prefilled a chunk at a time in the rows the running
// streams leave (-batch-tokens rows a pass), so -parallel is the most generations at
// once, batched, not a split of the machine. Up to -queue more requests wait, and beyond
// that the server answers 503 with Retry-After. A client that disconnects stops its
// generation within one token. The prefix cache (-prefix-cache, default 2GiB, 0 for
// none) keeps the states at the end of system prompts and turns, shared by the sessions:
// a request whose conversation begins like an earlier one, on whatever session, starts
// there, and its usage reports those prompt tokens as cached.
//
// The server listens before it loads the model: /health answers 200 at once, /ready 503
// until the model is loaded and warmed (one token generated), and the API 503 with
// Retry-After. On SIGTERM or SIGINT it drains: /ready and new generations answer 503
// (with Retry-After, in each API's error shape) while the listener stays open and
// /health 200; the generations in flight go on for up to -drain-timeout (default 30s),
// and those still running then end cleanly, as a reply cut short: finish_reason
// "length" (stop_reason "max_tokens"), the usage, and the stream's last event ([DONE],
// message_stop). Then the server exits 0. A second signal stops it at once.
//
// With an API key — -api-key KEY (repeatable), -api-key-file FILE (one a line, # for
// comments, re-read on SIGHUP; a bad reload keeps the keys held) or BONSAI_API_KEY —
// every request needs one, as OpenAI's clients send it (Authorization: Bearer KEY) or
// as Anthropic's do (x-api-key: KEY), and gets 401 in its API's shape without; /health
// and /ready never need one, /metrics only with -metrics-auth, and the chat page asks
// for it. Without a key, on an address other than loopback, the server warns at
// start-up that anyone who can reach it can use it.
//
// Model names: a request may name any model — agents and SDKs send their own (Claude
// Code claude-*, many OpenAI clients gpt-*) — and the one model served answers it, on
// both APIs; responses carry the served name (-model-name, by default the file's name).
// GET /v1/models lists that name and each -model-alias NAME (repeatable), for clients
// that look their model up there before using it; GET /v1/models/{id} answers 404 for
// other ids.
//
// A request that gives no max_tokens (many clients omit it) generates at most
// -max-tokens tokens, 4096 by default, and ends with finish_reason "length" there;
// -max-tokens 0 lifts the cap (until the context is full). A request's own max_tokens
// wins, up to the context.
//
// The responses of /v1/responses are kept in memory, unless a request says "store":
// false, for previous_response_id and GET /v1/responses/{id}: at most -responses-store
// of them (default 1024), taking at most -responses-store-memory (default 64MiB), the
// least recently used dropped first. With either 0 none is kept: each response says
// "store": false, a previous_response_id is refused (400 previous_response_not_found)
// and GET answers 404. The store is the process's: behind a load balancer with several
// replicas a follow-up finds its previous response only on the replica that answered it.
//
// Thinking is switched with chat_template_kwargs {"enable_thinking": false} (as vLLM
// and llama.cpp take it) or a top-level "enable_thinking"; the thinking comes back in
// reasoning_content. Its length is budgeted: a request's reasoning_effort (the
// Responses API's reasoning.effort) gives the think block a share of its max tokens —
// low 1/4, medium 1/2, high 3/4, xhigh and max 7/8 — and Anthropic's thinking
// {"type": "enabled", "budget_tokens": N} N tokens; then </think> is forced and the
// answer follows. A request that sets no budget gets -thinking-budget N; its default,
// 0, caps the thinking only under a forced tool call or a JSON answer, at half the max
// tokens, so that the call or the JSON always comes.
//
// With no -model it serves a tiny synthetic model whose weights are random, so its
// text is gibberish: it shows the machinery, not the model.
//
// Example:
//
//	serve -model Ternary-Bonsai-2-27B-PQ2_0.gguf -parallel 4 -prefix-cache 4GiB &
//	curl http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' \
//	  -d '{"messages": [{"role": "user", "content": "Hello"}], "stream": true}'
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/anthropic"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/internal/openai"
	"github.com/bonsai-go/sdk/internal/serve"
)

type config struct {
	load     cli.ModelFlags
	addr     string
	name     string
	parallel int
	queue    int
	batch    int   // rows of a batched forward pass
	prefix   int64 // bytes of the prefix cache, 0 for none
	maxBody  int64
	drain    time.Duration // on SIGTERM, how long generations in flight may run
	quiet    bool
	defaults serve.Defaults
	keys     keyFlags
	aliases  []string          // -model-alias, each time given
	stored   int               // -responses-store: the most responses of /v1/responses kept, 0 for none
	storedMB int64             // -responses-store-memory: the bytes they may take, about, 0 for none
	onListen func(addr string) // tests: called with the address once listening, before the model loads
	onReady  func(addr string) // tests: called once the model is loaded and the API mounted
}

// defaultMaxTokens is -max-tokens' default: the most tokens a request without
// max_tokens generates. A reply of a chat or an agent's turn fits; a client that omits
// max_tokens does not write until the context is full.
const defaultMaxTokens = 4096

// tokenDelayEnv names a test knob: a duration each generation waits after each token,
// so that a test can hold a stream of the tiny model (which writes thousands of tokens a
// second) open across a signal. Not for production.
const tokenDelayEnv = "BONSAI_SERVE_TEST_TOKEN_DELAY"

func main() {
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // the flag package has printed the error and the usage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal drains; a second one, the signals' default again, stops at once.
	context.AfterFunc(ctx, stop)
	if err := run(ctx, os.Stderr, cfg); err != nil {
		cli.Fatal("serve", err)
	}
}

func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var cfg config
	cfg.load.Register(fs)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "`host:port` to listen on (port 0: any free port)")
	fs.IntVar(&cfg.parallel, "parallel", 4, "the most generations at once, each on its own session, batched together: their decode steps share each forward pass")
	fs.IntVar(&cfg.batch, "batch-tokens", 64, "the most tokens one forward pass runs for all the sessions: the running streams' next tokens, then chunks of new prompts")
	cfg.prefix = 2 << 30
	fs.Var(sizeFlag{&cfg.prefix}, "prefix-cache", "the prefix cache's `size`: the states of system prompts and turns that later requests start from, shared by the sessions (e.g. 512MiB, 4GiB; 0: none)")
	fs.IntVar(&cfg.queue, "queue", 64, "requests that may wait for a session; beyond, 503 with Retry-After")
	fs.StringVar(&cfg.name, "model-name", "", "the model's id in the API (default: the file's name without .gguf); a request may name any model, and this one answers")
	fs.Func("model-alias", "another `name` GET /v1/models lists and /v1/models/NAME answers, for clients that look their model up there; repeat for more", func(s string) error {
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "/?#") {
			return errors.New("want a non-empty name without /, ? or #")
		}
		cfg.aliases = append(cfg.aliases, s)
		return nil
	})
	fs.IntVar(&cfg.stored, "responses-store", openai.DefaultStoredResponses, "the most responses of /v1/responses kept in memory for previous_response_id and GET /v1/responses/ID, the least recently used dropped first (0: none kept; each response then says \"store\": false)")
	cfg.storedMB = openai.DefaultStoredResponseBytes
	fs.Var(sizeFlag{&cfg.storedMB}, "responses-store-memory", "the most memory the kept responses take, about: their JSON and conversations, the least recently used dropped first (a `size`: e.g. 64MiB, 1GiB; 0: none kept)")
	fs.Int64Var(&cfg.maxBody, "max-body", 4<<20, "largest request body in `bytes`; larger ones get 413")
	fs.DurationVar(&cfg.drain, "drain-timeout", 30*time.Second, "on SIGTERM or SIGINT, how long the generations in flight may run before they are ended, cleanly")
	fs.DurationVar(&cfg.drain, "shutdown-timeout", 30*time.Second, "deprecated: the old name of -drain-timeout")
	fs.BoolVar(&cfg.quiet, "quiet", false, "do not log each request")
	cfg.keys.register(fs)
	temp := fs.Float64("temperature", 0.7, "sampling temperature of requests that give none (0: greedy)")
	topP := fs.Float64("top-p", 0.8, "top_p of requests that give none (1: off)")
	fs.IntVar(&cfg.defaults.TopK, "top-k", 20, "top_k of requests that give none (0: off)")
	minP := fs.Float64("min-p", 0, "min_p of requests that give none (0: off)")
	fs.IntVar(&cfg.defaults.ThinkingBudget, "thinking-budget", 0, "most tokens a think block holds in a request that sets no budget (reasoning_effort, reasoning.effort, thinking.budget_tokens), then </think> is forced (0: no cap, but half the max tokens under a forced tool call or JSON answer)")
	fs.StringVar(&cfg.defaults.Speculative, "speculative", serve.SpeculativeAuto, "speculative decoding of requests that do not choose (\"speculative\" in the body): "+
		"auto (lookup drafts when the measured pass times and the drafts' acceptance say they pay), off, lookup (lookup drafts at every pass), or mtp (the model file's multi-token-prediction head drafts, when it pays; a file without a head is refused)")
	fs.IntVar(&cfg.defaults.MaxTokens, "max-tokens", defaultMaxTokens, "most tokens a request without max_tokens generates, then finish_reason \"length\" (0: no cap, until the context is full); a request's own max_tokens wins, up to the context")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: serve [-model FILE] [-addr HOST:PORT] [-parallel N] [flags]\n\n"+
			"Serves the model over HTTP with the OpenAI API: POST /v1/chat/completions,\n"+
			"POST /v1/completions (both also streamed), POST /v1/responses (responses kept\n"+
			"for previous_response_id: -responses-store, -responses-store-memory),\n"+
			"GET /v1/models, GET /health (liveness), GET /ready (readiness: 503 while\n"+
			"loading and draining), GET /metrics (Prometheus, with vLLM's routing gauges\n"+
			"for Kubernetes' inference gateway);\n"+
			"with Anthropic's Messages API: POST /v1/messages; and a chat page at /.\n"+
			"Tools (tools, tool_choice) and response_format json_schema are supported.\n"+
			"A request may name any model; the one served answers, under -model-name.\n"+
			"A request without max_tokens generates at most -max-tokens (default 4096).\n"+
			"Thinking is switched with chat_template_kwargs {\"enable_thinking\": false} or a\n"+
			"top-level \"enable_thinking\", and comes back in reasoning_content; its length\n"+
			"is capped by reasoning_effort, thinking.budget_tokens or -thinking-budget.\n"+
			"Speculative decoding (-speculative, or \"speculative\" in a request body)\n"+
			"drafts tokens by looking the context up and verifies them in one pass; the\n"+
			"output is the model's either way, and /metrics counts drafted and accepted tokens.\n"+
			"With -api-key, -api-key-file or "+keyEnv+", every request but /health, /ready\n"+
			"and /metrics (unless -metrics-auth) needs a key: Authorization: Bearer KEY or\n"+
			"x-api-key: KEY; without, anyone who can reach the port can use the model.\n"+
			"Without -model it serves a small synthetic model with random weights: the text\n"+
			"is gibberish.\n"+
			"On SIGTERM or SIGINT it drains: new requests get 503, the streams in flight\n"+
			"finish for up to -drain-timeout, then end cleanly (finish_reason \"length\").\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := cli.ParseFlags(fs, args); err != nil {
		return cfg, err
	}
	cfg.defaults.Temperature, cfg.defaults.TopP, cfg.defaults.MinP = float32(*temp), float32(*topP), float32(*minP)
	var short error
	if cfg.batch < cfg.parallel {
		// A pass takes the running streams' tokens first: with no row left, a new prompt
		// would wait for streams to end.
		short = fmt.Errorf("-batch-tokens %d is less than -parallel %d: a new prompt needs a row beside the running streams", cfg.batch, cfg.parallel)
	}
	if err := cli.CheckFlags(fs, "serve", cli.AtLeast("parallel", cfg.parallel, 1), cli.AtLeast("queue", cfg.queue, 0),
		cli.AtLeast("max-body", cfg.maxBody, 1), cli.AtLeast("drain-timeout", cfg.drain, 0), cli.AtLeast("responses-store", cfg.stored, 0),
		cli.OneOf("speculative", cfg.defaults.Speculative, serve.SpeculativeModes...), short); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// openaiConfig is the OpenAI API's configuration the flags give.
func (c *config) openaiConfig() openai.Config {
	oc := openai.Config{StoredResponses: c.stored, StoredResponseBytes: c.storedMB}
	if c.stored == 0 || c.storedMB == 0 {
		oc.StoredResponses = -1 // Config's 0 is the default; negative keeps none
	}
	return oc
}

// mount adds the OpenAI API (configured by oc), the Messages API and the chat page to
// srv's routes.
func mount(srv *serve.Server, oc openai.Config) {
	openai.Register(srv, oc)
	anthropic.Register(srv)
	srv.HandleOpen("GET /{$}", http.HandlerFunc(servePage)) // it asks for the key itself
}

// unavailable answers a request while the model loads: 503, in the error shape of the
// API it is for (the Gate has set Retry-After).
func unavailable(w http.ResponseWriter, r *http.Request) {
	const msg = "The model is loading. Retry later."
	if anthropic.FromClient(r) {
		anthropic.WriteUnavailable(w, msg)
		return
	}
	openai.WriteUnavailable(w, msg)
}

// run listens at once, so that the probes answer while the model loads (/ready 503),
// then loads the model, warms it and opens the API, and serves until ctx ends: then it
// drains (serve.Serve).
func run(ctx context.Context, stderr io.Writer, cfg config) error {
	keys, stopKeys, err := startKeys(cfg.keys, os.Getenv, stderr)
	if err != nil {
		return err
	}
	defer stopKeys()
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	gate := serve.NewGate(unavailable)
	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	served := make(chan error, 1)
	go func() { served <- serve.Serve(serveCtx, ln, gate, cfg.drain) }()
	fmt.Fprintf(stderr, "serve: listening on http://%s; loading the model (/ready answers 503 until it is ready)\n", ln.Addr())
	reportKeys(stderr, keys, cfg.keys, ln.Addr())
	if cfg.onListen != nil {
		cfg.onListen(ln.Addr().String())
	}

	l, srv, name, err := load(ctx, stderr, cfg, keys)
	if err != nil {
		stopServing()
		<-served
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "serve: stopped while loading the model")
			return nil
		}
		return err
	}
	defer l.Close()
	defer srv.Close()
	gate.Open(srv)
	cache := "no prefix cache"
	if cfg.prefix > 0 {
		cache = "prefix cache " + formatSize(cfg.prefix)
	}
	fmt.Fprintf(stderr, "serve: model %q on http://%s/v1 — %d parallel, batches of %d tokens, %s, queue %d; chat page at http://%s/; stop with Ctrl-C\n",
		name, ln.Addr(), cfg.parallel, cfg.batch, cache, cfg.queue, ln.Addr())
	if cfg.onReady != nil {
		cfg.onReady(ln.Addr().String())
	}
	err = <-served
	st := srv.Stats()
	fmt.Fprintf(stderr, "serve: stopped after %d requests, %d generations (%d cancelled), %d refused\n", st.Requests, st.Generations, st.Cancelled, st.Rejected)
	return err
}

// load loads the model, warms it and returns the server with the API mounted.
func load(ctx context.Context, stderr io.Writer, cfg config, keys *serve.Keys) (*cli.Loaded, *serve.Server, string, error) {
	l, err := cli.Load(ctx, stderr, "serve", cfg.load, bonsai.WithBatchTokens(cfg.batch), bonsai.WithPrefixCache(cfg.prefix))
	if err != nil {
		return nil, nil, "", err
	}
	name := cfg.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(l.Path), ".gguf")
		if l.Synthetic {
			name = "bonsai-synthetic-tiny"
		}
	}
	if err := warm(ctx, l.Model); err != nil {
		l.Close()
		return nil, nil, "", fmt.Errorf("warming the model up: %w", err)
	}
	logger := log.New(stderr, "serve: ", log.LstdFlags)
	sc := serve.Config{ModelName: name, ModelAliases: cfg.aliases, Parallel: cfg.parallel, Queue: cfg.queue, MaxBodyBytes: cfg.maxBody, Defaults: cfg.defaults}
	sc.Keys, sc.MetricsAuth = keys, cfg.keys.metricsAuth
	if !cfg.quiet {
		sc.Log = logger.Printf
	}
	if d, err := time.ParseDuration(os.Getenv(tokenDelayEnv)); err == nil && d > 0 {
		serve.SetTokenHook(&sc, func(ctx context.Context) {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		})
	}
	srv, err := serve.New(l.Model, sc)
	if err != nil {
		l.Close()
		return nil, nil, "", err
	}
	mount(srv, cfg.openaiConfig())
	return l, srv, name, nil
}

// warm generates one token of a short text through the model's real path — a session,
// the batcher, the backend's forward pass and sampling — so that /ready says ready only
// once a request would be served, on whatever backend: the first pass is the one that
// pays for lazy set-up (kernels compiled, buffers allocated, pages read). A plain text
// has no chat boundary, so nothing enters the prefix cache.
func warm(ctx context.Context, m *bonsai.Model) error {
	p, err := m.Prepare(bonsai.Text("Hello"), bonsai.GenerateOptions{MaxTokens: 1})
	if err != nil {
		return err
	}
	s, err := m.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.Generate(ctx, p).Result()
	if err == nil && res.FinishReason == bonsai.FinishCancelled {
		err = ctx.Err()
	}
	return err
}
