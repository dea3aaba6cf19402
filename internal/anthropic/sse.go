package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// sseWriter writes named server-sent events ("event: NAME", "data: JSON"), each
// flushed as it is written. After a write fails (the client left, or stopped reading
// past the write timeout) it writes nothing more.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer
	err     error
}

func newSSE(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
	w.WriteHeader(http.StatusOK)
	s.flush()
	return s
}

// send writes one event; v's JSON has the event's name as its "type".
func (s *sseWriter) send(event string, v any) error {
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	s.buf.WriteString("event: " + event + "\ndata: ")
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line
		s.err = err
		return err
	}
	s.buf.WriteByte('\n')
	s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		s.err = err
		return err
	}
	return s.flush()
}

// end clears the write deadline, which would otherwise outlive the response on a
// kept-alive connection.
func (s *sseWriter) end() { s.rc.SetWriteDeadline(time.Time{}) }

func (s *sseWriter) flush() error {
	if err := s.rc.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}
