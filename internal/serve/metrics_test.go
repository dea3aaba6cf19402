package serve_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/serve"
	oai "github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The exposition format's grammar (Prometheus text format 0.0.4), checked here
// independently of the writer.
var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	metricTypes  = []string{"counter", "gauge", "histogram", "summary", "untyped"}
)

type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

type promFamily struct {
	name, typ, help string
	samples         []promSample
}

// parseExposition parses a text exposition line by line and checks it: names and
// labels by the grammar, values as floats (+Inf, -Inf, NaN), HELP and TYPE once per
// family and before its samples, each family's samples together and given once, a
// sample name its family's (with _bucket, _sum and _count for histograms and
// summaries), counters named _total and not negative, and histograms' buckets
// cumulative, ending at +Inf with their count.
func parseExposition(text string) (map[string]*promFamily, error) {
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("the exposition does not end with a newline")
	}
	fams := map[string]*promFamily{}
	var order []string // families in the order their samples appear
	seen := map[string]bool{}
	get := func(name string) *promFamily {
		f := fams[name]
		if f == nil {
			f = &promFamily{name: name}
			fams[name] = f
		}
		return f
	}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n++
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "#"); ok {
			fields := strings.SplitN(strings.TrimLeft(rest, " "), " ", 3)
			if len(fields) < 2 || fields[0] != "HELP" && fields[0] != "TYPE" {
				continue // a comment
			}
			name := fields[1]
			if !metricNameRE.MatchString(name) {
				return nil, fmt.Errorf("line %d: metric name %q", n, name)
			}
			f := get(name)
			if len(f.samples) > 0 {
				return nil, fmt.Errorf("line %d: %s after %s's samples", n, fields[0], name)
			}
			arg := ""
			if len(fields) == 3 {
				arg = fields[2]
			}
			switch fields[0] {
			case "HELP":
				if f.help != "" {
					return nil, fmt.Errorf("line %d: a second HELP for %s", n, name)
				}
				if arg == "" {
					return nil, fmt.Errorf("line %d: empty HELP for %s", n, name)
				}
				f.help = arg
			case "TYPE":
				if f.typ != "" {
					return nil, fmt.Errorf("line %d: a second TYPE for %s", n, name)
				}
				if !slices.Contains(metricTypes, arg) {
					return nil, fmt.Errorf("line %d: type %q", n, arg)
				}
				f.typ = arg
			}
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v: %q", n, err, line)
		}
		fam := familyOf(fams, s.name)
		if fam == nil {
			return nil, fmt.Errorf("line %d: sample %s before its family's TYPE", n, s.name)
		}
		if len(order) == 0 || order[len(order)-1] != fam.name {
			if seen[fam.name] {
				return nil, fmt.Errorf("line %d: family %s appears twice", n, fam.name)
			}
			seen[fam.name] = true
			order = append(order, fam.name)
		}
		for _, o := range fam.samples {
			if o.name == s.name && maps(o.labels, s.labels) {
				return nil, fmt.Errorf("line %d: a second sample of %s%v", n, s.name, s.labels)
			}
		}
		fam.samples = append(fam.samples, s)
	}
	for _, f := range fams {
		if f.typ == "" || f.help == "" {
			return nil, fmt.Errorf("family %s: TYPE %q, HELP %q", f.name, f.typ, f.help)
		}
		if err := checkFamily(f); err != nil {
			return nil, fmt.Errorf("family %s: %v", f.name, err)
		}
	}
	return fams, nil
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// familyOf returns the family a sample name belongs to.
func familyOf(fams map[string]*promFamily, name string) *promFamily {
	if f := fams[name]; f != nil && f.typ != "" && f.typ != "histogram" && f.typ != "summary" {
		return f
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if f := fams[base]; ok && f != nil && (f.typ == "histogram" || f.typ == "summary" && suffix != "_bucket") {
			return f
		}
	}
	if f := fams[name]; f != nil && f.typ == "summary" {
		return f // a quantile
	}
	return nil
}

