package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/bonsai-go/sdk/metal"
	"github.com/bonsai-go/sdk/metal/kernelcheck"
)

// Report is everything metalcheck found, written as JSON by -json once the checks are
// over (also when one failed, or an error stopped them: Failures says what and why).
type Report struct {
	Time    time.Time         `json:"time"`            // when the run started (UTC)
	Device  string            `json:"device"`          // the -device flag: "metal" or "emulator"
	Host    string            `json:"host"`            // the Go runtime's view: GOOS/GOARCH, CPUs, Go version
	System  *metal.SystemInfo `json:"system"`          // the Metal device (name, OS version, GPU families, working set); on the emulator its name is "emulator"
	Model   string            `json:"model,omitempty"` // the model file, or the synthetic preset
	Kernels []KernelResult    `json:"kernels"`         // every kernel check against its Go reference
	Rates   []RateResult      `json:"rates"`           // GB/s per product shape against a streaming read
	// RatesNote says how to read Rates: on the emulator the shapes are subsampled and
	// the speeds are the CPU's, meaningless for a GPU.
	RatesNote string         `json:"rates_note,omitempty"`
	Parity    []ParityResult `json:"parity"` // the Metal backend against the CPU backend, per model format
	Speed     []SpeedResult  `json:"speed"`  // prefill and decode tok/s per model format and decode plan
	Failures  []string       `json:"failures"`
	OK        bool           `json:"ok"` // every check passed and nothing stopped them
}

// KernelResult is one kernel check (kernelcheck.Check).
type KernelResult struct {
	Kernel  string  `json:"kernel"`
	Case    string  `json:"case"`   // shape and variant
	Metric  string  `json:"metric"` // how Err is measured
	Err     float64 `json:"err"`    // the largest error
	Tol     float64 `json:"tol"`    // the largest allowed
	Ms      float64 `json:"ms"`     // the command buffer's wall time
	OK      bool    `json:"ok"`     // ran and agreed within Tol
	Failure string  `json:"failure,omitempty"`
}

// RateResult is one product shape's bandwidth (kernelcheck.Rate).
type RateResult struct {
	K          int     `json:"k"`           // inputs
	N          int     `json:"n"`           // rows timed
	ModelN     int     `json:"model_n"`     // the model's rows of this product; N is fewer where subsampled (the emulator)
	Bytes      int64   `json:"bytes"`       // the PQ2_0 weights' bytes, what both kernels read
	Ms         float64 `json:"ms"`          // median wall time of the product
	GBps       float64 `json:"gbps"`        // Bytes / Ms
	StreamMs   float64 `json:"stream_ms"`   // median wall time of the streaming read of Bytes
	StreamGBps float64 `json:"stream_gbps"` // Bytes / StreamMs
	Ratio      float64 `json:"ratio"`       // GBps / StreamGBps
	Reps       int     `json:"reps"`        // timed runs the medians are of
	Failure    string  `json:"failure,omitempty"`
}

// ParityResult is the Metal backend's logits against the CPU backend's on one model.
type ParityResult struct {
	Format         string  `json:"format"`           // "PQ2_0" or "PTQ1_0"
	PrefillDiff    float64 `json:"prefill_max_diff"` // max |Δlogit| over every prompt position
	StepDiff       float64 `json:"step_max_diff"`    // max |Δlogit| over the step walk
	Bound          float64 `json:"bound"`            // the largest allowed of both
	ArgmaxAgree    int     `json:"argmax_agree"`     // step-walk positions whose argmax agrees
	Steps          int     `json:"steps"`            // of these many
	GreedyTokens   int     `json:"greedy_tokens"`    // tokens generated greedily by each
	GreedyDiverges int     `json:"greedy_diverges"`  // first differing token, -1: identical
	OK             bool    `json:"ok"`
}

// SpeedResult is one timed generation.
type SpeedResult struct {
	Format        string  `json:"format"` // "PQ2_0" or "PTQ1_0"
	Plan          string  `json:"plan"`   // the decode plan: fused (default), GDN recurrence per head group, unfused
	PrefillTokens int     `json:"prefill_tokens"`
	PrefillTokS   float64 `json:"prefill_tok_s"`
	DecodeTokens  int     `json:"decode_tokens"`
	DecodeTokS    float64 `json:"decode_tok_s"`
	WeightGBps    float64 `json:"weight_gbps"`          // bytes of weights a decode step reads × decode tok/s
	Dispatches    int     `json:"dispatches,omitempty"` // per decode step, where known
}

func newReport(cfg config) *Report {
	return &Report{
		Time:     time.Now().UTC(),
		Device:   cfg.device,
		Host:     fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()),
		Kernels:  []KernelResult{},
		Rates:    []RateResult{},
		Parity:   []ParityResult{},
		Speed:    []SpeedResult{},
		Failures: []string{},
	}
}

