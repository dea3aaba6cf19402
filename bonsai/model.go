package bonsai

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ardanlabs/jinja"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/grammar"
	"github.com/bonsai-go/sdk/bonsai/tokenizer"
	"github.com/bonsai-go/sdk/gguf"
	_ "github.com/bonsai-go/sdk/qwen35" // registers the qwen35 architecture: Bonsai 2 is built on it
	"github.com/bonsai-go/sdk/ternary"
)

// Errors callers test with errors.Is. They are the seam's, so that a backend's error
// and bonsai's own test alike; bonsai's errors carry them wrapped once, as "bonsai: …".
var (
	// ErrContextFull: a sequence would grow past the context size.
	ErrContextFull = backend.ErrContextFull
	// ErrClosed: the model or session was closed.
	ErrClosed = backend.ErrClosed
	// ErrNotBonsai: the file is a GGUF but not a model this SDK runs (an architecture
	// no package registered, or a qwen35 file without the Hadamard contract).
	ErrNotBonsai = backend.ErrUnsupported
)

// errClosed is ErrClosed as bonsai returns it.
var errClosed = fmt.Errorf("bonsai: %w", ErrClosed)

// Progress reports how far Open has come. The stages come in this order:
//
//	"map"        opening and parsing the file; Done and Total in bytes of the file
//	"bind"       checking each tensor the model needs; in tensors
//	"tokenizer"  reading the vocabulary; 0 then 1
//	"verify"     WithVerify's scan of the ternary weights; in bytes
//	"warmup"     WithWarmup's read of every weight page; in bytes
//	"load"       the backend's; 0 then 1
//	"prepare"    within "load", where the backend reports it: its work on the weights
//	             (the CPU's interleaved copy or another format, in bytes; a GPU's
//	             compiling and copying), in the backend's own units
//
// Each stage reports Done = 0 when it starts and Done = Total when it ends; InBytes says
// which stages count bytes.
type Progress struct {
	Stage       string // one of the stages above
	Done, Total int64  // how far the stage has come, of how much
}

// InBytes reports whether the stage's Done and Total count bytes.
func (p Progress) InBytes() bool {
	switch p.Stage {
	case "map", "verify", "warmup":
		return true
	}
	return false
}

type options struct {
	backend  Backend
	threads  int
	ctxSize  int
	kv       KVPrecision
	progress func(Progress)
	ctx      context.Context
	verify   bool
	warmup   bool
	mmap     bool
	template string
	acts     Activations
	profile  bool
	rows     int
	prefix   int64
	grammars int // see WithGrammarCache
}

// Option configures Open.
type Option func(*options)

// WithBackend selects where the model runs (default CPU()).
func WithBackend(b Backend) Option { return func(o *options) { o.backend = b } }

// WithThreads sets the number of CPU threads. 0, the default, is every core:
// runtime.NumCPU, what the machine has, rather than GOMAXPROCS, which a container's CPU
// quota may lower (set n to runtime.GOMAXPROCS(0) to follow it). A negative n is an
// error of Open.
func WithThreads(n int) Option { return func(o *options) { o.threads = n } }

// WithContextSize caps the tokens one session may hold (default: the model's context
// length, capped at 32768). Memory grows with use, not with this cap.
func WithContextSize(n int) Option { return func(o *options) { o.ctxSize = n } }

// WithKVCache sets the precision of the attention KV cache (default KVFloat16).
func WithKVCache(p KVPrecision) Option { return func(o *options) { o.kv = p } }

// WithProgress receives load progress. It is called from the goroutine running Open.
func WithProgress(f func(Progress)) Option { return func(o *options) { o.progress = f } }

// WithLoadContext makes Open stop with ctx's error when ctx is cancelled.
func WithLoadContext(ctx context.Context) Option { return func(o *options) { o.ctx = ctx } }

// WithVerify scans every ternary tensor at load and refuses non-finite scales and code 3
// (about one second per 2 GB of weights).
func WithVerify(on bool) Option { return func(o *options) { o.verify = on } }

// WithWarmup makes Open read every page of the weights once, after advising the OS
// that they will be needed (madvise MADV_WILLNEED, on Linux), so that the first tokens
// do not pay the page faults of a memory-mapped file: on a cold 7 GB model they would
// otherwise read the whole file from disk. It reports "warmup" progress in bytes. The
// default is off, leaving the pages to be read as the model first touches them.
func WithWarmup(on bool) Option { return func(o *options) { o.warmup = on } }

