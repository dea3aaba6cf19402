package bonsai_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/spectest"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// tinyMTP is the tiny model with an MTP head and the pass costs of specTiny.
func tinyMTP(t testing.TB) *bonsai.Model {
	m := open(t, synthtest.PathOf(t, tinyMTPOptions(t)))
	bonsai.SetPassCosts(m, func(int) float64 { return 1 })
	return m
}

// tinyMTPOptions are the tiny synthetic model's with an MTP head.
func tinyMTPOptions(t testing.TB) synth.Options {
	c := synthtest.Config(t, "tiny")
	c.NextN = 1
	return synth.Options{Config: c, Seed: 3, Format: ternary.PQ2_0}
}

// tinyMTPReference is the tiny model with a head in float32 activations, beside its
// float64 reference.
func tinyMTPReference(t *testing.T) (*bonsai.Model, *qwen35.Reference) {
	opt := tinyMTPOptions(t)
	m := open(t, synthtest.PathOf(t, opt), bonsai.WithActivations(backend.ActivationsFloat32))
	ref, err := qwen35.NewReference(synthtest.FileOf(t, opt))
	require.NoError(t, err)
	return m, ref
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
			d, a := spectest.Same(t, plain, runGen(t, s, c.in, spectest.With(c.opt, mtpSpec(t, m, k, nil))), msg)
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

// draftLog records the drafts of a Drafter with the context each was asked for.
type draftLog struct {
	d      bonsai.Drafter
	ctx    [][]int32
	drafts [][]int32
}

func (l *draftLog) Draft(ctx []int32, k int, dst []int32) []int32 {
	n := len(dst)
	dst = l.d.Draft(ctx, k, dst)
	l.ctx = append(l.ctx, append([]int32(nil), ctx...))
	l.drafts = append(l.drafts, append([]int32(nil), dst[n:]...))
	return dst
}

func (l *draftLog) Accepted(drafted, accepted int) { l.d.Accepted(drafted, accepted) }

func (l *draftLog) BindSession(s *bonsai.Session) { l.d.(bonsai.SessionDrafter).BindSession(s) }

// The MTP drafter drafts what the float64 reference's head predicts: at each draft,
// the head run over the positions since the prompt's last one (the model's hidden
// states there, the next tokens), greedy, and chained on its own output for the second
// token. A draft token may differ only where the reference's top two are within
// 1e-2 (the engine's hidden states are float32, the reference's float64).
func TestMTPDrafterMatchesReference(t *testing.T) {
	m, ref := tinyMTPReference(t)
	s := session(t, m)
	var log *draftLog
	so := &bonsai.SpeculativeOptions{Always: true, MaxDraft: 2, NewDrafter: func() bonsai.Drafter {
		d, err := m.NewMTPDrafter()
		require.NoError(t, err)
		log = &draftLog{d: d}
		return log
	}}
	prompt := tokens(12, 512, 9)
	runGen(t, s, bonsai.TokenIDs(prompt...), bonsai.GenerateOptions{MaxTokens: 40, Speculative: so})
	require.NotNil(t, log)
	require.NotEmpty(t, log.drafts[0], "the prefill kept the hidden state of the prompt's last position")
	P := len(prompt) - 1 // the head's cache starts at the prompt's last position
	checked := 0
	for i, ctx := range log.ctx {
		draft := log.drafts[i]
		if len(draft) == 0 {
			continue
		}
		n := len(ctx) - 1
		ids := make([]int, len(ctx))
		for j, v := range ctx {
			ids[j] = int(v)
		}
		hidden, err := ref.Hidden(ids[:n])
		require.NoError(t, err)
		rows, next := hidden[P:n], ids[P+1:n+1]
		logits, out, err := ref.MTP(rows, next)
		require.NoError(t, err)
		want := [][]float64{logits[len(logits)-1]}
		if len(draft) > 1 {
			chain, _, err := ref.MTP(append(rows[:len(rows):len(rows)], out[len(out)-1]), append(next[:len(next):len(next)], int(draft[0])))
			require.NoError(t, err)
			want = append(want, chain[len(chain)-1])
		}
		for j, w := range want {
			best := argmax(w)
			if int(draft[j]) != best {
				assert.Less(t, w[best]-w[draft[j]], 1e-2, "draft %d token %d: %d, reference %d", i, j, draft[j], best)
			}
			checked++
		}
	}
	t.Logf("%d draft calls, %d drafted tokens checked", len(log.ctx), checked)
	assert.Greater(t, checked, 20)
}

// SpeculativeOptions.MTP drafts with the head under the cost model: the same greedy
// output; on a model without a head the options are refused, naming ErrNoMTP.
func TestSpeculativeOptionsMTP(t *testing.T) {
	m := tinyMTP(t)
	s := session(t, m)
	opt := bonsai.GenerateOptions{MaxTokens: 200}
	plain := runGen(t, s, bonsai.Text("Once upon a time"), opt)
	for _, so := range []*bonsai.SpeculativeOptions{{MTP: true}, {MTP: true, Always: true, MaxDraft: 2}} {
		d, _ := spectest.Same(t, plain, runGen(t, s, bonsai.Text("Once upon a time"), spectest.With(opt, so)), fmt.Sprintf("%+v", *so))
		if so.Always {
			assert.Positive(t, d)
		}
	}

	_, err := tiny(t).Prepare(bonsai.Text("Hi"), spectest.With(opt, &bonsai.SpeculativeOptions{MTP: true}))
	require.ErrorIs(t, err, bonsai.ErrNoMTP)
	var oe *bonsai.OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "Speculative", oe.Option)
}

