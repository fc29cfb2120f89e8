package load

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Histogram bounds, in microseconds: 1µs to 60s, the longest a request may
// take (longer ones are clamped and still counted). Three significant
// digits for the phase's percentiles; two for each second of the
// timeline, which only draws a chart.
const (
	histMinMicros    = 1
	histMaxMicros    = 60_000_000
	histDigits       = 3
	timelineDigits   = 2
	maxDistinctError = 20 // error texts kept per phase; the counts keep counting
)

// recorder collects one phase. Each goroutine that completes requests
// records into a shard of its own, so recording takes no lock; a shard
// hands a finished second to the recorder's timeline once, under mu.
type recorder struct {
	start time.Time

	mu       sync.Mutex
	timeline []*second
	shards   []*shard
}

type second struct {
	hist             *hdrhistogram.Histogram
	requests, errors uint64
	total, max       time.Duration
}

func newSecond() *second {
	return &second{hist: hdrhistogram.New(histMinMicros, histMaxMicros, timelineDigits)}
}

func (s *second) add(o *second) {
	s.hist.Merge(o.hist)
	s.requests += o.requests
	s.errors += o.errors
	s.total += o.total
	s.max = max(s.max, o.max)
}

func newRecorder(start time.Time) *recorder { return &recorder{start: start} }

// shard returns a new shard; each is used by one goroutine at a time.
func (r *recorder) shard() *shard {
	s := &shard{
		rec:    r,
		hist:   hdrhistogram.New(histMinMicros, histMaxMicros, histDigits),
		codes:  map[string]int{},
		errors: map[string]struct{}{},
		cur:    -1,
	}
	r.mu.Lock()
	r.shards = append(r.shards, s)
	r.mu.Unlock()
	return s
}

// progress returns the requests completed so far and how many failed.
func (r *recorder) progress() (done, failed uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.shards {
		done += s.done.Load()
		failed += s.failed.Load()
	}
	return done, failed
}

// shard is one goroutine's share of a phase.
type shard struct {
	rec *recorder

	done, failed atomic.Uint64 // read by progress while the phase runs

	hist              *hdrhistogram.Histogram
	total, min, max   time.Duration
	success           uint64
	bytesIn, bytesOut uint64
	codes             map[string]int
	errors            map[string]struct{}
	errorList         []string
	first, last, end  time.Time // first and last send, latest completion

	cur    int     // the second being filled, -1 before the first
	curSec *second // its data
}

// record adds one request, sent at sent, that took lat.
func (s *shard) record(sent time.Time, lat time.Duration, code string, ok bool, errText string, in, out uint64) {
	us := min(max(lat.Microseconds(), histMinMicros), histMaxMicros)
	s.hist.RecordValue(us) // in range by construction
	s.total += lat
	if lat > s.max {
		s.max = lat
	}
	if lat < s.min || s.min == 0 {
		s.min = lat
	}
	if s.first.IsZero() || sent.Before(s.first) {
		s.first = sent
	}
	if sent.After(s.last) {
		s.last = sent
	}
	if end := sent.Add(lat); end.After(s.end) {
		s.end = end
	}
	s.codes[code]++
	s.bytesIn += in
	s.bytesOut += out
	if ok {
		s.success++
	} else {
		s.failed.Add(1)
		if errText != "" && len(s.errorList) < maxDistinctError {
			if _, seen := s.errors[errText]; !seen {
				s.errors[errText] = struct{}{}
				s.errorList = append(s.errorList, errText)
			}
		}
	}
	s.done.Add(1)

	sec := max(int(sent.Sub(s.rec.start)/time.Second), 0)
	if sec != s.cur {
		s.flushSecond()
		s.cur, s.curSec = sec, newSecond()
	}
	c := s.curSec
	c.hist.RecordValue(us)
	c.requests++
	if !ok {
		c.errors++
	}
	c.total += lat
	c.max = max(c.max, lat)
}

