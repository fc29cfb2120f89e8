package load

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
)

// Progress shows a phase while it runs: on a terminal one line redrawn in
// place a few times a second, elsewhere (CI logs, a pipe) a plain line every
// PlainEvery, so a log stays readable.
type Progress struct {
	W   io.Writer
	TTY bool
	// PlainEvery is the interval of plain lines; 0: a tenth of the phase,
	// between 1s and 10s.
	PlainEvery time.Duration
}

// ttyEvery is how often a terminal line is redrawn.
const ttyEvery = 250 * time.Millisecond

// watch starts showing a phase of rec; the returned func stops it and
// ends the line.
func (p *Progress) watch(plan *Plan, rec *recorder) (stop func()) {
	if p == nil || p.W == nil {
		return func() {}
	}
	every := ttyEvery
	if !p.TTY {
		every = p.PlainEvery
		if every == 0 {
			every = min(max(plan.Duration/10, time.Second), 10*time.Second)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		var lastDone uint64
		lastAt := rec.start
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				n, failed := rec.progress()
				rps := float64(n-lastDone) / now.Sub(lastAt).Seconds()
				lastDone, lastAt = n, now
				line := p.line(plan, now.Sub(rec.start), n, failed, rps)
				if p.TTY {
					fmt.Fprintf(p.W, "\r\x1b[K%s", line)
				} else {
					fmt.Fprintln(p.W, line)
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		if p.TTY {
			fmt.Fprint(p.W, "\r\x1b[K")
		}
	}
}

// line is one progress report: elapsed of total (or keys done of total for
// a count-bound phase), the current rate and the errors so far.
func (p *Progress) line(plan *Plan, elapsed time.Duration, done, failed uint64, rps float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-34s", plan.Name)
	if plan.Requests > 0 {
		frac := float64(done) / float64(plan.Requests)
		fmt.Fprintf(&b, " %s %s/%s  %6s", bar(frac), count(done), count(plan.Requests), elapsed.Round(100*time.Millisecond))
	} else {
		frac := elapsed.Seconds() / plan.Duration.Seconds()
		fmt.Fprintf(&b, " %s %6s/%s", bar(frac), elapsed.Round(100*time.Millisecond), plan.Duration)
	}
	fmt.Fprintf(&b, "  %10s req/s  %s errors", count(uint64(rps)), count(failed))
	return b.String()
}

// barWidth is the width of the progress bar in cells.
const barWidth = 20

func bar(frac float64) string {
	n := int(min(max(frac, 0), 1) * barWidth)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", barWidth-n) + "]"
}

// count writes n with thousands separators: 1,234,567.
func count(n uint64) string { return humanize.Comma(int64(n)) }
