package readwrite

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// The pgcache-csc stack end to end, short and bounded, with one more app
// client whose cache ignores invalidations: the audit reads every app
// client's cache, finds that one stale, and the others (kept by pgcache's
// pushes) holding rows, none stale.
func TestCSCAudit(t *testing.T) {
	var stdout strings.Builder
	o := Options{
		Rows: 50, Readers: 6, Writers: 2, UpdateRate: 200, Duration: 2 * time.Second,
		Stacks: []string{StackCSC}, CSCClients: 2, OverheadDuration: -1, cscDeaf: 1,
	}
	results, err := Run(context.Background(), o, &stdout)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	t.Log(stdout.String())
	if len(results) != 1 || results[0].Stack != StackCSC {
		t.Fatalf("results: %+v", results)
	}
	r := results[0]
	if r.ReadErrors != 0 || r.WriteErrors != 0 || r.Reads == 0 || r.Updates == 0 {
		t.Fatalf("%d reads (%d errors), %d updates (%d errors); first error: %s", r.Reads, r.ReadErrors, r.Updates, r.WriteErrors, r.FirstError)
	}
	if len(r.Apps) != 3 {
		t.Fatalf("the audit read %d app caches, want 3: %+v", len(r.Apps), r.Apps)
	}
	for i, a := range r.Apps {
		switch {
		case a.Deaf && (a.Cached == 0 || a.Stale == 0):
			t.Errorf("app client %d ignores invalidations, and the audit found %d cached, %d stale", i, a.Cached, a.Stale)
		case !a.Deaf && a.Stale != 0:
			t.Errorf("app client %d: %d of %d cached rows stale", i, a.Stale, a.Cached)
		case !a.Deaf && a.Cached == 0:
			// 50 rows, each read by the client many times since its last
			// write: some are in its memory, unless pgcache's invalidations
			// leave none (the bounce of a route it does not track).
			t.Errorf("app client %d: the audit found nothing in its memory", i)
		}
	}
	if cached, stale := r.AppCached(); r.Stale != r.L1Stale+stale || r.Entries != r.L1Entries+cached {
		t.Errorf("stale %d, cached %d: not the L1s' (%d, %d) and the apps' (%d, %d)", r.Stale, r.Entries, r.L1Stale, r.L1Entries, stale, cached)
	}
	if r.L1Stale != 0 {
		t.Errorf("L1: %d stale", r.L1Stale)
	}
	if r.CommitToPush == nil || r.ClientLag == nil {
		t.Errorf("no lag records: %+v %+v", r.CommitToPush, r.ClientLag)
	}
	if r.LoadSched == nil {
		t.Error("no record of the bench's own scheduling latency")
	}
	for _, want := range []string{"target pgcache-csc stale:", "commit-to-push lag", "the bench's own scheduling latency"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output has no %q", want)
		}
	}
}

func TestBucketQuantile(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name string
		b    []Bucket
		q    float64
		want float64
	}{
		{"empty", nil, 0.5, 0},
		{"no observations", []Bucket{{0.01, 0}, {inf, 0}}, 0.99, 0},
		{"first bucket from 0", []Bucket{{0.01, 10}, {0.1, 10}, {inf, 10}}, 0.5, 0.005},
		{"within a bucket", []Bucket{{0.01, 0}, {0.03, 100}, {inf, 100}}, 0.5, 0.02},
		{"+Inf bucket: the largest bound", []Bucket{{0.01, 1}, {0.05, 1}, {inf, 100}}, 0.99, 0.05},
	} {
		if got := bucketQuantile(tc.q, tc.b); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: got %g, want %g", tc.name, got, tc.want)
		}
	}
}

func TestPushLagOf(t *testing.T) {
	inf := math.Inf(1)
	before := []Bucket{{0.005, 10}, {0.05, 20}, {inf, 21}}
	after := []Bucket{{0.005, 110}, {0.05, 220}, {inf, 221}}
	l, err := pushLagOf(before, after, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Count, uint64(200); got != want {
		t.Errorf("count %d, want %d", got, want)
	}
	if got, want := l.Buckets[1].Count, uint64(200); got != want {
		t.Errorf("≤50ms %d, want %d", got, want)
	}
	if l.Buckets[2].LE != math.MaxFloat64 {
		t.Errorf("+Inf bucket written as %g", l.Buckets[2].LE)
	}
	if l, _ := pushLagOf(nil, nil, false); l.Exported {
		t.Error("a metric no instance has is exported")
	}
	if _, err := pushLagOf(before, []Bucket{{0.005, 110}, {inf, 221}}, true); err == nil {
		t.Error("buckets that changed: no error")
	}
}

// What the commit-to-invalidation lag measures and what it leaves out,
// on a made-up timeline (ms): a write of row 1 at 100–102, and app 0's
// reads and invalidations of it.
func TestInvalLag(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	at := func(n int64) time.Time { return time.Unix(0, ms(n)) }
	for _, tc := range []struct {
		name            string
		steps           func(l *invalLag)
		samples, unattr int64
		p50ms           float64
	}{
		{"the write's invalidation", func(l *invalLag) {
			l.filled(0, 1, at(50))
			l.invalidate(0, 1, false, ms(105))
		}, 1, 0, 3},
		{"measured once", func(l *invalLag) {
			l.filled(0, 1, at(50))
			l.invalidate(0, 1, false, ms(105))
			l.invalidate(0, 1, false, ms(106))
		}, 1, 1, 3},
		{"the value was read after the write began", func(l *invalLag) {
			l.filled(0, 1, at(101))
			l.invalidate(0, 1, false, ms(105))
		}, 0, 1, 0},
		{"pushed before the read that cached it noted it (a bounce)", func(l *invalLag) {
			l.invalidate(0, 1, false, ms(104)) // the bounce of a read begun at 103
			l.filled(0, 1, at(103))            // noted after it: nothing cached
			l.start[1].Store(ms(200))
			l.end[1].Store(ms(202))
			l.invalidate(0, 1, false, ms(205))
		}, 0, 2, 0},
		{"a note left while not measuring is cleared", func(l *invalLag) {
			l.on.Store(false)
			l.filled(0, 1, at(10))
			l.invalidate(0, 1, false, ms(11))
			l.on.Store(true)
			l.invalidate(0, 1, false, ms(105))
		}, 0, 1, 0},
		{"another app's cache", func(l *invalLag) {
			l.filled(1, 1, at(50))
			l.invalidate(0, 1, false, ms(105))
		}, 0, 1, 0},
		{"drop everything", func(l *invalLag) {
			l.filled(0, 1, at(50))
			l.invalidate(0, 0, true, ms(104))
			l.invalidate(0, 1, false, ms(105))
		}, 0, 1, 0},
	} {
		l := newInvalLag("k:", 3, 2)
		l.start[1].Store(ms(100))
		l.end[1].Store(ms(102))
		l.on.Store(true)
		tc.steps(l)
		got := l.result()
		if got.Samples != tc.samples || got.Unattributed != tc.unattr || math.Abs(got.P50ms-tc.p50ms) > 0.01 {
			t.Errorf("%s: %d samples (p50 %g ms), %d unattributed; want %d (%g ms), %d",
				tc.name, got.Samples, got.P50ms, got.Unattributed, tc.samples, tc.p50ms, tc.unattr)
		}
	}
}
