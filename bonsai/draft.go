package bonsai

import "math"

// Speculative decoding proposes several tokens cheaply (a draft), has the model verify
// them all in one pass, and keeps the longest prefix that the model's own choice
// agrees with, plus one token of the model's. This file holds the proposing side: the
// Drafter interface and the prompt/context lookup drafter. The deciding side, the
// acceptance rule, is Sampler.VerifyDraft (draftverify.go).

// A Drafter proposes the tokens that are likely to follow a context, for the model to
// verify in one pass.
//
// A Drafter serves one generation: it keeps state about the context it has seen (an
// index of it) and about how well its drafts fared, so it is neither shared between
// generations running at once nor safe for concurrent use. The calls alternate: Draft,
// then, once the model has verified that draft, Accepted.
//
// What a Drafter proposes never changes what is generated, only how fast: the
// acceptance rule (Sampler.VerifyDraft) keeps the output exactly the model's. A poor
// drafter costs verification work, which is why Accepted reports back.
type Drafter interface {
	// Draft appends to dst up to k tokens that it expects to follow ctx, and returns
	// the extended slice; it appends none when it has no guess. ctx is the whole
	// sequence so far, the prompt and the generated tokens; each call's ctx extends the
	// previous call's, so that a drafter may index it incrementally (a generation that
	// starts over needs a new or reset drafter). Draft does not keep ctx or dst,
	// and allocates nothing when dst has room for k more tokens (beyond what indexing
	// new context may need).
	Draft(ctx []int32, k int, dst []int32) []int32
	// Accepted reports the outcome of the last draft: of the first drafted tokens
	// that the model verified, the first accepted were accepted (0 ≤ accepted ≤
	// drafted). A draft that was not verified at all is reported as drafted = 0 or not
	// at all.
	Accepted(drafted, accepted int)
}

// LookupOptions configure a LookupDrafter. The zero value is the default.
type LookupOptions struct {
	// MinN and MaxN bound the length of the n-gram that must match: the drafter
	// looks for the context's last n tokens earlier in the context, for n from MaxN
	// down to the current minimum, which adapts between MinN and MaxN (see
	// LookupDrafter). Defaults 1 and 4.
	MinN, MaxN int
	// MaxK caps the tokens of one draft (default 8); the current length adapts
	// between 1 and MaxK.
	MaxK int
	// Capacity is the number of context tokens to size the index for, so that
	// indexing a context that long allocates once (0: grow as needed).
	Capacity int
}

// The defaults of LookupOptions.
const (
	defaultLookupMinN = 1
	defaultLookupMaxN = 4
	defaultLookupMaxK = 8
)

// LookupDrafter drafts by prompt/context lookup: when the context's last n tokens
// occurred before, it proposes what followed them then. It costs no model work and
// pays off when the output repeats its input or itself: edits, summaries and answers
// quoting a document, code, agents echoing tool output, and loops.
//
// The match: for n from MaxN down to the current minimum n, the first n whose last
// n-gram of the context occurs earlier wins (the longest match), and among that
// n-gram's occurrences the most recent one. The proposal copies the tokens that
// followed it; a copy that reaches the end of the context goes on through the tokens it
// has proposed, as LZ77 does, so that a loop of period p drafts the whole k tokens.
//
// The index: each token appended to the context adds its MaxN n-grams that end just
// before it to a hash table (a polynomial rolling hash over prefix hashes) that keeps
// each n-gram's latest continuation. A Draft indexes only the tokens new since the last
// call and answers with at most MaxN lookups, each checked against the tokens, so its
// cost does not grow with the context. A context that is shorter than the one indexed,
// or whose last indexed token differs, is indexed afresh; any other change to the
// context between calls (one cut and regrown between two Drafts) goes unnoticed and
// needs Reset.
//
// The adaptation, from the running acceptance a (an exponential average of
// accepted/drafted with weight 1/8 per report, starting at 1/2):
//   - k, the draft length, starts at min(4, MaxK); a draft accepted whole raises it by
//     2, any rejection lowers it by 1, within [1, MaxK];
//   - the minimum n is MinN + round((1 − a)·(MaxN − MinN)): drafts that keep failing
//     demand longer matches (stronger evidence), drafts that succeed allow shorter ones.
//
// Draft proposes at most min(k, its argument) tokens. Whether drafting pays at all is
// for the caller's cost model to decide (it may ask for 0).
type LookupDrafter struct {
	minN, maxN, maxK int

	n    int     // the current minimum match length
	k    int     // the current draft length
	rate float64 // the running acceptance

	pre  []uint64 // pre[i]: the hash of the context's first i tokens
	pow  []uint64 // pow[n] = lookupBase^n
	last int32    // the last indexed token, to notice a context that changed
	tab  []lookupSlot
	used int
	cap0 int // the capacity hint, in tokens
}

// lookupSlot is one entry of the open-addressing table: an n-gram's key and the
// position of the token that followed its latest occurrence (never 0: an n-gram of
// n ≥ 1 tokens ends at 1 or later; 0 marks an empty slot).
type lookupSlot struct {
	key uint64
	pos int32
}

// lookupBase is the rolling hash's multiplier (odd, so invertible mod 2^64).
const lookupBase = 0x100000001b3

