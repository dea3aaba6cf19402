package openai

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
)

// Config sets up the OpenAI API on a serve.Server.
type Config struct {
	// OwnedBy is the model's owned_by in /v1/models (default "prismml").
	OwnedBy string
	// StoredResponses bounds how many responses of /v1/responses are kept for
	// previous_response_id and GET /v1/responses/{id}, the least recently used dropped
	// first (0: DefaultStoredResponses; negative: none are kept, and every response
	// says "store": false).
	StoredResponses int
	// StoredResponseBytes bounds the memory the stored responses take, about: their
	// JSON and their conversations (0: DefaultStoredResponseBytes).
	StoredResponseBytes int64
}

// api serves the OpenAI API's routes on a serve.Server.
type api struct {
	srv     *serve.Server
	m       *bonsai.Model
	cfg     serve.Config
	ownedBy string
	created int64
	store   *responseStore // the stored responses of /v1/responses
}

// The endpoint names of the OpenAI generations, in GenerationEnd and the metrics.
const (
	endpointChat        = "chat.completions"
	endpointCompletions = "completions"
)

// Register adds the OpenAI API's routes to srv, and makes the paths no route takes
// answer 404 and 405 in OpenAI's shape, and every path 401 when its API key is missing
// or wrong (a dialect that claims a path of its own answers there). Call it before
// serving.
func Register(srv *serve.Server, cfg Config) {
	s := newAPI(srv, cfg)
	for _, p := range []string{"/v1/chat/completions", "/chat/completions"} {
		srv.Handle("POST "+p, http.HandlerFunc(s.chatCompletions))
	}
	for _, p := range []string{"/v1/completions", "/completions"} {
		srv.Handle("POST "+p, http.HandlerFunc(s.completions))
	}
	for _, p := range []string{"/v1/models", "/models"} {
		srv.Handle("GET "+p, http.HandlerFunc(s.models))
	}
	srv.Handle("GET /v1/models/{id...}", http.HandlerFunc(s.model))
	for _, p := range []string{"/v1/responses", "/responses"} {
		srv.Handle("POST "+p, http.HandlerFunc(s.responses))
		srv.Handle("GET "+p+"/{id}", http.HandlerFunc(s.getResponse))
		srv.Handle("DELETE "+p+"/{id}", http.HandlerFunc(s.deleteResponse))
	}
	srv.HandleErrors("/", routeError)
	srv.HandleUnauthorized("/", nil, unauthorized)
}

func newAPI(srv *serve.Server, cfg Config) *api {
	if cfg.OwnedBy == "" {
		cfg.OwnedBy = "prismml"
	}
	if cfg.StoredResponses == 0 {
		cfg.StoredResponses = DefaultStoredResponses
	}
	if cfg.StoredResponseBytes <= 0 {
		cfg.StoredResponseBytes = DefaultStoredResponseBytes
	}
	return &api{srv: srv, m: srv.Model(), cfg: srv.Config(), ownedBy: cfg.OwnedBy, created: time.Now().Unix(),
		store: newResponseStore(cfg.StoredResponses, cfg.StoredResponseBytes)}
}

// routeError answers a request no route takes: 404, or 405 with Allow set.
func routeError(w http.ResponseWriter, r *http.Request, status int) {
	if status == http.StatusMethodNotAllowed {
		writeError(w, &apiError{status: status, Type: typeInvalidRequest, Code: strPtr("method_not_allowed"),
			Message: fmt.Sprintf("Method %s is not allowed for %s: use %s.", r.Method, r.URL.Path, w.Header().Get("Allow"))})
		return
	}
	writeError(w, &apiError{status: status, Type: typeInvalidRequest, Code: strPtr("unknown_url"),
		Message: fmt.Sprintf("Unknown request URL: %s %s.", r.Method, r.URL.Path)})
}

// models lists the model served, under its name and each alias.
func (s *api) models(w http.ResponseWriter, _ *http.Request) {
	var data []any
	for _, id := range s.cfg.ModelIDs() {
		data = append(data, s.modelObject(id))
	}
	serve.WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *api) model(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); !s.cfg.Lists(id) {
		writeError(w, s.unknownModel(id))
		return
	}
	serve.WriteJSON(w, http.StatusOK, s.modelObject(r.PathValue("id")))
}

func (s *api) modelObject(id string) map[string]any {
	return map[string]any{"id": id, "object": "model", "created": s.created, "owned_by": s.ownedBy,
		"context_length": s.m.ContextSize()}
}

func (s *api) unknownModel(name string) *apiError {
	return &apiError{status: http.StatusNotFound, Type: typeInvalidRequest, Param: strPtr("model"), Code: strPtr("model_not_found"),
		Message: fmt.Sprintf("The model '%s' does not exist: this server lists '%s'.", name, strings.Join(s.cfg.ModelIDs(), "', '"))}
}

// readBody reads a request body up to the limit and decodes it into v.
func (s *api) readBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := s.srv.ReadBody(w, r)
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return &apiError{status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: strPtr("request_too_large"),
				Message: fmt.Sprintf("The request body is larger than this server's limit of %d bytes.", mbe.Limit)}
		}
		return invalid("", "Could not read the request body: %v.", err)
	}
	return decode(body, v)
}

// checkModel checks the model a generation request names. Any name is accepted, as
// the Messages API beside it does: the one model served answers under its own name
// (serve.Config.ModelName states the policy).
func (s *api) checkModel(string) *apiError { return nil }
