package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
)

// Bar shows bonsai.Open's progress. On a terminal it redraws one line, at most every
// 50 ms; elsewhere (a log, a pipe) it prints a line at each quarter of the stages that
// read a large part of the file (verify, warmup), and nothing for the quick ones.
type Bar struct {
	w      io.Writer
	prog   string
	tty    bool
	width  int
	stage  string
	start  time.Time // of the stage
	drawn  time.Time
	quart  int // quarters printed in this stage (not a terminal)
	active bool
}

// bigStage is the size from which a stage counting bytes is shown when not on a
// terminal.
const bigStage = 256 << 20

// NewBar returns a bar for program prog on w, redrawing when w is a terminal.
func NewBar(w io.Writer, prog string) *Bar {
	return &Bar{w: w, prog: prog, tty: IsTerminal(w), width: 30}
}

// stageNames are what the bar calls Open's stages.
var stageNames = map[string]string{
	"map": "reading the file", "bind": "checking tensors", "tokenizer": "reading the vocabulary",
	"verify": "verifying weights", "warmup": "warming up", "load": "starting the backend",
	"prepare": "preparing the weights",
}

// Progress is the callback for bonsai.WithProgress.
func (b *Bar) Progress(p bonsai.Progress) {
	now := time.Now()
	if p.Stage != b.stage {
		b.stage, b.start, b.quart = p.Stage, now, 0
		b.drawn = time.Time{}
	}
	if b.tty {
		if p.Done < p.Total && now.Sub(b.drawn) < 50*time.Millisecond {
			return
		}
		b.drawn = now
		b.draw(p, now)
		return
	}
	if !p.InBytes() || p.Total < bigStage || p.Stage == "map" {
		return
	}
	for b.quart < 4 && p.Done*4 >= int64(b.quart+1)*p.Total {
		b.quart++
		fmt.Fprintf(b.w, "%s: %s: %3d%%  %s of %s%s\n", b.prog, name(p.Stage), b.quart*25,
			Bytes(p.Done), Bytes(p.Total), rate(p, now.Sub(b.start)))
	}
}

func name(stage string) string {
	if n, ok := stageNames[stage]; ok {
		return n
	}
	return stage
}

// rate formats the stage's throughput, for stages counting bytes.
func rate(p bonsai.Progress, d time.Duration) string {
	if !p.InBytes() || d < 100*time.Millisecond || p.Done == 0 {
		return ""
	}
	return fmt.Sprintf(", %s/s", Bytes(int64(float64(p.Done)/d.Seconds())))
}

func (b *Bar) draw(p bonsai.Progress, now time.Time) {
	frac := 0.0
	if p.Total > 0 {
		frac = min(max(float64(p.Done)/float64(p.Total), 0), 1)
	}
	fill := int(frac * float64(b.width))
	count := fmt.Sprintf("%d/%d", p.Done, p.Total)
	if p.InBytes() {
		count = Bytes(p.Done) + " of " + Bytes(p.Total) + rate(p, now.Sub(b.start))
	} else if p.Total <= 1 {
		count = ""
	}
	fmt.Fprintf(b.w, "\r%s: %-22s [%s%s] %3.0f%%  %s\x1b[K", b.prog, name(p.Stage),
		strings.Repeat("█", fill), strings.Repeat("░", b.width-fill), 100*frac, count)
	b.active = true
}

// Done ends the bar's line, so that what is printed next starts on its own.
func (b *Bar) Done() {
	if b.tty && b.active {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.active = false
	}
}
