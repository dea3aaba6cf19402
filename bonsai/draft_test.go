package bonsai

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A LookupDrafter is a Drafter.
var _ Drafter = (*LookupDrafter)(nil)

// The proposal is the continuation of the latest occurrence of the longest matching
// n-gram, on sequences built by hand.
func TestLookupDraftHandBuilt(t *testing.T) {
	// The defaults: n from 4 down to 1 + round(½·3) = 3, k = 4.
	for _, c := range []struct {
		name string
		ctx  []int32
		k    int
		want []int32
	}{
		{"the continuation of the only match", []int32{1, 2, 3, 4, 5, 9, 9, 1, 2, 3}, 8, []int32{4, 5, 9, 9}},
		{"the most recent match", []int32{1, 2, 3, 7, 1, 2, 3, 8, 1, 2, 3}, 4, []int32{8, 1, 2, 3}},
		{"the longest match before the most recent", []int32{5, 1, 2, 3, 7, 1, 2, 3, 8, 5, 1, 2, 3}, 4, []int32{7, 1, 2, 3}},
		{"k caps the draft", []int32{1, 2, 3, 4, 5, 9, 9, 1, 2, 3}, 2, []int32{4, 5}},
		{"a loop goes on through the draft", []int32{4, 5, 6, 4, 5, 6, 4, 5, 6}, 4, []int32{4, 5, 6, 4}},
		{"a period of one", []int32{7, 7, 7, 7, 7}, 4, []int32{7, 7, 7, 7}},
		{"a 2-gram is shorter than the minimum n", []int32{1, 2, 9, 1, 2}, 4, nil},
		{"no repeat", []int32{1, 2, 3, 4, 5, 6, 7, 8}, 4, nil},
		{"too short", []int32{3, 3, 3}, 4, nil},
		{"empty", nil, 4, nil},
		{"k = 0", []int32{7, 7, 7, 7, 7}, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := NewLookupDrafter(LookupOptions{})
			got := d.Draft(c.ctx, c.k, nil)
			assert.Equal(t, c.want, got)
		})
	}
}

// The adaptation follows the documented policy, computed by hand.
func TestLookupDraftAdapts(t *testing.T) {
	d := NewLookupDrafter(LookupOptions{MinN: 1, MaxN: 4, MaxK: 8})
	ctx := []int32{1, 2, 9, 1, 2}
	assert.Empty(t, d.Draft(ctx, 8, nil), "n starts at 3")

	// Whole acceptances: the rate 0.5 → 0.5625 → 0.6172 → 0.6650; k 4 → 6 → 8 → 8;
	// n = 1 + round(3·(1 − rate)) = 2 after the first (3·0.4375 = 1.31).
	d.Accepted(4, 4)
	assert.InDelta(t, 0.5625, d.Acceptance(), 1e-12)
	assert.Equal(t, []int32{9, 1, 2, 9, 1, 2}, d.Draft(ctx, 8, nil), "k = 6, n = 2 finds 1 2")
	d.Accepted(6, 6)
	d.Accepted(8, 8)
	assert.Equal(t, []int32{9, 1, 2, 9, 1, 2, 9, 1}, d.Draft(ctx, 8, nil), "k = 8")
	assert.Equal(t, []int32{9, 1, 2}, d.Draft(ctx, 3, nil), "the caller's k caps it")

	// Rejections: k falls by one per report down to 1; the rate falls to 0 and n to 4.
	for range 100 {
		d.Accepted(3, 1)
	}
	assert.InDelta(t, 1.0/3, d.Acceptance(), 1e-6)
	// n = 1 + round(3·⅔) = 3: the 2-gram 1 2 no longer counts, the 3-gram 5 1 2 does.
	assert.Empty(t, d.Draft(ctx, 8, nil))
	assert.Equal(t, []int32{9}, d.Draft([]int32{5, 1, 2, 9, 5, 1, 2}, 8, nil), "k = 1")
	for range 200 {
		d.Accepted(3, 0)
	}
	// The rate ≈ 0: n = 4.
	assert.Empty(t, d.Draft([]int32{5, 1, 2, 9, 5, 1, 2}, 8, nil))
	assert.Equal(t, []int32{4}, d.Draft([]int32{4, 5, 6, 7, 4, 5, 6, 7}, 8, nil), "a 4-gram still matches")

	d.Accepted(0, 0) // a draft that was not verified changes nothing
	assert.Equal(t, []int32{4}, d.Draft([]int32{4, 5, 6, 7, 4, 5, 6, 7}, 8, nil))
	d.Reset()
	assert.Equal(t, 0.5, d.Acceptance())
	assert.Empty(t, d.Draft(ctx, 8, nil))
}

