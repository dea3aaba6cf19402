package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Serve serves h on ln until ctx is done, then shuts down gracefully: it stops
// accepting connections, lets the requests in flight finish for up to grace, then
// cancels the generations still running (their clients get an error) and waits for
// their handlers to return, at most drain more. It returns nil after a shutdown, or
// the error that stopped the server.
func Serve(ctx context.Context, ln net.Listener, h *Server, grace time.Duration) error {
	hs := &http.Server{
		Handler:           h,
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
	h.Drain()
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	err := hs.Shutdown(gctx)
	cancel()
	if err != nil {
		// The grace period is over: stop the generations, which end within a decode
		// step, and give their handlers a moment to send their error.
		h.CancelAll()
		dctx, cancel := context.WithTimeout(context.Background(), drain)
		if hs.Shutdown(dctx) != nil {
			hs.Close()
		}
		cancel()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// drain bounds the wait for handlers after CancelAll.
const drain = 10 * time.Second
