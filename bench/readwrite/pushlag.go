package readwrite

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pgcache/pgcache/bench/instance"
)

// pushLagMetric is pgcache's histogram of the time from a PostgreSQL
// commit to the invalidation push leaving pgcache for the tracking
// clients (issue 18's metrics).
const pushLagMetric = "pgcache_tracking_commit_to_push_seconds"

// PushLag is pushLagMetric over one run: the after-minus-before difference
// of every instance's histogram, all its series added up.
type PushLag struct {
	// Exported is false when no instance exports the metric: then nothing
	// else is set.
	Exported bool     `json:"exported"`
	Count    uint64   `json:"count"`
	P50ms    float64  `json:"p50_ms"` // NaN-free: 0 when Count is 0
	P99ms    float64  `json:"p99_ms"`
	Buckets  []Bucket `json:"buckets,omitempty"`
}

// Bucket is one cumulative bucket of a histogram: Count observations were
// at most LE seconds.
type Bucket struct {
	LE    float64 `json:"le"` // +Inf is written as the largest float
	Count uint64  `json:"count"`
}

// scrapePushLag reads pushLagMetric from every instance's /metrics and
// adds the series up; exported is false when no instance has it.
func scrapePushLag(ctx context.Context, insts []instance.Instance) (h []Bucket, exported bool, err error) {
	for _, in := range insts {
		b, ok, err := scrapeOne(ctx, in)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			continue
		}
		exported = true
		h, err = addBuckets(h, b)
		if err != nil {
			return nil, false, err
		}
	}
	return h, exported, nil
}

func scrapeOne(ctx context.Context, in instance.Instance) ([]Bucket, bool, error) {
	url := "http://" + in.Addr("admin") + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, false, fmt.Errorf("GET %s: %w", url, err)
	}
	fam := fams[pushLagMetric]
	if fam == nil {
		return nil, false, nil
	}
	if fam.GetType() != dto.MetricType_HISTOGRAM {
		return nil, false, fmt.Errorf("GET %s: %s is a %s, not a histogram", url, pushLagMetric, fam.GetType())
	}
	var sum []Bucket
	for _, m := range fam.GetMetric() {
		var b []Bucket
		for _, x := range m.GetHistogram().GetBucket() {
			b = append(b, Bucket{LE: x.GetUpperBound(), Count: x.GetCumulativeCount()})
		}
		// The text format's +Inf bucket is the sample count.
		b = append(b, Bucket{LE: math.Inf(1), Count: m.GetHistogram().GetSampleCount()})
		if sum, err = addBuckets(sum, b); err != nil {
			return nil, false, fmt.Errorf("GET %s: %w", url, err)
		}
	}
	return sum, true, nil
}

// addBuckets adds two histograms with the same bounds (nil is empty).
func addBuckets(a, b []Bucket) ([]Bucket, error) {
	b = dedupInf(b)
	if a == nil {
		return slices.Clone(b), nil
	}
	if len(a) != len(b) {
		return nil, fmt.Errorf("%s: series with different buckets", pushLagMetric)
	}
	out := slices.Clone(a)
	for i := range out {
		if out[i].LE != b[i].LE {
			return nil, fmt.Errorf("%s: series with different buckets", pushLagMetric)
		}
		out[i].Count += b[i].Count
	}
	return out, nil
}

// dedupInf keeps one +Inf bucket: the parser may give one besides the
// sample count appended.
func dedupInf(b []Bucket) []Bucket {
	if n := len(b); n >= 2 && math.IsInf(b[n-2].LE, 1) && math.IsInf(b[n-1].LE, 1) {
		return b[:n-1]
	}
	return b
}

// pushLagOf is after minus before (before nil: the metric was not there).
func pushLagOf(before, after []Bucket, exported bool) (*PushLag, error) {
	if !exported {
		return &PushLag{}, nil
	}
	d := slices.Clone(after)
	if before != nil {
		if len(before) != len(after) {
			return nil, fmt.Errorf("%s: the buckets changed during the run", pushLagMetric)
		}
		for i := range d {
			if d[i].LE != before[i].LE || d[i].Count < before[i].Count {
				return nil, fmt.Errorf("%s: the buckets changed during the run", pushLagMetric)
			}
			d[i].Count -= before[i].Count
		}
	}
	l := &PushLag{Exported: true, Buckets: d}
	if len(d) > 0 {
		l.Count = d[len(d)-1].Count
	}
	l.P50ms = 1000 * bucketQuantile(0.50, d)
	l.P99ms = 1000 * bucketQuantile(0.99, d)
	for i := range l.Buckets {
		if math.IsInf(l.Buckets[i].LE, 1) {
			l.Buckets[i].LE = math.MaxFloat64 // JSON has no +Inf
		}
	}
	return l, nil
}

// bucketQuantile estimates quantile q of cumulative buckets as
// Prometheus's histogram_quantile does: linearly within the bucket it
// falls in, from 0 for the first; in the +Inf bucket it is the largest
// finite bound. 0 when there are no observations.
func bucketQuantile(q float64, b []Bucket) float64 {
	if len(b) == 0 || b[len(b)-1].Count == 0 {
		return 0
	}
	rank := q * float64(b[len(b)-1].Count)
	lo, below := 0.0, uint64(0)
	for _, x := range b {
		if float64(x.Count) >= rank {
			if math.IsInf(x.LE, 1) {
				return lo
			}
			in := x.Count - below
			if in == 0 {
				return x.LE
			}
			return lo + (x.LE-lo)*(rank-float64(below))/float64(in)
		}
		lo, below = x.LE, x.Count
	}
	return lo
}