// parseSample parses `name{label="value",…} value [timestamp]`.
func parseSample(line string) (promSample, error) {
	s := promSample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name = line[:i]
	if !metricNameRE.MatchString(s.name) {
		return s, fmt.Errorf("metric name %q", s.name)
	}
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for !strings.HasPrefix(rest, "}") {
			eq := strings.IndexByte(rest, '=')
			if eq < 0 {
				return s, fmt.Errorf("a label without =")
			}
			name := rest[:eq]
			if !labelNameRE.MatchString(name) {
				return s, fmt.Errorf("label name %q", name)
			}
			if _, dup := s.labels[name]; dup {
				return s, fmt.Errorf("label %s twice", name)
			}
			rest = rest[eq+1:]
			if !strings.HasPrefix(rest, `"`) {
				return s, fmt.Errorf("label %s: value not quoted", name)
			}
			var v strings.Builder
			j := 1
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\n' {
					return s, fmt.Errorf("a raw newline in a label value")
				}
				if rest[j] != '\\' {
					v.WriteByte(rest[j])
					continue
				}
				j++
				switch {
				case j == len(rest):
					return s, fmt.Errorf("label %s: unterminated escape", name)
				case rest[j] == '\\' || rest[j] == '"':
					v.WriteByte(rest[j])
				case rest[j] == 'n':
					v.WriteByte('\n')
				default:
					return s, fmt.Errorf("label %s: escape \\%c", name, rest[j])
				}
			}
			if j == len(rest) {
				return s, fmt.Errorf("label %s: unterminated value", name)
			}
			s.labels[name] = v.String()
			rest = rest[j+1:]
			if r, ok := strings.CutPrefix(rest, ","); ok {
				rest = r
			} else if !strings.HasPrefix(rest, "}") {
				return s, fmt.Errorf("after label %s: %q", name, rest)
			}
		}
		rest = rest[1:]
	}
	fields := strings.Split(rest, " ")
	if len(fields) < 2 || fields[0] != "" || len(fields) > 3 {
		return s, fmt.Errorf("want one space, a value and an optional timestamp")
	}
	v, err := parseValue(fields[1])
	if err != nil {
		return s, err
	}
	s.value = v
	if len(fields) == 3 {
		if _, err := strconv.ParseInt(fields[2], 10, 64); err != nil {
			return s, fmt.Errorf("timestamp %q", fields[2])
		}
	}
	return s, nil
}

func parseValue(v string) (float64, error) {
	switch v {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	if strings.ContainsAny(v, "_xXpP") || strings.EqualFold(strings.TrimLeft(v, "+-"), "inf") ||
		strings.EqualFold(strings.TrimLeft(v, "+-"), "infinity") {
		return 0, fmt.Errorf("value %q", v)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("value %q", v)
	}
	return f, nil
}

// checkFamily checks what the format asks of a family's type.
func checkFamily(f *promFamily) error {
	switch f.typ {
	case "counter":
		if !strings.HasSuffix(f.name, "_total") {
			return fmt.Errorf("a counter not named _total")
		}
		for _, s := range f.samples {
			if !(s.value >= 0) {
				return fmt.Errorf("counter value %v", s.value)
			}
		}
	case "histogram":
		// By series (the labels but le), buckets in order of le, cumulative, +Inf last
		// and equal to _count.
		type series struct {
			les    []float64
			counts []float64
			count  *float64
			sum    bool
		}
		all := map[string]*series{}
		key := func(l map[string]string) string {
			var ks []string
			for k, v := range l {
				if k != "le" {
					ks = append(ks, k+"="+v)
				}
			}
			slices.Sort(ks)
			return strings.Join(ks, ",")
		}
		for _, s := range f.samples {
			k := key(s.labels)
			if all[k] == nil {
				all[k] = &series{}
			}
			sr := all[k]
			switch s.name {
			case f.name + "_bucket":
				le, ok := s.labels["le"]
				if !ok {
					return fmt.Errorf("a bucket without le")
				}
				b, err := parseValue(le)
				if err != nil {
					return err
				}
				if n := len(sr.les); n > 0 && (b <= sr.les[n-1] || s.value < sr.counts[n-1]) {
					return fmt.Errorf("bucket le=%s out of order or not cumulative", le)
				}
				sr.les, sr.counts = append(sr.les, b), append(sr.counts, s.value)
			case f.name + "_count":
				v := s.value
				sr.count = &v
			case f.name + "_sum":
				sr.sum = true
			default:
				return fmt.Errorf("sample %s", s.name)
			}
		}
		for k, sr := range all {
			n := len(sr.les)
			if n == 0 || !math.IsInf(sr.les[n-1], 1) || sr.count == nil || !sr.sum || sr.counts[n-1] != *sr.count {
				return fmt.Errorf("series {%s}: no +Inf bucket, sum or count, or +Inf ≠ count", k)
			}
		}
	case "summary":
		for _, s := range f.samples {
			if s.name == f.name {
				if _, ok := s.labels["quantile"]; !ok {
					return fmt.Errorf("a quantile sample without its label")
				}
			}
		}
	}
	return nil
}

// value returns the value of the family's sample with the given name and labels (name,
// value pairs), or NaN.
func (f *promFamily) value(name string, labels ...string) float64 {
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, s := range f.samples {
		if s.name == name && maps(s.labels, want) {
			return s.value
		}
	}
	return math.NaN()
}

// scrape gets /metrics and parses it.
func scrape(t *testing.T, base string) map[string]*promFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	fams, err := parseExposition(string(b))
	require.NoError(t, err, "%s", b)
	return fams
}

