// Package openai serves a Bonsai model over HTTP with the OpenAI API's shapes, for the
// clients written against it (the official SDKs, LangChain, curl):
//
//	POST /v1/chat/completions   a chat turn, whole or streamed as server-sent events
//	POST /v1/completions        a plain-text continuation, whole or streamed
//	GET  /v1/models             the one model served; GET /v1/models/{id} likewise
//	GET  /health, /v1/health    liveness and the load: generations running and queued
//
// Each generation runs on a Session from a pool of Config.Parallel sessions, which are
// kept between requests so that a conversation's next turn, when it lands on the session
// that holds its start, prefills only what is new (Session.Generate's prefix reuse; an
// idle session holding the longest common prefix is chosen). At most Parallel
// generations run at once, up to Config.Queue more requests wait their turn in order, and
// beyond that a request is refused with 503 and Retry-After. A client that goes away,
// whether queued or generating, is dropped: its generation ends within one decode step.
//
// Beyond OpenAI's parameters the server accepts those of vLLM and llama.cpp's server
// that Bonsai models need: top_k, min_p, repetition_penalty, and thinking switched on or
// off with chat_template_kwargs {"enable_thinking": false} or a top-level
// "enable_thinking"; the thinking comes back apart from the answer, in
// reasoning_content, as DeepSeek's API and llama.cpp return it.
package openai
