package bonsai_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// tinyMTP is the tiny model with an MTP head and the pass costs of specTiny.
func tinyMTP(t testing.TB) *bonsai.Model {
	c := synthtest.Config(t, "tiny")
	c.NextN = 1
	m := open(t, synthtest.PathOf(t, synth.Options{Config: c, Seed: 3, Format: ternary.PQ2_0}))
	bonsai.SetPassCosts(m, func(int) float64 { return 1 })
	return m
}

// mtpSpec drafts with the model's MTP head at every pass.
func mtpSpec(t testing.TB, m *bonsai.Model, maxDraft int, made *[]*bonsai.MTPDrafter) *bonsai.SpeculativeOptions {
	return &bonsai.SpeculativeOptions{Always: true, MaxDraft: maxDraft, NewDrafter: func() bonsai.Drafter {
		d, err := m.NewMTPDrafter()
		require.NoError(t, err)
		if made != nil {
			*made = append(*made, d)
		}
		return d
	}}
}

// Greedy speculative generation drafting with the MTP head is the plain generation,
// token for token, over long generations and every draft length, and it drafts.
func TestMTPDrafterGreedy(t *testing.T) {
	m := tinyMTP(t)
	require.True(t, m.HasMTP())
	s := session(t, m)
	var drafted, accepted int
	for i, c := range []struct {
		in  bonsai.Input
		opt bonsai.GenerateOptions
	}{
		{bonsai.Text("The quick brown fox"), bonsai.GenerateOptions{MaxTokens: 300}},
		{bonsai.TokenIDs(tokens(20, 512, 5)...), bonsai.GenerateOptions{MaxTokens: 257}},
		{bonsai.Text("Once upon a time"), bonsai.GenerateOptions{MaxTokens: 200, SamplerOptions: bonsai.SamplerOptions{RepeatPenalty: 1.2, RepeatLastN: 16}}},
	} {
		plain := runGen(t, s, c.in, c.opt)
		for _, k := range []int{1, 3, 8} {
			msg := fmt.Sprintf("case %d, MaxDraft %d", i, k)
			d, a := sameRun(t, plain, runGen(t, s, c.in, withSpec(c.opt, mtpSpec(t, m, k, nil))), msg)
			assert.Positive(t, d, "%s: the head drafts", msg)
			drafted += d
			accepted += a
		}
	}
	t.Logf("MTP head (random weights): drafted %d, accepted %d", drafted, accepted)
}

func TestMTPDrafterWithoutHead(t *testing.T) {
	m := tiny(t)
	assert.False(t, m.HasMTP())
	_, err := m.NewMTPDrafter()
	require.ErrorIs(t, err, bonsai.ErrNoMTP)
}
