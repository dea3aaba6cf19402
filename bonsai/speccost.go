package bonsai

import (
	"sync"
	"time"
)

// When speculation pays. A pass that verifies t tokens (the last one taken and t−1
// drafted) costs cost(t); a plain step costs cost(1). With a drafter whose tokens the
// model accepts, each independently, with probability α, a draft of k tokens gives in
// expectation
//
//	E(k) = 1 + α + α² + … + α^k = (1 − α^(k+1)) / (1 − α)
//
// tokens per pass (the accepted prefix plus the model's own token), so drafting k pays
// when E(k)/(cost(k+1) + k·d) beats 1/cost(1), where d is the drafter's own time per
// drafted token: negligible for the lookup drafter, one run of the MTP head for
// MTPDrafter. Each generation measures d as a running mean of its drafter's calls. The ratio cost(t)/cost(1) is what differs between
// machines: a pass of 5 tokens costs about 2.5 steps on a 2-core CPU, whose step is
// compute-bound already, and about 1 on a GPU, whose step reads the weights with cores
// to spare. So neither is assumed: each Model measures the wall time of the passes its
// generations run, by width (passCosts), and each generation estimates its drafter's α
// from the drafts' fate (specAcceptance), and chooses k per pass (chooseDraft).

// passCostWeight is the weight of a new measurement in a width's running mean of pass
// times: an eighth adapts within tens of passes to a machine that gets busier.
const passCostWeight = 1.0 / 8

// passCostSlope is the prior cost of each token a pass adds, as a fraction of a step,
// used for the widths not yet measured while no wider pass has been: a 2-core CPU's
// 2.5 steps for 5 tokens ((2.5 − 1)/4). It is the conservative end of the range (a
// GPU's is near 0), and still lets a drafter whose tokens are accepted half the time
// (the lookup drafter's start) try a one-token draft, which measures cost(2).
const passCostSlope = 0.375

// minSpecGain is how much more tokens per second drafting must promise than plain
// steps (2%) before a generation drafts: the estimates are noisy, and a draft that
// gains nothing in expectation adds variance and verification work.
const minSpecGain = 0.02

// passCosts is a model's running estimate of the wall time of its forward passes by
// width, shared by its sessions (hence the lock).
type passCosts struct {
	mu sync.Mutex
	// mean[t] is the running mean, in seconds, of the passes of t tokens (0: none
	// measured); mean[0] is unused.
	mean []float64
	// fixed, when set (by tests), gives every width's cost instead of the
	// measurements, so that the choice of k is deterministic; fixedDraft then gives
	// the drafter's cost per drafted token (in the same unit) instead of its
	// measurements, 0 unless a test sets it.
	fixed      func(t int) float64
	fixedDraft float64
}

// draftCost returns the drafter's cost per drafted token that the choice of k counts:
// measured (a generation's running mean, in seconds), or fixedDraft while the pass
// costs are fixed, so that a test's choice does not depend on the drafter's timing.
func (c *passCosts) draftCost(measured float64) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fixed != nil {
		return c.fixedDraft
	}
	return measured
}

// fixedDraftCost returns fixedDraft and true while the pass costs are fixed (tests).
func (c *passCosts) fixedDraftCost() (float64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fixedDraft, c.fixed != nil
}

// record adds a pass of t tokens that took d.
func (c *passCosts) record(t int, d time.Duration) {
	if t <= 0 || d <= 0 {
		return
	}
	sec := d.Seconds()
	c.mu.Lock()
	defer c.mu.Unlock()
	if t >= len(c.mean) {
		c.mean = append(c.mean, make([]float64, t+1-len(c.mean))...)
	}
	if m := c.mean[t]; m > 0 {
		c.mean[t] = m + (sec-m)*passCostWeight
	} else {
		c.mean[t] = sec
	}
}

// estimate writes to dst[t], for t = 1 … maxT, the expected cost of a pass of t tokens,
// and returns dst[:maxT+1]; it returns nil while no step has been measured. A width not
// measured is interpolated linearly between the measured ones around it, and beyond
// the widest one extrapolated along the line from cost(1) to it (the prior slope
// passCostSlope when only steps are measured).
func (c *passCosts) estimate(dst []float64, maxT int) []float64 {
	if cap(dst) < maxT+1 {
		dst = make([]float64, maxT+1)
	}
	dst = dst[:maxT+1]
	dst[0] = 0
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fixed != nil {
		for t := 1; t <= maxT; t++ {
			dst[t] = c.fixed(t)
		}
		return dst
	}
	if len(c.mean) < 2 || c.mean[1] <= 0 {
		return nil
	}
	one := c.mean[1]
	prevT, prev := 1, one // the last measured width, and its cost
	slope := one * passCostSlope
	for t := 2; t <= maxT; t++ {
		if t < len(c.mean) && c.mean[t] > 0 {
			dst[t] = c.mean[t]
			// Fill the gap since the last measured width.
			for u := prevT + 1; u < t; u++ {
				dst[u] = prev + (c.mean[t]-prev)*float64(u-prevT)/float64(t-prevT)
			}
			prevT, prev = t, c.mean[t]
			slope = max(prev-one, 0) / float64(t-1)
		}
	}
	dst[1] = one
	// Beyond the widest measured width.
	for t := prevT + 1; t <= maxT; t++ {
		dst[t] = prev + slope*float64(t-prevT)
	}
	return dst
}

