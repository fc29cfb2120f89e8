package route

import (
	"context"
	"hash/maphash"
	"sync/atomic"

	"github.com/pgcache/pgcache/backends"
)

// WATCH: a route learns of every write through it (its wrapper counts it
// in the written key's bucket: in flight from before the write reaches the
// backend, then as a change unless the write turned out to change nothing),
// and of writes made elsewhere from a backend that is backends.Watchable (an
// L1 tier's fences, a Valkey client cache's invalidations). A bucket is
// shared by the keys that hash to it, so a write of another key may abort
// an EXEC too; Redis clients retry an aborted EXEC. Nothing is counted
// while no client watches a key of the route.
const watchBuckets = 1 << 14

type watchTable struct {
	watchers atomic.Int64 // clients watching a key of the route
	seed     maphash.Seed
	buckets  [watchBuckets]watchBucket
}

// watchBucket counts the writes of its keys. Both counts only grow or
// come back down to where they were, so no later state looks like an
// earlier one to a Mark: a write that changed nothing leaves changed as
// it was, and EXEC does not fail for it (Redis's does not either: SMOVE
// of a member the destination has, a BLPOP that found nothing, a COPY that
// did not copy).
type watchBucket struct {
	inFlight atomic.Int64  // writes begun and not ended
	changed  atomic.Uint64 // writes ended that changed a key
}

func newWatchTable() *watchTable { return &watchTable{seed: maphash.MakeSeed()} }

func (w *watchTable) bucket(k string) *watchBucket {
	return &w.buckets[maphash.String(w.seed, k)%watchBuckets]
}

// begin records that a write of k starts, before it reaches the backend;
// when it returns true end must follow. False: nobody watches, nothing to
// end.
func (w *watchTable) begin(k string) bool {
	if w.watchers.Load() == 0 {
		return false
	}
	w.bucket(k).inFlight.Add(1)
	return true
}

// end records that a write of k begun has ended, having changed k or not.
func (w *watchTable) end(k string, changed bool) {
	b := w.bucket(k)
	if changed {
		b.changed.Add(1)
	}
	b.inFlight.Add(-1)
}

// beginAll is begin for each of keys (all of them or none).
func (w *watchTable) beginAll(keys []string) bool {
	if w.watchers.Load() == 0 {
		return false
	}
	for _, k := range keys {
		w.bucket(k).inFlight.Add(1)
	}
	return true
}

// endAll is end for each of keys, keys[i] unchanged where bit i of
// unchanged is set.
func (w *watchTable) endAll(keys []string, unchanged uint64) {
	for i, k := range keys {
		w.end(k, i >= 64 || unchanged&(1<<i) == 0)
	}
}

// Mark is what WATCH remembers of one key.
type Mark struct {
	local  uint64
	remote uint64
}

// Watch starts watching the route's key k; Unwatch must follow. The
// backend may wait for news of an earlier write (backends.Watchable).
func (r *Route) Watch(ctx context.Context, k string) Mark {
	r.watch.watchers.Add(1)
	m := Mark{local: r.watch.bucket(k).changed.Load()}
	if w, ok := backends.As[backends.Watchable](r.raw); ok {
		m.remote = w.WatchToken(ctx, k)
	}
	return m
}

// Unwatch ends one Watch.
func (r *Route) Unwatch() { r.watch.watchers.Add(-1) }

// Changed reports whether k may have been written since m was taken,
// through this route or (as far as the backend can tell) elsewhere.
func (r *Route) Changed(k string, m Mark) bool {
	if r.ChangedHere(k, m) {
		return true
	}
	if w, ok := backends.As[backends.Watchable](r.raw); ok {
		return w.ChangedSince(k, m.remote)
	}
	return false
}

// ChangedHere reports whether k may have been written through this route
// since m was taken: a write of its bucket changed a key, or one is in
// flight (it may have reached the backend already). EXEC asks it again
// once it holds the keys: a write through the route cannot come between;
// one elsewhere is seen when its fence arrives, so EXEC asks Changed before
// it takes the keys (an atomic run fences its own keys, which Changed would
// take for a write).
func (r *Route) ChangedHere(k string, m Mark) bool {
	b := r.watch.bucket(k)
	// In flight first: a write ending between the two loads is then seen
	// as the change it made, or as in flight.
	return b.inFlight.Load() != 0 || b.changed.Load() != m.local
}
