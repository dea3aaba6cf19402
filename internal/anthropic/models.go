package anthropic

import (
	"net/http"
	"time"

	"github.com/bonsai-go/sdk/internal/serve"
)

// Anthropic's models endpoints, GET /v1/models and /v1/models/{id}: the OpenAI API
// serves the same paths, and a request from Anthropic's clients (FromClient)
// gets Anthropic's shapes — a page of ModelInfo, and not_found_error for an id not
// listed.

type support struct {
	Supported bool `json:"supported"`
}

// capabilities are what the served model does of what Anthropic's models list: thinking
// (enabled, adaptive, disabled); none of the server tools, files, citations or batches.
type capabilities struct {
	Batch             support `json:"batch"`
	Citations         support `json:"citations"`
	CodeExecution     support `json:"code_execution"`
	ContextManagement struct {
		ClearThinking20251015 support `json:"clear_thinking_20251015"`
		ClearToolUses20250919 support `json:"clear_tool_uses_20250919"`
		Compact20260112       support `json:"compact_20260112"`
		Supported             bool    `json:"supported"`
	} `json:"context_management"`
	Effort struct {
		High      support `json:"high"`
		Low       support `json:"low"`
		Max       support `json:"max"`
		Medium    support `json:"medium"`
		Supported bool    `json:"supported"`
		Xhigh     support `json:"xhigh"`
	} `json:"effort"`
	ImageInput  support `json:"image_input"`
	PDFInput    support `json:"pdf_input"`
	ServerTools struct {
		CodeExecution support `json:"code_execution"`
		Supported     bool    `json:"supported"`
		WebSearch     support `json:"web_search"`
	} `json:"server_tools"`
	StructuredOutputs support `json:"structured_outputs"`
	Thinking          struct {
		Supported bool `json:"supported"`
		Types     struct {
			Adaptive     support `json:"adaptive"`
			BetweenTools support `json:"between_tools"`
			Disabled     support `json:"disabled"`
			Enabled      support `json:"enabled"`
		} `json:"types"`
	} `json:"thinking"`
}

// modelInfo is a ModelInfo. The served model is active, of no Claude line, and
// retires never (null); its context bounds both the input and max_tokens.
type modelInfo struct {
	Type           string       `json:"type"`
	ID             string       `json:"id"`
	DisplayName    string       `json:"display_name"`
	CreatedAt      string       `json:"created_at"`
	Capabilities   capabilities `json:"capabilities"`
	Lifecycle      string       `json:"lifecycle"`
	Line           *string      `json:"line"`
	DeprecatedAt   *string      `json:"deprecated_at"`
	RetiresAt      *string      `json:"retires_at"`
	MaxInputTokens int          `json:"max_input_tokens"`
	MaxTokens      int          `json:"max_tokens"`
}

func (h *handler) modelInfo(id string) modelInfo {
	var c capabilities
	c.Thinking.Supported = true
	c.Thinking.Types.Adaptive.Supported = true
	c.Thinking.Types.Disabled.Supported = true
	c.Thinking.Types.Enabled.Supported = true
	n := h.srv.Model().ContextSize()
	return modelInfo{Type: "model", ID: id, DisplayName: id, CreatedAt: h.created.UTC().Format(time.RFC3339),
		Capabilities: c, Lifecycle: "active", MaxInputTokens: n, MaxTokens: n}
}

// models lists the served model under its name and each alias, on one page.
func (h *handler) models(w http.ResponseWriter, _ *http.Request) {
	ids := h.cfg.ModelIDs()
	data := make([]modelInfo, len(ids))
	for i, id := range ids {
		data[i] = h.modelInfo(id)
	}
	serve.WriteJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false, "first_id": ids[0], "last_id": ids[len(ids)-1]})
}

func (h *handler) model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !h.cfg.Lists(id) {
		writeError(w, &apiError{status: http.StatusNotFound, Type: typeNotFound, Message: "model: " + id})
		return
	}
	serve.WriteJSON(w, http.StatusOK, h.modelInfo(id))
}
