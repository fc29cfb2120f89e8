package readwrite

import (
	"math"
	"runtime/metrics"
)

// schedMetric is the Go runtime's histogram of the time goroutines spent
// runnable before they ran, in the bench's process (with --server inproc,
// its pgcache instances' goroutines too). When the readers keep every
// P busy (rows served from the app's memory), the goroutines that wait on
// the network (valkey-go's connection readers, the writers' timers) wait
// for a P too, and what a stack measures is partly the load generator.
const schedMetric = "/sched/latencies:seconds"

// schedSample is the histogram at one moment.
type schedSample struct{ h *metrics.Float64Histogram }

func sampleSched() schedSample {
	s := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return schedSample{}
	}
	return schedSample{s[0].Value.Float64Histogram()}
}

// SchedLatency is the load generator's scheduling latency over a run.
type SchedLatency struct {
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	// Over10ms is the share of waits longer than 10 ms.
	Over10ms float64 `json:"over_10ms"`
}

// since is the latency of the waits between before and s; nil when the
// runtime does not export it or nothing waited.
func (s schedSample) since(before schedSample) *SchedLatency {
	if s.h == nil || before.h == nil || len(s.h.Counts) != len(before.h.Counts) {
		return nil
	}
	counts := make([]uint64, len(s.h.Counts))
	var total, over uint64
	for i := range counts {
		counts[i] = s.h.Counts[i] - before.h.Counts[i]
		total += counts[i]
		if s.h.Buckets[i] >= 0.010 {
			over += counts[i]
		}
	}
	if total == 0 {
		return nil
	}
	// A bucket's upper bound stands for its waits (the last is +Inf: its
	// lower bound).
	at := func(q float64) float64 {
		want := uint64(math.Ceil(q * float64(total)))
		var n uint64
		for i, c := range counts {
			if n += c; n >= want {
				if hi := s.h.Buckets[i+1]; !math.IsInf(hi, 1) {
					return hi * 1000
				}
				return s.h.Buckets[i] * 1000
			}
		}
		return 0
	}
	return &SchedLatency{P50ms: at(0.50), P99ms: at(0.99), Over10ms: float64(over) / float64(total)}
}
