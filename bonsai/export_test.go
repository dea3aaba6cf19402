package bonsai

import "time"

// ModelOf returns the model of a session, for the external tests' helpers.
func ModelOf(s *Session) *Model { return s.m }

// SetLingerMin sets the shortest wait of m's batcher for the streams its last pass
// answered: a test that counts how passes are shared sets it to lingerMax, so that a
// goroutine waiting for a core on a loaded machine is not counted as a missed pass. The
// wait still ends as soon as every stream is back.
func SetLingerMin(m *Model, d time.Duration) { m.batch.lingerMin = d }

// SetPassCosts makes m's speculative generations choose their draft lengths from the
// pass costs cost(t) for t tokens, instead of the times measured, so that the choice
// is deterministic.
func SetPassCosts(m *Model, cost func(t int) float64) {
	m.costs.mu.Lock()
	defer m.costs.mu.Unlock()
	m.costs.fixed = cost
}

// SetDraftCost makes m's speculative generations count cost as their drafter's time per
// drafted token, in the unit of SetPassCosts's costs (which it needs: with measured
// pass times the drafter's time is measured too).
func SetDraftCost(m *Model, cost float64) {
	m.costs.mu.Lock()
	defer m.costs.mu.Unlock()
	m.costs.fixedDraft = cost
}
