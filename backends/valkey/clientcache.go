package valkey

import (
	"container/list"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/coherence/fence"
	"github.com/pgcache/pgcache/internal/subs"
)

// The client cache is this backend's coherent L1: GETs go through
// valkey-go's DoCache, which asks the server to track the keys read (RESP3
// CLIENT TRACKING, opt-in) and drops an entry when the server says another
// client changed it. valkey-go keeps one cache store per connection and
// lets us supply it (ClientOption.NewCacheStoreFn); clientCache is that
// store, for three reasons valkey-go's own LRU cannot serve:
//
// Own writes. Since Redis 7 (redis/redis#9422) the invalidation a write
// causes reaches the writer after the write's reply (rueidis#534): for a
// moment after SET returns, DoCache still answers the old value. And a write
// goes out on any of the connections to a server (mux.go: pipeline picks one
// at random) while a key's cached reads use one (mux.go: DoCache picks by
// slot), so ordering on one connection would not help either. valkey-go has no public
// way to drop an entry. So every write of this process fences its keys once
// its reply is in (fence): entries already cached are evicted, and a fill
// (a cached read on its way to the server) that started before the fence
// may carry the old value, so it is neither stored nor joined:
//
//	reader A: Flight(k) miss, token=5 ──GET k──►   server runs GET: old value
//	writer:   SET k v2 ──►  server runs SET  ──reply──►  fence(k) = 6
//	reader B: Flight(k) sees A's fill in flight with token 5 < fence 6:
//	          errRefetch, so B reads k uncached and gets v2
//	reader A: Update(k, old): token 5 < fence 6, A gets old (it overlapped
//	          the write) and nothing is stored
//
// Fences are the L1 tier's (package coherence/fence, the protocol's leaf): a
// sequence number per bucket of key hashes (a collision costs an extra
// uncached read, never a stale one), here for this process's own writes
// alone; the server's invalidations cover everyone else's.
//
// Abandoned fills. When a cached read gives up (its context ends) its
// request may still be on the wire; its reply, arriving later, would be
// taken for the reply of the next fill of that key on that connection,
// which may have started after a write. So the abandoned slot stays taken,
// and reads of the key go uncached, until the late reply comes or the
// connection would have been declared dead for not answering (grace).
//
// Bounds. max_bytes bounds the cache across all connections, not per
// connection as valkey-go's CacheSizeEachConn does.
//
// Reconnects need nothing of ours. valkey-go creates a store with each connection and calls
// Close on it when the connection ends (pipe.go: _background calls
// p.cache.Close once the read loop has exited; newPipe makes a new store
// for the next connection). Tracking is per connection, so a new connection
// starts with an empty store: nothing is ever served across a reconnect.
// What a connection cached stays servable until valkey-go notices the
// connection ended: at once for a reset or closed socket (a killed or
// restarted server), within about CommandTimeout plus a second (its
// background PING) for a server that went silent.
type clientCache struct {
	ttl      time.Duration
	maxBytes int64
	grace    time.Duration // see "Abandoned fills"

	fences fence.Keys // this process's writes; a fill's token is fences.Token()

	used      atomic.Int64 // bytes of the stored entries, all shards
	evictions atomic.Int64 // entries dropped to stay under maxBytes
	dropped   atomic.Int64 // fills not stored because a write fenced them

	notes  subs.Set[noteSub] // CLIENT TRACKING's subscribers (notify.go)
	unseen fence.Keys        // keys of reads the server does not track (notify.go)

	mu     sync.RWMutex
	shards []*shard      // one per live connection
	next   atomic.Uint32 // the shard reclaim starts with
	// live is shards as hits read it, without mu: replaced, never changed.
	live atomic.Pointer[[]*shard]
}

const (
	fenceBuckets = 1 << 12
	// entryOverhead approximates what one entry costs beyond its key and
	// value: the entry, its map slot, its list element, the message.
	entryOverhead = 200
)

func newClientCache(ttl time.Duration, maxBytes int64, grace time.Duration) *clientCache {
	c := &clientCache{ttl: ttl, maxBytes: maxBytes, grace: grace}
	c.fences.Init(fenceBuckets)
	c.unseen.Init(fenceBuckets)
	return c
}

