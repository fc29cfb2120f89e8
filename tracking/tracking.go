// Package tracking is client-side caching as Redis 6+ has it (CLIENT
// TRACKING): a tracking client's reads are remembered per key (default
// mode) or its prefixes are (BCAST), and a change of such a key sends it an
// invalidation. The RESP front keeps the commands, the encoding of the
// pushes and one read hook (Read, then Served) on its dispatcher; this
// package keeps the table, what feeds it and its metrics. Changes come from
// a changes.Feed: writes through any route of this pgcache, and changes a
// route's backend reports on its own (backends.Notifier: an L1 tier's
// PostgreSQL fences, a Valkey client cache's invalidations, the memory
// store's expiries and evictions; sources.go).
//
// The order guarantee. A client must never keep a value older than a
// change it was not told of. A read registers its keys in the table before
// the backend is read (Read). A write is reported after the backend call
// has returned (route.Writes; an atomic run's writes after it commits). A
// backend reports a change made elsewhere once its own reads see it: an L1
// tier records the fence (dropping or fencing the entry) before it calls
// the Notify function, so fence recorded → Notify fn → tracker lookup. The
// table is one mutex, so for a read R and a change W of one key either R's
// registration comes first, and W's report finds it and invalidates, or
// W's report comes first, so W was visible before R registered, and R's
// read, after that, sees W.
//
// A route's keys are remembered only while its backend can report every
// change: it is a Notifier that is Watching. A Notifier stops Watching
// when it loses its source (the LISTEN connection, the Valkey connection);
// it must turn Watching false before it sends the Outside with Lost, which
// drops everything its route served. Read checks Watching after it has
// registered the keys: if it sees true, the Lost report comes later and
// finds the registration; if it sees false, the keys are bounced. A key no
// backend reports (a route that is not a Notifier, or not Watching now) is
// bounced: invalidated for its reader alone, right after the reply that
// served it, so no client keeps it past that. So is a key a Notifier
// served but will not report the changes of (backends.UnwatchedReads:
// Valkey's reads it does not track), found once the read is over (Served).
//
// An invalidation goes to the client's push queue (Conn), which its
// connection writes only between batches: after the reply of a read in the
// batch that raced, never before it, so the client caches the value and
// then drops it. A client redirecting to another connection (RESP2) gets
// the message there, in no order with its replies: Redis has the same
// race, and clients handle it by dropping a value whose invalidation
// arrived while its read was in flight.
//
// BCAST clients get the keys changed under their prefixes in one array per
// prefix, as Redis sends them once per event-loop iteration: the keys
// collect in pending until the batch of the connection that wrote them
// ends (EndBatch), or at once for a write from no connection (HTTP) and for
// a backend's report.
//
// Keys are the client's spelling of them: a write or a backend's report
// gives the key as the route stores it, and each of the route's prefixes
// is put back in front. A table route's key read in another spelling than
// its canonical one (CRUD:t:[42] for 42) is not matched by a change of it.
package tracking

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pgcache/pgcache/changes"
)

// DefaultMaxKeys is Redis's tracking-table-max-keys.
const DefaultMaxKeys = 1_000_000

// maxPending bounds the BCAST keys held for one broadcast: past it they
// are sent at once, so a long pipeline of writes cannot grow them.
const maxPending = 1024

// Tracker is a server's tracking table and its BCAST prefixes.
type Tracker struct {
	feed  *changes.Feed
	on    atomic.Int64 // clients with tracking on: while 0, writes cost a load
	due   atomic.Bool  // pending holds keys to broadcast
	stats stats

	mu       sync.Mutex
	keys     map[string]*trackedKey
	oldest   *trackedKey // the next key evicted when the table is full
	newest   *trackedKey
	items    int // client ids across keys
	prefixes map[string]map[*Client]struct{}
	pending  map[string]map[string]pendingKey // BCAST: changed keys by prefix
	npending int
	clients  map[int64]*Client // tracking on
	maxKeys  int               // 0: no bound
	sent     int64             // messages queued, ever: tells whether a report pushed
	one      [1]string         // scratch for a one-key message
	batch    []string          // scratch for a BCAST message
}

// trackedKey is one key of the table, with the clients that may have it.
type trackedKey struct {
	key        string
	ids        []int64
	prev, next *trackedKey // by insertion: oldest first
}

// pendingKey is a key changed under a BCAST prefix since the last
// broadcast: who changed it last (0: not a client) and how, for NOLOOP and
// the metrics.
type pendingKey struct {
	writer int64
	src    source
}

// New returns a tracker of the changes feed reports. It stays subscribed
// for as long as the feed lives: the RESP front makes one of each.
func New(feed *changes.Feed) *Tracker {
	t := &Tracker{feed: feed, keys: map[string]*trackedKey{}, prefixes: map[string]map[*Client]struct{}{},
		pending: map[string]map[string]pendingKey{}, clients: map[int64]*Client{}, maxKeys: DefaultMaxKeys}
	t.stats.init()
	feed.Subscribe(t)
	return t
}

// invalidateLocked tells the clients that may have key that it changed,
// and forgets it; writer (0: none) is not told when it asked NOLOOP. BCAST
// clients are told at the next broadcast.
func (t *Tracker) invalidateLocked(key string, writer int64, src source) {
	if e := t.keys[key]; e != nil {
		t.tellReadersLocked(e, writer, src)
	}
	for p := range t.prefixes {
		if !strings.HasPrefix(key, p) {
			continue
		}
		ks := t.pending[p]
		if ks == nil {
			ks = map[string]pendingKey{}
			t.pending[p] = ks
		}
		if _, ok := ks[key]; !ok {
			t.npending++
		}
		ks[key] = pendingKey{writer: writer, src: src}
		t.due.Store(true)
	}
	if t.npending > maxPending {
		t.broadcastLocked()
	}
}

