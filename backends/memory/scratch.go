package memory

import (
	"sync"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/sweep"
)

// Scratch is a Store of its own for a short-lived copy of a few keys:
// package snapshot runs an atomic run of a remote store on one. It answers
// every command as a route's Store does (the conformance suite runs on it,
// scratch_test.go), but is cheaper to make and drop, which it is once per
// run:
//
//   - unbounded: an eviction would read as a deletion to write back;
//   - no sweeper and no coarse clock, so no goroutines: what expires in it
//     is dropped with it. Starting and stopping those goroutines was
//     most of what making and dropping a route's Store cost.
type Scratch struct {
	*Store
}

// scratches keeps closed Scratches for reuse: making the otter cache was
// most of what a read-only EXEC on a remote route cost.
var scratches = sync.Pool{New: func() any {
	c := otter.Must(&otter.Options[string, *item]{Executor: inline})
	// A zero Sweeper is never started: Wrote only records a deadline.
	return &Scratch{Store: &Store{c: c, sweep: &sweep.Sweeper[*item]{}, cursors: newCursors(), moves: new(sync.Mutex),
		solo: new(sync.Mutex), release: func() {}}}
}}

// NewScratch returns an empty Scratch whose collections report OBJECT
// ENCODING by enc (nil: Redis's defaults). Close it when done, and use it
// no more: it is emptied and made again by a later NewScratch.
func NewScratch(enc *backends.Encodings) *Scratch {
	s := scratches.Get().(*Scratch)
	s.enc = enc
	return s
}

// maxPooledScratch is the most keys a Scratch may have held and still be
// kept: the cache's table stays as large as it grew, and emptying it costs
// its size.
const maxPooledScratch = 64

// Close empties the scratch and keeps it for reuse. Values read from it
// stay the reader's: a write stores a copy, never into an earlier item.
func (s *Scratch) Close() error {
	if s.c.EstimatedSize() > maxPooledScratch {
		return nil
	}
	s.c.InvalidateAll() // its zero Sweeper keeps nothing (Wrote never lowers a next of 0)
	if s.cursors.Len() > 0 {
		s.cursors.Close()
		s.cursors = newCursors()
	}
	scratches.Put(s)
	return nil
}

// Peek returns key's value and deadline (unix nanoseconds, 0 for none) as
// stored, without telling the cache's policy; ok is false when the key is
// absent or expired, or holds a collection (PeekColl). The value is the caller's to read, never to modify.
func (s *Scratch) Peek(key string) (val []byte, exp int64, ok bool) {
	it, found := s.c.GetIfPresent(key)
	if !found || !it.alive() || it.isColl() {
		return nil, 0, false
	}
	return it.val(), it.exp, true
}

// LoadColl puts a collection under key with deadline exp (unix
// nanoseconds, 0 for none): the scratch holds v itself, and a run's
// changes in place change it.
func (s *Scratch) LoadColl(key string, v backends.Value, exp int64) {
	s.c.Set(key, newCollItem(v, exp))
}

// PeekColl returns the collection key holds and its deadline; ok is false
// when it is absent, expired, or a string.
func (s *Scratch) PeekColl(key string) (v backends.Value, exp int64, ok bool) {
	it, found := s.c.GetIfPresent(key)
	if !found || !it.alive() || !it.isColl() {
		return nil, 0, false
	}
	return it.coll().v, it.exp, true
}