// times returns the estimates of estimate as durations, for widths 1 … maxT.
func (c *passCosts) times(maxT int) []time.Duration {
	est := c.estimate(nil, maxT)
	if est == nil {
		return nil
	}
	out := make([]time.Duration, maxT)
	for t := 1; t <= maxT; t++ {
		out[t-1] = time.Duration(est[t] * float64(time.Second))
	}
	return out
}

// PassTimes returns the model's estimates of the wall time of a forward pass of t
// tokens, for t = 1 … maxWidth (element t−1): the running means of the passes its
// generations ran, interpolated for the widths not run. A speculative generation
// chooses its draft lengths from them (SpeculativeOptions). It returns nil before any
// decode step has been timed.
func (m *Model) PassTimes(maxWidth int) []time.Duration {
	if maxWidth <= 0 {
		return nil
	}
	return m.costs.times(maxWidth)
}

// expectedTokens is E(k), the tokens a pass gives in expectation with a draft of k
// tokens each accepted with probability alpha.
func expectedTokens(alpha float64, k int) float64 {
	// The sum, rather than the closed form, which divides by 0 at alpha = 1.
	e, p := 1.0, 1.0
	for range k {
		p *= alpha
		e += p
	}
	return e
}

// chooseDraft returns the draft length k in 0 … maxK that maximises the expected
// tokens per second, E(k)/(cost[k+1] + k·draft), given the pass costs cost[1 … maxK+1],
// the drafter's cost per drafted token draft (in the unit of cost) and the acceptance
// alpha: 0 unless some k > 0 beats plain steps (1/cost[1]) by minSpecGain. Among equal
// rates the shorter draft wins.
func chooseDraft(cost []float64, draft, alpha float64, maxK int) int {
	if len(cost) < 2 || !(cost[1] > 0) {
		return 0
	}
	maxK = min(maxK, len(cost)-2)
	best, bestRate := 0, (1+minSpecGain)/cost[1]
	for k := 1; k <= maxK; k++ {
		if !(cost[k+1] > 0) {
			break
		}
		if r := expectedTokens(alpha, k) / (cost[k+1] + float64(k)*max(draft, 0)); r > bestRate {
			best, bestRate = k, r
		}
	}
	return best
}

// draftCostWeight is the weight of a new measurement in a generation's running mean
// of its drafter's time per drafted token, as passCostWeight is for the passes.
const draftCostWeight = 1.0 / 8

// probeShare is the largest share of the decode time that the shadow drafts (probe)
// may cost while the cost model drafts nothing: a drafter whose time counts (the MTP
// head) probes one token at a time and waits enough steps between probes, so that a
// generation that settled to plain steps runs within about this much of their speed.
const probeShare = 1.0 / 50

// specAcceptanceDecay is the weight that a generation's acceptance estimate keeps of
// its past at each draft's outcome.
const specAcceptanceDecay = 7.0 / 8

// specAcceptance estimates the probability α that the model accepts a drafted token,
// from the drafts' outcomes: a draft that had a tokens accepted and then one rejected
// is a successes and one failure of a geometric trial, one accepted whole a successes
// only, so α = successes/(successes + failures), each count an exponentially weighted
// sum (weight specAcceptanceDecay per draft) so that the estimate follows the text.
// It starts at one success and one failure: α = 1/2, as the lookup drafter's rate.
type specAcceptance struct {
	acc, rej float64
}

func newSpecAcceptance() specAcceptance { return specAcceptance{acc: 1, rej: 1} }

// add records a draft of drafted tokens of which the first accepted were accepted.
func (a *specAcceptance) add(drafted, accepted int) {
	if drafted <= 0 {
		return
	}
	a.acc = a.acc*specAcceptanceDecay + float64(accepted)
	a.rej *= specAcceptanceDecay
	if accepted < drafted {
		a.rej++
	}
}

// alpha returns the estimate.
func (a *specAcceptance) alpha() float64 { return a.acc / (a.acc + a.rej) }
