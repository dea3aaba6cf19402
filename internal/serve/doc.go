// Package serve runs one Bonsai model behind HTTP for the API dialects that translate
// to it (internal/openai, internal/anthropic): it owns what they share and nothing of
// their shapes.
//
// A dialect validates a request, prepares it with Model().Prepare (rendered,
// tokenized, its options checked and its grammar compiled, once) and hands Run a Job
// carrying the *bonsai.Prompt; it turns the token reports into its own stream.
//
// A Server holds a pool of Config.Parallel sessions, kept between requests so that a
// conversation's next turn, when it lands on the session that holds its start,
// prefills only what is new (an idle session holding the longest prefix of the prompt
// is chosen). The sessions of one model batch their forward passes together (see
// bonsai.WithBatchTokens), so Parallel is the most generations in one batch, not a
// share of the machine each. At most Parallel generations run at once, up to
// Config.Queue more requests wait their turn in order, and beyond that Run fails with
// ErrQueueFull. A client that goes away, whether queued or generating, is dropped: its
// generation ends within one decode step.
//
// The Server routes with an http.ServeMux and its method patterns; the dialects
// register their routes on it with Handle (HandleFrom for a path two dialects share,
// answered by the one whose client sent the request), and with HandleErrors how a 404
// or 405 under their paths is written. Config.ModelName states the model-name policy
// they share: any name is accepted, the served one answers. It serves on its own:
//
//	GET /health, /v1/health   liveness (200 while the process serves) and the load
//	GET /ready, /v1/ready     readiness: 200 while it takes work, 503 once it drains
//	GET /metrics              counters in the Prometheus text format, and the routing
//	                          gauges of Kubernetes' Gateway API Inference Extension
//	                          under vLLM's names (metrics.go)
//
// and logs and counts every request, by the endpoint its route names. With
// Config.Keys, every other route needs an API key (auth.go): HandleOpen registers one
// that does not, and HandleUnauthorized how a dialect writes the 401.
//
// A Gate answers the probes before the model is loaded (/ready 503 "loading", the API
// 503 with Retry-After) and hands every request to the Server once opened. Serve runs
// a Gate and drains on shutdown: Drain refuses new generations (503, Retry-After) while
// the listener stays open and those in flight go on; past the drain timeout, StopAll
// ends them cleanly, with FinishDrained and what they generated, which the dialects
// answer as a reply cut short at a limit (finish_reason "length", stop_reason
// "max_tokens"); CancelAll, the hard stop, ends them with an error.
package serve
