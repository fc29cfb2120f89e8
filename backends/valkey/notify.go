package valkey

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
)

// What the client cache tells CLIENT TRACKING (backends.Notifier): the
// server's invalidations, which it sends for every key a connection read
// through the client cache (CLIENT CACHING YES before the read) once
// another client (or this process) changes it, or a null when the keyspace
// is flushed; and the end of a connection, after which the server tracks
// nothing it read.
//
// They arrive in the cache store valkey-go gives each connection (shard:
// Delete and Close), not through ClientOption.OnInvalidations: that
// callback is called with nil both for a flush and for a connection that
// ended, which must be told apart (All and Lost), and setting it makes
// valkey-go start a background goroutine per connection.
//
// The order argument. A report is made after the shard has dropped the
// keys, and while someone listens, after every other shard has dropped
// them too: a read that starts after fn returned does not find the old
// value stored. It may join a cached read already in flight on another
// connection, which the server ran before the write; that connection
// tracked the key, so its own invalidation follows and is reported again.
// Every stale value served is followed by a report naming its key.
//
// Reads the server does not track: the refetch of a read that a write
// of this process fenced (clientcache.go), and EXISTS, TTL and EXPIRETIME,
// which go uncached. While someone listens, their keys are reported at
// once, after the read: a tracking client drops what they returned, as it
// does for a backend that is not a Notifier.

// notes are the subscribers of a driver's client cache.
type notes struct {
	n    atomic.Int32 // subscribers: while 0 nothing is reported
	mu   sync.Mutex
	subs map[uint64]noteSub
	next uint64
}

// noteSub is one subscriber: a route's reports, its keys without prefix.
type noteSub struct {
	prefix string
	fn     func(backends.Outside)
}

// listened reports whether anyone subscribed.
func (c *clientCache) listened() bool { return c != nil && c.notes.n.Load() != 0 }

// subscribe calls fn with the reports of keys under prefix (stripped), and
// with every All and Lost, until cancel.
func (c *clientCache) subscribe(prefix string, fn func(backends.Outside)) (cancel func()) {
	n := &c.notes
	n.mu.Lock()
	if n.subs == nil {
		n.subs = map[uint64]noteSub{}
	}
	id := n.next
	n.next++
	n.subs[id] = noteSub{prefix: prefix, fn: fn}
	n.n.Add(1)
	n.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			n.mu.Lock()
			delete(n.subs, id)
			n.n.Add(-1)
			n.mu.Unlock()
		})
	}
}

// tell reports keys as the server stores them to the subscribers of their
// prefixes; with all (or lost), everything to every subscriber.
func (c *clientCache) tell(keys []string, all, lost bool) {
	n := &c.notes
	n.mu.Lock()
	subs := make([]noteSub, 0, len(n.subs))
	for _, s := range n.subs {
		subs = append(subs, s)
	}
	n.mu.Unlock()
	for _, s := range subs {
		if all || lost {
			s.fn(backends.Outside{All: true, Lost: lost, Source: "valkey"})
			continue
		}
		var mine []string
		for _, k := range keys {
			if strings.HasPrefix(k, s.prefix) {
				mine = append(mine, k[len(s.prefix):])
			}
		}
		if len(mine) > 0 {
			s.fn(backends.Outside{Keys: mine, Source: "valkey"})
		}
	}
}

// invalidated reports the server's invalidation of keys (nil: all), which
// shard from has applied, once every other shard has dropped them too.
func (c *clientCache) invalidated(from *shard, keys []valkey.ValkeyMessage) {
	if !c.listened() {
		return
	}
	var ks []string
	if keys != nil {
		ks = make([]string, len(keys))
		for i := range keys {
			ks[i], _ = keys[i].ToString()
		}
	}
	c.mu.RLock()
	for _, s := range c.shards {
		if s != from {
			s.dropStored(ks)
		}
	}
	c.mu.RUnlock()
	c.tell(ks, keys == nil, false)
}

// dropStored drops the stored entries of keys (nil: all of them); fills in
// flight stay, as in Delete.
func (s *shard) dropStored(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if keys == nil {
		for _, e := range s.entries {
			if !e.pending {
				s.drop(e)
			}
		}
		return
	}
	s.evictLocked(keys)
}

// watching reports whether the server tracks reads now: a connection is up.
func (c *clientCache) watching() bool {
	if c == nil {
		return false
	}
	live := c.live.Load()
	return live != nil && len(*live) > 0
}

// Notify calls fn with the route's keys another client changed, as the
// route stores them, from now on, until cancel (backends.Notifier). Without
// a client cache nothing is reported, and Watching is false.
func (s *Store) Notify(fn func(backends.Outside)) (cancel func()) {
	if s.d.cache == nil {
		return func() {}
	}
	return s.d.cache.subscribe(s.prefix, fn)
}

// Watching reports whether the client cache is on and a connection to the
// server is up (its reads are tracked).
func (s *Store) Watching() bool { return s.d.cache.watching() }

// untracked reports keys (as the server stores them) that a read returned
// without the server tracking them, while someone listens.
func (s *Store) untracked(keys ...string) {
	if s.d.cache.listened() {
		s.d.cache.tell(keys, false, false)
	}
}

var _ backends.Notifier = (*Store)(nil)
