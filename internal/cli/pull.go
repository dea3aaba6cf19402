package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
)

// PullBar shows a download's progress: on a terminal one line redrawn at most every
// 100 ms, with the rate and the time left; elsewhere a line at each quarter.
type PullBar struct {
	w           io.Writer
	prog, name  string
	tty         bool
	width       int
	start       time.Time
	drawn       time.Time
	quart       int
	said        bool // the first line (the size, what is resumed) is out
	active      bool
	resumedFrom int64
	now         func() time.Time // time.Now; a test's clock
}

// NewPullBar returns a bar for program prog's download of the file name on w.
func NewPullBar(w io.Writer, prog, name string) *PullBar {
	return &PullBar{w: w, prog: prog, name: name, tty: IsTerminal(w), width: 30, now: time.Now}
}

// Progress is the callback for bonsai.WithPullProgress.
func (b *PullBar) Progress(p bonsai.PullProgress) {
	now := b.now()
	if !b.said || p.Resumed != b.resumedFrom {
		// The first report, or a restart (a server that ignored Range): the rate counts
		// from here.
		b.start, b.resumedFrom = now, p.Resumed
		if !b.said && !b.tty {
			from := ""
			if p.Resumed > 0 {
				from = ", resuming at " + Bytes(p.Resumed)
			}
			fmt.Fprintf(b.w, "%s: downloading %s (%s%s)\n", b.prog, b.name, Bytes(p.Total), from)
		}
		b.said = true
	}
	if b.tty {
		if p.Done < p.Total && now.Sub(b.drawn) < 100*time.Millisecond {
			return
		}
		b.drawn = now
		b.draw(p, now)
		return
	}
	// One line for the quarters a chunk crosses, however many.
	if q := int(min(4, p.Done*4/max(p.Total, 1))); p.Total > 0 && q > b.quart {
		b.quart = q
		fmt.Fprintf(b.w, "%s: downloading %s: %3d%%  %s of %s%s\n", b.prog, b.name, 100*p.Done/p.Total,
			Bytes(p.Done), Bytes(p.Total), b.speed(p, now))
	}
}

// speed is ", RATE/s, ETA D" once there is a rate to tell.
func (b *PullBar) speed(p bonsai.PullProgress, now time.Time) string {
	d := now.Sub(b.start)
	got := p.Done - b.resumedFrom
	if d < 200*time.Millisecond || got <= 0 {
		return ""
	}
	rate := float64(got) / d.Seconds()
	s := fmt.Sprintf(", %s/s", Bytes(int64(rate)))
	if p.Done < p.Total {
		s += ", ETA " + ETA(time.Duration(float64(p.Total-p.Done)/rate*float64(time.Second)))
	}
	return s
}

// ETA formats a time left: "45s", "12m05s", "2h03m".
func ETA(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s/60%60)
}

func (b *PullBar) draw(p bonsai.PullProgress, now time.Time) {
	frac := 0.0
	if p.Total > 0 {
		frac = min(max(float64(p.Done)/float64(p.Total), 0), 1)
	}
	fill := int(frac * float64(b.width))
	fmt.Fprintf(b.w, "\r%s: %s [%s%s] %3.0f%%  %s of %s%s\x1b[K", b.prog, b.name,
		strings.Repeat("█", fill), strings.Repeat("░", b.width-fill), 100*frac, Bytes(p.Done), Bytes(p.Total), b.speed(p, now))
	b.active = true
}

// Done ends the bar's line.
func (b *PullBar) Done() {
	if b.tty && b.active {
		fmt.Fprint(b.w, "\r\x1b[K")
		b.active = false
	}
}

// ModelPath returns the file a -model value names: the value itself, or for a model
// reference, hf:ORG/NAME/FILE or hf:ORG/NAME@REVISION/FILE, the file pulled from the
// Hugging Face Hub into its cache (bonsai.PullRef: downloaded on first use, with a
// progress bar on stderr; found in the cache after). Errors are one line that says
// what to do (set HF_TOKEN, check the name, run again to resume).
func ModelPath(ctx context.Context, stderr io.Writer, prog, model string, opts ...bonsai.PullOption) (string, error) {
	if !bonsai.IsModelRef(model) {
		return model, nil
	}
	name := model[strings.LastIndexByte(model, '/')+1:]
	bar := NewPullBar(stderr, prog, name)
	path, err := bonsai.PullRef(ctx, model, append([]bonsai.PullOption{bonsai.WithPullProgress(bar.Progress)}, opts...)...)
	bar.Done()
	if err != nil {
		return "", &explained{"pulling " + ExplainPull(err).Error(), err}
	}
	return path, nil
}

// ExplainPull rewrites an error of bonsai.Pull as one line, which names the repository
// and the file: "ORG/NAME: FILE at main: …".
func ExplainPull(err error) error {
	detail := strings.TrimPrefix(OneLine(err), "bonsai: pull: ")
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		detail += "; run again to resume"
	}
	return &explained{detail, err}
}
