package readwrite

import (
	"math"
	"runtime/metrics"
	"testing"
)

func TestSchedLatencySince(t *testing.T) {
	inf := math.Inf(1)
	buckets := []float64{0, 0.001, 0.010, 0.100, inf} // four buckets
	at := func(counts ...uint64) schedSample {
		return schedSample{&metrics.Float64Histogram{Counts: counts, Buckets: buckets}}
	}
	before := at(5, 5, 5, 5)
	for _, tc := range []struct {
		name  string
		after schedSample
		want  *SchedLatency
	}{
		{"nothing waited", at(5, 5, 5, 5), nil},
		{"all short", at(105, 5, 5, 5), &SchedLatency{P50ms: 1, P99ms: 1}},
		// 98 under 1 ms, one 1–10 ms, one past 100 ms: p99 is the 99th.
		{"a long tail", at(103, 6, 5, 6), &SchedLatency{P50ms: 1, P99ms: 10, Over10ms: 0.01}},
		{"past the last bound", at(5, 5, 5, 105), &SchedLatency{P50ms: 100, P99ms: 100, Over10ms: 1}},
	} {
		got := tc.after.since(before)
		switch {
		case tc.want == nil && got != nil, tc.want != nil && (got == nil || *got != *tc.want):
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := at(1, 2).since(before); got != nil {
		t.Errorf("histograms of different shapes: %+v, want nil", got)
	}
	if sampleSched().h == nil {
		t.Errorf("the runtime exports no %s", schedMetric)
	}
}
