package bonsai

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// costsOf returns the pass costs cost(t) = 1 + slope·(t − 1), t = 1 … maxT, indexed by t.
func costsOf(slope float64, maxT int) []float64 {
	c := make([]float64, maxT+1)
	for t := 1; t <= maxT; t++ {
		c[t] = 1 + slope*float64(t-1)
	}
	return c
}

func TestExpectedTokens(t *testing.T) {
	// The closed form (1 − α^(k+1))/(1 − α), and k + 1 at α = 1.
	for _, a := range []float64{0, 0.3, 0.5, 0.8, 0.99} {
		for k := range 9 {
			assert.InDelta(t, (1-math.Pow(a, float64(k+1)))/(1-a), expectedTokens(a, k), 1e-12, "α %v, k %d", a, k)
		}
	}
	assert.Equal(t, 5.0, expectedTokens(1, 4))
}

// The chosen k is the argmax of E(k)/cost(k+1), worked out by hand below, on a CPU-like
// machine (cost(5) = 2.5·cost(1): slope 0.375) and GPU-like ones.
func TestChooseDraft(t *testing.T) {
	cpu := costsOf(0.375, 9)
	flat := costsOf(0, 9)
	gpu := costsOf(0.02, 9)
	for _, c := range []struct {
		name  string
		cost  []float64
		alpha float64
		want  int
	}{
		// CPU, α = 0.8: E = 1.8, 2.44, 2.952, 3.3616 over 1.375, 1.75, 2.125, 2.5
		// gives 1.309, 1.394, 1.389, 1.345: k = 2.
		{"cpu α 0.8", cpu, 0.8, 2},
		// α = 0.5: E(1)/cost(2) = 1.5/1.375 = 1.091, E(2)/cost(3) = 1.75/1.75 = 1.
		{"cpu α 0.5", cpu, 0.5, 1},
		// α = 0.35: 1.35/1.375 = 0.98 < 1.02: plain steps.
		{"cpu α 0.35", cpu, 0.35, 0},
		// α = 0.95: E(k) = 20·(1 − 0.95^(k+1)): 2.8525/1.75 = 1.630 (k 2), 3.7099/2.125
		// = 1.746 (k 3), 4.5244/2.5 = 1.810 (k 4), 5.2982/2.875 = 1.843 (k 5),
		// 6.0333/3.25 = 1.856 (k 6), 6.7316/3.625 = 1.857 (k 7), 7.3950/4 = 1.849 (k 8).
		{"cpu α 0.95", cpu, 0.95, 7},
		// Flat costs: E grows with k, so the longest draft, unless E(8) ≤ 1.02.
		{"flat α 0.5", flat, 0.5, 8},
		{"flat α 0.05", flat, 0.05, 8}, // E(8) = 1/(1−0.05) − ε = 1.0526
		{"flat α 0.01", flat, 0.01, 0}, // E(8) = 1.0101
		{"flat α 0", flat, 0, 0},       // E = 1 for every k
		// GPU with 2% a token, α = 0.5: 1.5/1.02 = 1.471, 1.75/1.04 = 1.683,
		// 1.875/1.06 = 1.769, 1.9375/1.08 = 1.794, 1.96875/1.10 = 1.790: k = 4.
		{"gpu α 0.5", gpu, 0.5, 4},
		{"cpu α 1", cpu, 1, 8}, // (k+1)/(1 + 0.375k) grows with k
	} {
		assert.Equal(t, c.want, chooseDraft(c.cost, 0, c.alpha, 8), c.name)
	}
	// maxK caps the choice; no costs, no draft.
	assert.Equal(t, 3, chooseDraft(flat, 0, 0.5, 3))
	assert.Equal(t, 0, chooseDraft(nil, 0, 0.9, 8))
	assert.Equal(t, 0, chooseDraft(flat, 0, 0.9, 0))
}

