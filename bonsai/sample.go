package bonsai

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// SamplerOptions choose how a token is drawn from the logits. The zero value is greedy
// decoding with no penalties.
//
// The steps run in llama.cpp's default order: penalties, then top-k, top-p and min-p on
// the penalised logits, then temperature, then the draw. Since temperature comes last,
// the set of tokens that can be drawn does not depend on it; it only reshapes the
// probabilities among them.
type SamplerOptions struct {
	// Temperature divides the logits before the draw. 0 (or less) is greedy decoding:
	// the token with the largest penalised logit, ties to the smallest id.
	Temperature float32
	// TopK keeps the K most likely tokens (0: off).
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probabilities sum to at
	// least TopP (0 or ≥ 1: off).
	TopP float32
	// MinP keeps the tokens at least MinP times as likely as the most likely one
	// (0: off).
	MinP float32
	// RepeatPenalty, as llama.cpp applies it: each distinct token among the last
	// RepeatLastN of the sequence (prompt and generated text alike) has a positive logit
	// divided by the penalty and a negative one multiplied by it (0 or 1: off).
	RepeatPenalty float32
	// RepeatLastN is the window of RepeatPenalty: 0 means 64 (llama.cpp's default), −1
	// the whole sequence.
	RepeatLastN int
	// PresencePenalty and FrequencyPenalty, as OpenAI defines them: the logit of a token
	// generated c > 0 times so far is lowered by PresencePenalty + c·FrequencyPenalty.
	// They count generated tokens only, not the prompt's.
	PresencePenalty, FrequencyPenalty float32
	// Seed seeds the draw (a PCG generator): the same seed, prompt and options give the
	// same tokens. Zero is a seed like any other.
	Seed uint64
	// Greedy forces greedy decoding whatever the temperature.
	Greedy bool
}

// defaultRepeatLastN is llama.cpp's penalty_last_n.
const defaultRepeatLastN = 64

// TokenLogProb is one token's log-probability under the model.
type TokenLogProb struct {
	ID      int32   // the token
	Text    string  // its text, as the tokenizer decodes it alone
	LogProb float32 // its natural log-probability
}

// candidate is a token still in the running during one draw.
type candidate struct {
	id    int32
	logit float32
}

// Sampler draws tokens from logits. It keeps the state the penalties need (the recent
// tokens and the counts of the generated ones) and buffers sized to the vocabulary, so
// that a draw allocates nothing. A Sampler is not safe for concurrent use.
type Sampler struct {
	opt SamplerOptions
	rng *rand.Rand

	vocab  int
	work   []float32   // the penalised logits
	cands  []candidate // the candidates of one draw
	tail   []candidate // top-p's crossing bucket
	w      []float32   // top-p's weights, exp(logit − max), by candidate
	hist   [topPBuckets]float64
	counts []int32  // times each token was generated
	seen   []uint32 // repetition-window marks, by stamp
	stamp  uint32
	gen    []int32 // distinct generated tokens, for the counts
	recent []int32 // ring of the last RepeatLastN tokens of the sequence
	head   int     // next write position in recent
	filled int     // tokens in recent
	window int     // RepeatLastN resolved; 0 when the repeat penalty is off
}

// NewSampler returns a sampler for a vocabulary of vocab tokens. It reports an error for
// options out of range (negative values, a penalty of NaN).
func NewSampler(vocab int, opt SamplerOptions) (*Sampler, error) {
	if vocab <= 0 {
		return nil, fmt.Errorf("bonsai: sampler: vocabulary of %d tokens", vocab)
	}
	if err := checkSamplerOptions(opt); err != nil {
		return nil, err
	}
	return newSampler(vocab, opt), nil
}

// newSampler is NewSampler for options already checked.
func newSampler(vocab int, opt SamplerOptions) *Sampler {
	s := &Sampler{
		vocab:  vocab,
		work:   make([]float32, vocab),
		cands:  make([]candidate, 0, vocab),
		tail:   make([]candidate, 0, vocab),
		w:      make([]float32, vocab),
		counts: make([]int32, vocab),
		seen:   make([]uint32, vocab),
	}
	s.start(opt)
	return s
}

