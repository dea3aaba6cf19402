package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/bonsai-go/sdk/internal/serve"
)

// apiError is an error response in OpenAI's shape:
// {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// retryAfter, in seconds, is sent as Retry-After when positive.
	retryAfter int
}

func (e *apiError) Error() string { return e.Message }

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Error types, as OpenAI names them.
const (
	typeInvalidRequest = "invalid_request_error"
	typeServer         = "server_error"
)

// invalid is a 400 invalid_request_error about param.
func invalid(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Type: typeInvalidRequest, Param: strPtr(param), Message: fmt.Sprintf(format, args...)}
}

func (e *apiError) withCode(code string) *apiError {
	e.Code = strPtr(code)
	return e
}

func serverError(format string, args ...any) *apiError {
	return &apiError{status: http.StatusInternalServerError, Type: typeServer, Message: fmt.Sprintf(format, args...)}
}

func overloaded(msg, code string, retryAfter int) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, Type: typeServer, Message: msg, Code: strPtr(code), retryAfter: retryAfter}
}

// writeError sends e as the response.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	w.WriteHeader(e.status)
	b, _ := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	w.Write(append(b, '\n'))
}

// unauthorized answers a request without a valid API key as OpenAI does: 401, an
// invalid_request_error with code invalid_api_key (the key itself is not echoed).
func unauthorized(w http.ResponseWriter, _ *http.Request, err error) {
	msg := "Incorrect API key provided."
	if errors.Is(err, serve.ErrNoAPIKey) {
		msg = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
	}
	writeError(w, &apiError{status: http.StatusUnauthorized, Type: typeInvalidRequest, Code: strPtr("invalid_api_key"), Message: msg})
}

// WriteUnavailable answers a request the server cannot take yet (its model is loading)
// with 503, in OpenAI's error shape; the caller sets Retry-After.
func WriteUnavailable(w http.ResponseWriter, msg string) {
	writeError(w, overloaded(msg, "model_loading", 0))
}