// tellReadersLocked sends e's key to the default-mode clients that read
// it (not writer, when it asked NOLOOP), and drops e from the table.
func (t *Tracker) tellReadersLocked(e *trackedKey, writer int64, src source) {
	for _, id := range e.ids {
		cl := t.clients[id]
		if cl == nil || cl.opts.BCAST || cl.opts.NoLoop && id == writer {
			continue
		}
		t.one[0] = e.key
		t.sendLocked(cl, t.one[:], false, src)
	}
	t.removeLocked(e)
}

// EndBatch is called when a connection's batch of requests ends: the BCAST
// clients are sent the keys the batch changed. One atomic load when there
// are none.
func (t *Tracker) EndBatch() {
	if t.due.Load() {
		t.broadcast()
	}
}

func (t *Tracker) broadcast() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.broadcastLocked()
}

// broadcastLocked sends each BCAST client, for each of its prefixes under
// which keys changed, one array of those keys (sorted, as Redis's radix
// tree has them), leaving out for a NOLOOP client the keys it changed last
// itself.
func (t *Tracker) broadcastLocked() {
	if !t.due.Load() {
		return
	}
	t.due.Store(false)
	for _, p := range slices.Sorted(maps.Keys(t.pending)) {
		ks := t.pending[p]
		sorted := t.batch[:0]
		for k := range ks {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for cl := range t.prefixes[p] {
			keys := sorted
			if cl.opts.NoLoop {
				keys = make([]string, 0, len(sorted))
				for _, k := range sorted {
					if ks[k].writer != cl.id {
						keys = append(keys, k)
					}
				}
			}
			if len(keys) == 0 {
				continue
			}
			if t.sendLocked(cl, keys, false, srcNone) {
				for _, k := range keys {
					t.stats.invalidations[ks[k].src].Add(1)
				}
			}
		}
		clear(sorted)
		t.batch = sorted[:0]
	}
	clear(t.pending)
	t.npending = 0
}

// Flushed tells every tracking client to drop every key it has (FLUSHDB,
// FLUSHALL), and empties the table.
func (t *Tracker) Flushed() { t.dropAll(srcFlush) }

// dropAll tells every tracking client to drop every key it has (a flush, a
// reload that changed the routes), with a null as Redis does, and empties
// the table: with no client tracking too, as Redis does on a flush, so ids
// of clients that turned tracking off and on again do not outlive it.
func (t *Tracker) dropAll(src source) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, cl := range t.clients {
		t.sendLocked(cl, nil, true, src)
	}
	clear(t.keys)
	t.oldest, t.newest, t.items = nil, nil, 0
}

// rememberLocked registers keys as read by cl, before cl reads them.
func (t *Tracker) rememberLocked(cl *Client, keys [][]byte) {
	for _, k := range keys {
		e := t.keys[string(k)]
		if e == nil {
			e = &trackedKey{key: string(k), prev: t.newest}
			t.keys[e.key] = e
			if t.newest != nil {
				t.newest.next = e
			} else {
				t.oldest = e
			}
			t.newest = e
		}
		if !slices.Contains(e.ids, cl.id) {
			e.ids = append(e.ids, cl.id)
			t.items++
		}
	}
	t.evictLocked()
}

// evictLocked drops the oldest keys while the table is over its bound,
// telling their readers as if they had been written (not the BCAST
// clients: the keys did not change).
func (t *Tracker) evictLocked() {
	for t.maxKeys > 0 && len(t.keys) > t.maxKeys {
		t.tellReadersLocked(t.oldest, 0, srcTableFull)
	}
}

// MaxKeys is tracking-table-max-keys (0: no bound).
func (t *Tracker) MaxKeys() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.maxKeys
}

// SetMaxKeys sets tracking-table-max-keys, evicting the oldest keys past
// it.
func (t *Tracker) SetMaxKeys(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.maxKeys = n
	t.evictLocked()
}

func (t *Tracker) removeLocked(e *trackedKey) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		t.oldest = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		t.newest = e.prev
	}
	t.items -= len(e.ids)
	delete(t.keys, e.key)
}

// sendLocked queues an invalidation of keys (all: of everything) for cl,
// counts it against src, and reports whether it was queued (the client's
// Conn may have nowhere to send it: Redis's sendTrackingMessage).
func (t *Tracker) sendLocked(cl *Client, keys []string, all bool, src source) bool {
	var queued bool
	if all {
		queued = cl.conn.PushAll()
	} else {
		queued = cl.conn.PushKeys(keys)
	}
	if !queued {
		return false
	}
	t.sent++
	switch {
	case src == srcNone:
	case all:
		t.stats.dropAll[src].Add(1)
	default:
		t.stats.invalidations[src].Add(int64(len(keys)))
	}
	return true
}

// Clients is how many clients have tracking on (INFO's tracking_clients).
func (t *Tracker) Clients() int64 { return t.on.Load() }

// Counts are INFO's tracking_total_keys, _items and _prefixes.
func (t *Tracker) Counts() (keys, items, prefixes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys), t.items, len(t.prefixes)
}
