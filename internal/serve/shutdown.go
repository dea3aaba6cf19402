package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Gate is the handler a server listens with before its model is loaded, so that the
// probes answer from the start: until Open hands it the Server, /health and /v1/health
// answer 200 {"status":"loading"} (the process is alive), /ready and /v1/ready 503
// {"status":"loading"}, and every other request 503 with Retry-After, written by the
// unavailable function given to NewGate (the dialect's error shape for the path).
// After Open, every request goes to the Server.
type Gate struct {
	srv         atomic.Pointer[Server]
	unavailable func(w http.ResponseWriter, r *http.Request)
}

// NewGate returns a Gate whose requests, while loading, are answered by unavailable
// (nil: a bare JSON error) after Retry-After is set.
func NewGate(unavailable func(w http.ResponseWriter, r *http.Request)) *Gate {
	return &Gate{unavailable: unavailable}
}

// Open makes s, a Server with its routes registered, answer every request from now on.
func (g *Gate) Open(s *Server) { g.srv.Store(s) }

// Server is the Server Open gave, or nil while loading.
func (g *Gate) Server() *Server { return g.srv.Load() }

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s := g.srv.Load(); s != nil {
		s.ServeHTTP(w, r)
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	loading := map[string]string{"status": "loading"}
	switch path {
	case "/health", "/v1/health":
		WriteJSON(w, http.StatusOK, loading)
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	switch {
	case path == "/ready" || path == "/v1/ready":
		WriteJSON(w, http.StatusServiceUnavailable, loading)
	case g.unavailable != nil:
		g.unavailable(w, r)
	default:
		WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]string{"message": "The model is loading. Retry later."}})
	}
}

// Serve serves g on ln until ctx is done, then drains the Server g opened: /ready
// answers 503 and new generations are refused with 503 and Retry-After, while the
// listener stays open (a late request gets its 503 rather than a refused connection)
// and the generations in flight, running or queued, go on for up to drainTimeout. Past
// it, StopAll ends those still running with a clean finish (FinishDrained) and the
// queued ones with ErrShuttingDown; a generation that still does not end within a few
// seconds is cancelled. Then the HTTP server closes, once the handlers have written
// their last bytes. Serve returns nil after a shutdown, or the error that stopped the
// server. Stopped before g was opened, it closes at once.
func Serve(ctx context.Context, ln net.Listener, g *Gate, drainTimeout time.Duration) error {
	hs := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if s := g.Server(); s != nil {
		s.Drain()
		// Responses from now on ask their clients to reconnect, through the load
		// balancer, to a replica that is ready.
		hs.SetKeepAlivesEnabled(false)
		timer := time.NewTimer(drainTimeout)
		select {
		case <-s.Idle():
		case <-timer.C:
			s.StopAll()
			select {
			case <-s.Idle():
			case <-time.After(stopWait):
				s.CancelAll()
			}
		case err := <-errc:
			timer.Stop()
			s.CancelAll()
			return err
		}
		timer.Stop()
	}
	// No generation is left: the handlers are writing their last events.
	sctx, cancel := context.WithTimeout(context.Background(), stopWait)
	if hs.Shutdown(sctx) != nil {
		hs.Close()
	}
	cancel()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// stopWait bounds the wait for generations after StopAll (each ends within a decode step)
// and for handlers to finish their responses.
const stopWait = 10 * time.Second
