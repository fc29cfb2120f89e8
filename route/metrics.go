package route

import (
	"cmp"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgcache/pgcache/backends"
)

// Op is a backend operation, as labelled in metrics.
type Op int

// The operations of backends.Backend but Update and Do, which are
// labelled by their own names ("incrby", "hset").
const (
	OpGet Op = iota
	OpMGet
	OpSet
	OpMSet
	OpDel
	OpExists
	OpTTL
	numOps
)

var opNames = [numOps]string{"get", "mget", "set", "mset", "del", "exists", "ttl"}

func (o Op) String() string { return opNames[o] }

// Metrics are the per-route request metrics, registered once per process
// and shared by every table a reload builds. Keys are never labels.
type Metrics struct {
	requests *prometheus.CounterVec   // route, op, result
	latency  *prometheus.HistogramVec // route, op
	lookups  *prometheus.CounterVec   // route, result=hit|miss

	// Hits and Misses count key lookups across routes (INFO keyspace_hits/misses).
	Hits, Misses atomic.Int64
}

// NewMetrics registers the route metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgcache_route_requests_total",
			Help: "Backend operations by route, operation and result (ok or error).",
		}, []string{"route", "op", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pgcache_route_request_duration_seconds",
			Help:    "Backend operation latency by route and operation.",
			Buckets: prometheus.ExponentialBuckets(10e-6, 2.5, 12), // 10µs … 240ms
		}, []string{"route", "op"}),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgcache_route_lookups_total",
			Help: "Key lookups by route and result (hit: the key was present, miss: absent).",
		}, []string{"route", "result"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency, m.lookups)
	}
	return m
}

// routeMetrics are one route's resolved series, so a request pays for no
// label lookup: the fixed operations', and those of updates and commands
// on collections by name, resolved on first use.
type routeMetrics struct {
	route        string
	m            *Metrics
	ops          [numOps]opMetrics
	hits, misses prometheus.Counter

	// named are the series of Update.Op() and Op.Name() names met so far:
	// a map read without a lock (a sync.Map's lookup costs a collection
	// command more), copied under mu to add one.
	named atomic.Pointer[map[string]*opMetrics]
	mu    sync.Mutex
}

func newRouteMetrics(route string, m *Metrics) *routeMetrics {
	if m == nil {
		m = NewMetrics(nil)
	}
	rm := &routeMetrics{route: route, m: m,
		hits: m.lookups.WithLabelValues(route, "hit"), misses: m.lookups.WithLabelValues(route, "miss")}
	for op := range numOps {
		rm.ops[op] = rm.series(opNames[op])
	}
	rm.named.Store(&map[string]*opMetrics{})
	return rm
}

func (rm *routeMetrics) series(op string) opMetrics {
	return opMetrics{
		ok:      rm.m.requests.WithLabelValues(rm.route, op, "ok"),
		failed:  rm.m.requests.WithLabelValues(rm.route, op, "error"),
		latency: rm.m.latency.WithLabelValues(rm.route, op),
	}
}

// of returns the series of an operation named op.
func (rm *routeMetrics) of(op string) *opMetrics {
	if o := (*rm.named.Load())[op]; o != nil {
		return o
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	named := *rm.named.Load()
	if o := named[op]; o != nil {
		return o
	}
	s := rm.series(op)
	named = maps.Clone(named)
	named[op] = &s
	rm.named.Store(&named)
	return &s
}

// lookup counts a key found or not.
func (rm *routeMetrics) lookup(found bool) {
	if found {
		rm.m.Hits.Add(1)
		rm.hits.Inc()
		return
	}
	rm.m.Misses.Add(1)
	rm.misses.Inc()
}

// opMetrics are one route's series for one operation.
type opMetrics struct {
	ok, failed prometheus.Counter
	latency    prometheus.Observer
}

func (o *opMetrics) observe(start time.Duration, err error) { o.took(mono()-start, err) }

// took counts an operation that took d.
func (o *opMetrics) took(d time.Duration, err error) {
	o.latency.Observe(d.Seconds())
	if failure(err) {
		o.failed.Inc()
		return
	}
	o.ok.Inc()
}

// failure reports whether err counts as a failed operation: a value that
// is not a number is the client's mistake, not a backend failure.
func failure(err error) bool { return err != nil && !backends.ClientCaused(err) }

// tookSeq counts the ops of a pipelined run that took d each (DoSeq's
// share) and failed with errs[i], or all with err. The latency of each
// stretch of one command is observed once: a histogram's observation
// costs a run of sixteen LPOPs more than the pops.
func (rm *routeMetrics) tookSeq(d time.Duration, ops []backends.Op, errs []error, err error) {
	for len(ops) > 0 {
		name := ops[0].Name()
		o := rm.of(name)
		o.latency.Observe(d.Seconds())
		var ok, failed int
		for len(ops) > 0 && ops[0].Name() == name {
			if failure(cmp.Or(err, errs[0])) {
				failed++
			} else {
				ok++
			}
			ops, errs = ops[1:], errs[1:]
		}
		if ok > 0 {
			o.ok.Add(float64(ok))
		}
		if failed > 0 {
			o.failed.Add(float64(failed))
		}
	}
}

// epoch is where mono counts from.
var epoch = time.Now()

// mono reads the monotonic clock alone, which is all a latency needs:
// time.Now reads the wall clock too. A read of the clock is not cheap on
// every machine (docs/performance.md), and every backend call takes two.
func mono() time.Duration { return time.Since(epoch) }