// metric returns one sample's value from a scrape.
func metric(t *testing.T, fams map[string]*promFamily, name string, labels ...string) float64 {
	t.Helper()
	fam := familyOf(fams, name)
	require.NotNil(t, fam, "no family for %s", name)
	v := fam.value(name, labels...)
	require.False(t, math.IsNaN(v), "no sample %s%v", name, labels)
	return v
}

// TestExpositionParser: the test's parser refuses what the format does not allow, so
// that its passing the server's output means something.
func TestExpositionParser(t *testing.T) {
	good := "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\\\"\\\\\\n\",y=\"\"} 3\na_total 1e3 1700000000\n" +
		"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.5\nh_count 2\n" +
		"# HELP s S.\n# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 3\ns_count 2\n# a comment\n"
	fams, err := parseExposition(good)
	require.NoError(t, err)
	assert.Equal(t, 3.0, fams["a_total"].value("a_total", "x", "q\"\\\n", "y", ""))
	assert.Equal(t, 1000.0, fams["a_total"].value("a_total"))
	for name, bad := range map[string]string{
		"no newline at the end": "# HELP g G.\n# TYPE g gauge\ng 1",
		"a bad metric name":     "# HELP 1g G.\n# TYPE 1g gauge\n1g 1\n",
		"a bad label name":      "# HELP g G.\n# TYPE g gauge\ng{1x=\"a\"} 1\n",
		"an unquoted label":     "# HELP g G.\n# TYPE g gauge\ng{x=a} 1\n",
		"a bad escape":          "# HELP g G.\n# TYPE g gauge\ng{x=\"\\t\"} 1\n",
		"a bad value":           "# HELP g G.\n# TYPE g gauge\ng one\n",
		"two spaces":            "# HELP g G.\n# TYPE g gauge\ng  1\n",
		"no TYPE":               "# HELP g G.\ng 1\n",
		"no HELP":               "# TYPE g gauge\ng 1\n",
		"TYPE after samples":    "# HELP g G.\n# TYPE g gauge\ng 1\n# TYPE g gauge\n",
		"a family twice":        "# HELP g G.\n# TYPE g gauge\ng{a=\"1\"} 1\n# HELP f F.\n# TYPE f gauge\nf 1\ng{a=\"2\"} 1\n",
		"a sample twice":        "# HELP g G.\n# TYPE g gauge\ng 1\ng 2\n",
		"a counter not _total":  "# HELP c C.\n# TYPE c counter\nc 1\n",
		"a negative counter":    "# HELP c_total C.\n# TYPE c_total counter\nc_total -1\n",
		"an unknown type":       "# HELP g G.\n# TYPE g meter\ng 1\n",
		"buckets not cumulative": "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n" +
			"h_sum 1\nh_count 1\n",
		"no +Inf bucket":    "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
		"+Inf is not count": "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 2\n",
	} {
		_, err := parseExposition(bad)
		assert.Error(t, err, name)
	}
}

