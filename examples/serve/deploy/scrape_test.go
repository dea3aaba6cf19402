package deploy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/config/loader"
	fwkdl "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/interface/datalayer"
	extractormetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/extractor/metrics"
	sourcemetrics "sigs.k8s.io/gateway-api-inference-extension/pkg/epp/framework/plugins/datalayer/source/metrics"
)

// scraper is the endpoint picker's own metrics pipeline, built from the shipped
// configuration: its metrics-data-source (HTTP GET and Prometheus text parsing) and its
// core-metrics-extractor (our engine's metric names into the picker's fields).
type scraper struct {
	source interface {
		Poll(context.Context, fwkdl.Endpoint) (any, error)
	}
	extract interface {
		Extract(context.Context, any, fwkdl.Endpoint) error
	}
	podLabels map[string]string
}

func newScraper(t *testing.T) *scraper {
	t.Helper()
	b := loadBundle(t)
	cfg, _, err := loader.LoadRawConfig([]byte(b.configMaps[eppName].Data["config.yaml"]), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	s := &scraper{podLabels: b.deployments[serveName].Spec.Template.Labels}
	for _, p := range cfg.Plugins {
		switch p.Type {
		case sourcemetrics.MetricsDataSourceType:
			pl, err := sourcemetrics.MetricsDataSourceFactory(p.Name, p.Parameters, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.source = pl.(interface {
				Poll(context.Context, fwkdl.Endpoint) (any, error)
			})
		case extractormetrics.MetricsExtractorType:
			pl, err := extractormetrics.CoreMetricsExtractorFactory(p.Name, p.Parameters, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.extract = pl.(interface {
				Extract(context.Context, any, fwkdl.Endpoint) error
			})
		}
	}
	if s.source == nil || s.extract == nil {
		t.Fatal("the configuration lacks the metrics data source or extractor")
	}
	return s
}

// scrape polls a pod at host:port as the picker does and returns what it read.
func (s *scraper) scrape(ctx context.Context, hostport string) (*fwkdl.Metrics, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	ep := fwkdl.NewEndpoint(&fwkdl.EndpointMetadata{
		NamespacedName: types.NamespacedName{Namespace: "test", Name: "bonsai-serve-0"},
		PodName:        "bonsai-serve-0", Address: host, Port: port, MetricsHost: hostport,
		Labels: s.podLabels,
	}, nil)
	data, err := s.source.Poll(ctx, ep)
	if err != nil {
		return nil, fmt.Errorf("poll: %w", err)
	}
	err = s.extract.Extract(ctx, data, ep)
	return ep.GetMetrics(), err
}

// The picker's pipeline reads serve's routing metrics, under the names the model-server
// protocol gives them, into the fields it routes on: checked against an exposition
// written here by hand from the protocol (docs/proposals/003-model-server-protocol).
func TestPickerReadsOurMetrics(t *testing.T) {
	s := newScraper(t)
	body := "" // set by each case
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	hostport := strings.TrimPrefix(srv.URL, "http://")

	body = `# HELP vllm:num_requests_waiting Requests waiting for a session.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="ternary-bonsai-2-27b"} 3
# HELP vllm:num_requests_running Requests generating.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="ternary-bonsai-2-27b"} 4
# HELP vllm:kv_cache_usage_perc KV cache in use, 0 to 1.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="ternary-bonsai-2-27b"} 0.375
# HELP vllm:cache_config_info The prefix cache's granularity.
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="64",num_gpu_blocks="2048"} 1
# TYPE bonsai_sessions gauge
bonsai_sessions 4
`
	m, err := s.scrape(context.Background(), hostport)
	if err != nil {
		t.Fatal(err)
	}
	if m.WaitingQueueSize != 3 || m.RunningRequestsSize != 4 || m.KVCacheUsagePercent != 0.375 || m.CacheBlockSize != 64 || m.CacheNumBlocks != 2048 {
		t.Errorf("read waiting %d, running %d, kv %g, block size %d, blocks %d; want 3, 4, 0.375, 64, 2048",
			m.WaitingQueueSize, m.RunningRequestsSize, m.KVCacheUsagePercent, m.CacheBlockSize, m.CacheNumBlocks)
	}

	// vLLM's older KV name, and no cache info: the picker says which families it lacks.
	body = `vllm:num_requests_waiting 0
vllm:num_requests_running 0
vllm:gpu_cache_usage_perc 0.5
`
	_, err = s.scrape(context.Background(), hostport)
	if err == nil || !strings.Contains(err.Error(), metricKVUsage) || !strings.Contains(err.Error(), metricCacheInfo) {
		t.Errorf("got %v, want the missing %s and %s named", err, metricKVUsage, metricCacheInfo)
	}
}

// scrapeServe starts serve (its tiny synthetic model) on a loopback port and scrapes it
// with the picker's pipeline.
func scrapeServe(t *testing.T, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0", "-threads", "1", "-parallel", "1", "-quiet")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	addrRe := regexp.MustCompile(`on http://([0-9.]+:[0-9]+)/v1`)
	addr := ""
	sc := bufio.NewScanner(stderr)
	var log strings.Builder
	for addr == "" && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := addrRe.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("serve did not say where it listens:\n%s", log.String())
	}
	go func() { // keep draining stderr so that serve never blocks on it
		for sc.Scan() {
		}
	}()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw := new(strings.Builder)
	_, _ = bufio.NewReader(resp.Body).WriteTo(raw)
	resp.Body.Close()
	m, err := newScraper(t).scrape(ctx, addr)
	if err != nil {
		t.Fatalf("the picker's pipeline on serve's /metrics: %v", err)
	}
	// An idle server: nothing waits or runs, nothing of the KV caches is in use, and the
	// prefix cache's granularity is described.
	var errs []error
	if m.WaitingQueueSize != 0 || m.RunningRequestsSize != 0 {
		errs = append(errs, fmt.Errorf("idle, but waiting %d, running %d", m.WaitingQueueSize, m.RunningRequestsSize))
	}
	if m.KVCacheUsagePercent != 0 {
		errs = append(errs, fmt.Errorf("idle, but KV cache use %g", m.KVCacheUsagePercent))
	}
	if m.CacheBlockSize <= 0 || m.CacheNumBlocks <= 0 {
		errs = append(errs, fmt.Errorf("cache info: block size %d, blocks %d", m.CacheBlockSize, m.CacheNumBlocks))
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}
