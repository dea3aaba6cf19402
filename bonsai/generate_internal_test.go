package bonsai

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// filtered is what a filter let out, by kind.
type filtered struct{ answer, thought strings.Builder }

// feed runs pieces through a filter: "<think>" and "</think>" stand for the marker
// tokens. It returns what each piece let out (answer and thinking text together), the
// filter's final remainder, and everything let out by kind.
func feed(f *textFilter, pieces ...string) (outs []string, rest string, got *filtered) {
	got = &filtered{}
	out := func(text, thinking string) string {
		got.answer.WriteString(text)
		got.thought.WriteString(thinking)
		return text + thinking
	}
	for _, p := range pieces {
		switch p {
		case thinkOpen:
			outs = append(outs, out(f.open("")))
		case thinkClose:
			outs = append(outs, out(f.close("")))
		default:
			outs = append(outs, out(f.add(p)))
		}
		if f.stopped {
			break
		}
	}
	return outs, out(f.finish("")), got
}

func TestStopStringAcrossTokens(t *testing.T) {
	f := newTextFilter([]string{"STOP"})
	outs, rest, got := feed(f, "Hel", "lo S", "T", "OP and more")
	assert.Equal(t, []string{"Hel", "lo ", "", ""}, outs, "the S and T are held back, then dropped")
	assert.Empty(t, rest)
	assert.True(t, f.stopped)
	assert.Equal(t, "STOP", f.stopSeq)
	assert.Equal(t, "Hello ", got.answer.String())

	// A false start is let out once it cannot be a stop string any more.
	f = newTextFilter([]string{"STOP"})
	outs, rest, got = feed(f, "a", "S", "T", "x", "ST")
	assert.Equal(t, []string{"a", "", "", "STx", ""}, outs)
	assert.Equal(t, "ST", rest, "held text is let out at the end")
	assert.False(t, f.stopped)
	assert.Equal(t, "aSTxST", got.answer.String())

	// The earliest of several stop strings wins, even one that ends later.
	f = newTextFilter([]string{"world", "lo w", ""})
	outs, _, got = feed(f, "hello world")
	assert.Equal(t, []string{"hel"}, outs)
	assert.Equal(t, "lo w", f.stopSeq)

	// A stop string inside one token, and one that is the whole of a token.
	f = newTextFilter([]string{"\n\n"})
	outs, _, got = feed(f, "line", "\n", "\n", "next")
	assert.Equal(t, []string{"line", "", ""}, outs)
	assert.Equal(t, "line", got.answer.String())
}

func TestThinkingSeparation(t *testing.T) {
	// The prompt left the model inside <think> (Qwen's "<think>\n" generation prompt).
	f := newTextFilter(nil)
	f.thinking, f.thinkHead = true, true
	outs, rest, got := feed(f, "\n", "Let me", " think.", "\n\n", "More.", "\n", thinkClose, "\n\n", "The", " answer.")
	assert.Equal(t, []string{"", "Let me", " think.", "", "\n\nMore.", "", "", "", "The", " answer."}, outs)
	assert.Empty(t, rest)
	assert.Equal(t, "Let me think.\n\nMore.", got.thought.String())
	assert.Equal(t, "The answer.", got.answer.String())

	// The model opens the block itself; stop strings do not apply inside it.
	f = newTextFilter([]string{"STOP"})
	outs, _, got = feed(f, thinkOpen, "\n", "no STOP here", thinkClose, " ", "\n", "done ST", "OP!")
	assert.Equal(t, []string{"", "", "no STOP here", "", "", "", "done ", ""}, outs)
	assert.Equal(t, "no STOP here", got.thought.String())
	assert.Equal(t, "done ", got.answer.String())
	assert.True(t, f.stopped)

	// Text held back for a stop string is let out when a think block opens.
	f = newTextFilter([]string{"STOP"})
	outs, _, got = feed(f, "ab S", thinkOpen, "x")
	assert.Equal(t, []string{"ab ", "S", "x"}, outs)

	// Generation ending inside the block keeps the thinking, trimmed.
	f = newTextFilter(nil)
	f.thinking, f.thinkHead = true, true
	_, rest, got = feed(f, "  partial", " \n")
	assert.Empty(t, rest)
	assert.Equal(t, "partial", got.thought.String())
	assert.Empty(t, got.answer.String())

	// After a prompt that closed the block ("<think>\n\n</think>\n\n"), the answer's
	// leading white space goes, and only that.
	f = newTextFilter(nil)
	f.answerHead = true
	outs, _, got = feed(f, "\n", " Hi", "  there\n")
	assert.Equal(t, "Hi  there\n", strings.Join(outs, ""))
}

// The log-probabilities Generate reports are finite for every token that can be drawn,
// whatever the logits: NaN counts as −∞, and +∞ tokens share the probability.
func TestLogSoftmaxNonFinite(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negInf := float32(math.Inf(-1))
	l := []float32{1, nan, 2, negInf}
	z := newLogSoftmax(l)
	want := 2 + math.Log(1+math.Exp(-1))
	assert.InDelta(t, 1-want, z.of(l[0]), 1e-6)
	assert.InDelta(t, 2-want, z.of(l[2]), 1e-6)
	assert.Equal(t, negInf, z.of(l[1]))
	assert.Equal(t, negInf, z.of(l[3]))

	l = []float32{1, inf, nan, inf, negInf}
	z = newLogSoftmax(l)
	assert.InDelta(t, -math.Ln2, z.of(l[1]), 1e-6)
	assert.InDelta(t, -math.Ln2, z.of(l[3]), 1e-6)
	for _, i := range []int{0, 2, 4} {
		assert.Equal(t, negInf, z.of(l[i]), "token %d", i)
	}
	top := topLogProbs(nil, l, 3, z, make([]candidate, 0, len(l)))
	assert.Equal(t, []TokenLogProb{{ID: 1, LogProb: float32(-math.Ln2)}, {ID: 3, LogProb: float32(-math.Ln2)}, {ID: 0, LogProb: negInf}}, top)

	l = []float32{nan, negInf, negInf}
	z = newLogSoftmax(l)
	assert.InDelta(t, -math.Ln2, z.of(l[1]), 1e-6, "every logit −∞: they share the probability")
	assert.Equal(t, negInf, z.of(l[0]))
	z = newLogSoftmax([]float32{nan, nan})
	assert.Equal(t, negInf, z.of(nan))
}