// After a stretch of plain steps longer than the drafter's catch-up (8 positions, and
// more than its last draft asked for), a draft restarts the head's cache over the last
// 8 positions only: its tokens are the float64 reference's head run over those 8
// positions' hidden states alone, then chained on its own output (a draft token may
// differ only where the reference's top two are within 1e-2, as above).
func TestMTPDrafterCatchUpWindow(t *testing.T) {
	m, ref := tinyMTPReference(t)
	s := session(t, m)
	ids := tokens(31, 512, 11)
	ctx := t.Context()
	require.NoError(t, s.Prefill(ctx, ids[:10]))
	d, err := m.NewMTPDrafter()
	require.NoError(t, err)
	d.BindSession(s)
	// Position 9's hidden state was not kept (this prefill was no speculative
	// generation's): no draft, and the state keeps them from position 10 on.
	require.Empty(t, d.Draft(ids[:11], 1, nil))
	require.NoError(t, s.Prefill(ctx, ids[10:30]))
	draft := d.Draft(ids, 2, nil) // 30 positions fed, ids[30] about to be
	require.Len(t, draft, 2)

	all := make([]int, len(ids))
	for i, v := range ids {
		all[i] = int(v)
	}
	hidden, err := ref.Hidden(all[:30])
	require.NoError(t, err)
	rows, next := hidden[22:30], all[23:31] // positions 22 … 29 and the tokens after them
	logits, out, err := ref.MTP(rows, next)
	require.NoError(t, err)
	chain, _, err := ref.MTP(append(rows[:8:8], out[7]), append(next[:8:8], int(draft[0])))
	require.NoError(t, err)
	for j, w := range [][]float64{logits[7], chain[8]} {
		if best := argmax(w); int(draft[j]) != best {
			assert.Less(t, w[best]-w[draft[j]], 1e-2, "token %d: %d, reference %d", j, draft[j], best)
		}
	}
	// The whole stretch kept (positions 10 … 29) would have given the chained token
	// another attention history, and here another token: the check above tells the
	// window.
	_, fullOut, err := ref.MTP(hidden[10:30], all[11:31])
	require.NoError(t, err)
	fullChain, _, err := ref.MTP(append(hidden[10:30:30], fullOut[19]), append(all[11:31:31], int(draft[0])))
	require.NoError(t, err)
	assert.NotEqual(t, argmax(chain[8]), argmax(fullChain[20]), "the chained token depends on the history")
}
