package route

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgcache/pgcache/backends"
)

// Op is a backend operation, as labelled in metrics.
type Op int

// The operations of backends.Backend.
const (
	OpGet Op = iota
	OpMGet
	OpSet
	OpMSet
	OpDel
	OpExists
	OpGetDel
	OpGetEx
	OpIncrBy
	OpExpire
	OpTTL
	numOps
)

var opNames = [numOps]string{"get", "mget", "set", "mset", "del", "exists", "getdel", "getex", "incrby", "expire", "ttl"}

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

// opMetrics are one route's resolved series for one operation, so a request
// pays for no label lookup.
type opMetrics struct {
	ok, failed prometheus.Counter
	latency    prometheus.Observer
}

// instrumented wraps a route's backend with its metrics and value limit.
type instrumented struct {
	b            backends.Backend
	maxValue     int64
	m            *Metrics
	ops          [numOps]opMetrics
	hits, misses prometheus.Counter
}

func instrument(r *Route, m *Metrics) backends.Backend {
	if m == nil {
		m = NewMetrics(nil)
	}
	in := &instrumented{b: r.Backend, maxValue: r.MaxValueBytes, m: m}
	for op := range numOps {
		in.ops[op] = opMetrics{
			ok:      m.requests.WithLabelValues(r.Name, opNames[op], "ok"),
			failed:  m.requests.WithLabelValues(r.Name, opNames[op], "error"),
			latency: m.latency.WithLabelValues(r.Name, opNames[op]),
		}
	}
	in.hits = m.lookups.WithLabelValues(r.Name, "hit")
	in.misses = m.lookups.WithLabelValues(r.Name, "miss")
	return in
}

func (in *instrumented) done(op Op, start time.Time, err error) {
	o := &in.ops[op]
	o.latency.Observe(time.Since(start).Seconds())
	if err != nil {
		o.failed.Inc()
		return
	}
	o.ok.Inc()
}

func (in *instrumented) lookup(found bool) {
	if found {
		in.m.Hits.Add(1)
		in.hits.Inc()
		return
	}
	in.m.Misses.Add(1)
	in.misses.Inc()
}

func (in *instrumented) tooLarge(v []byte) bool {
	return in.maxValue > 0 && int64(len(v)) > in.maxValue
}

func (in *instrumented) Get(ctx context.Context, key string) ([]byte, bool, error) {
	start := time.Now()
	v, ok, err := in.b.Get(ctx, key)
	in.done(OpGet, start, err)
	if err == nil {
		in.lookup(ok)
	}
	return v, ok, err
}

func (in *instrumented) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	start := time.Now()
	n := len(dst)
	dst, err := in.b.MGet(ctx, keys, dst)
	in.done(OpMGet, start, err)
	if err == nil {
		for _, v := range dst[n:] {
			in.lookup(v != nil)
		}
	}
	return dst, err
}

func (in *instrumented) Set(ctx context.Context, key string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	if in.tooLarge(val) {
		return backends.SetResult{}, backends.ErrValueTooLarge
	}
	start := time.Now()
	res, err := in.b.Set(ctx, key, val, opts)
	in.done(OpSet, start, err)
	return res, err
}

func (in *instrumented) MSet(ctx context.Context, pairs []backends.KV) error {
	for _, p := range pairs {
		if in.tooLarge(p.Val) {
			return backends.ErrValueTooLarge
		}
	}
	start := time.Now()
	err := in.b.MSet(ctx, pairs)
	in.done(OpMSet, start, err)
	return err
}

func (in *instrumented) Del(ctx context.Context, keys []string) (int64, error) {
	start := time.Now()
	n, err := in.b.Del(ctx, keys)
	in.done(OpDel, start, err)
	return n, err
}

func (in *instrumented) Exists(ctx context.Context, keys []string) (int64, error) {
	start := time.Now()
	n, err := in.b.Exists(ctx, keys)
	in.done(OpExists, start, err)
	return n, err
}

func (in *instrumented) GetDel(ctx context.Context, key string) ([]byte, bool, error) {
	start := time.Now()
	v, ok, err := in.b.GetDel(ctx, key)
	in.done(OpGetDel, start, err)
	if err == nil {
		in.lookup(ok)
	}
	return v, ok, err
}

func (in *instrumented) GetEx(ctx context.Context, key string, ttl backends.TTL) ([]byte, bool, error) {
	start := time.Now()
	v, ok, err := in.b.GetEx(ctx, key, ttl)
	in.done(OpGetEx, start, err)
	if err == nil {
		in.lookup(ok)
	}
	return v, ok, err
}

func (in *instrumented) IncrBy(ctx context.Context, key string, delta int64) (int64, error) {
	start := time.Now()
	n, err := in.b.IncrBy(ctx, key, delta)
	// A non-integer value is the client's mistake, not a backend failure.
	if errors.Is(err, backends.ErrNotInteger) || errors.Is(err, backends.ErrOverflow) {
		in.done(OpIncrBy, start, nil)
		return n, err
	}
	in.done(OpIncrBy, start, err)
	return n, err
}

func (in *instrumented) Expire(ctx context.Context, key string, ttl backends.TTL, cond backends.ExpireCond) (bool, error) {
	start := time.Now()
	ok, err := in.b.Expire(ctx, key, ttl, cond)
	in.done(OpExpire, start, err)
	return ok, err
}

func (in *instrumented) TTL(ctx context.Context, key string) (time.Duration, error) {
	start := time.Now()
	d, err := in.b.TTL(ctx, key)
	in.done(OpTTL, start, err)
	return d, err
}

// Len counts the route's keys when the backend can.
func (in *instrumented) Len(ctx context.Context) (int64, error) {
	if s, ok := in.b.(backends.Sizer); ok {
		return s.Len(ctx)
	}
	return 0, backends.ErrUnsupported
}

// Unwrap returns the backend as opened, for optional interfaces.
func (in *instrumented) Unwrap() backends.Backend { return in.b }

// Close is the table's job (Table.Close closes the raw backend).
func (in *instrumented) Close() error { return nil }

var _ backends.Backend = (*instrumented)(nil)