// WithActivations sets the precision in which activations meet the ternary weights
// (default ActivationsInt8).
func WithActivations(a Activations) Option { return func(o *options) { o.acts = a } }

// WithProfiling makes the backend account the time of each kind of operation; read it
// in Model.Stats.
func WithProfiling(on bool) Option { return func(o *options) { o.profile = on } }

// WithMmap chooses between memory-mapping the file (the default, where the platform
// supports it) and reading it into memory (in huge pages, on Linux). Either way the pages
// of the matrices a backend keeps in a layout of its own leave memory once it has made
// its copy (on Linux; see [gguf.File.Release]), so that resident memory stays about the
// file's size.
func WithMmap(on bool) Option { return func(o *options) { o.mmap = on } }

// WithBatchTokens sets the most tokens one forward pass runs for all the model's
// sessions together (default 64). Concurrent sessions are batched: their decode steps
// share one pass, which reads the weights once for all, and prompts fill the rows left
// a chunk at a time, so a long prompt delays the running streams by at most one pass of
// this many tokens per step.
func WithBatchTokens(n int) Option { return func(o *options) { o.rows = n } }

// WithPrefixCache keeps copies of sequence states at chat-template boundaries (the end
// of the system prompt, the end of each turn), up to limit bytes shared by all the
// model's sessions, least recently used out first, so that a chat request whose
// conversation begins like an earlier one — the same long system prompt, a conversation
// resumed on another session — starts from the longest cached prefix instead of
// prefilling it (default 0: none). A 27B state costs about 115 MiB of recurrent state
// plus 64 KiB per token of fp16 KV cache. Model.Stats reports its use.
func WithPrefixCache(limit int64) Option { return func(o *options) { o.prefix = limit } }

// WithChatTemplate replaces the model file's chat template with the Jinja source src.
func WithChatTemplate(src string) Option { return func(o *options) { o.template = src } }

// defaultBatchTokens is the rows of one batched forward pass: the CPU backend's chunk,
// whose GEMM reads the weights once for up to this many tokens.
const defaultBatchTokens = 64

// defaultContext caps the default context size: the 27B model's 262144 positions would
// let one session's KV cache grow to 16 GiB.
const defaultContext = 32768

// Model is a loaded Ternary Bonsai model. It is safe for concurrent use: sessions of one
// model run concurrently and independently.
type Model struct {
	file    *gguf.File
	weights backend.Model
	engine  backend.Engine
	batch   *batcher
	prefix  *prefixCache // nil without WithPrefixCache
	backend Backend
	opts    options

	tok        *tokenizer.Tokenizer
	tmpl       *jinja.Template
	tmplSource string
	tmplErr    error // why the template did not compile

	vocabOnce sync.Once
	vocab     *grammar.Vocab // see grammarVocab
	grammars  *grammarCache  // Prepare's compiled grammars, nil for none; see WithGrammarCache

	fpOnce      sync.Once
	fingerprint [32]byte // see Fingerprint

	costs passCosts // the decode passes' times, for speculation's cost model

	mu     sync.RWMutex // held for reading by every forward pass, for writing by Close
	closed bool
}

// Open maps a Ternary Bonsai GGUF file, checks every tensor the model needs (type,
// shape, the Hadamard contract), reads its tokenizer and chat template, and loads it on
// the backend. A file whose tokenizer cannot be read is refused; a file without a chat
// template gets ChatML. The weights are never copied: the CPU backend reads them from
// the mapped file.
func Open(path string, opts ...Option) (*Model, error) {
	o := options{kv: KVFloat16, ctx: context.Background(), mmap: true, grammars: DefaultGrammarCache}
	for _, opt := range opts {
		opt(&o)
	}
	if o.backend == nil {
		o.backend = CPU()
	}
	switch {
	case o.threads < 0:
		return nil, fmt.Errorf("bonsai: WithThreads(%d): want 0 (every core) or more", o.threads)
	case o.threads == 0:
		o.threads = runtime.NumCPU()
	}
	if o.rows == 0 {
		o.rows = defaultBatchTokens
	}
	if o.rows < 1 {
		return nil, fmt.Errorf("bonsai: batches of %d tokens: want at least 1", o.rows)
	}
	report := func(stage string, done, total int64) {
		if o.progress != nil {
			o.progress(Progress{Stage: stage, Done: done, Total: total})
		}
	}

	var size int64 = 1
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		size = st.Size()
	}
	report("map", 0, size)
	f, err := gguf.Open(path, gguf.WithMmap(o.mmap))
	if err != nil {
		return nil, fmt.Errorf("bonsai: %w", err)
	}
	report("map", size, size)
	m, err := load(f, o, report)
	if err != nil {
		f.Close()
		return nil, err
	}
	return m, nil
}

