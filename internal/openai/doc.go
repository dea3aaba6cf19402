// Package openai translates the OpenAI API's shapes, for the clients written against
// it (the official SDKs, LangChain, curl), to a serve.Server's generations:
//
//	POST /v1/chat/completions   a chat turn, whole or streamed as server-sent events
//	POST /v1/completions        a plain-text continuation, whole or streamed
//	GET  /v1/models             the one model served; GET /v1/models/{id} likewise
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
// Tools are OpenAI's: tools, tool_choice ("auto", "none", "required" or a named
// function), parallel_tool_calls, assistant messages with tool_calls and tool messages
// in the history; answers with tool_calls and finish_reason "tool_calls", streamed as a
// delta per call with its index, id and function name, then pieces of its arguments.
// With a required or named tool choice the calls' syntax and argument schemas are
// enforced by the SDK's constrained decoding, as response_format json_object and
// json_schema are. A schema the engine refuses is answered with a 400 naming the
// parameter, the keyword and its JSON path (code invalid_schema).
package openai
