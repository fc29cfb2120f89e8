package backendtest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// Notifying is a backend that is a backends.Notifier of what the test
// reports (Report), as an L1 tier is of PostgreSQL's fences. It hides the
// wrapped backend's own capabilities (it does not Unwrap) but Atomic, so
// its readers see only this Notifier. While Pause is set, a read sends a
// channel on it after it began (after its reader registered its keys) and
// waits until the test closes that channel.
type Notifying struct {
	backends.Backend
	watching atomic.Bool

	mu     sync.Mutex
	fns    map[int]func(backends.Outside)
	nextFn int
	pause  chan chan struct{}
}

// NewNotifying wraps b, Watching.
func NewNotifying(b backends.Backend) *Notifying {
	n := &Notifying{Backend: b, fns: map[int]func(backends.Outside){}}
	n.watching.Store(true)
	return n
}

// Notify is backends.Notifier's.
func (n *Notifying) Notify(fn func(backends.Outside)) (cancel func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := n.nextFn
	n.nextFn++
	n.fns[id] = fn
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.fns, id)
	}
}

// Watching is backends.Notifier's: true but after a Lost report, until
// SetWatching.
func (n *Notifying) Watching() bool { return n.watching.Load() }

// SetWatching sets what Watching answers.
func (n *Notifying) SetWatching(on bool) { n.watching.Store(on) }

// Report sends o as a backend's goroutine would: Watching turns false
// before a Lost report.
func (n *Notifying) Report(o backends.Outside) {
	if o.Lost {
		n.watching.Store(false)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, fn := range n.fns {
		fn(o)
	}
}

// Subscribers is how many Notify subscriptions are live.
func (n *Notifying) Subscribers() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.fns)
}

// Pause holds each read from now on (nil: none) as the type's comment
// says.
func (n *Notifying) Pause(p chan chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pause = p
}

func (n *Notifying) paused() {
	n.mu.Lock()
	p := n.pause
	n.mu.Unlock()
	if p != nil {
		release := make(chan struct{})
		p <- release
		<-release
	}
}

func (n *Notifying) Get(ctx context.Context, key string) ([]byte, bool, error) {
	n.paused()
	return n.Backend.Get(ctx, key)
}

func (n *Notifying) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	n.paused()
	return n.Backend.MGet(ctx, keys, dst)
}

// MGetWithTTL makes the backend an ExpiryReader, as an L1 tier is: a
// read-only EXEC reads its keys with it, before its requests run.
func (n *Notifying) MGetWithTTL(ctx context.Context, keys []string, dst []backends.Expiring) ([]backends.Expiring, error) {
	n.paused()
	for _, k := range keys {
		v, ok, err := n.Backend.Get(ctx, k)
		if err != nil {
			return dst, err
		}
		ttl, err := n.Backend.TTL(ctx, k)
		if err != nil {
			return dst, err
		}
		if !ok {
			v = nil
		}
		dst = append(dst, backends.Expiring{Val: v, TTL: ttl})
	}
	return dst, nil
}

func (n *Notifying) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	got, err := n.MGetWithTTL(ctx, []string{key}, nil)
	if err != nil {
		return nil, 0, false, err
	}
	return got[0].Val, got[0].TTL, got[0].Val != nil, nil
}

func (n *Notifying) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	return n.Backend.(backends.Atomic).Atomically(ctx, keys, fn)
}

var (
	_ backends.Notifier     = (*Notifying)(nil)
	_ backends.ExpiryReader = (*Notifying)(nil)
	_ backends.Atomic       = (*Notifying)(nil)
)

// Unwatching is a Notifying that serves the reads of some keys unwatched
// (backends.UnwatchedReads), as Valkey serves its refetches and PTTL: a
// Get or MGet marks them as it returns, an atomic run as Atomically
// returns (Valkey confirms a run's reads then).
type Unwatching struct {
	*Notifying

	seq       atomic.Uint64
	mu        sync.Mutex
	unwatched map[string]bool   // the keys served unwatched
	marks     map[string]uint64 // by key, the last unwatched read's mark
}

// NewUnwatching wraps b, Watching, serving every read watched until
// Unwatch.
func NewUnwatching(b backends.Backend) *Unwatching {
	return &Unwatching{Notifying: NewNotifying(b), unwatched: map[string]bool{}, marks: map[string]uint64{}}
}

// Unwatch has the reads of keys (as the route stores them) served
// unwatched from now on.
func (u *Unwatching) Unwatch(keys ...string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, k := range keys {
		u.unwatched[k] = true
	}
}

func (u *Unwatching) mark(keys ...string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, k := range keys {
		if u.unwatched[k] {
			u.marks[k] = u.seq.Add(1)
		}
	}
}

// ReadToken is backends.UnwatchedReads'.
func (u *Unwatching) ReadToken() uint64 { return u.seq.Load() }

// Unwatched is backends.UnwatchedReads'.
func (u *Unwatching) Unwatched(key string, tok uint64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.marks[key] > tok
}

func (u *Unwatching) Get(ctx context.Context, key string) ([]byte, bool, error) {
	defer u.mark(key)
	return u.Notifying.Get(ctx, key)
}

func (u *Unwatching) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	defer u.mark(keys...)
	return u.Notifying.MGet(ctx, keys, dst)
}

func (u *Unwatching) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	defer u.mark(keys...)
	return u.Notifying.Atomically(ctx, keys, fn)
}

var _ backends.UnwatchedReads = (*Unwatching)(nil)