// checkSamplerOptions reports options out of range, as an *OptionError.
func checkSamplerOptions(opt SamplerOptions) error {
	bad := func(option, format string, args ...any) error {
		return &OptionError{Option: option, Tool: -1, Err: fmt.Errorf(format, args...)}
	}
	for _, f := range []struct {
		name string
		v    float32
	}{{"Temperature", opt.Temperature}, {"TopP", opt.TopP}, {"MinP", opt.MinP}, {"RepeatPenalty", opt.RepeatPenalty}, {"PresencePenalty", opt.PresencePenalty}, {"FrequencyPenalty", opt.FrequencyPenalty}} {
		if math.IsNaN(float64(f.v)) || math.IsInf(float64(f.v), 0) {
			return bad(f.name, "%v is not a number", f.v)
		}
	}
	switch {
	case opt.TopK < 0:
		return bad("TopK", "%d is negative", opt.TopK)
	case opt.TopP < 0:
		return bad("TopP", "%v is negative", opt.TopP)
	case opt.MinP < 0 || opt.MinP > 1:
		return bad("MinP", "%v is outside [0, 1]", opt.MinP)
	case opt.RepeatPenalty < 0:
		return bad("RepeatPenalty", "%v is negative", opt.RepeatPenalty)
	case opt.RepeatLastN < -1:
		return bad("RepeatLastN", "%d (want −1, 0 or more)", opt.RepeatLastN)
	}
	return nil
}

// Reset starts the sampler afresh with new options (checked as NewSampler checks them),
// forgetting the tokens it saw and keeping its buffers.
func (s *Sampler) Reset(opt SamplerOptions) error {
	if err := checkSamplerOptions(opt); err != nil {
		return err
	}
	s.reset(opt)
	return nil
}

// reset is Reset for options already checked.
func (s *Sampler) reset(opt SamplerOptions) {
	for _, t := range s.gen {
		s.counts[t] = 0
	}
	s.start(opt)
}

// start sets the options and empties the penalty state; the counts must be zero.
func (s *Sampler) start(opt SamplerOptions) {
	s.opt = opt
	s.rng = rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15))
	s.gen = s.gen[:0]
	s.head, s.filled, s.window = 0, 0, 0
	if opt.RepeatPenalty != 0 && opt.RepeatPenalty != 1 {
		switch opt.RepeatLastN {
		case 0:
			s.window = defaultRepeatLastN
		case -1:
			s.window = math.MaxInt
		default:
			s.window = opt.RepeatLastN
		}
	}
	switch {
	case s.window == math.MaxInt:
		s.recent = s.recent[:0]
	case s.window > 0 && cap(s.recent) >= s.window:
		s.recent = s.recent[:s.window]
	default:
		s.recent = nil
	}
}

// greedy reports whether draws take the argmax.
func (s *Sampler) greedy() bool { return s.opt.Greedy || s.opt.Temperature <= 0 }

// penalised reports whether any penalty is on.
func (s *Sampler) penalised() bool {
	return s.window > 0 || s.opt.PresencePenalty != 0 || s.opt.FrequencyPenalty != 0
}

// Observe records tokens of the sequence that the sampler did not draw (the prompt), for
// the repetition penalty's window.
func (s *Sampler) Observe(tokens ...int32) {
	if s.window == 0 {
		return
	}
	for _, t := range tokens {
		s.push(t)
	}
}

// Accept records a generated token: it enters the repetition window and the counts of
// the presence and frequency penalties. Sample does not call it, so that a caller may
// replace the drawn token.
func (s *Sampler) Accept(t int32) {
	if t < 0 || int(t) >= s.vocab {
		return
	}
	if s.window > 0 {
		s.push(t)
	}
	if s.counts[t] == 0 {
		s.gen = append(s.gen, t)
	}
	s.counts[t]++
}