// A drafter's own time per drafted token d counts: the chosen k maximises
// E(k)/(cost(k+1) + k·d), worked out by hand below (costs and d in steps).
func TestChooseDraftDrafterCost(t *testing.T) {
	cpu := costsOf(0.375, 9)
	flat := costsOf(0, 9)
	for _, c := range []struct {
		name         string
		cost         []float64
		draft, alpha float64
		want         int
	}{
		// Flat costs, d = 0.5, α = 0.8: E = 1.8, 2.44, 2.952, 3.3616 over 1.5, 2, 2.5,
		// 3 gives 1.2, 1.22, 1.181, 1.121: k = 2 (with d = 0 it would be 8).
		{"flat d 0.5 α 0.8", flat, 0.5, 0.8, 2},
		// Flat, d = 0.1, α = 0.8: E(k)/(1 + 0.1k) = 1.636, 2.033, 2.271, 2.401, 2.460
		// (E(5) = 3.68928 / 1.5), 2.470 (E(6) = 3.951424 / 1.6), 2.448 (4.1611392 /
		// 1.7): k = 6.
		{"flat d 0.1 α 0.8", flat, 0.1, 0.8, 6},
		// CPU-like, d = 0.5, α = 0.8: 1.8/1.875 = 0.96 and falling (2.44/2.75 =
		// 0.887): plain steps, where d = 0 chose 2.
		{"cpu d 0.5 α 0.8", cpu, 0.5, 0.8, 0},
		// Flat, d = 2: even a perfect drafter loses, (k+1)/(1 + 2k) < 1.
		{"flat d 2 α 1", flat, 2, 1, 0},
		// A negligible d changes nothing: CPU-like, α = 0.8 is k = 2 as with d = 0.
		{"cpu d 1e-6 α 0.8", cpu, 1e-6, 0.8, 2},
	} {
		assert.Equal(t, c.want, chooseDraft(c.cost, c.draft, c.alpha, 8), c.name)
	}
}

// The drafter's time per drafted token is a running mean (weight 1/8) of its calls.
func TestSpeculatorTimeDraft(t *testing.T) {
	var sp speculator
	sp.timeDraft(0, time.Second) // nothing drafted: no measurement
	assert.Zero(t, sp.draftCost)
	sp.timeDraft(4, 2*time.Second)
	assert.InDelta(t, 0.5, sp.draftCost, 1e-12)
	sp.timeDraft(1, 4500*time.Millisecond) // 0.5 + (4.5 − 0.5)/8 = 1
	assert.InDelta(t, 1.0, sp.draftCost, 1e-12)
}

// The acceptance estimate counts a draft's accepted tokens as successes and its
// rejection, if any, as one failure, with the past weighted by 7/8 a draft.
func TestSpecAcceptance(t *testing.T) {
	a := newSpecAcceptance()
	assert.Equal(t, 0.5, a.alpha())
	a.add(4, 4) // 1·7/8 + 4 = 4.875 successes, 7/8 failures
	assert.InDelta(t, 4.875/5.75, a.alpha(), 1e-12)
	a.add(3, 1) // 4.875·7/8 + 1 = 5.265625; 7/8·7/8 + 1 = 1.765625
	assert.InDelta(t, 5.265625/(5.265625+1.765625), a.alpha(), 1e-12)
	a.add(0, 0) // no draft: no change
	assert.InDelta(t, 5.265625/(5.265625+1.765625), a.alpha(), 1e-12)
}

// The estimates: the running mean of each width measured, interpolated between the
// widths measured and extrapolated beyond along the line from cost(1).
func TestPassCosts(t *testing.T) {
	var c passCosts
	assert.Nil(t, c.estimate(nil, 4), "no step timed")
	c.record(1, 10*time.Millisecond)
	est := c.estimate(nil, 3)
	require.Len(t, est, 4)
	// Only steps: the prior slope, 0.375 of a step a token.
	assert.InDeltaSlice(t, []float64{0, 0.010, 0.01375, 0.0175}, est, 1e-12)

	c.record(1, 18*time.Millisecond) // mean 10 + (18 − 10)/8 = 11 ms
	c.record(3, 15*time.Millisecond)
	est = c.estimate(nil, 6)
	// cost(2) halfway from 11 to 15; beyond 3 the slope (15 − 11)/2 = 2 ms a token.
	assert.InDeltaSlice(t, []float64{0, 0.011, 0.013, 0.015, 0.017, 0.019, 0.021}, est, 1e-12)

	// A wider pass measured cheaper than a step (noise) gives no negative slope.
	var d passCosts
	d.record(1, 10*time.Millisecond)
	d.record(2, 9*time.Millisecond)
	assert.InDeltaSlice(t, []float64{0, 0.010, 0.009, 0.009}, d.estimate(nil, 3), 1e-12)

	// The test hook replaces the measurements.
	c.fixed = func(t int) float64 { return float64(t) }
	assert.Equal(t, []float64{0, 1, 2, 3}, c.estimate(make([]float64, 0, 8), 3))
}