// flushSecond hands the second being filled to the timeline. Seconds can
// come back out of order (a late reply of an earlier second): they merge.
func (s *shard) flushSecond() {
	if s.curSec == nil {
		return
	}
	r := s.rec
	r.mu.Lock()
	for len(r.timeline) <= s.cur {
		r.timeline = append(r.timeline, nil)
	}
	if r.timeline[s.cur] == nil {
		r.timeline[s.cur] = s.curSec
	} else {
		r.timeline[s.cur].add(s.curSec)
	}
	r.mu.Unlock()
	s.curSec = nil
}

// result merges the shards into a Result. Call it once every shard is done.
func (r *recorder) result() *Result {
	all := &shard{
		hist:   hdrhistogram.New(histMinMicros, histMaxMicros, histDigits),
		codes:  map[string]int{},
		errors: map[string]struct{}{},
	}
	for _, s := range r.shards {
		s.flushSecond()
		all.hist.Merge(s.hist)
		all.total += s.total
		all.max = max(all.max, s.max)
		if s.min > 0 && (all.min == 0 || s.min < all.min) {
			all.min = s.min
		}
		if !s.first.IsZero() && (all.first.IsZero() || s.first.Before(all.first)) {
			all.first = s.first
		}
		if s.last.After(all.last) {
			all.last = s.last
		}
		if s.end.After(all.end) {
			all.end = s.end
		}
		all.success += s.success
		all.bytesIn += s.bytesIn
		all.bytesOut += s.bytesOut
		for c, n := range s.codes {
			all.codes[c] += n
		}
		for _, e := range s.errorList {
			if _, seen := all.errors[e]; !seen && len(all.errorList) < maxDistinctError {
				all.errors[e] = struct{}{}
				all.errorList = append(all.errorList, e)
			}
		}
	}
	return &Result{Metrics: all.metrics(), Timeline: r.seconds()}
}

// metrics fills vegeta's Metrics as its Close would, from the histogram:
// Rate counts requests over the time they were sent, Throughput counts
// successes until the last reply.
func (s *shard) metrics() vegeta.Metrics {
	n := uint64(s.hist.TotalCount())
	m := vegeta.Metrics{
		Requests:    n,
		StatusCodes: s.codes,
		Errors:      append([]string{}, s.errorList...),
		Earliest:    s.first,
		Latest:      s.last,
		End:         s.end,
	}
	if n == 0 {
		return m
	}
	m.Duration = s.last.Sub(s.first)
	m.Wait = s.end.Sub(s.last)
	m.Rate, m.Throughput = float64(n), float64(s.success)
	if secs := m.Duration.Seconds(); secs > 0 {
		m.Rate /= secs
		m.Throughput /= (m.Duration + m.Wait).Seconds()
	}
	m.Success = float64(s.success) / float64(n)
	m.BytesIn = vegeta.ByteMetrics{Total: s.bytesIn, Mean: float64(s.bytesIn) / float64(n)}
	m.BytesOut = vegeta.ByteMetrics{Total: s.bytesOut, Mean: float64(s.bytesOut) / float64(n)}
	// The histogram reports a bucket's upper bound, which can pass the exact
	// max by its precision: a percentile is never above the max.
	q := func(p float64) time.Duration {
		return min(time.Duration(s.hist.ValueAtPercentile(p))*time.Microsecond, s.max)
	}
	m.Latencies = vegeta.LatencyMetrics{
		Total: s.total,
		Mean:  s.total / time.Duration(n),
		P50:   q(50), P90: q(90), P95: q(95), P99: q(99),
		Max: s.max, Min: s.min,
	}
	return m
}

// seconds returns the timeline; a second with no request sent is zero.
func (r *recorder) seconds() []Second {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Second, len(r.timeline))
	for i, s := range r.timeline {
		if s == nil || s.requests == 0 {
			continue
		}
		out[i] = Second{
			Requests: s.requests,
			Errors:   s.errors,
			Mean:     s.total / time.Duration(s.requests),
			P50:      min(time.Duration(s.hist.ValueAtPercentile(50))*time.Microsecond, s.max),
			P99:      min(time.Duration(s.hist.ValueAtPercentile(99))*time.Microsecond, s.max),
			Max:      s.max,
		}
	}
	return out
}

// statusText is the StatusCodes key of an HTTP status, as vegeta writes it.
func statusText(code uint16) string { return strconv.Itoa(int(code)) }
