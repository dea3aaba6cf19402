package sse

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestFraming(t *testing.T) {
	rec := httptest.NewRecorder()
	s := New(rec, time.Second)
	if err := s.Send("", map[string]string{"a": "<b>"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Send("ping", struct {
		Type string `json:"type"`
	}{"ping"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write([]byte("data: [DONE]\n\n")); err != nil {
		t.Fatal(err)
	}
	s.End()
	want := "data: {\"a\":\"<b>\"}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\ndata: [DONE]\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("stream %q, want %q", got, want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	if rec.Code != http.StatusOK || !rec.Flushed {
		t.Errorf("status %d, flushed %v", rec.Code, rec.Flushed)
	}
}

// failing fails every write after the first n bytes.
type failing struct {
	*httptest.ResponseRecorder
	n int
}

var errGone = errors.New("client gone")

func (f *failing) Write(b []byte) (int, error) {
	if f.Body.Len()+len(b) > f.n {
		return 0, errGone
	}
	return f.ResponseRecorder.Write(b)
}

func TestStopsAfterFailure(t *testing.T) {
	f := &failing{httptest.NewRecorder(), 12}
	s := New(f, time.Second)
	if err := s.Send("", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Send("", "a longer event"); !errors.Is(err, errGone) {
		t.Fatalf("second event: %v", err)
	}
	if err := s.Send("", 2); !errors.Is(err, errGone) || !errors.Is(s.Err(), errGone) {
		t.Fatalf("after the failure: %v, Err %v", err, s.Err())
	}
	if got := f.Body.String(); got != "data: 1\n\n" {
		t.Errorf("written %q", got)
	}
}
