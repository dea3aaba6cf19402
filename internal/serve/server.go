package serve

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
)

// Config sets up a Server.
type Config struct {
	// ModelName is the id the model is served under (required). The model-name policy,
	// the same in every dialect: a generation request may name any model, and the one
	// model served answers it under ModelName (agents and SDKs send names of their own:
	// claude-*, gpt-*); the models endpoints, a catalogue, list ModelName and
	// ModelAliases and answer 404 for other names.
	ModelName string
	// ModelAliases are more ids the models endpoints list and retrieve, for clients
	// that look their model up there before using it.
	ModelAliases []string
	// Parallel is the most generations that run at once, each on its own session
	// (default 1); the model batches their forward passes together.
	Parallel int
	// Queue is the most requests that wait for a session; beyond, ErrQueueFull (0: none
	// wait).
	Queue int
	// MaxBodyBytes limits a request body that ReadBody reads (default 4 MiB).
	MaxBodyBytes int64
	// WriteTimeout bounds each write of a streamed response, so that a client that
	// stops reading does not hold a session for ever (default 1 minute).
	WriteTimeout time.Duration
	// Defaults are the sampling settings of requests that do not give them.
	Defaults Defaults
	// Log, when set, receives one line per request.
	Log func(format string, args ...any)
	// OnGenerationEnd, when set, is called as each generation ends, before its response
	// is finished.
	OnGenerationEnd func(GenerationEnd)
	// Keys, when set, are the API keys a request must carry, but for the probes, the
	// routes of HandleOpen and /metrics (auth.go).
	Keys *Keys
	// MetricsAuth makes /metrics need a key too (it needs Keys).
	MetricsAuth bool

	// tokenHook, when set (by tests), is called after each token a generation yields.
	tokenHook func(ctx context.Context)
}

// Defaults are the sampling settings of a request that does not give them.
type Defaults struct {
	Temperature, TopP, MinP float32
	TopK                    int
	// MaxTokens caps a generation that gives no max_tokens (0: until an end token or the
	// end of the context).
	MaxTokens int
	// ThinkingBudget caps the think block of a request that gives no budget of its own
	// (bonsai.GenerateOptions.ThinkingBudget; 0: the library's default, which caps it
	// at half the max tokens under a forced tool call or a JSON answer).
	ThinkingBudget int
	// Speculative is the speculative decoding of a request that does not choose its
	// own: one of SpeculativeModes ("": off).
	Speculative string
}

// GenerationEnd describes a finished generation.
type GenerationEnd struct {
	Endpoint         string // the Job's, e.g. "chat.completions" or "messages"
	FinishReason     bonsai.FinishReason
	Err              error
	PromptTokens     int
	CachedTokens     int
	CompletionTokens int
	// Started is when the generation got its session; Ended when it stopped.
	Started, Ended time.Time
}

// Stats count what the server is doing and has done.
type Stats struct {
	Running, Queued int   // generations running, requests waiting for a session
	Requests        int64 // requests received, of every kind
	Generations     int64 // generations finished (run to an end or cancelled)
	Cancelled       int64 // of which cancelled: their client left, or the server stopped
	Rejected        int64 // requests refused because the queue was full
}

// Server is an http.Handler serving one model to the dialects registered on it.
// Create it with New and register the routes before serving; after the HTTP server
// has stopped, Close releases its sessions.
type Server struct {
	m    *bonsai.Model
	cfg  Config
	pool *pool

	// hard is cancelled by CancelAll: every generation and queued request ends with an
	// error. soft is cancelled by StopAll: every generation ends with FinishDrained.
	hard, soft         context.Context
	cancelAll, stopAll context.CancelFunc
	draining           atomic.Bool

	// flight counts the Run calls in progress, queued or generating; idle is closed
	// once the server drains and none is left.
	flightMu sync.Mutex
	flight   int
	idle     chan struct{}
	idleOnce sync.Once

	mux       *http.ServeMux
	endpoints map[string]string // the endpoint label of each pattern
	// alternatives serve a pattern's requests from one dialect's clients (HandleFrom).
	alternatives map[string][]alternative
	errors       []errorRoute // how 404 and 405 are written, by path prefix

	open       map[string]bool // the patterns that need no API key (HandleOpen)
	authErrors []authRoute     // how 401 is written, by path prefix

	requests, generations, cancelled, rejected atomic.Int64
	active                                     sync.WaitGroup
	metrics                                    *metrics
}