func load(f *gguf.File, o options, report func(string, int64, int64)) (*Model, error) {
	arch, err := backend.Lookup(f.Architecture())
	if err != nil {
		return nil, fmt.Errorf("bonsai: general.architecture: %w", err)
	}
	w, err := arch.Bind(f, func(done, total int) { report("bind", int64(done), int64(total)) })
	if err != nil {
		return nil, fmt.Errorf("bonsai: %w", err)
	}
	report("tokenizer", 0, 1)
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("bonsai: the model's tokenizer: %w", err)
	}
	report("tokenizer", 1, 1)
	if tok.Len() > w.Vocab() {
		return nil, fmt.Errorf("bonsai: the tokenizer has %d tokens, the model's vocabulary %d", tok.Len(), w.Vocab())
	}
	if o.verify {
		if err := verify(o.ctx, f, report); err != nil {
			return nil, err
		}
	}
	if o.warmup {
		if err := warmup(o.ctx, f, o.threads, report); err != nil {
			return nil, fmt.Errorf("bonsai: warm-up: %w", err)
		}
	}
	if o.ctxSize == 0 {
		o.ctxSize = min(w.ContextLength(), defaultContext)
	}
	if o.ctxSize < 1 {
		return nil, fmt.Errorf("bonsai: context size %d: want at least 1", o.ctxSize)
	}
	if !o.kv.Valid() {
		return nil, fmt.Errorf("bonsai: unknown KV cache precision %v", o.kv)
	}
	report("load", 0, 1)
	progress := func(done, total int64) { report("prepare", done, total) }
	engine, err := o.backend.Load(o.ctx, w, backend.LoadOptions{Threads: o.threads, Progress: progress, Activations: o.acts, Profile: o.profile})
	if err != nil {
		return nil, &BackendError{Backend: o.backend.Name(), Err: err}
	}
	report("load", 1, 1)
	m := &Model{file: f, weights: w, engine: engine, backend: o.backend, opts: o, tok: tok, grammars: newGrammarCache(o.grammars)}
	m.batch = newBatcher(m, o.rows)
	if o.prefix > 0 {
		m.prefix = newPrefixCache(o.prefix)
	}
	m.loadChatTemplate(o.template)
	return m, nil
}

func verify(ctx context.Context, f *gguf.File, report func(string, int64, int64)) error {
	var total, done int64
	for _, t := range f.Tensors {
		if _, ok := ternary.FormatOf(t.Type); ok {
			n, _ := t.Size()
			total += n
		}
	}
	report("verify", 0, total)
	for _, t := range f.Tensors {
		format, ok := ternary.FormatOf(t.Type)
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := f.TensorData(t.Name)
		if err != nil {
			return fmt.Errorf("bonsai: %w", err)
		}
		st, err := ternary.Scan(format, data)
		if err == nil {
			err = st.Check()
		}
		if err != nil {
			return fmt.Errorf("bonsai: tensor %q: %w", t.Name, err)
		}
		done += int64(len(data))
		report("verify", done, total)
	}
	return nil
}

