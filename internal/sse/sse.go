// Package sse writes server-sent event streams, the framing both HTTP APIs of
// examples/serve stream in (OpenAI's unnamed "data:" events, Anthropic's named ones).
package sse

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// Writer writes events, each flushed as it is written. After a write fails (the client
// left, or stopped reading past the write timeout) it writes nothing more and every
// call returns that error.
type Writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer
	err     error
}

// New sends the headers of an event stream; each later write must finish within
// timeout.
func New(w http.ResponseWriter, timeout time.Duration) *Writer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s := &Writer{w: w, rc: http.NewResponseController(w), timeout: timeout}
	w.WriteHeader(http.StatusOK)
	s.flush()
	return s
}

// Send writes v's JSON as one event, named event unless event is empty.
func (s *Writer) Send(event string, v any) error {
	if s.err != nil {
		return s.err
	}
	s.buf.Reset()
	if event != "" {
		s.buf.WriteString("event: " + event + "\n")
	}
	s.buf.WriteString("data: ")
	enc := json.NewEncoder(&s.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line
		s.err = err
		return err
	}
	s.buf.WriteByte('\n')
	return s.Write(s.buf.Bytes())
}

// Write writes b, an event already framed, as it is.
func (s *Writer) Write(b []byte) error {
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

// Err is the error that stopped the stream, or nil.
func (s *Writer) Err() error { return s.err }

// End clears the write deadline, which would otherwise outlive the response on a
// kept-alive connection.
func (s *Writer) End() { s.rc.SetWriteDeadline(time.Time{}) }

func (s *Writer) flush() error {
	if err := s.rc.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}
