package load

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Shards merge into one set of metrics and one timeline, whatever order
// their seconds arrive in.
func TestRecorderMerges(t *testing.T) {
	start := time.Now()
	rec := newRecorder(start)
	a, b := rec.shard(), rec.shard()
	for i := range 100 {
		a.record(start.Add(time.Duration(i)*10*time.Millisecond), time.Duration(i+1)*time.Millisecond, "200", true, "", 10, 1)
	}
	// b reports second 2, then a late reply of second 0.
	b.record(start.Add(2500*time.Millisecond), 5*time.Millisecond, "500", false, "boom", 0, 1)
	b.record(start.Add(100*time.Millisecond), 7*time.Millisecond, "200", true, "", 10, 1)

	res := rec.result()
	m := res.Metrics
	if m.Requests != 102 || m.StatusCodes["200"] != 101 || m.StatusCodes["500"] != 1 {
		t.Fatalf("requests %d, codes %v", m.Requests, m.StatusCodes)
	}
	if got, want := m.Success, 101.0/102; got != want {
		t.Fatalf("success %v, want %v", got, want)
	}
	if m.Latencies.Min != time.Millisecond || m.Latencies.Max != 100*time.Millisecond {
		t.Fatalf("min %v max %v", m.Latencies.Min, m.Latencies.Max)
	}
	if p50 := m.Latencies.P50; p50 < 49*time.Millisecond || p50 > 51*time.Millisecond {
		t.Fatalf("p50 %v, want about 50ms", p50)
	}
	if len(m.Errors) != 1 || m.Errors[0] != "boom" || m.BytesIn.Total != 1010 || m.BytesOut.Total != 102 {
		t.Fatalf("errors %v, bytes in %d out %d", m.Errors, m.BytesIn.Total, m.BytesOut.Total)
	}
	if len(res.Timeline) != 3 {
		t.Fatalf("timeline has %d seconds, want 3", len(res.Timeline))
	}
	if s0, s2 := res.Timeline[0], res.Timeline[2]; s0.Requests != 101 || s0.Errors != 0 || s2.Requests != 1 || s2.Errors != 1 {
		t.Fatalf("second 0 %+v, second 2 %+v", s0, s2)
	}
	if done, failed := rec.progress(); done != 102 || failed != 1 {
		t.Fatalf("progress %d done %d failed", done, failed)
	}
}

func TestProgressLines(t *testing.T) {
	var plain, tty bytes.Buffer
	plan := &Plan{Name: "memory http get", Duration: 250 * time.Millisecond}
	for _, p := range []*Progress{{W: &plain, PlainEvery: 50 * time.Millisecond}, {W: &tty, TTY: true}} {
		rec := newRecorder(time.Now())
		stop := p.watch(plan, rec)
		time.Sleep(300 * time.Millisecond)
		stop()
	}
	if lines := strings.Split(strings.TrimSpace(plain.String()), "\n"); len(lines) < 2 || !strings.Contains(lines[0], "memory http get") ||
		!strings.Contains(lines[0], "req/s") || strings.Contains(plain.String(), "\r") {
		t.Fatalf("plain progress:\n%s", plain.String())
	}
	if out := tty.String(); !strings.Contains(out, "\r\x1b[K") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Fatalf("terminal progress %q: want lines redrawn in place and cleared at the end", out)
	}
	var nothing *Progress
	nothing.watch(plan, newRecorder(time.Now()))() // no writer: no output, no panic
}
