package memory

import (
	"context"
	"iter"
	"math/rand/v2"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/cursor"
)

// Scans of a route's cache.
//
// Otter iterates its hash table bucket by bucket, and a bucket's keys are
// copied under the bucket's lock before they are handed out. An iterator
// paused between two keys therefore holds no lock and no copy of the
// keyspace: a bucket's worth of node pointers, and the table it started on.
// It gives Redis's guarantee by itself: a key present all along is in its
// bucket when the iterator gets there. A table that grows or shrinks
// meanwhile is copied, not moved, and writers move to the new one, so the
// old table the iterator walks still holds every key it held (a key deleted
// since is skipped: otter looks a replaced node up again).
//
// Otter offers no way to resume an iteration at a position, so the paused
// iterator itself is the scan's position, kept in a cursor.Table under the
// number the client gets: at most cursor.DefaultMax per route, each about a
// goroutine's stack (iter.Pull's coroutine); a cursor dropped or unknown
// starts the scan over.

// scan is a paused iteration over a route's cache.
type scan struct {
	next func() (string, *item, bool)
	stop func()
}

func newCursors() *cursor.Table[*scan] {
	return cursor.New(1, backends.MaxCursor+1, 0, 0, func(s *scan) { s.stop() })
}

// Scan returns the live keys among the next count of the route's cache.
func (s *Store) Scan(_ context.Context, cur uint64, match string, count int) (uint64, []string, error) {
	var sc *scan
	if cur != 0 {
		sc, _ = s.cursors.Take(cur)
	}
	if sc == nil {
		next, stop := iter.Pull2(s.c.All())
		sc = &scan{next: next, stop: stop}
	}
	n := now()
	var keys []string
	for range max(count, 1) {
		k, it, ok := sc.next()
		if !ok {
			sc.stop()
			return 0, keys, nil
		}
		if it.live(n) && backends.Match(match, k) {
			keys = append(keys, k) // otter's copy of the key: never changed
		}
	}
	return s.cursors.Put(sc), keys, nil
}

// Flush removes every key of the route.
func (s *Store) Flush(context.Context) error {
	s.c.InvalidateAll()
	return nil
}

// Copy copies src's item, value and deadline, to dst.
//
// Items never change once made, so dst gets the very item src holds; a
// collection, which changes in place, is cloned unless src goes (RENAME). The
// two keys are two otter computes, not one: copies of one route are
// serialised among themselves (moves), so two RENAMEs cannot cross, and
// each compute is atomic with every other write of its key. A write of dst
// between the two is then simply later than the copy, and src is removed
// only if it still holds the item copied: a write of src in between is
// later than the RENAME, and stays. What a reader can see is the moment
// between the two, when a RENAME's dst is written and its src not yet gone;
// so a copy runs as an atomic run of its two keys (atomic.go), whose
// readers see both computes or neither.
func (s *Store) Copy(ctx context.Context, src, dst string, o backends.CopyOptions) (backends.CopyResult, error) {
	if s.locks != nil {
		var res backends.CopyResult
		err := s.Atomically(ctx, []string{src, dst}, func(tx backends.Backend) error {
			var err error
			res, err = tx.(*memTx).Store.Copy(ctx, src, dst, o)
			return err
		})
		return res, err
	}
	s.moves.Lock()
	defer s.moves.Unlock()
	n := now()
	it, ok := s.c.GetIfPresent(s.k(src))
	if !ok || !it.live(n) {
		return backends.CopyNoSource, nil
	}
	stored := false
	s.c.Compute(s.owned(dst), func(old *item, found bool) (*item, otter.ComputeOp) {
		if !o.Replace && found && old.live(n) {
			return old, otter.CancelOp
		}
		stored = true
		if it.isColl() && !o.Move { // a copy changes apart from its source
			return it.cloneColl(), otter.WriteOp
		}
		return it, otter.WriteOp
	})
	if !stored {
		return backends.CopyDstExists, nil
	}
	s.wrote(it.exp)
	if o.Move {
		s.c.Compute(s.owned(src), func(old *item, found bool) (*item, otter.ComputeOp) {
			if found && old == it {
				return old, otter.InvalidateOp
			}
			return old, otter.CancelOp
		})
	}
	return backends.Copied, nil
}

// ExpireTime returns k's deadline in unix milliseconds.
func (s *Store) ExpireTime(_ context.Context, k string) (int64, error) {
	it, ok := s.c.GetIfPresent(s.k(k))
	switch {
	case !ok || !it.alive():
		return int64(backends.TTLMissing), nil
	case it.exp == 0:
		return int64(backends.TTLPersistent), nil
	}
	return it.exp / 1e6, nil
}

// randomReach bounds how far into otter's order RandomKey walks.
const randomReach = 10_000

// RandomKey walks a random number of keys into otter's order and returns
// the first live one from there. Uniform over a route of up to randomReach
// keys; in a bigger one it picks among the first randomReach of otter's
// hash order (random per process, but not per call), which keeps a call's
// cost bounded.
func (s *Store) RandomKey(context.Context) (string, bool, error) {
	size := s.c.EstimatedSize()
	if size == 0 {
		return "", false, nil
	}
	skip := rand.IntN(min(size, randomReach))
	n := now()
	var first string
	var found bool
	i := 0
	for k, it := range s.c.All() {
		if !it.live(n) {
			continue
		}
		if !found {
			first, found = k, true
		}
		if i >= skip {
			return k, true, nil
		}
		i++
	}
	return first, found, nil // fewer live keys than the estimate
}

var (
	_ backends.Scanner     = (*Store)(nil)
	_ backends.Flusher     = (*Store)(nil)
	_ backends.Copier      = (*Store)(nil)
	_ backends.ExpireTimer = (*Store)(nil)
	_ backends.RandomKeyer = (*Store)(nil)
	_ backends.Sequencer   = (*Store)(nil)
)