// newShard is valkey-go's NewCacheStoreFn: one shard per connection.
func (c *clientCache) newShard(valkey.CacheStoreOption) valkey.CacheStore {
	s := &shard{c: c, entries: map[string]*entry{}}
	c.mu.Lock()
	c.shards = append(c.shards, s)
	c.publish()
	c.mu.Unlock()
	return s
}

func (c *clientCache) remove(s *shard) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.shards {
		if x == s {
			c.shards = append(c.shards[:i], c.shards[i+1:]...)
			c.publish()
			return
		}
	}
}

// publish makes a copy of shards the one hits read; the caller holds mu.
func (c *clientCache) publish() {
	live := slices.Clone(c.shards)
	c.live.Store(&live)
}

// hit returns the cached reply of GET key if a connection has it and ms
// (unix ms) is before its deadline. It is the read path of a hot key:
// valkey-go's DoCache answers the same from the same entries (Flight), at
// a multiple of the cost (a command built, the clock read, the slot
// hashed; BenchmarkClientCacheHit, docs/performance.md).
// Any connection's entry serves: each is dropped by its own connection's
// invalidations and by every fence, however the key would be routed.
func (c *clientCache) hit(key string, ms int64) (valkey.ValkeyMessage, bool) {
	if live := c.live.Load(); live != nil {
		for _, s := range *live {
			if e := s.fresh(key, cmdGet, ms); e != nil {
				return e.val, true
			}
		}
	}
	return valkey.ValkeyMessage{}, false
}

// cmdGet is the command of the entries the cache holds: valkey-go caches a
// GET, and each key of an MGET, under "GET".
const cmdGet = "GET"

// fence records that this process wrote keys and has the server's reply.
func (c *clientCache) fence(keys ...string) {
	for _, k := range keys {
		c.fences.Fence(c.fences.Hash("", k))
	}
	c.mu.RLock()
	for _, s := range c.shards {
		s.evict(keys)
	}
	c.mu.RUnlock()
}

// fenced reports whether a write of key completed after the fill that
// took token started.
func (c *clientCache) fenced(key string, token fence.Token) bool {
	return !c.fences.Valid(token, c.fences.Hash("", key))
}

// reclaim evicts entries until the cache is back under maxBytes, shard by
// shard, starting with a different shard each time. The bound is exceeded
// at most by the entries being stored concurrently.
func (c *clientCache) reclaim() {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.shards)
	start := int(c.next.Add(1))
	for i := 0; i < n && c.used.Load() > c.maxBytes; i++ {
		c.shards[(start+i)%n].shrink()
	}
}

// entries reports how many entries are stored, for INFO.
func (c *clientCache) entries() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, s := range c.shards {
		s.mu.Lock()
		n += s.clock.Len()
		s.mu.Unlock()
	}
	return n
}

// shard is the cache of one connection: valkey-go's CacheStore.
type shard struct {
	c *clientCache

	// stored are the entries a hit may serve, by key: a read finds them
	// without taking mu. Every client of pgcache reads through the one or
	// few connections to a server, so a read lock here was an atomic add
	// that both cores fought over (docs/performance.md).
	// Entries enter it complete (their val, xat and cmd are not written
	// again) and leave it under mu, with their place in entries.
	stored sync.Map

	mu      sync.Mutex
	entries map[string]*entry // by key; nil once closed
	clock   list.List         // stored entries; the front is CLOCK's hand
	bytes   int64             // this shard's part of c.used
	closed  bool
}

// entry is a stored value, or a fill in flight (pending).
type entry struct {
	key, cmd string
	token    fence.Token // c.fences.Token() when the fill started
	start    int64       // unix ms when the fill started
	xat      int64       // unix ms from which the entry is not served
	pending  bool
	// abandoned is when Cancel gave up on the fill without a server reply
	// (unix ms); 0 for a live fill.
	abandoned int64

	done chan struct{} // closed when the fill ends; then val or err is set
	val  valkey.ValkeyMessage
	err  error

	size int64
	elem *list.Element // in shard.clock once stored
	ref  atomic.Bool   // hit since the CLOCK hand last passed
}