// randomStream returns n tokens with repeats: runs copied from earlier in the stream
// between fresh tokens of a small vocabulary.
func randomStream(r *rand.Rand, n, vocab int) []int32 {
	s := make([]int32, 0, n)
	for len(s) < n {
		if len(s) > 8 && r.IntN(3) == 0 {
			from := r.IntN(len(s) - 4)
			for m := r.IntN(12); m > 0 && len(s) < n; m-- {
				s = append(s, s[from])
				from++
			}
			continue
		}
		s = append(s, int32(r.IntN(vocab)))
	}
	return s
}

// Indexing the context a few tokens at a time proposes exactly what indexing it all at
// once does, and a context that does not extend the last one is indexed afresh.
func TestLookupDraftIncremental(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ctx := randomStream(r, 1500, 6)
	opt := LookupOptions{MinN: 1, MaxN: 5, MaxK: 10}
	inc := NewLookupDrafter(opt)
	var history [][2]int
	drafts := 0
	for L := 0; L <= len(ctx); L += 1 + r.IntN(3) {
		k := r.IntN(12)
		got := inc.Draft(ctx[:L], k, nil)
		fresh := NewLookupDrafter(opt)
		for _, h := range history {
			fresh.Accepted(h[0], h[1])
		}
		require.Equal(t, fresh.Draft(ctx[:L], k, nil), got, "length %d", L)
		if len(got) > 0 {
			drafts++
			h := [2]int{len(got), r.IntN(len(got) + 1)}
			history = append(history, h)
			inc.Accepted(h[0], h[1])
		}
	}
	assert.Greater(t, drafts, 100, "the stream repeats enough to draft")

	// A shorter context, and one of the same length with another last token.
	for _, L := range []int{700, 0, 1200} {
		fresh := NewLookupDrafter(opt)
		for _, h := range history {
			fresh.Accepted(h[0], h[1])
		}
		assert.Equal(t, fresh.Draft(ctx[:L], 8, nil), inc.Draft(ctx[:L], 8, nil), "back to %d", L)
	}
	other := slices.Clone(ctx[:1200])
	other[1199]++
	fresh := NewLookupDrafter(opt)
	for _, h := range history {
		fresh.Accepted(h[0], h[1])
	}
	assert.Equal(t, fresh.Draft(other, 8, nil), inc.Draft(other, 8, nil), "a changed last token")
}

// A draft allocates nothing once the index has room (Capacity) and dst has room.
func TestLookupDraftAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ctx := randomStream(r, 4096, 8)
	d := NewLookupDrafter(LookupOptions{Capacity: len(ctx)})
	dst := make([]int32, 0, 16)
	L := 2048
	d.Draft(ctx[:L], 8, dst)
	allocs := testing.AllocsPerRun(1000, func() {
		L++
		d.Draft(ctx[:L], 8, dst[:0])
	})
	assert.Zero(t, allocs)
}

// refLookup is the lookup drafter by brute force: every earlier position is compared,
// the policy recomputed from its definition.
type refLookup struct {
	minN, maxN, maxK int
	rate             float64
	k                int
}

func newRefLookup(minN, maxN, maxK int) *refLookup {
	return &refLookup{minN: minN, maxN: maxN, maxK: maxK, rate: 0.5, k: min(4, maxK)}
}

func (r *refLookup) n() int {
	return r.minN + int(math.Round((1-r.rate)*float64(r.maxN-r.minN)))
}

func (r *refLookup) draft(ctx []int32, k int) []int32 {
	k = min(k, r.k)
	L := len(ctx)
	if k <= 0 {
		return nil
	}
	for n := r.maxN; n >= r.n(); n-- {
		for j := L - 1; j >= n; j-- { // latest first: the continuation starts at j
			if !slices.Equal(ctx[j-n:j], ctx[L-n:]) {
				continue
			}
			ext := slices.Clone(ctx)
			for m := 0; m < k; m++ {
				ext = append(ext, ext[j+m])
			}
			return ext[L:]
		}
	}
	return nil
}

