package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/bonsai-go/sdk/internal/serve"
)

// apiError is an error response in Anthropic's shape:
// {"type": "error", "error": {"type", "message"}}.
type apiError struct {
	status     int
	Type       string `json:"type"`
	Message    string `json:"message"`
	retryAfter int
}

func (e *apiError) Error() string { return e.Message }

// Anthropic's error types.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typeNotFound       = "not_found_error"
	typeTooLarge       = "request_too_large"
	typeAPI            = "api_error"
	typeOverloaded     = "overloaded_error"
)

// invalid is a 400 invalid_request_error.
func invalid(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Type: typeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// overloaded is Anthropic's 529 overloaded_error.
func overloaded(msg string, retryAfter int) *apiError {
	return &apiError{status: 529, Type: typeOverloaded, Message: msg, retryAfter: retryAfter}
}

// unavailable is a 503 for a server that takes no work now (loading or draining), with
// Retry-After. Anthropic's own servers say 529 when overloaded; 503 is what a load
// balancer and Kubernetes' gateway read as "this replica is unavailable, try another",
// and the Anthropic SDKs retry it as they retry 529. The body keeps Anthropic's shape.
func unavailable(msg string) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, Type: typeOverloaded, Message: msg, retryAfter: serve.RetryAfterSeconds}
}

// WriteUnavailable answers a request the server cannot take yet (its model is loading)
// with 503 and Retry-After, in Anthropic's error shape.
func WriteUnavailable(w http.ResponseWriter, msg string) { writeError(w, unavailable(msg)) }

func serverError(format string, args ...any) *apiError {
	return &apiError{status: http.StatusInternalServerError, Type: typeAPI, Message: fmt.Sprintf(format, args...)}
}

// errorBody is an error response, or a stream's error event. Anthropic's API gives
// each error a request_id, which its clients' types require: a fresh id, also sent as
// the request-id header.
type errorBody struct {
	Type      string    `json:"type"`
	Error     *apiError `json:"error"`
	RequestID string    `json:"request_id"`
}

func newErrorBody(e *apiError) errorBody {
	return errorBody{Type: "error", Error: e, RequestID: serve.NewID("req_")}
}

// writeError sends e as the response.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	body := newErrorBody(e)
	h.Set("Request-Id", body.RequestID)
	w.WriteHeader(e.status)
	b, _ := json.Marshal(body)
	w.Write(append(b, '\n'))
}

// unauthorized answers a request without a valid API key as Anthropic does: 401, an
// authentication_error.
func unauthorized(w http.ResponseWriter, _ *http.Request, err error) {
	msg := "invalid x-api-key"
	if errors.Is(err, serve.ErrNoAPIKey) {
		msg = "x-api-key header is required"
	}
	writeError(w, &apiError{status: http.StatusUnauthorized, Type: typeAuthentication, Message: msg})
}