// touch marks a hit for CLOCK, writing the flag only when it changes: a
// hot key's hits on both cores would otherwise fight over its cache line.
func (e *entry) touch() {
	if !e.ref.Load() {
		e.ref.Store(true)
	}
}

// Wait is how readers that joined a fill get its result.
func (e *entry) Wait(ctx context.Context) (valkey.ValkeyMessage, error) {
	select {
	case <-e.done:
		return e.val, e.err
	case <-ctx.Done():
		return valkey.ValkeyMessage{}, ctx.Err()
	}
}

// refetch is the CacheEntry of a read that must go uncached.
type refetchEntry struct{}

func (refetchEntry) Wait(context.Context) (valkey.ValkeyMessage, error) {
	return valkey.ValkeyMessage{}, errRefetch
}

var refetch valkey.CacheEntry = refetchEntry{}

// fresh returns the stored entry of key for cmd, marked as hit, if ms
// (unix ms) is before its deadline; it takes no lock (see shard.stored).
func (s *shard) fresh(key, cmd string, ms int64) *entry {
	v, ok := s.stored.Load(key)
	if !ok {
		return nil
	}
	if e := v.(*entry); e.cmd == cmd && ms < e.xat {
		e.touch()
		return e
	}
	return nil
}

// Flight answers a cached read: a hit (the message), a fill to join (the
// entry), or a miss (neither), in which case valkey-go sends the read and
// calls Update or Cancel.
func (s *shard) Flight(key, cmd string, ttl time.Duration, now time.Time) (valkey.ValkeyMessage, valkey.CacheEntry) {
	ms := now.UnixMilli()
	if e := s.fresh(key, cmd, ms); e != nil {
		return e.val, nil
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return valkey.ValkeyMessage{}, nil // the read fails on the dead connection
	}
	e := s.entries[key]
	switch {
	case e == nil:
	case e.cmd != cmd:
		return valkey.ValkeyMessage{}, nil // only GET is cached; Update ignores it
	case !e.pending:
		if ms < e.xat {
			e.ref.Store(true)
			return e.val, nil
		}
		s.drop(e)
	case e.abandoned != 0:
		if ms-e.abandoned < s.c.grace.Milliseconds() {
			return valkey.ValkeyMessage{}, refetch
		}
		delete(s.entries, key) // its reply can no longer come on this connection
	case s.c.fenced(key, e.token):
		return valkey.ValkeyMessage{}, refetch
	default:
		return valkey.ValkeyMessage{}, e
	}
	// The key is the caller's (it may point into a request's buffer, or
	// share one allocation with the other keys of its command): the entry
	// keeps a copy.
	key = strings.Clone(key)
	s.entries[key] = &entry{
		key: key, cmd: cmd,
		token: s.c.fences.Token(), start: ms, xat: now.Add(ttl).UnixMilli(),
		pending: true, done: make(chan struct{}),
	}
	return valkey.ValkeyMessage{}, nil
}

// Update ends a fill with the server's reply and stores it unless a write
// fenced the key meanwhile. It returns the client-side deadline (unix ms).
func (s *shard) Update(key, cmd string, val valkey.ValkeyMessage) int64 {
	s.mu.Lock()
	e := s.entries[key]
	if e == nil || !e.pending || e.cmd != cmd {
		s.mu.Unlock()
		return 0
	}
	if e.abandoned != 0 { // the late reply of an abandoned fill: its readers are gone
		delete(s.entries, key)
		s.mu.Unlock()
		return 0
	}
	now := time.Now().UnixMilli()
	xat := e.xat
	// valkey-go sets the key's server deadline as receipt time + PTTL; the
	// PTTL ran after the fill started, so start + PTTL is never later than
	// the server's deadline.
	if sxat := val.CachePXAT(); sxat > 0 {
		xat = min(xat, e.start+(sxat-now))
	}
	e.val, e.xat, e.pending = val, xat, false
	close(e.done)

	fenced := s.c.fenced(key, e.token)
	e.size = int64(len(key)+len(cmd)+entryOverhead) + valueSize(&val)
	if fenced || xat <= now || !(val.IsString() || val.IsNil()) || e.size > s.c.maxBytes {
		delete(s.entries, key)
		s.mu.Unlock()
		if fenced {
			s.c.dropped.Add(1)
		}
		return xat
	}
	e.elem = s.clock.PushBack(e)
	s.stored.Store(e.key, e)
	s.bytes += e.size
	over := s.c.used.Add(e.size) > s.c.maxBytes
	s.mu.Unlock()
	if over {
		s.c.reclaim()
	}
	return xat
}

