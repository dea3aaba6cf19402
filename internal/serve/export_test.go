package serve

import (
	"bufio"
	"io"
)

// The outcome labels of bonsai_requests_total.
const (
	OutcomeCompleted = outcomeCompleted
	OutcomeCancelled = outcomeCancelled
	OutcomeRejected  = outcomeRejected
	OutcomeError     = outcomeError
)

var EndpointName = endpointName

// Exposition writes the text format's pieces to w, as /metrics writes them.
type Exposition struct{ e *exposition }

func NewExposition(w io.Writer) Exposition { return Exposition{&exposition{w: bufio.NewWriter(w)}} }

// Histogram writes a histogram with bounds of the observations.
func (x Exposition) Histogram(name, help string, bounds []float64, observations ...float64) {
	h := newHistogram(bounds)
	for _, v := range observations {
		h.observe(v)
	}
	x.e.histogram(name, help, &h)
}

func (x Exposition) Sample(name string, v float64, labels ...string) { x.e.sample(name, v, labels...) }
func (x Exposition) Flush() error                                    { return x.e.w.Flush() }

// SessionLens returns the tokens the sessions of the generations running hold, read
// from the sessions.
func SessionLens(s *Server) []int { return s.pool.sessionLens() }
