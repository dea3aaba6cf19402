// Package anthropic serves a Bonsai model with Anthropic's Messages API, which coding
// agents and the Anthropic SDKs speak:
//
//	POST /v1/messages                a turn, whole or streamed as server-sent events
//	POST /v1/messages/count_tokens   the prompt's length in tokens
//	GET  /v1/models, /v1/models/{id} the model served, as ModelInfo, to Anthropic's
//	                                 clients (anthropic-version or x-api-key); the
//	                                 OpenAI API answers the others on these paths
//
// Register mounts the routes on a serve.Server — the same sessions, queue, limits and
// prefix reuse as the OpenAI API beside it, which this package does not import. A
// request is validated and prepared once with bonsai.Model.Prepare before it queues
// (count_tokens answers the prepared prompt's length); what Prepare refuses is a 400
// naming Anthropic's field at fault ("tools.1.input_schema"). The package only
// translates: text and system prompts, tools with tool_use and tool_result blocks,
// thinking blocks (thinking {"type": "enabled"} switches the model's think block on;
// without it, or with {"type": "disabled"}, the model answers directly, as Anthropic's
// models do), and the stream's
// events in Anthropic's shapes: message_start, content_block_start,
// content_block_delta (text_delta, thinking_delta, signature_delta, input_json_delta),
// content_block_stop, message_delta, message_stop, ping and error.
//
// The thinking is budgeted: {"type": "enabled", "budget_tokens": N} closes the think
// block after N tokens (bonsai.GenerateOptions.ThinkingBudget), then the answer
// follows; N must be at least 1 and below max_tokens (Anthropic also asks for 1024 at
// least, a floor for its models that a small local model or a short reply need not
// keep), else a 400 invalid_request_error names thinking.enabled.budget_tokens.
// {"type": "adaptive"} thinks within the server's budget (serve.Defaults.ThinkingBudget),
// whose default caps the thinking only before a forced tool use, at half of max_tokens,
// so that tool_choice any or tool is always answered with a call. Unlike Anthropic's
// API, forced tool use with thinking on is accepted.
//
// Responses carry every field anthropic-sdk-go's types declare required, the nullable
// ones nothing here fills as null (container, stop_details, diagnostics,
// usage.server_tool_use); errors have a request_id. A stream's message_start states the
// prompt's usage as prefilled (input_tokens and cache_read_input_tokens), which
// message_delta's final usage repeats, with the output tokens.
//
// The model a request names is not checked: agents name their own models, and the one
// model served answers every name, as in the OpenAI API beside it; responses carry the
// served model's id. The models endpoints list it and its aliases
// (serve.Config.ModelAliases), and answer not_found_error for other ids.
package anthropic
