package route

import (
	"context"
	"sync"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// A route's backend is wrapped once: every call through it is timed and
// counted (metrics.go), a write is held to max_value_bytes (limit.go),
// seen by WATCH before it runs (watch.go), and reported to the RESP
// front's client tracking once it returns (notify.go); an atomic run's tx
// is wrapped the same way (run.go). Each method below is those steps in
// that order. A command on collections is one method, Do, whatever its
// type: a new command needs nothing here.

// instrumented wraps a route's backend.
type instrumented struct {
	*meter
	b backends.Backend
	// deferred, inside an atomic run, collects the keys written: they are
	// reported once the run has committed, when a reader can see them.
	deferred *[]string
}

// meter is what a route's wrapper and the views of its atomic runs share.
type meter struct {
	*routeMetrics
	limit valueLimit
	watch *watchTable // told of every write's keys, for WATCH
	r     *Route      // its notifier is told of every write (notify.go)
	views sync.Pool   // of *runView, reused by Atomically
}

func instrument(r *Route, m *Metrics) backends.Backend {
	return &instrumented{b: r.Backend, meter: &meter{routeMetrics: newRouteMetrics(r.Name, m),
		limit: valueLimit(r.MaxValueBytes), watch: r.watch, r: r}}
}

func (in *instrumented) Get(ctx context.Context, key string) ([]byte, bool, error) {
	start := mono()
	v, ok, err := in.b.Get(ctx, key)
	in.ops[OpGet].observe(start, err)
	if err == nil {
		in.lookup(ok)
	}
	return v, ok, err
}

func (in *instrumented) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	start := mono()
	n := len(dst)
	dst, err := in.b.MGet(ctx, keys, dst)
	in.ops[OpMGet].observe(start, err)
	if err == nil {
		for _, v := range dst[n:] {
			in.lookup(v != nil)
		}
	}
	return dst, err
}

func (in *instrumented) Set(ctx context.Context, key string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	if in.limit.tooLarge(val) {
		return backends.SetResult{}, backends.ErrValueTooLarge
	}
	if in.watch.begin(key) {
		defer in.watch.end(key, true)
	}
	start := mono()
	res, err := in.b.Set(ctx, key, val, opts)
	in.ops[OpSet].observe(start, err)
	in.wrote(ctx, key)
	return res, err
}

func (in *instrumented) MSet(ctx context.Context, pairs []backends.KV) error {
	for _, p := range pairs {
		if in.limit.tooLarge(p.Val) {
			return backends.ErrValueTooLarge
		}
	}
	if in.watch.watchers.Load() > 0 { // the keys' slice only then
		keys := make([]string, len(pairs))
		for i, p := range pairs {
			keys[i] = p.Key
		}
		if in.watch.beginAll(keys) {
			defer in.watch.endAll(keys, 0)
		}
	}
	start := mono()
	err := in.b.MSet(ctx, pairs)
	in.ops[OpMSet].observe(start, err)
	for _, p := range pairs {
		in.wrote(ctx, p.Key)
	}
	return err
}

func (in *instrumented) Del(ctx context.Context, keys []string) (n int64, err error) {
	if in.watch.beginAll(keys) {
		defer func() { in.watch.endAll(keys, unchangedIf(err == nil && n == 0)) }()
	}
	start := mono()
	n, err = in.b.Del(ctx, keys)
	in.ops[OpDel].observe(start, err)
	in.wroteAll(ctx, keys)
	return n, err
}

func (in *instrumented) Exists(ctx context.Context, keys []string) (int64, error) {
	start := mono()
	n, err := in.b.Exists(ctx, keys)
	in.ops[OpExists].observe(start, err)
	return n, err
}

func (in *instrumented) Update(ctx context.Context, key string, u backends.Update) error {
	o := in.of(u.Op())
	if in.watch.begin(key) {
		defer in.watch.end(key, true)
	}
	start := mono()
	err := in.b.Update(ctx, key, in.limit.update(u))
	o.observe(start, err)
	in.wrote(ctx, key)
	return err
}

func (in *instrumented) TTL(ctx context.Context, key string) (time.Duration, error) {
	start := mono()
	d, err := in.b.TTL(ctx, key)
	in.ops[OpTTL].observe(start, err)
	return d, err
}

// Do runs a command on collections: a write is limited, watched and
// reported for the keys it may write.
func (in *instrumented) Do(ctx context.Context, keys []string, op backends.Op) (err error) {
	var written []string
	switch op.Writes() {
	case backends.WritesAll:
		written = keys
	case backends.WritesFirst:
		written = keys[:1]
	}
	if written != nil {
		if err := in.limit.op(op); err != nil {
			return err
		}
		if in.watch.beginAll(written) {
			defer func() { in.watch.endAll(written, unchangedBy(op, len(written))) }()
		}
	}
	o := in.of(op.Name())
	start := mono()
	err = in.b.Do(ctx, keys, op)
	o.observe(start, err)
	if !foundNothing(op) {
		in.wroteAll(ctx, written)
	}
	return err
}