func (r *Report) fail(format string, a ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, a...))
}

func (r *Report) addKernel(c kernelcheck.Check) {
	k := KernelResult{Kernel: c.Kernel, Case: c.Case, Metric: c.Metric, Err: finite(c.Err), Tol: c.Tol, Ms: ms(c.Time), OK: c.OK()}
	if c.Failure != nil {
		k.Failure = c.Failure.Error()
	}
	if !k.OK {
		r.fail("kernel %s (%s): %s", c.Kernel, c.Case, c.String())
	}
	r.Kernels = append(r.Kernels, k)
}

func (r *Report) addRate(x kernelcheck.Rate, modelN int) {
	q := RateResult{K: x.K, N: x.N, ModelN: modelN, Bytes: x.Bytes, Ms: ms(x.Time), GBps: x.GBps(), StreamMs: ms(x.Stream), StreamGBps: x.StreamGBps(), Reps: x.Reps}
	if q.StreamGBps > 0 {
		q.Ratio = q.GBps / q.StreamGBps
	}
	if x.Failure != nil {
		q.Failure = x.Failure.Error()
		r.fail("rate %d × %d: %v", x.K, x.N, x.Failure)
	}
	r.Rates = append(r.Rates, q)
}

// finite keeps the JSON valid: encoding/json refuses NaN and ±Inf.
func finite(x float64) float64 {
	if x != x || x > 1e308 || x < -1e308 {
		return -1
	}
	return x
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// summary writes the part of the report a person pastes into an issue first.
func (r *Report) summary(w io.Writer) {
	fmt.Fprintln(w, "\n== report")
	fmt.Fprintf(w, "device:      %s (%s)\n", r.Device, r.Host)
	if s := r.System; s != nil {
		fmt.Fprintf(w, "GPU:         %s, families %v\n", s.Device, s.Families)
		fmt.Fprintf(w, "OS:          %s\n", s.OS)
		if s.WorkingSetBytes > 0 {
			fmt.Fprintf(w, "working set: %.2f GiB (max buffer %.2f GiB)\n", float64(s.WorkingSetBytes)/(1<<30), float64(s.MaxBufferBytes)/(1<<30))
		} else {
			fmt.Fprintln(w, "working set: not given by the device")
		}
	}
	if r.Model != "" {
		fmt.Fprintf(w, "model:       %s\n", r.Model)
	}
	bad := 0
	for _, k := range r.Kernels {
		if !k.OK {
			bad++
		}
	}
	fmt.Fprintf(w, "kernels:     %d checks, %d failed\n", len(r.Kernels), bad)
	for _, p := range r.Parity {
		fmt.Fprintf(w, "parity %-6s prefill %.2e, step %.2e (bound %.1e), argmax %d/%d, ok %v\n", p.Format+":", p.PrefillDiff, p.StepDiff, p.Bound, p.ArgmaxAgree, p.Steps, p.OK)
	}
	for _, s := range r.Speed {
		fmt.Fprintf(w, "speed %-6s %-26s prefill %.1f tok/s, decode %.2f tok/s = %.1f GB/s of weights\n", s.Format, s.Plan+":", s.PrefillTokS, s.DecodeTokS, s.WeightGBps)
	}
	if len(r.Rates) > 0 {
		fmt.Fprintf(w, "products:    %d shapes, GB/s against the streaming read", len(r.Rates))
		if r.RatesNote != "" {
			fmt.Fprintf(w, " (%s)", r.RatesNote)
		}
		fmt.Fprintln(w)
		for _, q := range r.Rates {
			sub := ""
			if q.N != q.ModelN {
				sub = fmt.Sprintf(" (%d rows of %d)", q.N, q.ModelN)
			}
			fmt.Fprintf(w, "  %6d × %-6d %7.1f GB/s of %7.1f GB/s (%.0f%%)%s\n", q.K, q.ModelN, q.GBps, q.StreamGBps, 100*q.Ratio, sub)
		}
	}
	if len(r.Failures) == 0 {
		fmt.Fprintln(w, "failures:    none")
	} else {
		fmt.Fprintf(w, "failures:    %d\n", len(r.Failures))
		for _, f := range r.Failures {
			fmt.Fprintln(w, "  "+f)
		}
	}
}

// writeJSON writes the report to path.
func (r *Report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func (r *Report) addParity(p ParityResult) {
	if !p.OK {
		r.fail("parity %s: max |Δlogit| prefill %.2e, step %.2e over the bound %.1e", p.Format, p.PrefillDiff, p.StepDiff, p.Bound)
	}
	r.Parity = append(r.Parity, p)
}
