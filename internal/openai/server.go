package openai

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
)

// Config sets up a Server.
type Config struct {
	// ModelName is the id the model is listed under and that requests name (required).
	// A request with an empty model gets it too.
	ModelName string
	// OwnedBy is the model's owned_by in /v1/models (default "prismml").
	OwnedBy string
	// Parallel is the most generations that run at once, each on its own session
	// (default 1); the model batches their forward passes together.
	Parallel int
	// Queue is the most requests that wait for a session; beyond, 503 (0: none wait).
	Queue int
	// MaxBodyBytes limits a request body; larger ones get 413 (default 4 MiB).
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

	// tokenHook, when set (by tests), is called after each token a generation yields.
	tokenHook func(ctx context.Context)
}

// GenerationEnd describes a finished generation.
type GenerationEnd struct {
	Endpoint         string // "chat.completions" or "completions"
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

// Server is an http.Handler serving one model with the OpenAI API. Create it with
// NewServer; after the HTTP server has stopped, Close releases its sessions.
type Server struct {
	m       *bonsai.Model
	cfg     Config
	pool    *pool
	created int64

	// hard is cancelled by CancelAll: every generation and queued request ends.
	hard      context.Context
	cancelAll context.CancelFunc
	draining  atomic.Bool

	extra map[string]http.Handler // Handle's routes, by exact path

	requests, generations, cancelled, rejected atomic.Int64
	active                                     sync.WaitGroup
	metrics                                    *metrics
}

// NewServer returns a Server for m.
func NewServer(m *bonsai.Model, cfg Config) (*Server, error) {
	if cfg.ModelName == "" {
		return nil, errors.New("openai: Config.ModelName is empty")
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 1
	}
	if cfg.Parallel < 0 || cfg.Queue < 0 {
		return nil, fmt.Errorf("openai: parallel %d and queue %d must not be negative", cfg.Parallel, cfg.Queue)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = time.Minute
	}
	if cfg.OwnedBy == "" {
		cfg.OwnedBy = "prismml"
	}
	s := &Server{m: m, cfg: cfg, pool: newPool(m, cfg.Parallel, cfg.Queue), created: time.Now().Unix(),
		metrics: newMetrics()}
	s.hard, s.cancelAll = context.WithCancel(context.Background())
	return s, nil
}

// CancelAll ends every generation in progress within one decode step and drops the
// queued requests; they get 503. Later requests are refused.
func (s *Server) CancelAll() {
	s.draining.Store(true)
	s.cancelAll()
}

// Drain marks the server as shutting down: /health answers 503, so that a load
// balancer stops sending requests; requests still get served.
func (s *Server) Drain() { s.draining.Store(true) }

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

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	tr := &tracker{}
	r = r.WithContext(context.WithValue(r.Context(), trackerKey{}, tr))
	endpoint := "other"
	defer func() {
		s.metrics.request(endpoint, outcomeOf(tr, rec.status()), rec.status())
		if s.cfg.Log != nil {
			s.cfg.Log("%s %s %d %s", r.Method, r.URL.Path, rec.status(), time.Since(start).Round(time.Millisecond))
		}
	}()
	w = rec
	if h, ok := s.extra[r.URL.Path]; ok {
		endpoint = endpointName(r.URL.Path)
		h.ServeHTTP(w, r)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	if h, ok := s.extra[path]; ok && path != "" {
		endpoint = endpointName(path)
		h.ServeHTTP(w, r)
		return
	}
	switch {
	case path == "/v1/chat/completions" || path == "/chat/completions":
		endpoint = endpointChat
		if allow(w, r, http.MethodPost) {
			s.chatCompletions(w, r)
		}
	case path == "/v1/completions" || path == "/completions":
		endpoint = endpointCompletions
		if allow(w, r, http.MethodPost) {
			s.completions(w, r)
		}
	case path == "/v1/models" || path == "/models" || strings.HasPrefix(path, "/v1/models/"):
		endpoint = "models"
		if !allow(w, r, http.MethodGet) {
			return
		}
		id, one := strings.CutPrefix(path, "/v1/models/")
		switch {
		case !one:
			writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.modelObject()}})
		case id != s.cfg.ModelName:
			writeError(w, s.unknownModel(id))
		default:
			writeJSON(w, http.StatusOK, s.modelObject())
		}
	case path == "/health" || path == "/v1/health":
		endpoint = "health"
		if allow(w, r, http.MethodGet) {
			s.health(w)
		}
	case path == "/metrics":
		endpoint = "metrics"
		if allow(w, r, http.MethodGet) {
			s.serveMetrics(w, r)
		}
	default:
		writeError(w, &apiError{status: http.StatusNotFound, Type: typeInvalidRequest, Code: strPtr("unknown_url"),
			Message: fmt.Sprintf("Unknown request URL: %s %s.", r.Method, r.URL.Path)})
	}
}

// The endpoint names of the OpenAI generations, in GenerationEnd and the metrics.
const (
	endpointChat        = "chat.completions"
	endpointCompletions = "completions"
)

// allow answers 405 unless r uses method (GET also allows HEAD).
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || method == http.MethodGet && r.Method == http.MethodHead {
		return true
	}
	allowed := method
	if method == http.MethodGet {
		allowed = "GET, HEAD"
	}
	w.Header().Set("Allow", allowed)
	writeError(w, &apiError{status: http.StatusMethodNotAllowed, Type: typeInvalidRequest, Code: strPtr("method_not_allowed"),
		Message: fmt.Sprintf("Method %s is not allowed for %s: use %s.", r.Method, r.URL.Path, method)})
	return false
}

func (s *Server) modelObject() map[string]any {
	return map[string]any{"id": s.cfg.ModelName, "object": "model", "created": s.created, "owned_by": s.cfg.OwnedBy,
		"context_length": s.m.ContextSize()}
}

func (s *Server) unknownModel(name string) *apiError {
	return &apiError{status: http.StatusNotFound, Type: typeInvalidRequest, Param: strPtr("model"), Code: strPtr("model_not_found"),
		Message: fmt.Sprintf("The model '%s' does not exist: this server serves '%s'.", name, s.cfg.ModelName)}
}

func (s *Server) health(w http.ResponseWriter) {
	st := s.Stats()
	status, code := "ok", http.StatusOK
	if s.draining.Load() {
		status, code = "shutting down", http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]any{"status": status, "model": s.cfg.ModelName, "backend": s.m.Backend(), "threads": s.m.Threads(),
		"parallel": s.cfg.Parallel, "running": st.Running, "queued": st.Queued, "queue_capacity": s.cfg.Queue})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// readBody reads a request body up to the limit and decodes it into v.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	// Reading the body to its end also lets net/http watch the connection, so that a
	// client that leaves cancels r.Context().
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return &apiError{status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: strPtr("request_too_large"),
				Message: fmt.Sprintf("The request body is larger than this server's limit of %d bytes.", mbe.Limit)}
		}
		return invalid("", "Could not read the request body: %v.", err)
	}
	return decode(body, v)
}

// checkModel checks the model a request names.
func (s *Server) checkModel(name string) *apiError {
	if name != "" && name != s.cfg.ModelName {
		return s.unknownModel(name)
	}
	return nil
}

// newID returns a response id with the given prefix.
func newID(prefix string) string {
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