// warmup reads every page of the tensor data once, on up to threads goroutines, after
// advising the OS to read it ahead, and reports the bytes read from the calling
// goroutine.
func warmup(ctx context.Context, f *gguf.File, threads int, report func(string, int64, int64)) error {
	const piece = 8 << 20 // bytes per job: small enough for a smooth bar
	var pieces [][]byte
	var total int64
	for _, t := range f.Tensors {
		data, err := f.TensorData(t.Name)
		if err != nil || len(data) == 0 {
			continue // a tensor of a type this SDK does not know is none of the model's
		}
		adviseWillNeed(data)
		total += int64(len(data))
		for len(data) > 0 {
			n := min(len(data), piece)
			pieces, data = append(pieces, data[:n]), data[n:]
		}
	}
	report("warmup", 0, total)
	jobs := make(chan []byte)
	done := make(chan int, threads)
	go func() {
		defer close(jobs)
		for _, p := range pieces {
			select {
			case jobs <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	page := os.Getpagesize()
	for range max(threads, 1) {
		wg.Go(func() {
			var sum byte
			for p := range jobs {
				for i := 0; i < len(p); i += page {
					sum += p[i]
				}
				sum += p[len(p)-1]
				done <- len(p)
			}
			warmSink.Add(uint32(sum))
		})
	}
	go func() { wg.Wait(); close(done) }()
	var read int64
	for n := range done {
		read += int64(n)
		report("warmup", read, total)
	}
	return ctx.Err()
}

// warmSink keeps warmup's reads from being optimised away.
var warmSink atomic.Uint32

// Vocab returns the number of logits per token.
func (m *Model) Vocab() int { return m.weights.Vocab() }

// Architecture returns the model's general.architecture ("qwen35").
func (m *Model) Architecture() string { return m.weights.Architecture() }

// Tokenizer returns the model's tokenizer, read from the file at Open.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// Backend returns the name of the backend the model runs on.
func (m *Model) Backend() string { return m.backend.Name() }

// Threads returns the number of CPU threads the model uses.
func (m *Model) Threads() int { return m.opts.threads }

// ContextSize returns the most tokens a session may hold.
func (m *Model) ContextSize() int { return m.opts.ctxSize }

// Stats counts a model's work since it was opened; a phase's is the difference of two
// readings (OpProfile.Sub).
type Stats struct {
	Batch       BatchStats       // the forward passes of all the model's sessions
	PrefixCache PrefixCacheStats // zero without WithPrefixCache
	Profile     OpProfile        // the passes' time per kind of operation; zero without WithProfiling
}

// Stats returns the model's counters.
func (m *Model) Stats() Stats {
	var s Stats
	s.Batch, s.Profile = m.batch.snapshot()
	if m.prefix != nil {
		s.PrefixCache = m.prefix.snapshot()
	}
	return s
}

// Close releases the model after the forward passes in progress have finished. Sessions
// of a closed model return ErrClosed.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.prefix != nil {
		m.prefix.close()
	}
	err := m.engine.Close()
	if ferr := m.file.Close(); err == nil {
		err = ferr
	}
	return err
}

// NewSession starts an empty conversation.
func (m *Model) NewSession() (*Session, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, errClosed
	}
	st, err := m.newState()
	if err != nil {
		return nil, err
	}
	return newSession(m, st), nil
}

// newState allocates a state of the model's context size and KV precision. m.mu is held
// for reading.
func (m *Model) newState() (backend.State, error) {
	st, err := m.engine.NewState(backend.StateOptions{ContextSize: m.opts.ctxSize, KVCache: m.opts.kv})
	if err != nil {
		return nil, m.backendErr(err)
	}
	return st, nil
}

// backendErr prefixes an error of the engine once: "bonsai: cpu: …".
func (m *Model) backendErr(err error) error {
	return fmt.Errorf("bonsai: %s: %w", m.backend.Name(), err)
}

// forward checks a session's request (the rules every backend relies on) and runs it
// through the batcher, with the other sessions' requests of the same steps. m.mu is held
// for reading.
func (m *Model) forward(r *request) error {
	if m.closed {
		return errClosed
	}
	one := [1]backend.Sequence{r.seq}
	if err := backend.Check(one[:], m.weights.Vocab(), func(backend.State) int { return m.opts.ctxSize }); err != nil {
		return fmt.Errorf("bonsai: %w", err)
	}
	if len(r.seq.Tokens) == 0 {
		return nil
	}
	if err := m.batch.run(r); err != nil {
		return m.engineErr(r.ctx, err)
	}
	return nil
}

// engineErr passes a cancellation through as ctx's error and prefixes anything else.
func (m *Model) engineErr(ctx context.Context, err error) error {
	if (ctx.Err() != nil && err == ctx.Err()) || err == errClosed {
		return err
	}
	return m.backendErr(err)
}

// BackendError is Open's error when the file was read but the backend could not take
// the weights: a GPU that is missing or too small, a cancelled preparation. The file is
// not at fault; errors.As finds it.
type BackendError struct {
	Backend string // the backend's Name
	Err     error  // what the backend said
}

// Error says which backend failed, and why.
func (e *BackendError) Error() string { return "bonsai: backend " + e.Backend + ": " + e.Err.Error() }

// Unwrap returns the backend's error.
func (e *BackendError) Unwrap() error { return e.Err }
