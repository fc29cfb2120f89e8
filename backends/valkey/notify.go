package valkey

import (
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/coherence/fence"
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
// of this process fenced (clientcache.go), EXISTS, TTL and EXPIRETIME,
// which go uncached. While someone listens their keys are marked
// (backends.UnwatchedReads): a reader that asks drops what they returned,
// as from a backend that is not a Notifier. An atomic run reads on a
// dedicated connection (valkey-go's DoCache is itself MULTI, PTTL, GET,
// EXEC); its keys are then read again through the client cache
// (confirmWatched in atomic.go), and marked only if that read differs.
//
// The marks are fences of their own (package coherence/fence, as the own
// writes'): a sequence per bucket of key hashes, raised by each unwatched
// read before it returns. A reader takes the sequence before it reads and
// compares its key's bucket after, so it never misses its own unwatched
// read; another reader's of a key in the same bucket meanwhile costs it an
// invalidation it did not need, never a value kept unwatched.

// noteSub is one subscriber of a driver's client cache: a route's
// reports, its keys without prefix.
type noteSub struct {
	prefix string
	fn     func(backends.Outside)
}

// listened reports whether anyone subscribed.
func (c *clientCache) listened() bool { return c != nil && c.notes.Any() }

// subscribe calls fn with the reports of keys under prefix (stripped), and
// with every All and Lost, until cancel.
func (c *clientCache) subscribe(prefix string, fn func(backends.Outside)) (cancel func()) {
	return c.notes.Add(noteSub{prefix: prefix, fn: fn})
}

// tell reports keys as the server stores them to the subscribers of their
// prefixes; with all (or lost), everything to every subscriber.
func (c *clientCache) tell(keys []string, all, lost bool) {
	for _, s := range c.notes.List(nil) {
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

// unwatched marks reads of keys (as the route under prefix stores them)
// the server will not report the changes of, while someone listens.
func (c *clientCache) unwatched(prefix string, keys ...string) {
	if !c.listened() {
		return
	}
	for _, k := range keys {
		c.unseen.Fence(c.unseen.Hash(prefix, k))
	}
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

// ReadToken is backends.UnwatchedReads': taken before a read.
func (s *Store) ReadToken() uint64 {
	if s.d.cache == nil {
		return 0
	}
	return uint64(s.d.cache.unseen.Token())
}

// Unwatched reports whether a read of key may have been served uncached
// since tok (backends.UnwatchedReads). Without a client cache nothing is
// watched anyway: the Store is not Watching, and its readers drop every
// key they read.
func (s *Store) Unwatched(key string, tok uint64) bool {
	c := s.d.cache
	return c != nil && !c.unseen.Valid(fence.Token(tok), c.unseen.Hash(s.prefix, key))
}

var (
	_ backends.Notifier       = (*Store)(nil)
	_ backends.UnwatchedReads = (*Store)(nil)
)
