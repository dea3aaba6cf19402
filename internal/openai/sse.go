package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// sseWriter writes a stream of server-sent events, each flushed as it is written. After
// a write fails (the client left, or stopped reading past the write timeout) it writes
// nothing more.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer
	err     error
}

// newSSE sends the headers of an event stream.
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

// send writes v as one event: "data: JSON".
func (s *sseWriter) send(v any) error {
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	s.buf.WriteString("data: ")
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line
		s.err = err
		return err
	}
	s.buf.WriteByte('\n')
	return s.write(s.buf.Bytes())
}

// sendError writes an error event in OpenAI's shape; the stream ends without [DONE].
func (s *sseWriter) sendError(e *apiError) {
	s.send(struct {
		Error *apiError `json:"error"`
	}{e})
}

// end clears the write deadline, which would otherwise outlive the response on a
// kept-alive connection.
func (s *sseWriter) end() { s.rc.SetWriteDeadline(time.Time{}) }

// done writes the stream's last event.
func (s *sseWriter) done() { s.write([]byte("data: [DONE]\n\n")) }

func (s *sseWriter) write(b []byte) error {
	if s.err != nil {
		return s.err
	}
	s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return err
	}
	return s.flush()
}

func (s *sseWriter) flush() error {
	if err := s.rc.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}
