package anthropic

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/openai"
)

// Config sets up a Handler.
type Config struct {
	// ModelName is the id responses carry (required).
	ModelName string
	// MaxBodyBytes limits a request body; larger ones get 413 (default 4 MiB).
	MaxBodyBytes int64
	// WriteTimeout bounds each write of a streamed response (default 1 minute).
	WriteTimeout time.Duration
	// Defaults are the sampling settings of requests that do not give them
	// (max_tokens is required by the API, so Defaults.MaxTokens is not read).
	Defaults openai.Defaults
}

// Handler serves the Messages API on an openai.Server's engine.
type Handler struct {
	srv *openai.Server
	cfg Config
}

// New returns a Handler running its generations on srv. Mount it with
// srv.Handle("/v1/messages", h) and srv.Handle("/v1/messages/count_tokens", h).
func New(srv *openai.Server, cfg Config) (*Handler, error) {
	if cfg.ModelName == "" {
		return nil, errors.New("anthropic: Config.ModelName is empty")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = time.Minute
	}
	return &Handler{srv: srv, cfg: cfg}, nil
}

// endpoint names the Handler's generations in openai's GenerationEnd.
const endpoint = "messages"

// Paths are the paths the Handler serves.
var Paths = []string{"/v1/messages", "/v1/messages/count_tokens"}

// ServeHTTP serves POST /v1/messages and POST /v1/messages/count_tokens.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, &apiError{status: http.StatusMethodNotAllowed, Type: typeInvalidRequest,
			Message: fmt.Sprintf("Method %s is not allowed for %s: use POST.", r.Method, r.URL.Path)})
		return
	}
	switch r.URL.Path {
	case "/v1/messages", "/v1/messages/":
		h.messages(w, r)
	case "/v1/messages/count_tokens":
		h.countTokens(w, r)
	default:
		writeError(w, &apiError{status: http.StatusNotFound, Type: typeNotFound, Message: "Not found: " + r.URL.Path})
	}
}

// readRequest reads and checks a request, and prepares its generation.
func (h *Handler) readRequest(w http.ResponseWriter, r *http.Request, count bool) (*messagesRequest, *bonsai.Prompt, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, nil, &apiError{status: http.StatusRequestEntityTooLarge, Type: typeTooLarge,
				Message: fmt.Sprintf("The request body is larger than this server's limit of %d bytes.", mbe.Limit)}
		}
		return nil, nil, invalid("Could not read the request body: %v.", err)
	}
	var req messagesRequest
	if e := decode(body, &req); e != nil {
		return nil, nil, e
	}
	if count && req.MaxTokens == nil { // count_tokens does not take one
		n := math.MaxInt32
		req.MaxTokens = &n
	}
	p, e := h.prepare(&req)
	return &req, p, e
}

// prepare checks a decoded request and prepares its generation.
func (h *Handler) prepare(req *messagesRequest) (*bonsai.Prompt, *apiError) {
	if req.Model == "" {
		return nil, invalid("model: Field required")
	}
	opt, e := req.options(h, rand.Uint64)
	if e != nil {
		return nil, e
	}
	msgs, e := req.messages()
	if e != nil {
		return nil, e
	}
	p, err := h.srv.Model().Prepare(bonsai.Chat(msgs...), opt)
	if err != nil {
		return nil, prepareError(err, opt)
	}
	return p, nil
}

// optionFields are the request fields of the GenerateOptions fields Prepare may refuse.
var optionFields = map[string]string{
	"MaxTokens": "max_tokens", "Temperature": "temperature", "TopK": "top_k", "TopP": "top_p",
	"ToolChoice": "tool_choice", "Tools": "tools",
}

// prepareError maps Prepare's errors for options opt.
func prepareError(err error, opt bonsai.GenerateOptions) *apiError {
	if oe, ok := errors.AsType[*bonsai.OptionError](err); ok {
		field := optionFields[oe.Option]
		switch {
		case oe.Option == "Tools" && oe.Tool >= 0 && errors.Is(err, bonsai.ErrInvalidSchema):
			field = fmt.Sprintf("tools.%d.input_schema", oe.Tool)
		case oe.Option == "Tools" && oe.Tool >= 0:
			field = fmt.Sprintf("tools.%d.name", oe.Tool)
		case oe.Option == "ToolChoice" && opt.ToolChoice.Mode == bonsai.ToolChoiceFunction:
			field = "tool_choice.name"
		}
		return invalid("%s: %v", field, oe.Err)
	}
	switch {
	case errors.Is(err, bonsai.ErrContextFull), errors.Is(err, bonsai.ErrInvalidInput):
		return invalid("messages: %v", err)
	}
	return serverError("%v", err)
}