func (r *refLookup) accepted(drafted, accepted int) {
	if drafted <= 0 {
		return
	}
	r.rate += (float64(accepted)/float64(drafted) - r.rate) / 8
	if accepted == drafted {
		r.k = min(r.k+2, r.maxK)
	} else {
		r.k = max(r.k-1, 1)
	}
}

// The lookup drafter proposes what the brute-force reference does, over random streams
// of appends, drafts, acceptance reports and restarts.
func FuzzLookupDrafter(f *testing.F) {
	f.Add([]byte{0, 1, 7, 1, 2, 3, 1, 2, 3, 1, 2, 0x88, 0xc3, 0x89, 0x8a})
	f.Add([]byte{2, 2, 3, 5, 5, 5, 5, 5, 0x8b, 0xc2, 0x8b, 0xe1, 0x8b})
	f.Add([]byte{1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0x85, 0xc4, 0x85, 0xc5, 0x85, 0xc0, 0x85})
	f.Fuzz(fuzzLookupBody)
}

// fuzzLookupBody is FuzzLookupDrafter's body: data's first three bytes choose the
// options, each further byte an operation (append a token, draft, report, restart).
func fuzzLookupBody(t *testing.T, data []byte) {
	if len(data) < 3 {
		return
	}
	minN, maxK := 1+int(data[0]%3), 1+int(data[2]%10)
	maxN := minN + int(data[1]%4)
	d := NewLookupDrafter(LookupOptions{MinN: minN, MaxN: maxN, MaxK: maxK})
	ref := newRefLookup(minN, maxN, maxK)
	var ctx []int32
	last := 0
	buf := make([]int32, 0, 4)
	for _, b := range data[3:] {
		switch b >> 6 {
		case 0, 1:
			ctx = append(ctx, int32(b%5)-1) // −1 … 3: few tokens, many repeats
		case 2:
			k := int(b%13) - 1
			got := d.Draft(ctx, k, buf[:0])
			want := ref.draft(ctx, k)
			if !slices.Equal(got, want) {
				t.Fatalf("ctx %v k %d: got %v, want %v", ctx, k, got, want)
			}
			last = len(got)
		case 3:
			if b&0x20 != 0 {
				// A restart: the drafter sees the shorter context (one that
				// changes without getting shorter needs Reset).
				ctx = ctx[:len(ctx)*int(b%4)/4]
				k := int(b % 8)
				got := d.Draft(ctx, k, buf[:0])
				if want := ref.draft(ctx, k); !slices.Equal(got, want) {
					t.Fatalf("restart to %v k %d: got %v, want %v", ctx, k, got, want)
				}
				last = len(got)
				continue
			}
			a := int(b) % (last + 1)
			d.Accepted(last, a)
			ref.accepted(last, a)
		}
	}
}

// The fuzz body over fixed random inputs, so that every test run covers long streams.
func TestLookupDraftRandomStreams(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 2000 {
		data := make([]byte, 3+r.IntN(600))
		for i := range data {
			data[i] = byte(r.IntN(256))
		}
		fuzzLookupBody(t, data)
	}
}

// BenchmarkLookupDraft: one token appended and one draft, against a context of 1k,
// 10k and 100k tokens already indexed; the cost must not grow with the context.
func BenchmarkLookupDraft(b *testing.B) {
	for _, base := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("ctx=%d", base), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			ctx := randomStream(r, 2*base, 1000)
			d := NewLookupDrafter(LookupOptions{Capacity: 2 * base})
			dst := make([]int32, 0, 16)
			d.Draft(ctx[:base], 8, dst)
			L := base
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if L == len(ctx) {
					b.StopTimer()
					L = base
					d.Draft(ctx[:L], 8, dst[:0]) // re-indexes from scratch
					b.StartTimer()
				}
				L++
				d.Draft(ctx[:L], 8, dst[:0])
			}
		})
	}
}

// BenchmarkLookupIndex100k: indexing a 100k-token prompt from scratch.
func BenchmarkLookupIndex100k(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	ctx := randomStream(r, 100_000, 1000)
	d := NewLookupDrafter(LookupOptions{Capacity: len(ctx)})
	dst := make([]int32, 0, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		d.Reset()
		d.Draft(ctx, 8, dst[:0])
	}
}
