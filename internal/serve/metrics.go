package serve

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// GET /metrics serves the server's counters, its load, the model's batcher and its
// prefix cache in the Prometheus text exposition format, version 0.0.4, as
// llama-server and vLLM expose theirs: one family per measure, named bonsai_…, counters
// ending in _total. It is written by hand: the format is a few lines of text, not worth
// a dependency.
//
// Beside its own families it serves those of the model-server protocol of Kubernetes'
// Gateway API Inference Extension (docs/proposals/003-model-server-protocol), under
// vLLM's names, which its endpoint picker reads by default to route among replicas:
//
//	vllm:num_requests_waiting   gauge: requests queued for a session
//	vllm:num_requests_running   gauge: generations holding a session
//	vllm:kv_cache_usage_perc    gauge, 0–1: the KV the running generations occupy, in
//	                            blocks, of what the sessions can hold (kvBlocks)
//	vllm:cache_config_info      gauge 1 with labels block_size and num_gpu_blocks
//
// The picker scrapes the text format with prometheus/common/expfmt and reads a gauge's
// value, and cache_config_info's two labels as integers.

// metricsContentType is the exposition format's content type.
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// The outcomes of a request, the outcome label of bonsai_requests_total.
const (
	outcomeCompleted = "completed" // answered: a whole response, or a stream to its end
	outcomeCancelled = "cancelled" // the client left before the end
	outcomeRejected  = "rejected"  // refused with 503 without generating: queue full, shutting down
	outcomeError     = "error"     // any other error: an invalid request, a failed or stopped generation
)

// latencyBuckets are the upper bounds, in seconds, of the latency histograms: from a
// tiny model's milliseconds to a 27B model's long prompts on a CPU.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// requestKey is one series of bonsai_requests_total.
type requestKey struct {
	endpoint, outcome string
	code              int
}

// metrics are the server's own counters; the batcher's and the prefix cache's are the
// model's, read as they are scraped.
type metrics struct {
	mu       sync.Mutex
	requests map[requestKey]int64

	promptTokens, cachedTokens, completionTokens atomic.Int64
	// The speculative decoding's drafts: tokens drafted and verified, accepted, and the
	// passes that verified them.
	draftedTokens, acceptedTokens, draftPasses atomic.Int64
	queueWait, firstToken                      histogram
}

func newMetrics() *metrics {
	return &metrics{requests: map[requestKey]int64{},
		queueWait: newHistogram(latencyBuckets), firstToken: newHistogram(latencyBuckets)}
}

func (m *metrics) request(endpoint, outcome string, code int) {
	m.mu.Lock()
	m.requests[requestKey{endpoint, outcome, code}]++
	m.mu.Unlock()
}

// histogram counts observations into buckets.
type histogram struct {
	bounds []float64 // upper bounds, ascending; +Inf is implied

	mu     sync.Mutex
	counts []uint64 // per bucket, +Inf's last; not cumulative
	sum    float64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v) // the first bound ≥ v: le is inclusive
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.mu.Unlock()
}

// tracker carries a request's outcome from the generation (Run, which knows it) to
// ServeHTTP, which counts the request once its handler has returned. The handler's
// goroutine writes it and ServeHTTP reads it after the handler returns.
type tracker struct{ outcome string }

type trackerKey struct{}

// setOutcome records the outcome of the request ctx belongs to, if ServeHTTP tracks it.
func setOutcome(ctx context.Context, outcome string) {
	if tr, ok := ctx.Value(trackerKey{}).(*tracker); ok {
		tr.outcome = outcome
	}
}

// outcomeOf classifies a request whose generation did not say: by its status.
func outcomeOf(tr *tracker, code int) string {
	switch {
	case tr.outcome != "":
		return tr.outcome
	case code == statusClientLeft:
		return outcomeCancelled
	case code >= 400:
		return outcomeError
	}
	return outcomeCompleted
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", metricsContentType)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		s.WriteMetrics(w)
	}
}

