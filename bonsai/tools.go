package bonsai

import (
	"encoding/json"

	"github.com/bonsai-go/sdk/bonsai/grammar"
)

// ToolCall is one call of a tool, as an assistant writes it.
type ToolCall struct {
	// ID identifies the call, for the tool message that answers it ("call_" and 24
	// random hex digits when the model made it).
	ID string
	// Name is the function's name.
	Name string
	// Arguments is a JSON object: the call's arguments.
	Arguments json.RawMessage
}

// Tool is a function the model may call.
type Tool struct {
	// Name is the function's name, which a call writes; Description tells the model
	// what it does.
	Name, Description string
	// Parameters is the JSON Schema of the arguments (an object schema); empty means
	// any object.
	Parameters json.RawMessage
}

// ToolChoiceMode says whether the model must call a tool.
type ToolChoiceMode string

const (
	// ToolChoiceAuto (also the zero value): the model answers or calls tools, as it
	// chooses; nothing is enforced, what it writes is parsed.
	ToolChoiceAuto ToolChoiceMode = "auto"
	// ToolChoiceNone: no tool calls; the tools are still rendered for the template,
	// and tool-call markup is left as answer text.
	ToolChoiceNone ToolChoiceMode = "none"
	// ToolChoiceRequired: the answer is one or more calls (one when
	// ParallelToolCalls is false) of the given tools, enforced by the grammar.
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceFunction: the answer is calls of the function ToolChoice.Name.
	ToolChoiceFunction ToolChoiceMode = "function"
)

// ToolChoice is GenerateOptions' choice of tool.
type ToolChoice struct {
	// Mode says whether and which tools the model must call.
	Mode ToolChoiceMode
	// Name is the function to call, with ToolChoiceFunction.
	Name string
}

// ResponseFormatType is the kind of answer a ResponseFormat asks for; its values are
// OpenAI's response_format types.
type ResponseFormatType string

const (
	// ResponseFormatText (also the zero value): free text, no constraint.
	ResponseFormatText ResponseFormatType = "text"
	// ResponseFormatJSONObject: any JSON object, enforced by the grammar.
	ResponseFormatJSONObject ResponseFormatType = "json_object"
	// ResponseFormatJSONSchema: a JSON value valid under ResponseFormat.Schema,
	// enforced by the grammar.
	ResponseFormatJSONSchema ResponseFormatType = "json_schema"
)

// ResponseFormat constrains the answer's format.
type ResponseFormat struct {
	// Type is ResponseFormatText, ResponseFormatJSONObject or
	// ResponseFormatJSONSchema.
	Type ResponseFormatType
	// Schema is the JSON Schema for ResponseFormatJSONSchema.
	Schema json.RawMessage
	// Strict is OpenAI's flag. The schema is enforced either way, and read as
	// strict mode reads it: an object without additionalProperties is closed.
	Strict bool
	// Name is the schema's name (informational).
	Name string
}

// ToolCallFragment is a piece of a tool call while it is being read, for streaming
// servers. The first fragment of a call has its Index (0 for the first call of the
// generation), ID and Name; later ones carry Arguments text. The concatenation of a
// call's Arguments pieces is exactly the completed call's Arguments.
type ToolCallFragment struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// MalformedToolCall is a tool-call block the model wrote that could not be parsed.
type MalformedToolCall struct {
	// Text is the block as written; it is part of the answer text.
	Text string
	// Err says what was wrong.
	Err error
}

// FinishToolCalls: the generation ended after the model called tools.
const FinishToolCalls FinishReason = "tool_calls"

// ErrInvalidSchema is wrapped by the error for a JSON Schema or grammar the engine does
// not accept: malformed, unsupported or hostile (too deep, too large). The message names
// the keyword and the JSON path; errors.As finds a *SchemaError with them.
var ErrInvalidSchema = grammar.ErrInvalidSchema

// SchemaError is the error for a schema the grammar engine does not accept.
type SchemaError = grammar.SchemaError
