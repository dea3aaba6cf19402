package bonsai_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/gpu/mslemu"
	"github.com/bonsai-go/sdk/metal/emulator"
)

// gpuTiny is specTiny on the Metal backend over the MSL emulator (the GPU engine's
// kept passes and Rewind), skipping where the emulator cannot run: it needs clang.
func gpuTiny(t *testing.T) *bonsai.Model {
	t.Helper()
	d, err := mslemu.New()
	if err != nil {
		if os.Getenv("MSLEMU_REQUIRE") != "" {
			t.Fatalf("MSL emulator unavailable: %v", err)
		}
		t.Skipf("MSL emulator unavailable (it needs clang): %v", err)
	}
	d.Close()
	return specTiny(t, bonsai.WithBackend(emulator.New()))
}

// shiftOracle drafts what a plain run generated, want, with the token at one position
// of each draft replaced by another, the position moving on by one at every draft
// (and one draft in every k+1 left right), so that the verifications reject at every
// position of a draft and the engine rewinds to each.
type shiftOracle struct {
	want   []int32
	prompt int
	n      int // drafts made
}

func (o *shiftOracle) Draft(ctx []int32, k int, dst []int32) []int32 {
	wrong := o.n % (k + 1)
	o.n++
	for i, d := len(ctx)-o.prompt, 0; i < len(o.want) && d < k; i, d = i+1, d+1 {
		x := o.want[i]
		if d == wrong {
			x = (x + 1) % 512
		}
		dst = append(dst, x)
	}
	return dst
}

func (o *shiftOracle) Accepted(drafted, accepted int) {}

// Greedy speculative generation on a GPU backend — kept passes verified on the engine
// and its states rewound by replaying the kept rows (internal/gpu/engine/rewind.go) —
// is the plain generation, token for token, with the lookup drafter, the oracle (every
// seventh token wrong) and a shifting oracle (a wrong token at every position of a
// draft in turn), all forced to draft at every pass (Always).
func TestGenerateSpeculativeGreedyGPU(t *testing.T) {
	m := gpuTiny(t)
	s := session(t, m)
	opt := bonsai.GenerateOptions{MaxTokens: 40}
	in := bonsai.TokenIDs(tokens(12, 512, 5)...)
	plain := runGen(t, s, in, opt)
	p := promptLen(plain)
	var drafted, accepted, rejected int
	for i, so := range []*bonsai.SpeculativeOptions{
		{Always: true},
		{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter { return &oracle{want: plain.res.Tokens, prompt: p} }},
		{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter { return &shiftOracle{want: plain.res.Tokens, prompt: p} }},
	} {
		d, a := sameRun(t, plain, runGen(t, s, in, withSpec(opt, so)), fmt.Sprintf("drafter %d", i))
		t.Logf("drafter %d: drafted %d, accepted %d", i, d, a)
		if i > 0 {
			drafted += d
			accepted += a
			if a < d {
				rejected++
			}
		}
	}
	assert.Positive(t, drafted, "the oracles drafted")
	assert.Positive(t, accepted, "drafts were accepted")
	assert.Positive(t, rejected, "drafts were rejected")
}

// Sessions generating speculatively at once, their kept passes batched by the model's
// batcher into shared command buffers, each give the plain generation.
func TestGenerateSpeculativeConcurrentGPU(t *testing.T) {
	m := gpuTiny(t)
	const n = 3
	want := make([]specRun, n)
	in := func(i int) bonsai.Input { return bonsai.TokenIDs(tokens(10+i, 512, 20+i)...) }
	opt := bonsai.GenerateOptions{MaxTokens: 30}
	for i := range n {
		want[i] = runGen(t, session(t, m), in(i), opt)
	}
	sessions := make([]*bonsai.Session, n)
	for i := range sessions {
		sessions[i] = session(t, m)
	}
	got := make([]specRun, n)
	var wg sync.WaitGroup
	for i := range n {
		p := promptLen(want[i])
		so := &bonsai.SpeculativeOptions{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter {
			if i%2 == 0 {
				return &shiftOracle{want: want[i].res.Tokens, prompt: p}
			}
			return &oracle{want: want[i].res.Tokens, prompt: p}
		}}
		wg.Go(func() { got[i] = runGen(t, sessions[i], in(i), withSpec(opt, so)) })
	}
	wg.Wait()
	drafted, accepted := 0, 0
	for i := range n {
		d, a := sameRun(t, want[i], got[i], fmt.Sprintf("session %d", i))
		drafted += d
		accepted += a
	}
	require.Positive(t, drafted)
	assert.Positive(t, accepted)
	assert.Less(t, accepted, drafted, "drafts were rejected")
}
