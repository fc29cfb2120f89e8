package memory

import (
	"sync"
	"sync/atomic"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/backends"
)

// Changes nobody asked for: a key's deadline passing and otter evicting a
// key for size. CLIENT TRACKING must hear of both (Redis sends an
// invalidation for an expired key and an evicted one), and no write
// through the store's methods reports them.
//
// Otter tells of every removal in OnAtomicDeletion, under the lock of the
// key's bucket and before the removal is visible. The hook costs a write
// that replaces a key one atomic load while nobody listens; while someone
// does, it queues the keys of evictions and of expired items removed (by
// the sweeper, an Update or a Del that finds one, a read that finds one),
// and the route's notifier goroutine reports them. Before it reports an
// eviction it takes the key's bucket lock once (a compute that changes
// nothing), so the removal it reports is visible: a read that starts after
// fn returned does not find the evicted value. An expired item needs no
// such wait: every read checks the deadline, so it is gone for reads from
// the deadline on, whether freed or not.
//
// Replacements and explicit removals of live keys are not reported: they
// are writes through the store, which the route reports itself.

// maxPending bounds the keys queued for the notifier goroutine; past it the
// keys are dropped and one Outside{All} goes out instead, so a burst of
// evictions costs bounded memory.
const maxPending = 1 << 16

// notifier is a route's subscribers and the changes queued for them.
type notifier struct {
	c    *cache       // set once the cache is made, before any removal
	subs atomic.Int32 // subscribers: while 0 the hook returns at once

	mu       sync.Mutex
	fns      map[uint64]func(backends.Outside)
	nextID   uint64
	pending  []change
	overflow string // source of the changes dropped past maxPending, "" none

	wake       chan struct{}
	stop, done chan struct{}
}

// change is one key removed without a write: by its deadline or for size.
type change struct {
	key    string // otter's copy: never changed
	source string // "expiry" or "eviction"
}

func newNotifier() *notifier {
	n := &notifier{fns: map[uint64]func(backends.Outside){}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go n.run()
	return n
}

// deleted is the cache's OnAtomicDeletion. It runs under the key's bucket
// lock: it may not call the cache, and it only queues.
func (n *notifier) deleted(e otter.DeletionEvent[string, *item]) {
	if n.subs.Load() == 0 {
		return
	}
	var source string
	switch e.Cause {
	case otter.CauseOverflow:
		source = "eviction"
	case otter.CauseInvalidation, otter.CauseExpiration:
		if e.Value == nil || e.Value.exp == 0 || e.Value.exp > now() {
			return // a live key removed by a write: the route reports it
		}
		source = "expiry"
	default:
		return // a replacement: a write
	}
	n.mu.Lock()
	if len(n.pending) < maxPending {
		n.pending = append(n.pending, change{key: e.Key, source: source})
	} else if n.overflow == "" {
		n.overflow = source
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// listened reports whether anyone subscribed; a store without a notifier
// (a Scratch) has nobody.
func (n *notifier) listened() bool { return n != nil && n.subs.Load() != 0 }

// subscribe adds fn until cancel is called.
func (n *notifier) subscribe(fn func(backends.Outside)) (cancel func()) {
	if n == nil {
		return func() {}
	}
	n.mu.Lock()
	id := n.nextID
	n.nextID++
	n.fns[id] = fn
	n.subs.Add(1)
	n.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.mu.Lock()
			delete(n.fns, id)
			n.subs.Add(-1)
			n.mu.Unlock()
		})
	}
}

// run reports what deleted queued, until close.
func (n *notifier) run() {
	defer close(n.done)
	cancel := func(old *item) (*item, otter.ComputeOp) { return old, otter.CancelOp }
	for {
		select {
		case <-n.stop:
			return
		case <-n.wake:
		}
		n.mu.Lock()
		batch, overflow := n.pending, n.overflow
		n.pending, n.overflow = nil, ""
		fns := make([]func(backends.Outside), 0, len(n.fns))
		for _, fn := range n.fns {
			fns = append(fns, fn)
		}
		n.mu.Unlock()
		var expired, evicted []string
		for _, ch := range batch {
			if ch.source == "eviction" {
				// The hook ran inside the removal, under the bucket lock:
				// a compute of the key waits until it is done.
				n.c.ComputeIfPresent(ch.key, cancel)
				evicted = append(evicted, ch.key)
			} else {
				expired = append(expired, ch.key)
			}
		}
		for _, fn := range fns {
			if len(expired) > 0 {
				fn(backends.Outside{Keys: expired, Source: "expiry"})
			}
			if len(evicted) > 0 {
				fn(backends.Outside{Keys: evicted, Source: "eviction"})
			}
			if overflow != "" {
				fn(backends.Outside{All: true, Source: overflow})
			}
		}
	}
}

// close stops the notifier goroutine; what is queued is dropped with the
// route's cache.
func (n *notifier) close() {
	close(n.stop)
	<-n.done
}

// Notify calls fn with the route's keys that expired or were evicted, from
// now on, until cancel is called (backends.Notifier). Keys are reported as
// the route stores them; several removed together come in one Outside.
func (s *Store) Notify(fn func(backends.Outside)) (cancel func()) { return s.notes.subscribe(fn) }

// Watching is always true for a route's store: every expiry and eviction
// is seen. (A Scratch has no notifier: it is no route's.)
func (s *Store) Watching() bool { return s.notes != nil }

// expired frees k's item, found expired by a read, while someone listens,
// so they hear of it now rather than from the sweeper (Redis removes a key
// a read finds expired, and sends its invalidation then). The item is
// freed only if the key still holds an expired one.
func (s *Store) expired(k string) {
	if !s.notes.listened() {
		return
	}
	n := now()
	s.c.ComputeIfPresent(k, func(old *item) (*item, otter.ComputeOp) {
		if old.exp != 0 && old.exp <= n {
			return old, otter.InvalidateOp
		}
		return old, otter.CancelOp
	})
}

var _ backends.Notifier = (*Store)(nil)