func (h *Handler) countTokens(w http.ResponseWriter, r *http.Request) {
	_, p, e := h.readRequest(w, r, true)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": p.Len()})
}

// Response shapes.

type usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// contentBlock is a response's content block: text, thinking or tool_use.
type contentBlock struct {
	Type      string           `json:"type"`
	Text      *string          `json:"text,omitempty"`
	Thinking  *string          `json:"thinking,omitempty"`
	Signature *string          `json:"signature,omitempty"`
	ID        string           `json:"id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Input     *json.RawMessage `json:"input,omitempty"`
}

type messageOut struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        usage          `json:"usage"`
}

func textBlock(s string) contentBlock { return contentBlock{Type: "text", Text: &s} }
func thinkBlock(s, sig string) contentBlock {
	return contentBlock{Type: "thinking", Thinking: &s, Signature: &sig}
}

// toolUseID is a call's id as Anthropic spells its ids.
func toolUseID(id string) string {
	if rest, ok := strings.CutPrefix(id, "call_"); ok {
		return "toolu_" + rest
	}
	return id
}

func toolUseBlock(id, name string, input json.RawMessage) contentBlock {
	return contentBlock{Type: "tool_use", ID: id, Name: name, Input: &input}
}

// signature stands for Anthropic's signature of a thinking block, which clients send
// back unchanged: this server checks nothing, so it is a digest of the text.
func signature(thinking string) string {
	sum := sha256.Sum256([]byte(thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func stopReason(res bonsai.Result) (reason string, seq *string) {
	switch {
	case res.FinishReason == bonsai.FinishToolCalls || len(res.ToolCalls) > 0:
		return "tool_use", nil
	case res.FinishReason == bonsai.FinishLength || res.FinishReason == bonsai.FinishContextFull:
		return "max_tokens", nil
	case res.StopSequence != "":
		s := res.StopSequence
		return "stop_sequence", &s
	}
	return "end_turn", nil
}

func usageOf(res bonsai.Result) usage {
	u := res.Usage
	return usage{InputTokens: u.PromptTokens - u.CachedTokens, CacheReadInputTokens: u.CachedTokens, OutputTokens: u.CompletionTokens}
}

func newID(prefix string) string {
	var b [12]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return prefix + hex.EncodeToString(b[:])
}

// generationError maps Execute's errors.
func generationError(err error) *apiError {
	switch {
	case errors.Is(err, openai.ErrQueueFull):
		return overloaded(fmt.Sprintf("Overloaded: %v. Retry later.", err), 1)
	case errors.Is(err, openai.ErrShuttingDown):
		return overloaded("The server is shutting down.", 0)
	}
	return serverError("Generation failed: %v.", err)
}

func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	req, p, e := h.readRequest(w, r, false)
	if e != nil {
		writeError(w, e)
		return
	}
	id := newID("msg_")
	if req.Stream {
		h.stream(w, r, id, p)
		return
	}
	res, err := h.srv.Execute(r.Context(), endpoint, p, nil, func(bonsai.Token) bool { return true })
	if err != nil {
		writeError(w, generationError(err))
		return
	}
	if res.FinishReason == bonsai.FinishCancelled {
		return // the client is gone
	}
	out := messageOut{ID: id, Type: "message", Role: "assistant", Model: h.cfg.ModelName, Content: []contentBlock{}, Usage: usageOf(res)}
	if res.Thinking != "" {
		out.Content = append(out.Content, thinkBlock(res.Thinking, signature(res.Thinking)))
	}
	if res.Text != "" {
		out.Content = append(out.Content, textBlock(res.Text))
	}
	for _, c := range res.ToolCalls {
		out.Content = append(out.Content, toolUseBlock(toolUseID(c.ID), c.Name, c.Arguments))
	}
	reason, seq := stopReason(res)
	out.StopReason, out.StopSequence = &reason, seq
	writeJSON(w, http.StatusOK, out)
}