// DoSeq runs a pipelined run of commands on one key (backends.Sequencer):
// each op is limited and counted as Do does it; the key is watched and
// reported once, and the run's time observed once per stretch of one
// command, as each command's share (tookSeq). A store that cannot run
// them in one call runs them one Do at a time.
func (in *instrumented) DoSeq(ctx context.Context, key string, ops []backends.Op, errs []error) error {
	writes := false
	for _, op := range ops {
		if op.Writes() != backends.ReadOnly {
			if in.limit.op(op) != nil { // rare: let Do answer each
				for i, op := range ops {
					errs[i] = in.Do(ctx, []string{key}, op)
				}
				return nil
			}
			writes = true
		}
	}
	keys := []string{key}
	if writes && in.watch.beginAll(keys) {
		defer func() { in.watch.endAll(keys, unchangedByAll(ops)) }()
	}
	start := mono()
	var err error
	if sq, ok := backends.As[backends.Sequencer](in.b); ok {
		err = sq.DoSeq(ctx, key, ops, errs)
	} else {
		for i, op := range ops {
			errs[i] = in.b.Do(ctx, keys, op)
		}
	}
	in.tookSeq((mono()-start)/time.Duration(len(ops)), ops, errs, err)
	if writes {
		in.wrote(ctx, key)
	}
	return err
}

// Copy is RENAME's and COPY's: the backend's Copier, or ErrUnsupported.
// dst, and src when moved, are seen by WATCH and reported as any write
// (tracking, blocked clients: a list renamed into place feeds a BLPOP).
func (in *instrumented) Copy(ctx context.Context, src, dst string, opts backends.CopyOptions) (res backends.CopyResult, err error) {
	cp, ok := backends.As[backends.Copier](in.b)
	if !ok {
		return 0, backends.ErrUnsupported
	}
	written := []string{dst, src}
	if !opts.Move {
		written = written[:1]
	}
	if in.watch.beginAll(written) {
		defer func() { in.watch.endAll(written, unchangedIf(err == nil && res != backends.Copied)) }()
	}
	o := in.of("copy")
	start := mono()
	res, err = cp.Copy(ctx, src, dst, opts)
	o.observe(start, err)
	if err == nil && res == backends.Copied {
		in.wroteAll(ctx, written)
	}
	return res, err
}

// unchangedIf is the mask of endAll: every key unchanged, or none.
func unchangedIf(none bool) uint64 {
	if none {
		return ^uint64(0)
	}
	return 0
}

// unchangedByAll is the mask of endAll for the one key of a run of ops:
// unchanged when each op that writes left it so.
func unchangedByAll(ops []backends.Op) uint64 {
	for _, op := range ops {
		if op.Writes() != backends.ReadOnly && unchangedBy(op, 1)&1 == 0 {
			return 0
		}
	}
	return ^uint64(0)
}

// unchangedBy is the mask of endAll for the first n keys of op, once it
// has run: all of them for a blocking command that found nothing, those
// an Unchanging op left as they were, none otherwise.
func unchangedBy(op backends.Op, n int) uint64 {
	if foundNothing(op) {
		return ^uint64(0)
	}
	u, ok := op.(backends.Unchanging)
	if !ok {
		return 0
	}
	var mask uint64
	for i := range min(n, 64) {
		if u.Unchanged(i) {
			mask |= 1 << i
		}
	}
	return mask
}

// foundNothing reports a blocking command (BLPOP, BZPOPMIN…) that ran
// here and found nothing to pop: it wrote nothing. Reported, its keys
// would wake the clients blocked on them, itself among them, each of
// which runs its command again and reports again: blocked clients would
// spin. One that a store passed on (Valkey) is reported as any write.
func foundNothing(op backends.Op) bool {
	b, ok := op.(interface{ Ready() bool })
	if !ok || b.Ready() {
		return false
	}
	p, ok := op.(backends.Passable)
	return !ok || p.Request().Reply.Kind == backends.ReplyNone
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

func (in *instrumented) wroteAll(ctx context.Context, keys []string) {
	for _, k := range keys {
		in.wrote(ctx, k)
	}
}

// Unwrap returns the backend as opened: backends.As finds its optional
// capabilities through the wrapper.
func (in *instrumented) Unwrap() backends.Backend { return in.b }

// Close is the table's job (Table.Close closes the raw backend).
func (in *instrumented) Close() error { return nil }

var (
	_ backends.Backend   = (*instrumented)(nil)
	_ backends.Atomic    = (*instrumented)(nil)
	_ backends.Copier    = (*instrumented)(nil)
	_ backends.Sequencer = (*instrumented)(nil)
)
