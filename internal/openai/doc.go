// Package openai translates the OpenAI API's shapes, for the clients written against
// it (the official SDKs, LangChain, curl), to a serve.Server's generations:
//
//	POST /v1/chat/completions   a chat turn, whole or streamed as server-sent events
//	POST /v1/completions        a plain-text continuation, whole or streamed
//	GET  /v1/models             the one model served; GET /v1/models/{id} likewise
//	POST /v1/responses          the Responses API: a response, whole or as typed events
//	GET  /v1/responses/{id}     a stored response; DELETE removes it
//
// The model a request names is not checked: clients send names of their own ("gpt-4o"),
// and the one model served answers every name, as in the Messages API beside it;
// responses carry the served model's id. The models endpoints are a catalogue: they
// list the served id and its aliases (serve.Config.ModelAliases) and answer 404,
// model_not_found, for other ids.
//
// Register mounts the routes on a serve.Server, whose sessions, queue, limits, /health
// and /metrics they share with the other dialects; a request refused because the queue
// is full gets 503 and Retry-After. A request is validated and prepared once, with
// bonsai.Model.Prepare, before it queues: what Prepare refuses (the prompt's length, a
// tool defined twice, a schema) is a 400 naming the OpenAI parameter at fault. The
// prepared prompt is what serve.Server.Run generates.
//
// Beyond OpenAI's parameters the server accepts those of vLLM and llama.cpp's server
// that Bonsai models need: top_k, min_p, repetition_penalty, and thinking switched on or
// off with chat_template_kwargs {"enable_thinking": false} or a top-level
// "enable_thinking"; the thinking comes back apart from the answer, in
// reasoning_content, as DeepSeek's API and llama.cpp return it.
//
// A request may choose its speculative decoding with "speculative": "auto", "off",
// "lookup" or "mtp" (serve.SpeculativeModes; the server's serve.Defaults.Speculative
// when absent; "mtp" needs a model file with a multi-token-prediction head). The output is the model's either way; the usage reports the drafted tokens
// in OpenAI's fields for a predicted output's, completion_tokens_details's
// accepted_prediction_tokens and rejected_prediction_tokens.
//
// reasoning_effort (the Responses API's reasoning.effort) switches thinking and budgets
// it: "none" and "minimal" switch it off; "low", "medium", "high", "xhigh" and "max"
// switch it on and give the think block 1/4, 1/2, 3/4, 7/8 and 7/8 of the request's max
// tokens (max_completion_tokens, max_tokens or max_output_tokens, else the server's
// default), at least one token (bonsai.GenerateOptions.ThinkingBudget): at that many
// the block is closed and the answer follows. enable_thinking wins over the effort's
// switch. A request with no effort, or with no max tokens to take a share of, gets the
// server's budget (serve.Defaults.ThinkingBudget), whose default caps the thinking
// only before a forced answer, at half the max tokens: a required or named tool choice,
// or a JSON response_format, is then always answered within the max tokens.
//
// Tools are OpenAI's: tools, tool_choice ("auto", "none", "required" or a named
// function), parallel_tool_calls, assistant messages with tool_calls and tool messages
// in the history; answers with tool_calls and finish_reason "tool_calls", streamed as a
// delta per call with its index, id and function name, then pieces of its arguments.
// With a required or named tool choice the calls' syntax and argument schemas are
// enforced by the SDK's constrained decoding, as response_format json_object and
// json_schema are. A schema the engine refuses is answered with a 400 naming the
// parameter, the keyword and its JSON path (code invalid_schema).
//
// The Responses API takes input as text or items (messages, function_call,
// function_call_output and reasoning items), instructions, function tools, tool_choice,
// parallel_tool_calls, text.format (text, json_object, json_schema), max_output_tokens,
// temperature, top_p, reasoning.effort ("none" and "minimal" switch thinking off, the
// others on with their share of max_output_tokens, as reasoning_effort does on the chat
// endpoint; enable_thinking wins when both are sent), store, previous_response_id,
// metadata and user, and the chat endpoint's extensions (top_k, min_p,
// repetition_penalty, seed, enable_thinking, speculative). It answers a Response with message,
// function_call and reasoning items (the thinking in reasoning_text content, summary
// empty), or streams it as OpenAI's typed events, each named by an event: line and
// numbered by sequence_number: response.created, response.in_progress, then per item
// output_item.added, its content_part.added, its deltas (output_text,
// reasoning_text, function_call_arguments), their done events, output_item.done, and
// last response.completed, or response.incomplete with incomplete_details
// {"reason": "max_output_tokens"} when cut at the limit, at the context's end or by a
// drain. Unknown fields are ignored, as on the chat endpoint; background, conversation,
// prompt, top_logprobs and tools other than functions get a 400 naming them. Responses
// are stored unless store is false, in memory, bounded by Config.StoredResponses and
// StoredResponseBytes (least recently used dropped first; by default
// DefaultStoredResponses responses and DefaultStoredResponseBytes, 1024 and 64 MiB;
// examples/serve sets them with -responses-store and -responses-store-memory):
// previous_response_id continues a stored response's conversation (its input and
// output, without its instructions), and the prompt's prefix comes from the session
// that holds it, as usage.input_tokens_details.cached_tokens shows. An unknown
// previous_response_id is a 400 previous_response_not_found, as OpenAI answers, and GET
// of an unknown id a 404, their messages saying why a response may be missing. With the
// store off (StoredResponses negative) nothing is kept: every response says "store":
// false, whatever the request asked, and every previous_response_id is unknown. The
// store is the process's: behind a load balancer with several replicas a follow-up
// finds the previous response only on the replica that answered it; a client can always
// send the whole conversation as items instead.
package openai