// NewLookupDrafter returns a prompt/context lookup drafter. Options out of range are
// clamped: MinN to at least 1, MaxN to at least MinN, MaxK to at least 1.
func NewLookupDrafter(opt LookupOptions) *LookupDrafter {
	if opt.MinN <= 0 {
		opt.MinN = defaultLookupMinN
	}
	if opt.MaxN <= 0 {
		opt.MaxN = max(defaultLookupMaxN, opt.MinN)
	}
	opt.MaxN = max(opt.MaxN, opt.MinN)
	if opt.MaxK <= 0 {
		opt.MaxK = defaultLookupMaxK
	}
	d := &LookupDrafter{minN: opt.MinN, maxN: opt.MaxN, maxK: opt.MaxK, cap0: max(opt.Capacity, 0)}
	d.pow = make([]uint64, d.maxN+1)
	d.pow[0] = 1
	for i := 1; i <= d.maxN; i++ {
		d.pow[i] = d.pow[i-1] * lookupBase
	}
	d.Reset()
	return d
}

// Reset forgets the context and the acceptance history, keeping the memory, so that
// the drafter can serve a new generation.
func (d *LookupDrafter) Reset() {
	d.rate = 0.5
	d.k = min(4, d.maxK)
	d.n = d.minN + int(math.Round((1-d.rate)*float64(d.maxN-d.minN)))
	d.forget()
}

// forget empties the index.
func (d *LookupDrafter) forget() {
	if d.pre == nil {
		d.pre = make([]uint64, 1, d.cap0+1)
	}
	d.pre = d.pre[:1]
	d.last = 0
	if d.tab == nil {
		d.tab = make([]lookupSlot, tableSize(d.cap0*d.maxN))
	}
	clear(d.tab)
	d.used = 0
}

// tableSize is the power of two that holds entries at a load of at most 1/2.
func tableSize(entries int) int {
	n := 1024
	for n < 2*entries {
		n *= 2
	}
	return n
}

// Draft implements Drafter.
func (d *LookupDrafter) Draft(ctx []int32, k int, dst []int32) []int32 {
	d.index(ctx)
	k = min(k, d.k)
	L := len(ctx)
	if k <= 0 {
		return dst
	}
	for n := min(d.maxN, L-1); n >= d.n; n-- {
		j := d.find(ctx, n)
		if j == 0 {
			continue
		}
		base := len(dst)
		for m := range k {
			if src := j + m; src < L {
				dst = append(dst, ctx[src])
			} else {
				dst = append(dst, dst[base+src-L])
			}
		}
		return dst
	}
	return dst
}

// find returns where the tokens that followed the latest earlier occurrence of ctx's
// last n tokens begin, or 0 when there is none.
func (d *LookupDrafter) find(ctx []int32, n int) int {
	L := len(ctx)
	key := lookupKey(d.pre[L]-d.pre[L-n]*d.pow[n], n)
	mask := len(d.tab) - 1
	for i := int(key>>32) & mask; ; i = (i + 1) & mask {
		s := d.tab[i]
		if s.pos == 0 {
			return 0
		}
		if s.key != key {
			continue
		}
		j := int(s.pos)
		// The hashes agree; the tokens decide (a 64-bit collision is not a match).
		for t := 1; t <= n; t++ {
			if ctx[j-t] != ctx[L-t] {
				return 0
			}
		}
		return j
	}
}

// index adds the tokens of ctx not yet indexed, starting afresh when ctx does not
// extend the context indexed so far.
func (d *LookupDrafter) index(ctx []int32) {
	have := len(d.pre) - 1
	if len(ctx) < have || (have > 0 && ctx[have-1] != d.last) {
		d.forget()
		have = 0
	}
	for i := have; i < len(ctx); i++ {
		// Token i follows the n-grams that end just before it.
		for n := 1; n <= min(d.maxN, i); n++ {
			d.insert(lookupKey(d.pre[i]-d.pre[i-n]*d.pow[n], n), int32(i))
		}
		d.pre = append(d.pre, d.pre[i]*lookupBase+uint64(uint32(ctx[i]))+1)
	}
	if len(ctx) > 0 {
		d.last = ctx[len(ctx)-1]
	}
}

// insert sets key's continuation to pos, replacing an earlier one.
func (d *LookupDrafter) insert(key uint64, pos int32) {
	if 2*(d.used+1) > len(d.tab) {
		d.grow()
	}
	mask := len(d.tab) - 1
	for i := int(key>>32) & mask; ; i = (i + 1) & mask {
		s := &d.tab[i]
		if s.pos == 0 {
			*s = lookupSlot{key, pos}
			d.used++
			return
		}
		if s.key == key {
			s.pos = pos
			return
		}
	}
}

// grow doubles the table.
func (d *LookupDrafter) grow() {
	old := d.tab
	d.tab = make([]lookupSlot, 2*len(old))
	mask := len(d.tab) - 1
	for _, s := range old {
		if s.pos == 0 {
			continue
		}
		i := int(s.key>>32) & mask
		for d.tab[i].pos != 0 {
			i = (i + 1) & mask
		}
		d.tab[i] = s
	}
}

// lookupKey mixes an n-gram's hash with n (splitmix64's finaliser), so that the
// table's index bits depend on every bit of both.
func lookupKey(h uint64, n int) uint64 {
	h ^= uint64(n) * 0x9e3779b97f4a7c15
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// Accepted implements Drafter: it updates the running acceptance and, from it, the
// draft length and the minimum match length (see LookupDrafter).
func (d *LookupDrafter) Accepted(drafted, accepted int) {
	if drafted <= 0 {
		return
	}
	accepted = min(max(accepted, 0), drafted)
	d.rate += (float64(accepted)/float64(drafted) - d.rate) / 8
	if accepted == drafted {
		d.k = min(d.k+2, d.maxK)
	} else {
		d.k = max(d.k-1, 1)
	}
	d.n = d.minN + int(math.Round((1-d.rate)*float64(d.maxN-d.minN)))
}

// Acceptance returns the running acceptance rate, the exponential average of
// accepted/drafted over the reports so far (1/2 before any).
func (d *LookupDrafter) Acceptance() float64 { return d.rate }
