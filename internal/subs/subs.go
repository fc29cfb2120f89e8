// Package subs is a set of subscribers that publishers walk without
// holding its lock while they call them, and skip at the cost of one
// atomic load while it is empty.
package subs

import (
	"sync"
	"sync/atomic"
)

// Set holds subscribers of type T (a callback, or a callback with what it
// subscribed to). The zero Set is empty and ready.
type Set[T any] struct {
	n    atomic.Int32
	mu   sync.Mutex
	subs map[uint64]T
	next uint64
}

// Add subscribes v until cancel is called; cancel may be called more than
// once.
func (s *Set[T]) Add(v T) (cancel func()) {
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[uint64]T{}
	}
	id := s.next
	s.next++
	s.subs[id] = v
	s.n.Add(1)
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.subs, id)
			s.n.Add(-1)
			s.mu.Unlock()
		})
	}
}

// Any reports whether anyone subscribed: one atomic load.
func (s *Set[T]) Any() bool { return s.n.Load() != 0 }

// List appends the subscribers to dst and returns it: the caller calls
// them without the set's lock, so a subscriber may cancel from its
// callback.
func (s *Set[T]) List(dst []T) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.subs {
		dst = append(dst, v)
	}
	return dst
}