// TestMetrics: /metrics parses as the exposition format, and its values follow the
// requests: by endpoint and outcome, the tokens the responses report, the load while
// a generation is held, the batcher's work and the prefix cache's hit.
func TestMetrics(t *testing.T) {
	const cacheLimit = 64 << 20
	m, err := bonsai.Open(tinyPath, bonsai.WithThreads(2), bonsai.WithPrefixCache(cacheLimit))
	require.NoError(t, err)
	defer m.Close()
	gate := make(chan struct{})
	s, ts := newTestServer(t, m, withTokenHook(serve.Config{Parallel: 1, Queue: 1}, gated(gate)))
	c := client(ts)
	scrapes := 0
	get := func() map[string]*promFamily {
		scrapes++
		return scrape(t, ts.URL)
	}

	fams := get()
	for _, name := range []string{"bonsai_requests_total", "bonsai_prompt_tokens_total", "bonsai_prompt_cached_tokens_total",
		"bonsai_completion_tokens_total", "bonsai_sessions", "bonsai_sessions_busy", "bonsai_queue_depth", "bonsai_queue_capacity",
		"bonsai_queue_wait_seconds", "bonsai_time_to_first_token_seconds", "bonsai_batch_steps_total", "bonsai_batch_size",
		"bonsai_batch_step_seconds", "bonsai_batch_tokens_total", "bonsai_batch_size_max", "bonsai_batch_active",
		"bonsai_prefix_cache_entries", "bonsai_prefix_cache_bytes", "bonsai_prefix_cache_limit_bytes", "bonsai_prefix_cache_hits_total",
		"bonsai_prefix_cache_hit_tokens_total", "bonsai_prefix_cache_misses_total", "bonsai_prefix_cache_inserts_total",
		"bonsai_prefix_cache_evictions_total"} {
		assert.Contains(t, fams, name)
	}
	assert.Equal(t, 1.0, metric(t, fams, "bonsai_sessions"))
	assert.Equal(t, 1.0, metric(t, fams, "bonsai_queue_capacity"))
	assert.Equal(t, float64(cacheLimit), metric(t, fams, "bonsai_prefix_cache_limit_bytes"))
	assert.Zero(t, metric(t, fams, "bonsai_batch_steps_total"))

	const system = "You are a terse assistant who answers every question in one short line."
	chat := func(user string) oai.ChatCompletionNewParams {
		p := openaitest.ChatParams(user, 8)
		p.Messages[0] = oai.SystemMessage(system)
		return p
	}
	// A runs, held at its first token; B queues and leaves; C queues; D is refused.
	type answer struct {
		res *oai.ChatCompletion
		err error
	}
	a, cc := make(chan answer, 1), make(chan answer, 1)
	go func() {
		res, err := c.Chat.Completions.New(context.Background(), chat("What is a tree?"))
		a <- answer{res, err}
	}()
	eventually(t, "A to run", func() bool { return s.Stats().Running == 1 })
	fams = get()
	assert.Equal(t, 1.0, metric(t, fams, "bonsai_sessions_busy"))
	assert.Zero(t, metric(t, fams, "bonsai_queue_depth"))

	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(ctx, chat("Hello"))
		left <- err
	}()
	eventually(t, "B to queue", func() bool { return s.Stats().Queued == 1 })
	assert.Equal(t, 1.0, metric(t, get(), "bonsai_queue_depth"))
	cancel()
	require.ErrorIs(t, <-left, context.Canceled)
	eventually(t, "B to leave", func() bool { return s.Stats().Queued == 0 })

	go func() {
		res, err := c.Chat.Completions.New(context.Background(), chat("What is a river?"))
		cc <- answer{res, err}
	}()
	eventually(t, "C to queue", func() bool { return s.Stats().Queued == 1 })
	code, _, _ := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	close(gate)
	ra, rc := <-a, <-cc
	require.NoError(t, ra.err)
	require.NoError(t, rc.err)

	// An invalid request, a streamed completion, a model listing.
	code, _, _ = post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"temperature":9}`)
	assert.Equal(t, http.StatusBadRequest, code)
	stream := c.Completions.NewStreaming(context.Background(), oai.CompletionNewParams{Model: modelName,
		Prompt: oai.CompletionNewParamsPromptUnion{OfString: oai.String("Once upon a time")}, MaxTokens: oai.Int(6),
		Temperature: oai.Float(0), StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}})
	var e oai.CompletionUsage
	for stream.Next() {
		if u := stream.Current().Usage; u.TotalTokens > 0 {
			e = u
		}
	}
	require.NoError(t, stream.Err())
	require.Positive(t, e.PromptTokens)
	_, err = c.Models.List(context.Background())
	require.NoError(t, err)

	// The system prompt's state, cached by A, started C: its cached tokens are the
	// system message rendered alone.
	head, err := m.RenderChat([]bonsai.Message{{Role: bonsai.RoleSystem, Content: system}}, bonsai.ChatOptions{})
	require.NoError(t, err)
	tok := m.Tokenizer()
	systemTokens := len(tok.Encode(head, true))
	if id, ok := tok.BOS(); ok && tok.AddBOS() && !strings.HasPrefix(head, tok.Piece(id)) {
		systemTokens++
	}
	assert.Zero(t, ra.res.Usage.PromptTokensDetails.CachedTokens)
	assert.Equal(t, int64(systemTokens), rc.res.Usage.PromptTokensDetails.CachedTokens, "C started from the cached system prompt")

	// A request is counted as its handler returns, which can be just after its client
	// has read the response.
	requests := func(fams map[string]*promFamily) float64 {
		total := 0.0
		for _, smp := range fams["bonsai_requests_total"].samples {
			total += smp.value
		}
		return total
	}
	eventually(t, "the requests to be counted", func() bool {
		fams = get()
		return requests(fams) == 7+float64(scrapes-1)
	})
	req := func(endpoint, outcome string, code int) float64 {
		return metric(t, fams, "bonsai_requests_total", "endpoint", endpoint, "outcome", outcome, "code", strconv.Itoa(code))
	}
	assert.Equal(t, 2.0, req("chat.completions", "completed", 200))
	assert.Equal(t, 1.0, req("chat.completions", "cancelled", 499))
	assert.Equal(t, 1.0, req("chat.completions", "rejected", 503))
	assert.Equal(t, 1.0, req("chat.completions", "error", 400))
	assert.Equal(t, 1.0, req("completions", "completed", 200))
	assert.Equal(t, 1.0, req("models", "completed", 200))
	assert.Equal(t, float64(scrapes-1), req("metrics", "completed", 200))

	responses := []oai.CompletionUsage{ra.res.Usage, rc.res.Usage, e}
	var prompt, cached, completion, run int64
	firstTokens := 0
	for _, u := range responses {
		prompt += u.PromptTokens
		cached += u.PromptTokensDetails.CachedTokens
		completion += u.CompletionTokens
		// The batcher ran the prompt's new tokens and every generated token but the
		// last, which is never fed.
		run += u.PromptTokens - u.PromptTokensDetails.CachedTokens + u.CompletionTokens - 1
		if u.CompletionTokens > 1 { // the first was not a stop token, which is not yielded
			firstTokens++
		}
	}
	assert.Equal(t, float64(prompt), metric(t, fams, "bonsai_prompt_tokens_total"))
	assert.Equal(t, float64(cached), metric(t, fams, "bonsai_prompt_cached_tokens_total"))
	assert.Equal(t, float64(completion), metric(t, fams, "bonsai_completion_tokens_total"))
	assert.Equal(t, float64(run), metric(t, fams, "bonsai_batch_tokens_total"))
	assert.Equal(t, 3.0, metric(t, fams, "bonsai_queue_wait_seconds_count"), "A, C and the completion got a session")
	assert.Equal(t, float64(firstTokens), metric(t, fams, "bonsai_time_to_first_token_seconds_count"))
	assert.Zero(t, metric(t, fams, "bonsai_sessions_busy"))
	assert.Zero(t, metric(t, fams, "bonsai_queue_depth"))

	steps := metric(t, fams, "bonsai_batch_steps_total")
	assert.Positive(t, steps)
	assert.Equal(t, steps, metric(t, fams, "bonsai_batch_size_count"))
	assert.Equal(t, steps, metric(t, fams, "bonsai_batch_step_seconds_count"))
	assert.Equal(t, steps, metric(t, fams, "bonsai_batch_size_sum"), "one session: one sequence a step")
	assert.Positive(t, metric(t, fams, "bonsai_batch_step_seconds_sum"))
	assert.Equal(t, 1.0, metric(t, fams, "bonsai_batch_size_max"))
	assert.Zero(t, metric(t, fams, "bonsai_batch_active"))

	// A cached its two boundaries (the system prompt, the conversation before the
	// reply) and missed; C hit the first and cached its own second.
	assert.Equal(t, 1.0, metric(t, fams, "bonsai_prefix_cache_hits_total"))
	assert.Equal(t, float64(systemTokens), metric(t, fams, "bonsai_prefix_cache_hit_tokens_total"))
	assert.Equal(t, 1.0, metric(t, fams, "bonsai_prefix_cache_misses_total"))
	assert.Equal(t, 3.0, metric(t, fams, "bonsai_prefix_cache_inserts_total"))
	assert.Equal(t, 3.0, metric(t, fams, "bonsai_prefix_cache_entries"))
	assert.Zero(t, metric(t, fams, "bonsai_prefix_cache_evictions_total"))
	bytes := metric(t, fams, "bonsai_prefix_cache_bytes")
	assert.Positive(t, bytes)
	assert.LessOrEqual(t, bytes, float64(cacheLimit))
}

// TestMetricsMethods: /metrics answers GET and HEAD, and 405 otherwise.
func TestMetricsMethods(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	resp, err := http.Head(ts.URL + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
	code, h, _ := post(t, ts.URL+"/metrics", "{}")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.Equal(t, "GET, HEAD", h.Get("Allow"))
	// Each scrape counts the ones before it: the HEAD is among the completed ones, and
	// none of the requests is taken for a client that left (499).
	var fams map[string]*promFamily
	eventually(t, "the requests to be counted", func() bool {
		fams = scrape(t, ts.URL)
		f := fams["bonsai_requests_total"]
		return f.value("bonsai_requests_total", "endpoint", "metrics", "outcome", "error", "code", "405") == 1 &&
			f.value("bonsai_requests_total", "endpoint", "metrics", "outcome", "completed", "code", "200") >= 1
	})
	for _, smp := range fams["bonsai_requests_total"].samples {
		assert.NotEqual(t, "499", smp.labels["code"], "%v", smp.labels)
	}
}

// TestEndpointName: the endpoint label of a route added with Handle.
func TestEndpointName(t *testing.T) {
	for path, want := range map[string]string{"/v1/messages": "messages", "/v1/messages/count_tokens": "messages.count_tokens",
		"/": "root", "/v1/x/": "x", "/{$}": "root", "/v1/models/{id...}": "models", "/chat/completions": "chat.completions"} {
		assert.Equal(t, want, serve.EndpointName(path), path)
	}
}

// TestHistogramExposition: observations land in the first bucket whose bound is at
// least their value (le is inclusive), the buckets are written cumulative, and the sum
// and count are the observations'.
func TestHistogramExposition(t *testing.T) {
	var b strings.Builder
	e := serve.NewExposition(&b)
	e.Histogram("x_seconds", "X.", []float64{0.5, 1, 2}, 0.5, 0.75, 1, 3, 0.1)
	e.Flush()
	assert.Equal(t, "# HELP x_seconds X.\n# TYPE x_seconds histogram\n"+
		"x_seconds_bucket{le=\"0.5\"} 2\nx_seconds_bucket{le=\"1\"} 4\nx_seconds_bucket{le=\"2\"} 4\nx_seconds_bucket{le=\"+Inf\"} 5\n"+
		"x_seconds_sum 5.35\nx_seconds_count 5\n", b.String())
	_, err := parseExposition(b.String())
	require.NoError(t, err)

	b.Reset()
	e.Sample("y", math.Inf(1), "path", "a\"b\\c\nd")
	e.Sample("y", 1.5e20)
	e.Flush()
	assert.Equal(t, "y{path=\"a\\\"b\\\\c\\nd\"} +Inf\ny 1.5e+20\n", b.String())
}