// WriteMetrics writes the metrics /metrics serves to w.
func (s *Server) WriteMetrics(w io.Writer) error {
	e := &exposition{w: bufio.NewWriter(w)}

	e.family("bonsai_requests_total", "counter", "Requests, by endpoint, outcome (completed, cancelled: the client left, "+
		"rejected: 503 without generating, unauthorized: 401 for a missing or wrong API key, error) and HTTP status (499: the client left before any).")
	type series struct {
		requestKey
		n int64
	}
	s.metrics.mu.Lock()
	all := make([]series, 0, len(s.metrics.requests))
	for k, n := range s.metrics.requests {
		all = append(all, series{k, n})
	}
	s.metrics.mu.Unlock()
	slices.SortFunc(all, func(a, b series) int {
		return cmp.Or(cmp.Compare(a.endpoint, b.endpoint), cmp.Compare(a.outcome, b.outcome), cmp.Compare(a.code, b.code))
	})
	for _, r := range all {
		e.sample("bonsai_requests_total", float64(r.n), "endpoint", r.endpoint, "outcome", r.outcome, "code", strconv.Itoa(r.code))
	}
	e.counter("bonsai_prompt_tokens_total", "Prompt tokens of the generations run.", s.metrics.promptTokens.Load())
	e.counter("bonsai_prompt_cached_tokens_total", "Prompt tokens not prefilled: held by the session or restored from the prefix cache.",
		s.metrics.cachedTokens.Load())
	e.counter("bonsai_completion_tokens_total", "Tokens generated.", s.metrics.completionTokens.Load())
	drafted, accepted := s.metrics.draftedTokens.Load(), s.metrics.acceptedTokens.Load()
	e.counter("bonsai_spec_drafted_tokens_total", "Tokens that speculative decoding drafted and the model verified.", drafted)
	e.counter("bonsai_spec_accepted_tokens_total", "Drafted tokens the model accepted.", accepted)
	e.counter("bonsai_spec_draft_passes_total", "Forward passes that verified drafted tokens.", s.metrics.draftPasses.Load())
	rate := 0.0
	if drafted > 0 {
		rate = float64(accepted) / float64(drafted)
	}
	e.gauge("bonsai_spec_acceptance_rate", "Drafted tokens accepted / drafted, since the start (0 before any draft).", rate)

	busy, queued := s.pool.load()
	e.gauge("bonsai_sessions", "Sessions: the most generations that run at once, batched together.", float64(s.cfg.Parallel))
	e.gauge("bonsai_sessions_busy", "Sessions running a generation.", float64(busy))
	e.gauge("bonsai_queue_depth", "Requests waiting for a session.", float64(queued))
	e.gauge("bonsai_queue_capacity", "The most requests that may wait; beyond, 503.", float64(s.cfg.Queue))
	e.histogram("bonsai_queue_wait_seconds", "Time requests waited for a session.", &s.metrics.queueWait)
	e.histogram("bonsai_time_to_first_token_seconds", "Time from a request's arrival in the queue to its first token, the wait included.",
		&s.metrics.firstToken)

	st := s.m.Stats()
	b := st.Batch
	e.counter("bonsai_batch_steps_total", "Forward passes the model's batcher ran.", b.Steps)
	e.summary("bonsai_batch_size", "Sequences per forward pass (sum: sequence-steps; count: passes).", float64(b.Sequences), b.Steps)
	e.summary("bonsai_batch_step_seconds", "Time of the forward passes.", b.StepTime.Seconds(), b.Steps)
	e.counter("bonsai_batch_tokens_total", "Tokens the forward passes ran, prompt and decode.", b.Tokens)
	e.gauge("bonsai_batch_size_max", "The most sequences one forward pass held.", float64(b.MaxBatch))
	e.gauge("bonsai_batch_active", "Sequences in the last forward pass or waiting for the next.", float64(b.Active))
	e.gauge("bonsai_batch_last_step_seconds", "Time of the last forward pass.", b.LastStepTime.Seconds())

	p := st.PrefixCache
	e.gauge("bonsai_prefix_cache_entries", "Sequence states the prefix cache holds.", float64(p.Entries))
	e.gauge("bonsai_prefix_cache_bytes", "Bytes the prefix cache's states hold.", float64(p.Bytes))
	e.gauge("bonsai_prefix_cache_limit_bytes", "The prefix cache's bound in bytes (0: no cache).", float64(p.Limit))
	e.counter("bonsai_prefix_cache_hits_total", "Prompts that started from a cached prefix.", p.Hits)
	e.counter("bonsai_prefix_cache_hit_tokens_total", "Prompt tokens the hits skipped.", p.HitTokens)
	e.counter("bonsai_prefix_cache_misses_total", "Prompts with a message boundary past what their session held, none cached.", p.Misses)
	e.counter("bonsai_prefix_cache_inserts_total", "States put in the prefix cache.", p.Inserts)
	e.counter("bonsai_prefix_cache_evictions_total", "States evicted, least recently used first.", p.Evictions)
	s.writeRoutingMetrics(e, busy, queued)
	return e.w.Flush()
}

