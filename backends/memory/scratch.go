package memory

import (
	"sync"

	"github.com/maypok86/otter/v2"

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

// NewScratch returns an empty Scratch. Close it when done.
func NewScratch() *Scratch {
	c := otter.Must(&otter.Options[string, *item]{Executor: inline})
	// A zero Sweeper is never started: Wrote only records a deadline.
	return &Scratch{Store: &Store{c: c, sweep: &sweep.Sweeper[*item]{}, cursors: newCursors(), moves: new(sync.Mutex), release: func() {}}}
}

// Peek returns key's value and deadline (unix nanoseconds, 0 for none) as
// stored, without telling the cache's policy; ok is false when the key is
// absent or expired. The value is the caller's to read, never to modify.
func (s *Scratch) Peek(key string) (val []byte, exp int64, ok bool) {
	it, found := s.c.GetIfPresent(key)
	if !found || !it.alive() {
		return nil, 0, false
	}
	return it.val(), it.exp, true
}
