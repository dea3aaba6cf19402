package anthropic

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
)

// handler serves the Messages API on a serve.Server.
type handler struct {
	srv     *serve.Server
	cfg     serve.Config
	created time.Time // the models' created_at
}

// Register adds the Messages API's routes to srv, and makes the paths under
// /v1/messages that no route takes answer 404 and 405 in Anthropic's shape, and 401
// there when the API key is missing or wrong; on /v1/models and /v1/models/{id}, which
// Anthropic's clients list models on too but the OpenAI API serves, a request that
// looks like theirs (anthropic-version or x-api-key) gets Anthropic's shapes, its 401
// included. Call it before serving.
func Register(srv *serve.Server) {
	h := newHandler(srv)
	srv.Handle("POST /v1/messages", http.HandlerFunc(h.messages))
	srv.Handle("POST /v1/messages/count_tokens", http.HandlerFunc(h.countTokens))
	srv.HandleErrors("/v1/messages", routeError)
	srv.HandleUnauthorized("/v1/messages", nil, unauthorized)
	srv.HandleUnauthorized("/v1/models", FromClient, unauthorized)
	srv.HandleFrom("GET /v1/models", FromClient, http.HandlerFunc(h.models))
	srv.HandleFrom("GET /v1/models/{id...}", FromClient, http.HandlerFunc(h.model))
}

// FromClient reports whether r is for this API: a path under /v1/messages, or a request
// that looks like one of Anthropic's clients, which send anthropic-version and their
// key in x-api-key (on /v1/models, which the OpenAI API serves too).
func FromClient(r *http.Request) bool {
	p := r.URL.Path
	return p == "/v1/messages" || strings.HasPrefix(p, "/v1/messages/") ||
		r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != ""
}

func newHandler(srv *serve.Server) *handler {
	return &handler{srv: srv, cfg: srv.Config(), created: time.Now()}
}

// endpoint names the handler's generations in serve's GenerationEnd and its metrics.
const endpoint = "messages"

// routeError answers a request no route takes: 404, or 405 with Allow set.
func routeError(w http.ResponseWriter, r *http.Request, status int) {
	if status == http.StatusMethodNotAllowed {
		writeError(w, &apiError{status: status, Type: typeInvalidRequest,
			Message: fmt.Sprintf("Method %s is not allowed for %s: use %s.", r.Method, r.URL.Path, w.Header().Get("Allow"))})
		return
	}
	writeError(w, &apiError{status: status, Type: typeNotFound, Message: "Not found: " + r.URL.Path})
}

// readRequest reads and checks a request, and prepares its generation.
func (h *handler) readRequest(w http.ResponseWriter, r *http.Request, count bool) (*messagesRequest, *bonsai.Prompt, *apiError) {
	body, err := h.srv.ReadBody(w, r)
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
func (h *handler) prepare(req *messagesRequest) (*bonsai.Prompt, *apiError) {
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
	// This API has no per-request speculative field: the mode is the server's, which
	// serve.New refuses as "mtp" on a model without an MTP head; named all the same.
	"Speculative": "speculative",
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
	case errors.Is(err, bonsai.ErrContextFull):
		// Anthropic's words, which agents look for to compact the conversation.
		if tl, ok := errors.AsType[*bonsai.PromptTooLongError](err); ok {
			return invalid("prompt is too long: %d tokens > %d maximum", tl.Tokens, tl.ContextSize)
		}
		return invalid("prompt is too long: %v", err)
	case errors.Is(err, bonsai.ErrInvalidInput):
		return invalid("messages: %v", err)
	}
	return serverError("%v", err)
}

func (h *handler) countTokens(w http.ResponseWriter, r *http.Request) {
	_, p, e := h.readRequest(w, r, true)
	if e != nil {
		writeError(w, e)
		return
	}
	serve.WriteJSON(w, http.StatusOK, map[string]int{"input_tokens": p.Len()})
}

// Response shapes.

// usage is a Message's usage. The fields Anthropic's types require are all sent: the
// cache this server writes is its own, so cache_creation counts none; no server tool
// runs (server_tool_use null); the tier and speed are the one there is.
type usage struct {
	InputTokens              int                  `json:"input_tokens"`
	CacheCreationInputTokens int                  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int                  `json:"cache_read_input_tokens"`
	CacheCreation            cacheCreation        `json:"cache_creation"`
	OutputTokens             int                  `json:"output_tokens"`
	OutputTokensDetails      *outputTokensDetails `json:"output_tokens_details"`
	ServerToolUse            *struct{}            `json:"server_tool_use"`
	ServiceTier              string               `json:"service_tier"`
	InferenceGeo             *string              `json:"inference_geo"`
	Speed                    string               `json:"speed"`
}

type cacheCreation struct {
	Ephemeral1hInputTokens int `json:"ephemeral_1h_input_tokens"`
	Ephemeral5mInputTokens int `json:"ephemeral_5m_input_tokens"`
}

type outputTokensDetails struct {
	ThinkingTokens int `json:"thinking_tokens"`
}

