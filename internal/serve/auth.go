package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// API keys. With Config.Keys set, a request must carry one of the keys, as OpenAI's
// clients send it (Authorization: Bearer KEY) or as Anthropic's do (x-api-key: KEY);
// without, it gets 401 in the shape of the dialect its path belongs to
// (HandleUnauthorized). The probes need no key: /health, /v1/health, /ready and /v1/ready (a load
// balancer or a kubelet must reach them), nor /metrics unless Config.MetricsAuth, nor
// the routes registered with HandleOpen.

// The errors a request without a valid key is answered with, for the 401 writers.
var (
	ErrNoAPIKey  = errors.New("no API key: send it as Authorization: Bearer KEY or x-api-key: KEY")
	ErrBadAPIKey = errors.New("the API key is not valid")
)

// outcomeUnauthorized is the outcome of a request refused for its key: 401, nothing run.
const outcomeUnauthorized = "unauthorized"

// Keys is a set of API keys, safe for concurrent use. Set replaces the whole set at
// once, so that a reload never leaves a moment with some keys or none. The zero Keys
// holds no key and accepts none.
type Keys struct {
	digests atomic.Pointer[[][sha256.Size]byte]
}

// NewKeys returns a set of the keys given; see Set for what a key may be.
func NewKeys(keys ...string) (*Keys, error) {
	k := new(Keys)
	if err := k.Set(keys...); err != nil {
		return nil, err
	}
	return k, nil
}

// CheckKey reports what makes key unusable: a key is a non-empty run of printable
// ASCII characters other than the space (RFC 6750's token is stricter, but a header
// carries these unchanged, and a space would be trimmed away).
func CheckKey(key string) error {
	if key == "" {
		return errors.New("the key is empty")
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c > '~' {
			// The key is a secret: the error names the position, not the key.
			return fmt.Errorf("the key's character %d is a space, a control character or not ASCII", i+1)
		}
	}
	return nil
}

// Set replaces the keys with keys, at least one, each valid for CheckKey. On an error
// the keys held are kept.
func (k *Keys) Set(keys ...string) error {
	if len(keys) == 0 {
		return errors.New("no API key given")
	}
	d := make([][sha256.Size]byte, len(keys))
	for i, key := range keys {
		if err := CheckKey(key); err != nil {
			return fmt.Errorf("API key %d: %w", i+1, err)
		}
		d[i] = sha256.Sum256([]byte(key))
	}
	k.digests.Store(&d)
	return nil
}

// Len is the number of keys held.
func (k *Keys) Len() int {
	if d := k.digests.Load(); d != nil {
		return len(*d)
	}
	return 0
}

// Valid reports whether key is one of the keys. Its time does not depend on which key
// matched, nor on how much of one did: it compares the SHA-256 digest of key, which
// has the same length whatever the key's, with every key's in constant time.
func (k *Keys) Valid(key string) bool {
	d := k.digests.Load()
	if d == nil {
		return false
	}
	h := sha256.Sum256([]byte(key))
	ok := 0
	for i := range *d {
		ok |= subtle.ConstantTimeCompare(h[:], (*d)[i][:])
	}
	return ok == 1
}

// check returns nil when r carries a valid key in either header, else ErrNoAPIKey or
// ErrBadAPIKey. An Authorization header of another scheme than Bearer carries no key.
func (k *Keys) check(r *http.Request) error {
	var given []string
	if v := strings.TrimSpace(r.Header.Get("X-Api-Key")); v != "" {
		given = append(given, v)
	}
	if scheme, cred, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); strings.EqualFold(scheme, "Bearer") {
		if cred = strings.TrimSpace(cred); cred != "" {
			given = append(given, cred)
		}
	}
	if len(given) == 0 {
		return ErrNoAPIKey
	}
	ok := false
	for _, key := range given {
		ok = k.Valid(key) || ok // every key given is checked: the time says nothing of which one failed
	}
	if !ok {
		return ErrBadAPIKey
	}
	return nil
}

// HandleOpen is Handle for a route that needs no API key: a page that asks the user
// for the key, a probe.
func (s *Server) HandleOpen(pattern string, h http.Handler) {
	s.Handle(pattern, h)
	s.open[pattern] = true
}

// HandleUnauthorized makes write answer the requests under prefix (a path, "/" for all)
// that carry no valid API key and that match accepts (nil: all of them): err is
// ErrNoAPIKey or ErrBadAPIKey, and the status to write 401, WWW-Authenticate already
// set. The longest prefix whose match accepts the request wins (a path that two
// dialects share goes to the one whose client the request comes from); without one, a
// bare JSON error is written.
func (s *Server) HandleUnauthorized(prefix string, match func(*http.Request) bool, write func(w http.ResponseWriter, r *http.Request, err error)) {
	s.authErrors = append(s.authErrors, authRoute{strings.TrimSuffix(prefix, "/"), match, write})
}

type authRoute struct {
	prefix string
	match  func(*http.Request) bool
	write  func(http.ResponseWriter, *http.Request, error)
}

// authorize returns nil when r, routed to pattern, may go on, else why not.
func (s *Server) authorize(r *http.Request, pattern string) error {
	if s.cfg.Keys == nil || s.open[pattern] {
		return nil
	}
	switch r.URL.Path {
	case "/health", "/v1/health", "/ready", "/v1/ready":
		return nil
	case "/metrics":
		if !s.cfg.MetricsAuth {
			return nil
		}
	}
	return s.cfg.Keys.check(r)
}

// unauthorized answers a request refused for its key.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, err error) {
	// RFC 9110 asks a 401 for a challenge; RFC 6750 names the error only when a key
	// was given. Browsers show no login box for Bearer, so the chat page asks itself.
	challenge := `Bearer realm="bonsai"`
	if errors.Is(err, ErrBadAPIKey) {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	write, best := writeAuthError, -1
	for _, a := range s.authErrors {
		if (r.URL.Path == a.prefix || strings.HasPrefix(r.URL.Path, a.prefix+"/")) && len(a.prefix) > best && (a.match == nil || a.match(r)) {
			write, best = a.write, len(a.prefix)
		}
	}
	write(w, r, err)
}

// writeAuthError is the 401 writer of the paths no dialect claims.
func writeAuthError(w http.ResponseWriter, _ *http.Request, err error) {
	WriteJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]string{"message": err.Error()}})
}