func valueSize(m *valkey.ValkeyMessage) int64 {
	v, _ := m.ToString()
	return int64(len(v))
}

// Cancel ends a fill that failed. A fill the server answered (with an error,
// or an aborted EXEC) is simply removed. Any other failure leaves the
// request possibly on the wire: see "Abandoned fills".
func (s *shard) Cancel(key, cmd string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil || !e.pending || e.cmd != cmd || e.abandoned != 0 {
		return
	}
	if _, answered := valkey.IsValkeyErr(err); answered || err == valkey.ErrDoCacheAborted {
		delete(s.entries, key)
		e.err = err
	} else {
		e.abandoned = max(time.Now().UnixMilli(), 1)
		e.err = errRefetch // the readers that joined read again, each in its own time
	}
	close(e.done)
}

// Delete applies the server's invalidations; nil means everything. Fills
// in flight stay: on one connection the reply of a read the server ran
// before the write comes before the invalidation, so a fill still pending
// when the invalidation arrives read after the write.
//
// Then the invalidation is reported to CLIENT TRACKING (notify.go).
func (s *shard) Delete(keys []valkey.ValkeyMessage) {
	s.mu.Lock()
	if keys == nil {
		for _, e := range s.entries {
			if !e.pending {
				s.drop(e)
			}
		}
	} else {
		for i := range keys {
			k, _ := keys[i].ToString()
			if e := s.entries[k]; e != nil && !e.pending {
				s.drop(e)
			}
		}
	}
	s.mu.Unlock()
	s.c.invalidated(s, keys)
}

// evict drops the stored entries of keys (a fence).
func (s *shard) evict(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked(keys)
}

// evictLocked is evict with s.mu held.
func (s *shard) evictLocked(keys []string) {
	for _, k := range keys {
		if e := s.entries[k]; e != nil && !e.pending {
			s.drop(e)
		}
	}
}

// Close is called when the connection ends: the server no longer tracks
// what it cached, so everything goes, and readers waiting on a fill read
// again (on the next connection). CLIENT TRACKING hears of it as Lost
// (notify.go).
func (s *shard) Close(error) {
	s.mu.Lock()
	s.closed = true
	for _, e := range s.entries {
		if e.pending && e.abandoned == 0 {
			e.err = errRefetch
			close(e.done)
		}
	}
	s.entries = nil
	s.stored.Clear()
	s.clock.Init()
	s.c.used.Add(-s.bytes)
	s.bytes = 0
	s.mu.Unlock()
	s.c.remove(s)
	if s.c.listened() {
		s.c.tell(nil, true, true)
	}
}

// shrink runs CLOCK over the shard until the cache fits: an entry hit since
// the hand last passed it gets a second chance, the others are evicted.
func (s *shard) shrink() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for steps := 2 * s.clock.Len(); steps > 0 && s.c.used.Load() > s.c.maxBytes; steps-- {
		front := s.clock.Front()
		if front == nil {
			return
		}
		e := front.Value.(*entry)
		if e.ref.Swap(false) {
			s.clock.MoveToBack(front)
			continue
		}
		s.drop(e)
		s.c.evictions.Add(1)
	}
}

// drop removes a stored entry (or an expired one); the caller holds s.mu.
func (s *shard) drop(e *entry) {
	delete(s.entries, e.key)
	if e.elem != nil {
		s.stored.CompareAndDelete(e.key, e)
		s.clock.Remove(e.elem)
		e.elem = nil
		s.bytes -= e.size
		s.c.used.Add(-e.size)
	}
}

var _ valkey.CacheStore = (*shard)(nil)