// deltaUsage is a message_delta's usage: the final counts.
type deltaUsage struct {
	InputTokens              int                  `json:"input_tokens"`
	CacheCreationInputTokens int                  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int                  `json:"cache_read_input_tokens"`
	OutputTokens             int                  `json:"output_tokens"`
	OutputTokensDetails      *outputTokensDetails `json:"output_tokens_details"`
	ServerToolUse            *struct{}            `json:"server_tool_use"`
}

// newUsage is the usage of a prompt of promptTokens, cached of them read from the
// cache, and of output tokens, thinking of them in the think block.
func newUsage(promptTokens, cached, output, thinking int) usage {
	return usage{InputTokens: promptTokens - cached, CacheReadInputTokens: cached, OutputTokens: output,
		OutputTokensDetails: &outputTokensDetails{ThinkingTokens: thinking}, ServiceTier: "standard", Speed: "standard"}
}

func (u usage) delta() deltaUsage {
	return deltaUsage{InputTokens: u.InputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens: u.CacheReadInputTokens, OutputTokens: u.OutputTokens, OutputTokensDetails: u.OutputTokensDetails}
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
	// Citations (text, always null) and Caller (tool_use, always a direct call) are
	// required by the clients' types of their blocks, and absent from the others.
	Citations json.RawMessage `json:"citations,omitempty"`
	Caller    json.RawMessage `json:"caller,omitempty"`
}

// messageOut is a Message. Its nullable fields that nothing here fills are sent as
// null, as Anthropic's API does and its clients' types require: container (no code
// execution), stop_details (no refusal), diagnostics (none asked for).
type messageOut struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []contentBlock   `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	StopDetails  *json.RawMessage `json:"stop_details"`
	Container    *json.RawMessage `json:"container"`
	Diagnostics  *json.RawMessage `json:"diagnostics"`
	Usage        usage            `json:"usage"`
}

var (
	nullJSON     = json.RawMessage("null")
	directCaller = json.RawMessage(`{"type":"direct"}`)
)

func textBlock(s string) contentBlock {
	return contentBlock{Type: "text", Text: &s, Citations: nullJSON}
}

// toolUseID is a call's id as Anthropic spells its ids.
func toolUseID(id string) string {
	if rest, ok := strings.CutPrefix(id, "call_"); ok {
		return "toolu_" + rest
	}
	return id
}

func toolUseBlock(id, name string, input json.RawMessage) contentBlock {
	return contentBlock{Type: "tool_use", ID: id, Name: name, Input: &input, Caller: directCaller}
}

// signature stands for Anthropic's signature of a thinking block, which clients send
// back unchanged: this server checks nothing, so it is a digest of the text.
func signature(thinking string) string {
	sum := sha256.Sum256([]byte(thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// stopReason is the stop reason of a generation's end. A limit wins over the calls
// made before it, as Anthropic's API answers: the last tool_use block a stream opened may
// be cut short, and "tool_use" would have the client run it.
func stopReason(res bonsai.Result) (reason string, seq *string) {
	switch {
	// A generation the server ended as it drained is a reply cut short at a limit:
	// "max_tokens" is the stop reason every client reads that way (pause_turn, the other
	// candidate, belongs to server tools and asks for the turn to be sent back).
	case res.FinishReason == bonsai.FinishLength || res.FinishReason == bonsai.FinishContextFull ||
		res.FinishReason == serve.FinishDrained:
		return "max_tokens", nil
	case res.FinishReason == bonsai.FinishToolCalls || len(res.ToolCalls) > 0:
		return "tool_use", nil
	case res.StopSequence != "":
		s := res.StopSequence
		return "stop_sequence", &s
	}
	return "end_turn", nil
}

func usageOf(res serve.Result) usage {
	u := res.Usage
	return newUsage(u.PromptTokens, u.CachedTokens, u.CompletionTokens, res.ReasoningTokens)
}

// generationError maps Run's errors.
func generationError(err error) *apiError {
	switch {
	case errors.Is(err, serve.ErrQueueFull):
		return overloaded(fmt.Sprintf("Overloaded: %v. Retry later.", err), 1)
	case errors.Is(err, serve.ErrShuttingDown):
		return unavailable("The server is shutting down.")
	}
	return serverError("Generation failed: %v.", err)
}

func (h *handler) messages(w http.ResponseWriter, r *http.Request) {
	req, p, e := h.readRequest(w, r, false)
	if e != nil {
		writeError(w, e)
		return
	}
	id := serve.NewID("msg_")
	if req.Stream {
		h.stream(w, r, id, p)
		return
	}
	b := &blocks{collect: true}
	res, err := h.srv.Run(r.Context(), serve.Job{Endpoint: endpoint, Prompt: p}, nil, b.token)
	if err != nil {
		writeError(w, generationError(err))
		return
	}
	if res.FinishReason == bonsai.FinishCancelled {
		return // the client is gone
	}
	b.stop()
	out := messageOut{ID: id, Type: "message", Role: "assistant", Model: h.cfg.ModelName, Content: b.wholeContent(res.ToolCalls), Usage: usageOf(res)}
	reason, seq := stopReason(res.Result)
	out.StopReason, out.StopSequence = &reason, seq
	serve.WriteJSON(w, http.StatusOK, out)
}
