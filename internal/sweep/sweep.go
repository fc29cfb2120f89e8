// Package sweep frees the expired items of otter caches whose items carry
// their own deadline.
//
// The caches of pgcache check each item's deadline against the clock on
// every read, so expiry in otter would only ever free memory. Otter can do
// that (Options.ExpiryCalculator), but a cache with expiry hands every
// access to its policy through the read buffer, a GET's and an update's in
// place alike, even when no read moves a deadline; a cache without expiry
// skips that buffer until it is half full, when its frequency sketch is
// made. Under redis-benchmark -P 16 SET on the memory route the buffer and
// its replay were a large part of the server's CPU (docs/performance.md;
// BenchmarkExpiry runs both ways).
//
// A Sweeper frees them instead: it walks the cache once the earliest
// deadline it knows of has passed, and invalidates what has expired. A walk
// costs a visit per item, so walks are spaced at least a hundred times
// their own length apart (and at least MinGap): the sweeper takes at most
// about 1% of a core. So an expired item of a small cache holds its
// memory up to about two MinGap longer, and of a large one a hundred
// walks' length, a walk's length being BenchmarkWalk's ns/item times the
// items (docs/performance.md); a full cache evicts it meanwhile like any
// cold item. A cache where nothing carries a deadline is never walked.
package sweep

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// MinGap is the least time between the starts of two walks, and how often
// the sweeper looks at the clock.
const MinGap = time.Second

// spacing is how many times a walk's length the next walk waits at least.
const spacing = 100

// never is the deadline of a sweeper that knows of none.
const never = math.MaxInt64

// NewClock returns a clock for otter's Options.Clock that is read once a
// MinGap: otter reads its clock for every item a walk visits. Stop it when
// the caches using it are closed.
func NewClock() *otter.CoarseClock { return otter.NewCoarseClock(MinGap) }

// Sweeper frees the expired items of one cache.
type Sweeper[V any] struct {
	c   *otter.Cache[string, V]
	exp func(V) int64 // an item's deadline in unix nanoseconds, 0 for none

	// next is the earliest deadline of an item the last walk left or that
	// was written since: the next walk is due once it has passed.
	next atomic.Int64

	freed atomic.Int64 // items invalidated
	walks atomic.Int64

	stop, done chan struct{}
	stopping   sync.Once
}

// Start starts a sweeper of c, whose items' deadlines exp reads (unix
// nanoseconds, 0 for none). Tell it of every item written with a deadline
// (Wrote), and Stop it before c is dropped.
func Start[V any](c *otter.Cache[string, V], exp func(V) int64) *Sweeper[V] {
	s := &Sweeper[V]{c: c, exp: exp, stop: make(chan struct{}), done: make(chan struct{})}
	s.next.Store(never)
	go s.run()
	return s
}

// Wrote tells the sweeper of an item written with deadline exp, once the
// write is done: an earlier call could come before a walk that starts
// afresh and misses the item still to be written.
func (s *Sweeper[V]) Wrote(exp int64) {
	for {
		cur := s.next.Load()
		if exp >= cur || s.next.CompareAndSwap(cur, exp) {
			return
		}
	}
}

// Stop ends the sweeper, waiting for a walk under way to end. Later calls
// do nothing.
func (s *Sweeper[V]) Stop() {
	s.stopping.Do(func() { close(s.stop) })
	<-s.done
}

// Freed is how many expired items the sweeper has invalidated.
func (s *Sweeper[V]) Freed() int64 { return s.freed.Load() }

// Walks is how many walks the sweeper has made.
func (s *Sweeper[V]) Walks() int64 { return s.walks.Load() }

func (s *Sweeper[V]) run() {
	defer close(s.done)
	tick := time.NewTicker(MinGap)
	defer tick.Stop()
	var earliest time.Time // when the next walk may start
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		if now.Before(earliest) || now.UnixNano() < s.next.Load() {
			continue
		}
		// Deadlines written from here on lower next again; those of items
		// written before are the walk's to find.
		s.next.Store(never)
		left, ok := s.walk(now.UnixNano())
		if !ok {
			return
		}
		s.Wrote(left)
		s.walks.Add(1)
		earliest = now.Add(max(MinGap, time.Since(now)*spacing))
	}
}

// walk invalidates the items whose deadline is at or before now and
// returns the earliest deadline after it (never when none); ok is false
// when Stop ended it.
func (s *Sweeper[V]) walk(now int64) (left int64, ok bool) {
	left = never
	expired := func(v V) bool {
		e := s.exp(v)
		return e != 0 && e <= now
	}
	// An item may be written again between the visit and the invalidation:
	// only an item still expired goes.
	drop := func(v V) (V, otter.ComputeOp) {
		if expired(v) {
			s.freed.Add(1)
			return v, otter.InvalidateOp
		}
		return v, otter.CancelOp
	}
	i := 0
	for k, v := range s.c.All() {
		if i++; i%1024 == 0 {
			select {
			case <-s.stop:
				return left, false
			default:
			}
		}
		switch e := s.exp(v); {
		case e == 0:
		case e > now:
			left = min(left, e)
		default:
			s.c.ComputeIfPresent(k, drop)
		}
	}
	return left, true
}