// New returns a Server for m, serving /health, /v1/health, /ready, /v1/ready and
// /metrics.
func New(m *bonsai.Model, cfg Config) (*Server, error) {
	if cfg.ModelName == "" {
		return nil, errors.New("serve: Config.ModelName is empty")
	}
	for i, a := range cfg.ModelAliases {
		if strings.TrimSpace(a) == "" || strings.ContainsAny(a, "/?#") {
			return nil, fmt.Errorf("serve: Config.ModelAliases[%d] %q: an alias is a non-empty name without /, ? or #", i, a)
		}
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 1
	}
	if cfg.Parallel < 0 || cfg.Queue < 0 {
		return nil, fmt.Errorf("serve: parallel %d and queue %d must not be negative", cfg.Parallel, cfg.Queue)
	}
	if cfg.MetricsAuth && cfg.Keys == nil {
		return nil, errors.New("serve: Config.MetricsAuth needs Config.Keys")
	}
	if _, err := SpeculativeOptions(cfg.Defaults.Speculative); err != nil {
		return nil, fmt.Errorf("serve: Config.Defaults.Speculative: %w", err)
	}
	if cfg.Defaults.Speculative == SpeculativeMTP && !m.HasMTP() {
		return nil, fmt.Errorf("serve: Config.Defaults.Speculative %q: %w (nextn_predict_layers is 0); choose lookup or auto", SpeculativeMTP, bonsai.ErrNoMTP)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = time.Minute
	}
	s := &Server{m: m, cfg: cfg, pool: newPool(m, cfg.Parallel, cfg.Queue), metrics: newMetrics(),
		mux: http.NewServeMux(), endpoints: map[string]string{}, alternatives: map[string][]alternative{}, open: map[string]bool{}, idle: make(chan struct{})}
	s.hard, s.cancelAll = context.WithCancel(context.Background())
	s.soft, s.stopAll = context.WithCancel(context.Background())
	for _, p := range []string{"GET /health", "GET /v1/health"} {
		s.Handle(p, http.HandlerFunc(s.health))
	}
	for _, p := range []string{"GET /ready", "GET /v1/ready"} {
		s.Handle(p, http.HandlerFunc(s.ready))
	}
	s.Handle("GET /metrics", http.HandlerFunc(s.serveMetrics))
	return s, nil
}

// Model is the model served.
func (s *Server) Model() *bonsai.Model { return s.m }

// ModelIDs are the ids the models endpoints list: ModelName, then ModelAliases.
func (c Config) ModelIDs() []string {
	return append([]string{c.ModelName}, c.ModelAliases...)
}

// Lists reports whether id is one of ModelIDs: a models endpoint answers 404 for
// others.
func (c Config) Lists(id string) bool {
	return slices.Contains(c.ModelIDs(), id)
}

// Config is the server's configuration, its defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// CancelAll ends every generation in progress within one decode step and drops the
// queued requests: Run fails with ErrShuttingDown, and a stream ends with an error.
// Later requests are refused.
func (s *Server) CancelAll() {
	s.Drain()
	s.cancelAll()
}

// Drain stops the server taking work: /ready answers 503, so that a load balancer
// stops sending requests, and a new generation is refused with ErrShuttingDown (503 and
// Retry-After), while the generations running and queued go on. /health stays 200:
// the process is alive. Idle tells when they have all ended.
func (s *Server) Drain() {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	s.draining.Store(true)
	if s.flight == 0 {
		s.idleOnce.Do(func() { close(s.idle) })
	}
}

// StopAll drains the server and ends every generation in progress within one decode
// step with a clean finish: Run returns what was generated with FinishDrained, which
// the dialects answer as a reply cut short at a limit (a stream gets its last event).
// The requests still queued fail with ErrShuttingDown, having sent nothing.
func (s *Server) StopAll() {
	s.Drain()
	s.stopAll()
}

