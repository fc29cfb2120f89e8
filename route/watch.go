package route

import (
	"context"
	"hash/maphash"
	"sync/atomic"

	"github.com/pgcache/pgcache/backends"
)

// WATCH: a route learns of every write through it (its wrapper bumps a
// version of the written key's bucket before the write), and of writes
// made elsewhere from a backend that is backends.Watchable (an L1 tier's
// fences, a Valkey client cache's invalidations). A bucket is shared by
// the keys that hash to it, so a write of another key may abort an EXEC
// too; Redis clients retry an aborted EXEC. Nothing is bumped while no
// client watches a key of the route.
const watchBuckets = 1 << 14

type watchTable struct {
	watchers atomic.Int64 // clients watching a key of the route
	seed     maphash.Seed
	buckets  [watchBuckets]atomic.Uint64
}

func newWatchTable() *watchTable { return &watchTable{seed: maphash.MakeSeed()} }

func (w *watchTable) bucket(k string) *atomic.Uint64 {
	return &w.buckets[maphash.String(w.seed, k)%watchBuckets]
}

// touch records a write of k, for the watchers.
func (w *watchTable) touch(k string) {
	if w.watchers.Load() > 0 {
		w.bucket(k).Add(1)
	}
}

// touchAll records a write of each of keys.
func (w *watchTable) touchAll(keys []string) {
	if w.watchers.Load() > 0 {
		for _, k := range keys {
			w.bucket(k).Add(1)
		}
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
	m := Mark{local: r.watch.bucket(k).Load()}
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
// since m was taken. EXEC asks it again once it holds the keys: a write
// through the route cannot come between; one elsewhere is seen when its
// fence arrives, so EXEC asks Changed before it takes the keys (an atomic
// run fences its own keys, which Changed would take for a write).
func (r *Route) ChangedHere(k string, m Mark) bool {
	return r.watch.bucket(k).Load() != m.local
}
