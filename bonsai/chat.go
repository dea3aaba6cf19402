package bonsai

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ardanlabs/jinja"
	"github.com/bonsai-go/sdk/internal/prepcount"
)

// Role is who speaks a Message: the chat template renders it as the turn's role. A
// template may know other roles (any string converts), but Qwen's know these four.
type Role string

const (
	// RoleSystem is the instructions that frame the conversation, before the first
	// user turn.
	RoleSystem Role = "system"
	// RoleUser is the person's turn.
	RoleUser Role = "user"
	// RoleAssistant is the model's turn: its answer, thinking and tool calls.
	RoleAssistant Role = "assistant"
	// RoleTool is a tool's result, answering the call of Message.ToolCallID.
	RoleTool Role = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	// Role is RoleSystem, RoleUser, RoleAssistant or RoleTool.
	Role Role
	// Content is the text of the turn. For an assistant turn it is the answer, without
	// the thinking.
	Content string
	// ReasoningContent is an assistant turn's thinking (Result.Thinking), optional. The
	// Qwen templates show it only for the turns after the last user message, and drop it
	// from earlier ones.
	ReasoningContent string
	// ToolCalls are the calls an assistant turn made (after its Content).
	ToolCalls []ToolCall
	// ToolCallID is, for a message of RoleTool, the ID of the call it answers.
	ToolCallID string
	// Name is, for a message of RoleTool, the called function's name (optional).
	Name string
}

// ChatOptions are the switches a chat template reads.
type ChatOptions struct {
	// AddGenerationPrompt ends the rendering with the opening of an assistant turn, for
	// the model to complete.
	AddGenerationPrompt bool
	// EnableThinking sets the template's enable_thinking variable; nil leaves it
	// undefined, which the Qwen templates take as on.
	EnableThinking *bool
	// Tools are the tool definitions the template renders (its tools variable).
	Tools []Tool
}

// chatMLTemplate is the template of a model file that has none: ChatML, the format Qwen
// models are trained on, with Qwen3's empty think block when thinking is off.
const chatMLTemplate = `{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}
{{- '<think>\n\n</think>\n\n' -}}
{%- endif -%}
{%- endif -%}
`

// keyChatTemplate is the GGUF key of the Jinja chat template.
const keyChatTemplate = "tokenizer.chat_template"

// loadChatTemplate compiles the model's chat template: the override when given, else the
// file's tokenizer.chat_template, else ChatML. A template that does not compile is
// RenderChat's error, not Open's, since the model still completes plain text.
func (m *Model) loadChatTemplate(override string) {
	src := override
	if src == "" {
		if v, err := m.file.String(keyChatTemplate); err == nil {
			src = v
		}
	}
	if src == "" {
		src = chatMLTemplate
	}
	m.tmplSource = src
	t, err := jinja.Compile(src)
	if err != nil {
		m.tmplErr = fmt.Errorf("chat template: %w", err)
		return
	}
	m.tmpl = t
}

// ChatTemplate returns the Jinja source of the chat template RenderChat uses.
func (m *Model) ChatTemplate() string { return m.tmplSource }

// RenderChat formats a conversation as the model expects it, with the model's chat
// template. The template sees the variables Hugging Face's apply_chat_template passes:
// messages (role, content and, when set, reasoning_content, tool_calls in OpenAI's shape
// with the arguments as a mapping, tool_call_id and name), add_generation_prompt,
// enable_thinking (only when opt.EnableThinking is set), tools (OpenAI's
// {"type": "function", "function": {...}} for each of opt.Tools, or none), and bos_token and
// eos_token (the text of the tokenizer's BOS and EOS tokens, as llama.cpp passes them).
func (m *Model) RenderChat(msgs []Message, opt ChatOptions) (string, error) {
	out, err := m.renderChat(msgs, opt, &prepcount.Renders)
	if err != nil {
		return "", fmt.Errorf("bonsai: %w", err)
	}
	return out, nil
}

// renderChat is RenderChat, counted by counter; its errors are not yet prefixed with
// the package's name.
func (m *Model) renderChat(msgs []Message, opt ChatOptions, counter *atomic.Int64) (string, error) {
	counter.Add(1)
	if m.tmplErr != nil {
		return "", m.tmplErr
	}
	if len(msgs) == 0 {
		return "", errors.New("chat: no messages")
	}
	list := make([]jinja.Value, len(msgs))
	for i, msg := range msgs {
		if msg.Role == "" {
			return "", fmt.Errorf("chat: message %d has no role", i)
		}
		mm, err := messageValue(msg)
		if err != nil {
			return "", fmt.Errorf("chat: message %d: %w", i, err)
		}
		list[i] = mm
	}
	var tools any
	if len(opt.Tools) > 0 {
		tv, err := toolsValue(opt.Tools)
		if err != nil {
			return "", fmt.Errorf("chat: %w", err)
		}
		tools = tv
	}
	data := map[string]any{
		"messages":              list,
		"add_generation_prompt": opt.AddGenerationPrompt,
		"tools":                 tools,
	}
	if opt.EnableThinking != nil {
		data["enable_thinking"] = *opt.EnableThinking
	}
	if m.tok != nil {
		if id, ok := m.tok.BOS(); ok {
			data["bos_token"] = m.tok.Piece(id)
		}
		if id, ok := m.tok.EOS(); ok {
			data["eos_token"] = m.tok.Piece(id)
		}
	}
	out, err := m.tmpl.Render(data)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return out, nil
}