// Draining reports whether Drain, StopAll or CancelAll was called.
func (s *Server) Draining() bool { return s.draining.Load() }

// Idle is closed once the server drains and no generation is left, running or queued.
func (s *Server) Idle() <-chan struct{} { return s.idle }

// enter counts a Run call in, or refuses it while the server drains.
func (s *Server) enter() bool {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	if s.draining.Load() {
		return false
	}
	s.flight++
	s.active.Add(1)
	return true
}

// leave counts a Run call out.
func (s *Server) leave() {
	s.flightMu.Lock()
	defer s.flightMu.Unlock()
	s.flight--
	s.active.Done()
	if s.flight == 0 && s.draining.Load() {
		s.idleOnce.Do(func() { close(s.idle) })
	}
}

// Close cancels what is still running, waits for it to end and releases the sessions.
// The model stays open: it is the caller's.
func (s *Server) Close() error {
	s.CancelAll()
	s.active.Wait()
	s.pool.close()
	return nil
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	busy, queued := s.pool.load()
	return Stats{Running: busy, Queued: queued, Requests: s.requests.Load(), Generations: s.generations.Load(),
		Cancelled: s.cancelled.Load(), Rejected: s.rejected.Load()}
}

// Handle serves pattern, an http.ServeMux pattern with its method ("POST
// /v1/messages"; GET also answers HEAD), with h. A request's path is routed without
// its trailing slash. The request log and the metrics name the route by its path:
// without /v1, the slashes dots, the wildcards dropped ("/v1/messages/count_tokens":
// "messages.count_tokens"; "/v1/models/{id...}": "models"; "/{$}": "root").
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, s.dispatch(pattern, h))
	_, path, _ := strings.Cut(pattern, " ")
	s.endpoints[pattern] = endpointName(path)
}

// HandleFrom serves pattern with h for the requests match accepts, ahead of the
// handler Handle registered for it: a path two dialects share (GET /v1/models) is
// answered in the shape of the client the request comes from, as HandleUnauthorized
// picks the 401's. Without a handler of Handle's, the others get 404.
func (s *Server) HandleFrom(pattern string, match func(*http.Request) bool, h http.Handler) {
	if _, ok := s.endpoints[pattern]; !ok {
		s.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.errorWriter(r.URL.Path)(w, r, http.StatusNotFound)
		}))
	}
	s.alternatives[pattern] = append(s.alternatives[pattern], alternative{match, h})
}

type alternative struct {
	match func(*http.Request) bool
	h     http.Handler
}