func (s *Sampler) push(t int32) {
	if s.window == math.MaxInt {
		s.recent = append(s.recent, t)
		s.filled++
		return
	}
	if s.recent == nil {
		s.recent = make([]int32, s.window)
	}
	s.recent[s.head] = t
	s.head = (s.head + 1) % s.window
	s.filled = min(s.filled+1, s.window)
}

// Penalize writes the logits with the penalties applied to dst (len Vocab) and returns
// it: the repetition penalty first (once per distinct token in the window), then the
// presence and frequency penalties.
func (s *Sampler) Penalize(dst, logits []float32) []float32 {
	dst = dst[:s.vocab]
	copy(dst, logits[:s.vocab])
	if s.window > 0 && s.filled > 0 {
		s.stamp++
		if s.stamp == 0 { // wrapped: old marks could collide
			clear(s.seen)
			s.stamp = 1
		}
		p := s.opt.RepeatPenalty
		for i := 0; i < s.filled; i++ {
			t := s.recent[i]
			if t < 0 || int(t) >= s.vocab || s.seen[t] == s.stamp {
				continue
			}
			s.seen[t] = s.stamp
			if dst[t] <= 0 {
				dst[t] *= p
			} else {
				dst[t] /= p
			}
		}
	}
	if s.opt.PresencePenalty != 0 || s.opt.FrequencyPenalty != 0 {
		for _, t := range s.gen {
			c := s.counts[t]
			dst[t] -= s.opt.PresencePenalty + float32(c)*s.opt.FrequencyPenalty
		}
	}
	return dst
}

// Sample draws the next token from logits (Vocab values, not modified).
//
// The logits need not be finite. NaN counts as −∞, and a −∞ token is never drawn
// while some logit is above −∞. A +∞ logit is certain: the first +∞ token is drawn,
// whatever the options. When every logit is −∞ or NaN, the draw is the first −∞ token
// (token 0 if all are NaN), as greedy decoding chooses.
func (s *Sampler) Sample(logits []float32) int32 {
	if len(logits) < s.vocab {
		panic(fmt.Sprintf("bonsai: Sampler.Sample: %d logits for a vocabulary of %d", len(logits), s.vocab))
	}
	l := logits[:s.vocab]
	if s.penalised() {
		l = s.Penalize(s.work, logits)
	}
	if s.greedy() {
		return int32(argmax(l))
	}
	c := s.candidates(l)
	return s.draw(c)
}

// Candidates returns the tokens a draw from logits may pick after the truncations
// (top-k, top-p, min-p) with their penalised logits, before temperature: the support
// of the sampling distribution. The slice is the sampler's, valid until the next call.
func (s *Sampler) Candidates(logits []float32) []TokenLogProb {
	l := logits[:s.vocab]
	if s.penalised() {
		l = s.Penalize(s.work, logits)
	}
	var out []TokenLogProb
	if s.greedy() {
		i := argmax(l)
		return append(out, TokenLogProb{ID: int32(i), LogProb: 0})
	}
	c := s.candidates(l)
	probs := softmaxTemp(c, s.temperature())
	for i, x := range c {
		out = append(out, TokenLogProb{ID: x.id, LogProb: float32(math.Log(probs[i]))})
	}
	return out
}

func (s *Sampler) temperature() float32 { return s.opt.Temperature }

// candidates applies top-k, top-p and min-p to l and returns the survivors.
//
// Logits that are not finite are settled first, so that the truncations and the draw
// see finite logits only: a −∞ or NaN logit has no probability and is left out; a +∞
// one is certain, and the first +∞ token is the only candidate; when every logit is −∞
// or NaN, the only candidate is the greedy choice (the first −∞ token, or token 0).
func (s *Sampler) candidates(l []float32) []candidate {
	c := s.cands[:0]
	negInf := float32(math.Inf(-1))
	best, hi := -1, negInf
	for i, v := range l {
		if v > negInf { // neither −∞ nor NaN
			c = append(c, candidate{int32(i), v})
			if v > hi {
				best, hi = i, v
			}
		}
	}
	switch {
	case best < 0: // every logit −∞ or NaN: nothing to prefer
		c = append(c[:0], candidate{int32(argmax(l)), 0})
	case math.IsInf(float64(hi), 1):
		c = append(c[:0], candidate{int32(best), 0})
	}
	if len(c) == 1 {
		s.cands = c[:0]
		return c
	}
	sorted := false
	if k := s.opt.TopK; k > 0 && k < len(c) {
		c = topK(c, k)
		sorted = true
	}
	if p := s.opt.TopP; p > 0 && p < 1 {
		c = s.topP(c, float64(p), sorted)
		sorted = true
	}
	if mp := s.opt.MinP; mp > 0 {
		c = minP(c, mp)
	}
	s.cands = c[:0]
	return c
}

