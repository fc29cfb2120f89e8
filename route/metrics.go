package route

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgcache/pgcache/backends"
)

// Op is a backend operation, as labelled in metrics.
type Op int

// The operations of backends.Backend but Update, whose updates are
// labelled by their own Op names ("incrby", "getdel").
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

// opMetrics are one route's resolved series for one operation, so a request
// pays for no label lookup.
type opMetrics struct {
	ok, failed prometheus.Counter
	latency    prometheus.Observer
}

// instrumented wraps a route's backend with its metrics and value limit.
type instrumented struct {
	*meter
	b backends.Backend
	// deferred, inside an atomic run, collects the keys written: they are
	// reported once the run has committed, when a reader can see them.
	deferred *[]string
}

// meter is what a route's wrapper and the views of its atomic runs share.
type meter struct {
	route        string
	maxValue     int64
	m            *Metrics
	ops          [numOps]opMetrics
	updates      *sync.Map // Update.Op() -> *opMetrics, resolved on first use
	hits, misses prometheus.Counter
	watch        *watchTable // told of every write's keys, for WATCH
	r            *Route      // its notifier is told of every write (notify.go)
	views        sync.Pool   // of *runView, reused by Atomically
}

func instrument(r *Route, m *Metrics) backends.Backend {
	if m == nil {
		m = NewMetrics(nil)
	}
	in := &instrumented{b: r.Backend, meter: &meter{route: r.Name, maxValue: r.MaxValueBytes, m: m,
		updates: new(sync.Map), watch: r.watch, r: r}}
	for op := range numOps {
		in.ops[op] = in.series(opNames[op])
	}
	in.hits = m.lookups.WithLabelValues(r.Name, "hit")
	in.misses = m.lookups.WithLabelValues(r.Name, "miss")
	return in
}

func (in *meter) series(op string) opMetrics {
	return opMetrics{
		ok:      in.m.requests.WithLabelValues(in.route, op, "ok"),
		failed:  in.m.requests.WithLabelValues(in.route, op, "error"),
		latency: in.m.latency.WithLabelValues(in.route, op),
	}
}

func (in *instrumented) done(op Op, start time.Duration, err error) {
	in.ops[op].observe(start, err)
}

func (o *opMetrics) observe(start time.Duration, err error) {
	o.latency.Observe((mono() - start).Seconds())
	// A value that is not a number is the client's mistake, not a
	// backend failure.
	if err != nil && !backends.ClientCaused(err) {
		o.failed.Inc()
		return
	}
	o.ok.Inc()
}

// epoch is where mono counts from.
var epoch = time.Now()

// mono reads the monotonic clock alone, which is all a latency needs:
// time.Now reads the wall clock too. A read of the clock is not cheap on
// every machine (docs/performance.md), and every backend call takes two.
func mono() time.Duration { return time.Since(epoch) }

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
	start := mono()
	v, ok, err := in.b.Get(ctx, key)
	in.done(OpGet, start, err)
	if err == nil {
		in.lookup(ok)
	}
	return v, ok, err
}

func (in *instrumented) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	start := mono()
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
	in.watch.touch(key)
	start := mono()
	res, err := in.b.Set(ctx, key, val, opts)
	in.done(OpSet, start, err)
	in.wrote(ctx, key)
	return res, err
}

func (in *instrumented) MSet(ctx context.Context, pairs []backends.KV) error {
	for _, p := range pairs {
		if in.tooLarge(p.Val) {
			return backends.ErrValueTooLarge
		}
	}
	for _, p := range pairs {
		in.watch.touch(p.Key)
	}
	start := mono()
	err := in.b.MSet(ctx, pairs)
	in.done(OpMSet, start, err)
	for _, p := range pairs {
		in.wrote(ctx, p.Key)
	}
	return err
}

func (in *instrumented) Del(ctx context.Context, keys []string) (int64, error) {
	for _, k := range keys {
		in.watch.touch(k)
	}
	start := mono()
	n, err := in.b.Del(ctx, keys)
	in.done(OpDel, start, err)
	for _, k := range keys {
		in.wrote(ctx, k)
	}
	return n, err
}

