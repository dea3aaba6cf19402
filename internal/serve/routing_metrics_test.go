package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bonsai-go/sdk/internal/serve"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrapeExpfmt reads /metrics with the parser the Inference Extension's endpoint picker
// uses, prometheus/common/expfmt, under both name-validation schemes: the vllm: names
// are legacy Prometheus names (a colon is allowed), so the stricter scheme must take
// them too.
func scrapeExpfmt(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var fams map[string]*dto.MetricFamily
	for _, scheme := range []model.ValidationScheme{model.UTF8Validation, model.LegacyValidation} {
		p := expfmt.NewTextParser(scheme)
		fams, err = p.TextToMetricFamilies(strings.NewReader(string(body)))
		require.NoError(t, err, "scheme %v:\n%s", scheme, body)
	}
	return fams
}

// gauge returns the value of the family's one sample, which must be a gauge.
func gauge(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	require.NotNil(t, f, "no family %s", name)
	require.Equal(t, dto.MetricType_GAUGE, f.GetType(), name)
	require.Len(t, f.GetMetric(), 1, name)
	require.NotEmpty(t, f.GetHelp(), name)
	return f.GetMetric()[0].GetGauge().GetValue()
}

// cacheConfig returns vllm:cache_config_info's labels as the endpoint picker reads them
// (block_size and num_gpu_blocks, integers) and checks the rest of its shape.
func cacheConfig(t *testing.T, fams map[string]*dto.MetricFamily) (blockSize, blocks int) {
	t.Helper()
	require.Equal(t, 1.0, gauge(t, fams, "vllm:cache_config_info"))
	labels := map[string]string{}
	for _, l := range fams["vllm:cache_config_info"].GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	require.Len(t, labels, 2, "%v", labels)
	var err error
	blockSize, err = strconv.Atoi(labels["block_size"])
	require.NoError(t, err)
	blocks, err = strconv.Atoi(labels["num_gpu_blocks"])
	require.NoError(t, err)
	return blockSize, blocks
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// TestRoutingMetrics: under load — N generations held at their first token, M requests
// queued — /metrics, parsed with expfmt, says waiting=M, running=N, and a KV usage equal
// to the blocks the sessions' real positions occupy over the sessions' capacity; our own
// families still parse with their types. Once idle, the sessions' retained states count
// as free.
func TestRoutingMetrics(t *testing.T) {
	const parallel, queued = 3, 2
	gate := make(chan struct{})
	var held atomic.Int32
	var once sync.Map // generations already counted as held
	hook := func(ctx context.Context) {
		if _, dup := once.LoadOrStore(ctx, true); !dup {
			held.Add(1)
		}
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	s, ts := newTestServer(t, tinyModel, withTokenHook(serve.Config{Parallel: parallel, Queue: queued}, hook))
	ctxSize := tinyModel.ContextSize()

	fams := scrapeExpfmt(t, ts.URL)
	assert.Zero(t, gauge(t, fams, "vllm:num_requests_waiting"))
	assert.Zero(t, gauge(t, fams, "vllm:num_requests_running"))
	assert.Zero(t, gauge(t, fams, "vllm:kv_cache_usage_perc"))
	blockSize, blocks := cacheConfig(t, fams)
	assert.Equal(t, 16, blockSize)
	assert.Equal(t, parallel*ceilDiv(ctxSize, 16), blocks, "the sessions at the context size (%d), in blocks of 16", ctxSize)

	// Prompts of different lengths, so that the positions differ.
	type result struct {
		code   int
		prompt int
	}
	results := make(chan result, parallel+queued)
	send := func(i int) {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Client %d says %s"}],"max_tokens":4,"temperature":0}`,
			i, strings.Repeat("hello ", 5*i))
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			results <- result{}
			return
		}
		defer resp.Body.Close()
		var r struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			}
		}
		json.NewDecoder(resp.Body).Decode(&r)
		results <- result{resp.StatusCode, r.Usage.PromptTokens}
	}
	for i := range parallel {
		go send(i)
	}
	eventually(t, "the generations to be held", func() bool { return held.Load() == parallel })
	for i := range queued {
		go send(parallel + i)
	}
	eventually(t, "the requests to queue", func() bool { return s.Stats().Queued == queued })

	lens := serve.SessionLens(s)
	require.Len(t, lens, parallel)
	fams = scrapeExpfmt(t, ts.URL)
	assert.Equal(t, float64(queued), gauge(t, fams, "vllm:num_requests_waiting"))
	assert.Equal(t, float64(parallel), gauge(t, fams, "vllm:num_requests_running"))
	used := 0
	for _, n := range lens {
		used += ceilDiv(n, 16)
	}
	usage := gauge(t, fams, "vllm:kv_cache_usage_perc")
	assert.Equal(t, float64(used)/float64(parallel*ceilDiv(ctxSize, 16)), usage, "sessions hold %v tokens", lens)
	t.Logf("sessions hold %v tokens: %d of %d blocks, usage %v", lens, used, parallel*ceilDiv(ctxSize, 16), usage)
	assert.Positive(t, usage)
	assert.LessOrEqual(t, usage, 1.0)
	blockSize2, blocks2 := cacheConfig(t, fams)
	assert.Equal(t, [2]int{blockSize, blocks}, [2]int{blockSize2, blocks2}, "the configuration does not move with the load")

	// Our own families are there, with their types.
	for name, typ := range map[string]dto.MetricType{
		"bonsai_requests_total": dto.MetricType_COUNTER, "bonsai_sessions_busy": dto.MetricType_GAUGE,
		"bonsai_queue_depth": dto.MetricType_GAUGE, "bonsai_queue_wait_seconds": dto.MetricType_HISTOGRAM,
		"bonsai_time_to_first_token_seconds": dto.MetricType_HISTOGRAM, "bonsai_batch_size": dto.MetricType_SUMMARY,
		"bonsai_prefix_cache_hits_total": dto.MetricType_COUNTER,
	} {
		require.NotNil(t, fams[name], name)
		assert.Equal(t, typ, fams[name].GetType(), name)
	}
	assert.Equal(t, float64(parallel), gauge(t, fams, "bonsai_sessions_busy"))
	assert.Equal(t, float64(queued), gauge(t, fams, "bonsai_queue_depth"))

	close(gate)
	var prompts []int
	for range parallel + queued {
		r := <-results
		assert.Equal(t, http.StatusOK, r.code)
		prompts = append(prompts, r.prompt)
	}
	// Held after their first token, the sessions held exactly their prompts: the
	// positions the usage was computed from are the prompts' lengths, as the
	// responses report them.
	slices.Sort(lens)
	slices.Sort(prompts)
	assert.Subset(t, prompts, lens)
	assert.Greater(t, lens[parallel-1], lens[0], "prompts of different lengths")

	eventually(t, "the server to be idle", func() bool { st := s.Stats(); return st.Running+st.Queued == 0 })
	fams = scrapeExpfmt(t, ts.URL)
	assert.Zero(t, gauge(t, fams, "vllm:num_requests_waiting"))
	assert.Zero(t, gauge(t, fams, "vllm:num_requests_running"))
	assert.Zero(t, gauge(t, fams, "vllm:kv_cache_usage_perc"), "idle sessions' retained states are free to take")
}