// draw picks one candidate with probability softmax(logit/T).
func (s *Sampler) draw(c []candidate) int32 {
	if len(c) == 1 {
		return c[0].id
	}
	t := float64(s.opt.Temperature)
	hi := c[0].logit
	for _, x := range c[1:] {
		hi = max(hi, x.logit)
	}
	var sum float64
	for _, x := range c {
		sum += math.Exp(float64(x.logit-hi) / t)
	}
	u := s.rng.Float64() * sum
	var acc float64
	last := c[0].id
	for _, x := range c {
		e := math.Exp(float64(x.logit-hi) / t)
		acc += e
		if u < acc {
			return x.id
		}
		if e > 0 {
			last = x.id
		}
	}
	return last // rounding left u at the very top: the last token that had a chance
}

// byLogit orders candidates most likely first, ties to the smaller id, so that every
// ordering, and so every draw, is deterministic.
func byLogit(a, b candidate) int {
	if c := cmp.Compare(b.logit, a.logit); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// topK keeps the k best candidates, sorted. A min-heap of size k costs O(V log k) rather
// than sorting the whole vocabulary.
func topK(c []candidate, k int) []candidate {
	h := c[:k]
	// heap with the worst (by byLogit) at the root
	worse := func(i, j int) bool { return byLogit(h[i], h[j]) > 0 }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= k {
				return
			}
			w := l
			if r := l + 1; r < k && worse(r, l) {
				w = r
			}
			if !worse(w, i) {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, x := range c[k:] {
		if x.logit < h[0].logit {
			continue // the common case, decided without the tie rule
		}
		if byLogit(x, h[0]) < 0 {
			h[0] = x
			down(0)
		}
	}
	slices.SortFunc(h, byLogit)
	return h
}

// topP keeps the most likely candidates until their probabilities reach p (the token
// that crosses p included).
//
// A sorted c (after top-k) is walked in order. Otherwise sorting the vocabulary would
// cost tens of milliseconds a token, so the candidates are first counted into buckets by
// logit, best first: the buckets wholly inside the nucleus are kept as they are (in id
// order, a deterministic order for the draw), and only the bucket that crosses p is
// sorted.
func (s *Sampler) topP(c []candidate, p float64, sorted bool) []candidate {
	hi := c[0].logit
	for _, x := range c[1:] {
		hi = max(hi, x.logit)
	}
	w := s.w[:len(c)]
	var sum float64
	for i, x := range c {
		w[i] = float32(math.Exp(float64(x.logit - hi)))
		sum += float64(w[i])
	}
	target := p * sum
	if sorted {
		var acc float64
		for i := range c {
			acc += float64(w[i])
			if acc >= target {
				return c[:i+1]
			}
		}
		return c
	}
	const scale = topPBuckets / topPSpan
	bucket := func(l float32) int {
		d := float64(hi - l)
		if d >= topPSpan {
			return topPBuckets - 1
		}
		return int(d * scale)
	}
	hist := &s.hist
	clear(hist[:])
	for i, x := range c {
		hist[bucket(x.logit)] += float64(w[i])
	}
	cross, acc := topPBuckets-1, 0.0
	for b := range hist {
		if acc+hist[b] >= target {
			cross = b
			break
		}
		acc += hist[b]
	}
	kept, tail := c[:0], s.tail[:0]
	for _, x := range c {
		switch b := bucket(x.logit); {
		case b < cross:
			kept = append(kept, x)
		case b == cross:
			tail = append(tail, x)
		}
	}
	slices.SortFunc(tail, byLogit)
	for _, x := range tail {
		kept = append(kept, x)
		acc += float64(float32(math.Exp(float64(x.logit - hi))))
		if acc >= target {
			break
		}
	}
	s.tail = tail[:0]
	return kept
}

// The buckets of top-p: topPBuckets of equal width over the topPSpan logits below the
// largest (the last one also takes everything lower, e^−40 of the top token and less).
const (
	topPBuckets = 2048
	topPSpan    = 40.0
)

// minP keeps the candidates whose probability is at least mp times the largest:
// logit ≥ max + ln(mp).
func minP(c []candidate, mp float32) []candidate {
	hi := c[0].logit
	for _, x := range c[1:] {
		hi = max(hi, x.logit)
	}
	floor := hi + float32(math.Log(float64(mp)))
	kept := c[:0]
	for _, x := range c {
		if x.logit >= floor {
			kept = append(kept, x)
		}
	}
	return kept
}

// softmaxTemp returns softmax(logit/T) over c in a new slice (for reporting, not the hot
// path).
func softmaxTemp(c []candidate, t float32) []float64 {
	out := make([]float64, len(c))
	switch len(c) {
	case 0:
		return out
	case 1:
		out[0] = 1
		return out
	}
	hi := c[0].logit
	for _, x := range c[1:] {
		hi = max(hi, x.logit)
	}
	var sum float64
	for i, x := range c {
		out[i] = math.Exp(float64(x.logit-hi) / float64(t))
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// argmax returns the index of the largest value, the first of equal ones (the first
// +∞ one, or the first −∞ one when there is nothing larger), skipping NaNs (0 if all
// are): the rule of backend.Greedy's choice.
func argmax(v []float32) int {
	best := -1
	for i, x := range v {
		if x == x && (best < 0 || x > v[best]) {
			best = i
		}
	}
	return max(best, 0)
}

// logSoftmax is the log-softmax of a vector of raw logits, NaN counting as −∞. When
// the largest logit is not finite (+∞, or −∞ because nothing is larger), the tokens at
// it share the probability equally, as in the limit, and the others have none.
type logSoftmax struct {
	logZ float64 // log p(i) = logits[i] − logZ, when top is finite
	top  float32 // the largest logit
	ties int     // tokens at top, when top is not finite
}

func newLogSoftmax(logits []float32) logSoftmax {
	z := logSoftmax{top: float32(math.Inf(-1))}
	for _, v := range logits {
		if v > z.top {
			z.top = v
		}
	}
	if math.IsInf(float64(z.top), 0) {
		for _, v := range logits {
			if v == z.top {
				z.ties++
			}
		}
		return z
	}
	var sum float64
	for _, v := range logits {
		if v > float32(math.Inf(-1)) {
			sum += math.Exp(float64(v - z.top))
		}
	}
	z.logZ = float64(z.top) + math.Log(sum)
	return z
}

// of returns the log-probability of a token of logit v.
func (z logSoftmax) of(v float32) float32 {
	switch {
	case z.ties > 0 && v == z.top:
		return float32(-math.Log(float64(z.ties)))
	case z.ties > 0 || math.IsNaN(float64(v)):
		return float32(math.Inf(-1))
	}
	return float32(float64(v) - z.logZ)
}

// topLogProbs appends the n most likely tokens of logits (raw model distribution) to dst
// with their log-probabilities under z. buf is scratch of at least len(logits).
func topLogProbs(dst []TokenLogProb, logits []float32, n int, z logSoftmax, buf []candidate) []TokenLogProb {
	if n <= 0 {
		return dst
	}
	c := buf[:0]
	for i, v := range logits {
		c = append(c, candidate{int32(i), v})
	}
	n = min(n, len(c))
	for _, x := range topK(c, n) {
		dst = append(dst, TokenLogProb{ID: x.id, LogProb: z.of(x.logit)})
	}
	return dst
}