// kvBlockTokens is the block size, in tokens, of the routing metrics' KV accounting.
//
// Bonsai has no KV blocks: each session's KV is allocated whole, for the context size,
// and the prefix cache keeps whole sequence states at chat-template boundaries (the end
// of the system prompt, of each turn), reused when they are a prefix of a prompt to
// the token. Its granularity is the token, at the boundaries. The endpoint picker's
// prefix scorer hashes a prompt in blocks of block_size tokens and compares at most
// maxPrefixBlocksToMatch (256) of them: block size 1 would let it see only a prompt's
// first 256 tokens, no further than a long system prompt that every conversation
// shares. 16, vLLM's default, lets it see 4096 tokens, and undercounts a match by less
// than a block: a prefix of a conversation, cut at a block, is still a prefix.
const kvBlockTokens = 16

// kvBlocks returns the KV blocks (kvBlockTokens tokens) that the generations running
// occupy and those the server can hold: each of the Parallel sessions holds up to the
// model's context size, ceil(context/16) blocks. A running generation occupies
// ceil(n/16) blocks, n being its prompt's tokens and those it generated but the last (the
// session's position; the whole prompt counts from the moment the generation has its
// session, as a scheduler reserves a prompt's blocks before prefilling it). An idle
// session's retained state does not count, as vLLM counts the blocks its prefix cache
// keeps for finished requests as free: a new request may take the session at once.
func (s *Server) kvBlocks() (used, total int) {
	per := (s.m.ContextSize() + kvBlockTokens - 1) / kvBlockTokens
	for _, n := range s.pool.kvTokens() {
		used += min((n+kvBlockTokens-1)/kvBlockTokens, per)
	}
	return used, s.cfg.Parallel * per
}

// writeRoutingMetrics writes the families of the Inference Extension's model-server
// protocol.
func (s *Server) writeRoutingMetrics(e *exposition, busy, queued int) {
	e.gauge("vllm:num_requests_waiting", "Requests waiting for a session (the Inference Extension's TotalQueuedRequests).", float64(queued))
	e.gauge("vllm:num_requests_running", "Generations running, each on its session (TotalRunningRequests).", float64(busy))
	used, total := s.kvBlocks()
	e.gauge("vllm:kv_cache_usage_perc", "KV blocks the running generations occupy, of those the sessions can hold, 0-1 (KVCacheUtilization); "+
		"idle sessions' retained states count as free.", float64(used)/float64(total))
	e.family("vllm:cache_config_info", "gauge", "The KV accounting: block_size tokens a block, num_gpu_blocks blocks in all "+
		"(the sessions at the context size).")
	e.sample("vllm:cache_config_info", 1, "block_size", strconv.Itoa(kvBlockTokens), "num_gpu_blocks", strconv.Itoa(total))
}

// exposition writes the text format: a family's HELP and TYPE lines, then its samples.
type exposition struct{ w *bufio.Writer }

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func (e *exposition) family(name, typ, help string) {
	e.w.WriteString("# HELP " + name + " " + helpEscaper.Replace(help) + "\n# TYPE " + name + " " + typ + "\n")
}

// sample writes one sample; labels are name, value pairs.
func (e *exposition) sample(name string, v float64, labels ...string) {
	e.w.WriteString(name)
	for i := 0; i+1 < len(labels); i += 2 {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		e.w.WriteString(sep + labels[i] + `="` + labelEscaper.Replace(labels[i+1]) + `"`)
	}
	if len(labels) > 0 {
		e.w.WriteString("}")
	}
	e.w.WriteString(" " + formatValue(v) + "\n")
}

func (e *exposition) counter(name, help string, v int64) {
	e.family(name, "counter", help)
	e.sample(name, float64(v))
}

func (e *exposition) gauge(name, help string, v float64) {
	e.family(name, "gauge", help)
	e.sample(name, v)
}

// summary writes a summary without quantiles: a sum and a count.
func (e *exposition) summary(name, help string, sum float64, count int64) {
	e.family(name, "summary", help)
	e.sample(name+"_sum", sum)
	e.sample(name+"_count", float64(count))
}

func (e *exposition) histogram(name, help string, h *histogram) {
	h.mu.Lock()
	counts, sum := slices.Clone(h.counts), h.sum
	h.mu.Unlock()
	e.family(name, "histogram", help)
	var total uint64
	for i, c := range counts {
		total += c
		le := "+Inf"
		if i < len(h.bounds) {
			le = formatValue(h.bounds[i])
		}
		e.sample(name+"_bucket", float64(total), "le", le)
	}
	e.sample(name+"_sum", sum)
	e.sample(name+"_count", float64(total))
}

// formatValue writes a value as the format has it: Go's float syntax, +Inf, -Inf, NaN.
func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64) // a count, in full
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// since is the seconds elapsed since t.
func since(t time.Time) float64 { return time.Since(t).Seconds() }