func (in *instrumented) Exists(ctx context.Context, keys []string) (int64, error) {
	start := mono()
	n, err := in.b.Exists(ctx, keys)
	in.done(OpExists, start, err)
	return n, err
}

func (in *instrumented) Update(ctx context.Context, key string, u backends.Update) error {
	op := u.Op()
	o, ok := in.updates.Load(op)
	if !ok {
		s := in.series(op)
		o, _ = in.updates.LoadOrStore(op, &s)
	}
	start := mono()
	if in.maxValue > 0 {
		u = limited{u, in.maxValue}
	}
	in.watch.touch(key)
	err := in.b.Update(ctx, key, u)
	o.(*opMetrics).observe(start, err)
	in.wrote(ctx, key)
	return err
}

// limited holds an update's writes to the route's max_value_bytes.
type limited struct {
	backends.Update
	max int64
}

func (l limited) Unwrap() backends.Update { return l.Update }

func (l limited) Apply(cur backends.Current) (backends.Change, error) {
	ch, err := l.Update.Apply(cur)
	if err == nil && ch.Kind == backends.Put && l.max > 0 && int64(len(ch.Val)) > l.max {
		return backends.Change{}, backends.ErrValueTooLarge
	}
	return ch, err
}

func (in *instrumented) TTL(ctx context.Context, key string) (time.Duration, error) {
	start := mono()
	d, err := in.b.TTL(ctx, key)
	in.done(OpTTL, start, err)
	return d, err
}

// Atomically runs fn atomically on the backend, on a tx wrapped as the
// route wraps: its writes are counted, limited and seen by WATCH.
func (in *instrumented) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	a, ok := backends.As[backends.Atomic](in.b)
	if !ok {
		return fmt.Errorf("route %s: transactions and scripts: %w", in.route, backends.ErrUnsupported)
	}
	v, _ := in.views.Get().(*runView)
	if v == nil {
		v = &runView{}
		v.call = v.run
	}
	v.instrumented = instrumented{meter: in.meter, deferred: &v.written}
	v.fn = fn
	err := a.Atomically(ctx, keys, v.call)
	// Reported whether or not the run committed: a write that did not
	// happen costs a reader one needless invalidation, never a stale value.
	for _, k := range v.written {
		in.wrote(ctx, k)
	}
	clear(v.written)
	v.instrumented, v.fn, v.written = instrumented{}, nil, v.written[:0]
	if cap(v.written) > 1024 {
		v.written = nil
	}
	in.views.Put(v)
	return err
}

// runView is the wrapper of one atomic run's tx, with what the run wrote.
// Views are pooled: one per run was an allocation of the whole wrapper,
// and of the function handed to the backend.
type runView struct {
	instrumented
	written []string
	fn      func(tx backends.Backend) error // the caller's
	call    func(tx backends.Backend) error // v.run, bound once
}

// run is the function the backend runs with the tx: fn, on its wrapper.
// A backend may run it again (a retried PostgreSQL transaction): the
// writes of every try are reported.
func (v *runView) run(tx backends.Backend) error {
	v.b = tx
	return v.fn(&v.instrumented)
}

// wrote reports a write of key once a reader can see it: now, or at the
// end of the atomic run it is part of. A write reported in error (the
// backend refused it) costs one needless invalidation.
func (in *instrumented) wrote(ctx context.Context, key string) {
	if !in.r.notify.active() {
		return
	}
	if in.deferred != nil {
		*in.deferred = append(*in.deferred, key)
		return
	}
	in.r.notify.wrote(ctx, in.r, key)
}

// Unwrap returns the backend as opened: backends.As finds its optional
// capabilities through the wrapper.
func (in *instrumented) Unwrap() backends.Backend { return in.b }

// Close is the table's job (Table.Close closes the raw backend).
func (in *instrumented) Close() error { return nil }

var (
	_ backends.Backend = (*instrumented)(nil)
	_ backends.Atomic  = (*instrumented)(nil)
)
