package serve_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
)

func TestSpeculativeOptions(t *testing.T) {
	for _, c := range []struct {
		mode string
		want *bonsai.SpeculativeOptions
	}{
		{"auto", &bonsai.SpeculativeOptions{}},
		{"lookup", &bonsai.SpeculativeOptions{Always: true}},
		{"mtp", &bonsai.SpeculativeOptions{MTP: true}},
		{"off", nil},
		{"", nil},
	} {
		got, err := serve.SpeculativeOptions(c.mode)
		require.NoError(t, err, c.mode)
		assert.Equal(t, c.want, got, c.mode)
	}
	_, err := serve.SpeculativeOptions("on")
	assert.EqualError(t, err, `"on" is not a speculative decoding mode: want one of auto, off, lookup, mtp`)
	_, err = serve.New(tinyModel, serve.Config{ModelName: modelName, Defaults: serve.Defaults{Speculative: "fast"}})
	assert.ErrorContains(t, err, "Config.Defaults.Speculative")
	// The tiny model has no MTP head: mtp is refused, naming why.
	_, err = serve.New(tinyModel, serve.Config{ModelName: modelName, Defaults: serve.Defaults{Speculative: "mtp"}})
	assert.ErrorIs(t, err, bonsai.ErrNoMTP)
	assert.ErrorContains(t, err, `Config.Defaults.Speculative "mtp"`)
}

// A request chooses its speculative decoding ("speculative"), or gets the server's;
// greedy output is the same whichever; the usage reports the drafts as OpenAI reports
// a predicted output's tokens, and /metrics adds them up.
func TestSpeculativeMetrics(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{Defaults: serve.Defaults{Speculative: serve.SpeculativeLookup}})
	type details struct {
		Accepted int `json:"accepted_prediction_tokens"`
		Rejected int `json:"rejected_prediction_tokens"`
	}
	// The prompt holds a, b, c for every token c, and ends with a, b: whatever token the
	// model generates next, the context's last three tokens occurred before, so that the
	// lookup drafter drafts (a random model's text seldom repeats otherwise).
	const a, b = 17, 42
	var prompt []int32
	for c := range int32(512) {
		prompt = append(prompt, a, b, c)
	}
	prompt = append(prompt, a, b)
	complete := func(mode string) (string, details) {
		body := map[string]any{"model": modelName, "prompt": prompt, "max_tokens": 40, "temperature": 0}
		if mode != "" {
			body["speculative"] = mode
		}
		b, err := json.Marshal(body)
		require.NoError(t, err)
		resp, err := http.Post(ts.URL+"/v1/completions", "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", out)
		var r struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage struct {
				Details details `json:"completion_tokens_details"`
			} `json:"usage"`
		}
		require.NoError(t, json.Unmarshal(out, &r), "%s", out)
		require.Len(t, r.Choices, 1)
		return r.Choices[0].Text, r.Usage.Details
	}
	plain, off := complete("off")
	assert.Equal(t, details{}, off, "off drafts nothing")
	var accepted, drafted int
	for _, mode := range []string{"", "lookup", "auto"} {
		text, d := complete(mode)
		assert.Equal(t, plain, text, "mode %q", mode)
		accepted += d.Accepted
		drafted += d.Accepted + d.Rejected
	}
	require.Positive(t, drafted, "the lookup drafter drafts after the prompt")

	fams := scrape(t, ts.URL)
	assert.Equal(t, float64(drafted), metric(t, fams, "bonsai_spec_drafted_tokens_total"))
	assert.Equal(t, float64(accepted), metric(t, fams, "bonsai_spec_accepted_tokens_total"))
	assert.Positive(t, metric(t, fams, "bonsai_spec_draft_passes_total"))
	assert.InDelta(t, float64(accepted)/float64(drafted), metric(t, fams, "bonsai_spec_acceptance_rate"), 1e-12)
}