// dispatch serves pattern's requests with the first alternative that accepts them,
// else with h.
func (s *Server) dispatch(pattern string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, a := range s.alternatives[pattern] {
			if a.match(r) {
				a.h.ServeHTTP(w, r)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// HandleErrors makes write answer the requests under prefix (a path, "/" for all) that
// no route takes: status is 404, or 405 with the Allow header set. The longest prefix
// wins; without one, a bare JSON error is written.
func (s *Server) HandleErrors(prefix string, write func(w http.ResponseWriter, r *http.Request, status int)) {
	s.errors = append(s.errors, errorRoute{prefix, write})
}

type errorRoute struct {
	prefix string
	write  func(w http.ResponseWriter, r *http.Request, status int)
}

// endpointName is the endpoint label of a route's path.
func endpointName(path string) string {
	var parts []string
	for p := range strings.SplitSeq(strings.TrimPrefix(path, "/v1/"), "/") {
		if p != "" && !strings.HasPrefix(p, "{") {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "root"
	}
	return strings.Join(parts, ".")
}

// ServeHTTP routes a request, logs it and counts it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	tr := &tracker{}
	path := r.URL.Path
	r = withoutTrailingSlash(r.WithContext(context.WithValue(r.Context(), trackerKey{}, tr)))
	h, pattern := s.mux.Handler(r)
	endpoint, routed := s.endpoints[pattern]
	if !routed {
		endpoint = "other"
	}
	defer func() {
		s.metrics.request(endpoint, outcomeOf(tr, rec.status()), rec.status())
		if s.cfg.Log != nil {
			s.cfg.Log("%s %s %d %s", r.Method, path, rec.status(), time.Since(start).Round(time.Millisecond))
		}
	}()
	if err := s.authorize(r, pattern); err != nil {
		tr.outcome = outcomeUnauthorized
		s.unauthorized(rec, r, err)
		return
	}
	if pattern != "" {
		s.mux.ServeHTTP(rec, r) // routes again, to set r's pattern and path values
		return
	}
	// The mux's own answer, 404 or 405 in plain text: written again as JSON, in the
	// dialect of the path.
	mux := &headerRecorder{h: http.Header{}}
	h.ServeHTTP(mux, r)
	if allow := mux.h.Get("Allow"); allow != "" {
		rec.Header().Set("Allow", allow)
		// The route is there, for another method: the request counts under it.
		other := *r
		other.Method, _, _ = strings.Cut(allow, ",")
		if _, pattern := s.mux.Handler(&other); s.endpoints[pattern] != "" {
			endpoint = s.endpoints[pattern]
		}
	}
	s.errorWriter(r.URL.Path)(rec, r, mux.code)
}

// errorWriter returns the error writer of the longest prefix of path registered.
func (s *Server) errorWriter(path string) func(http.ResponseWriter, *http.Request, int) {
	write, best := writeRouteError, -1
	for _, e := range s.errors {
		p := strings.TrimSuffix(e.prefix, "/")
		if (path == p || strings.HasPrefix(path, p+"/")) && len(p) > best {
			write, best = e.write, len(p)
		}
	}
	return write
}

// writeRouteError is the error writer of the paths no dialect claims.
func writeRouteError(w http.ResponseWriter, r *http.Request, status int) {
	WriteJSON(w, status, map[string]any{"error": map[string]string{"message": fmt.Sprintf("%s %s: %s", r.Method, r.URL.Path,
		http.StatusText(status))}})
}

// withoutTrailingSlash returns r with its path's trailing slash dropped ("/" is kept),
// so that "/v1/messages/" is routed as "/v1/messages", as clients expect.
func withoutTrailingSlash(r *http.Request) *http.Request {
	if len(r.URL.Path) <= 1 || !strings.HasSuffix(r.URL.Path, "/") {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	r2.URL = &u
	return r2
}

// headerRecorder keeps the status and the headers of a response and drops its body.
type headerRecorder struct {
	h    http.Header
	code int
}

func (r *headerRecorder) Header() http.Header { return r.h }
func (r *headerRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *headerRecorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return len(b), nil
}

// health is the liveness probe: 200 while the process serves, draining included (a
// liveness probe that failed would have the pod killed, streams and all), with the load.
func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	st := s.Stats()
	status := "ok"
	if s.draining.Load() {
		status = "draining"
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": status, "model": s.cfg.ModelName, "backend": s.m.Backend(), "threads": s.m.Threads(),
		"parallel": s.cfg.Parallel, "running": st.Running, "queued": st.Queued, "queue_capacity": s.cfg.Queue})
}

// ready is the readiness probe: 200 while the server takes work, 503 once it drains.
// (Before the model is loaded, the Gate answers it.)
func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	if s.draining.Load() {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
		WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "draining", "model": s.cfg.ModelName})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "ready", "model": s.cfg.ModelName})
}

// RetryAfterSeconds is the Retry-After of the 503s of a server loading or draining:
// behind a load balancer, the retry goes to another replica.
const RetryAfterSeconds = 1

// WriteJSON sends v as a JSON response with status, HTML characters unescaped.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// ReadBody reads a request's body, up to Config.MaxBodyBytes: a larger one fails with
// an *http.MaxBytesError, for a 413.
func (s *Server) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	// Reading the body to its end also lets net/http watch the connection, so that a
	// client that leaves cancels r.Context().
	return io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
}

// NewID returns a response id: prefix and 24 random hex digits.
func NewID(prefix string) string {
	var b [12]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return prefix + hex.EncodeToString(b[:])
}

// statusClientLeft is the status of a request whose client left before an answer, as
// nginx logs it.
const statusClientLeft = 499

// statusRecorder remembers the status a handler sent, for the log and the metrics.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) status() int {
	if r.code == 0 {
		return statusClientLeft
	}
	return r.code
}
