package proxy

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pgcache/pgcache/route"
)

// Client-side caching (CLIENT TRACKING), as Redis 6+ has it: a tracking
// client's reads are remembered per key (default mode) or its prefixes
// are (BCAST), and a change of such a key sends it an invalidation: a
// RESP3 push on its own connection, or a Pub/Sub message on the
// connection it redirects to. Changes come from two places: writes
// through any route of this pgcache (route.Writes: Wrote), and changes a
// route's backend reports on its own (backends.Notifier: an L1 tier's
// PostgreSQL fences, a Valkey client cache's invalidations, the memory
// store's expiries and evictions; tracking_sources.go).
//
// The order guarantee. A client must never keep a value older than a
// change it was not told of. A read registers its keys in the table
// before the backend is read (conn.trackRead, from call and join). A write
// is reported after the backend call has returned (route.Writes; an atomic
// run's writes after it commits). A backend reports a change made
// elsewhere once its own reads see it: an L1 tier records the fence
// (dropping or fencing the entry) before it calls the Notify function, so
// fence recorded → Notify fn → tracker lookup. The table is one mutex, so
// for a read R and a change W of one key either R's registration comes
// first, and W's report finds it and invalidates, or W's report comes
// first, so W was visible before R registered, and R's read, after that,
// sees W.
//
// A route's keys are remembered only while its backend can report every
// change: it is a Notifier that is Watching. A Notifier stops Watching when it loses its
// source (the LISTEN connection, the Valkey connection); it must turn
// Watching false before it sends the Outside with Lost, which drops
// everything its route served. trackRead checks Watching after it has
// registered the keys: if it sees true, the Lost report comes later and
// finds the registration; if it sees false, the keys are bounced. A key
// no backend reports (a route that is not a Notifier, or not Watching
// now) is bounced: invalidated for its reader alone, right after the
// reply that served it, so no client keeps it past that.
//
// An invalidation goes to the client's push queue (push.go), which its
// goroutine writes only between batches: after the reply of a read in the
// batch that raced, never before it, so the client caches the value and
// then drops it. A client redirecting to another connection (RESP2) gets
// the message there, in no order with its replies: Redis has the same
// race, and clients handle it by dropping a value whose invalidation
// arrived while its read was in flight.
//
// BCAST clients get the keys changed under their prefixes in one array
// per prefix, as Redis sends them once per event-loop iteration: the keys
// collect in pending until the batch of the connection that wrote them
// ends (endBatch), or at once for a write from no connection (HTTP) and
// for a backend's report.
//
// Keys are the client's spelling of them: a write or a backend's report
// gives the key as the route stores it, and each of the route's prefixes
// is put back in front. A table route's key read in another spelling than
// its canonical one (CRUD:t:[42] for 42) is not matched by a change of it.

// DefaultTrackingTableMaxKeys is Redis's tracking-table-max-keys.
const DefaultTrackingTableMaxKeys = 1_000_000

// maxPending bounds the BCAST keys held for one broadcast: past it they
// are sent at once, so a long pipeline of writes cannot grow them.
const maxPending = 1024

// tracker is the server's tracking table and its BCAST prefixes.
type tracker struct {
	s     *Server
	on    atomic.Int64 // clients with tracking on: while 0, writes cost a load
	due   atomic.Bool  // pending holds keys to broadcast
	stats trackStats

	mu       sync.Mutex
	keys     map[string]*trackedKey
	oldest   *trackedKey // the next key evicted when the table is full
	newest   *trackedKey
	items    int // client ids across keys
	prefixes map[string]map[*conn]struct{}
	pending  map[string]map[string]pendingKey // BCAST: changed keys by prefix
	npending int
	clients  map[int64]*conn // tracking on
	maxKeys  int             // 0: no bound
	sent     int64           // messages queued, ever: tells whether a report pushed
	frame    []byte          // scratch for one message
	one      [1]string       // scratch for a one-key message
	batch    []string        // scratch for a BCAST message
}

// trackedKey is one key of the table, with the clients that may have it.
type trackedKey struct {
	key        string
	ids        []int64
	prev, next *trackedKey // by insertion: oldest first
}

// pendingKey is a key changed under a BCAST prefix since the last
// broadcast: who changed it last (nil: not a client) and how, for NOLOOP
// and the metrics.
type pendingKey struct {
	writer *conn
	src    source
}

// trackState is a connection's CLIENT TRACKING options. Its goroutine
// changes it under tracker.mu; others read it under tracker.mu.
type trackState struct {
	bcast, optin, optout, noloop bool
	redirect                     int64
	broken                       bool     // the redirect target is gone
	prefixes                     []string // BCAST's, sorted
}

func newTracker(s *Server) *tracker {
	t := &tracker{s: s, keys: map[string]*trackedKey{}, prefixes: map[string]map[*conn]struct{}{},
		pending: map[string]map[string]pendingKey{}, clients: map[int64]*conn{}, maxKeys: DefaultTrackingTableMaxKeys}
	t.stats.init()
	return t
}

// writerKey marks a connection's context with the connection, so a write
// reported through route.Writes is known as its own (NOLOOP).
type writerKey struct{}

// Active is route.Writes': writes matter while a client tracks.
func (t *tracker) Active() bool { return t.on.Load() != 0 }

// Wrote is route.Writes: a write of key through route r.
func (t *tracker) Wrote(ctx context.Context, r *route.Route, key string) {
	if t.on.Load() == 0 {
		return
	}
	writer, _ := ctx.Value(writerKey{}).(*conn)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.keys) == 0 && len(t.prefixes) == 0 {
		return
	}
	for _, p := range r.Prefixes {
		t.invalidateLocked(p+key, writer, srcWrite)
	}
	if writer == nil {
		t.broadcastLocked()
	}
}

// invalidateLocked tells the clients that may have key that it changed,
// and forgets it; writer (nil: none) is not told when it asked NOLOOP.
// BCAST clients are told at the next broadcast.
func (t *tracker) invalidateLocked(key string, writer *conn, src source) {
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
func (t *tracker) tellReadersLocked(e *trackedKey, writer *conn, src source) {
	for _, id := range e.ids {
		c := t.clients[id]
		if c == nil || c.track.bcast || c.track.noloop && c == writer {
			continue
		}
		t.one[0] = e.key
		t.sendLocked(c, t.one[:], false, src)
	}
	t.removeLocked(e)
}

// broadcast sends the BCAST clients the keys changed since the last
// broadcast; a connection calls it at the end of a batch that wrote.
func (t *tracker) broadcast() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.broadcastLocked()
}

// broadcastLocked sends each BCAST client, for each of its prefixes under
// which keys changed, one array of those keys (sorted, as Redis's radix
// tree has them), leaving out for a NOLOOP client the keys it changed
// last itself.
func (t *tracker) broadcastLocked() {
	if !t.due.Load() {
		return
	}
	t.due.Store(false)
	prefixes := make([]string, 0, len(t.pending))
	for p := range t.pending {
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	for _, p := range prefixes {
		ks := t.pending[p]
		sorted := t.batch[:0]
		for k := range ks {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for c := range t.prefixes[p] {
			keys := sorted
			if c.track.noloop {
				keys = make([]string, 0, len(sorted))
				for _, k := range sorted {
					if ks[k].writer != c {
						keys = append(keys, k)
					}
				}
			}
			if len(keys) == 0 {
				continue
			}
			if t.sendLocked(c, keys, false, srcNone) {
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

// dropAll tells every tracking client to drop every key it has (FLUSHALL,
// a reload that changed the routes), with a null as Redis does, and
// empties the table: with no client tracking too, as Redis does on a
// flush, so ids of clients that turned tracking off and on again do not
// outlive it.
func (t *tracker) dropAll(src source) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.clients {
		t.sendLocked(c, nil, true, src)
	}
	clear(t.keys)
	t.oldest, t.newest, t.items = nil, nil, 0
}

// remember registers keys as read by c, before c reads them.
func (t *tracker) remember(c *conn, keys [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
		if !slices.Contains(e.ids, c.id) {
			e.ids = append(e.ids, c.id)
			t.items++
		}
	}
	t.evictLocked()
}

// evictLocked drops the oldest keys while the table is over its bound,
// telling their readers as if they had been written (not the BCAST
// clients: the keys did not change).
func (t *tracker) evictLocked() {
	for t.maxKeys > 0 && len(t.keys) > t.maxKeys {
		t.tellReadersLocked(t.oldest, nil, srcTableFull)
	}
}

func (t *tracker) maxKeysNow() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.maxKeys
}

func (t *tracker) setMaxKeys(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.maxKeys = n
	t.evictLocked()
}

func (t *tracker) removeLocked(e *trackedKey) {
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

// sendLocked queues an invalidation of keys (all: of everything) for c,
// on c's connection or the one it redirects to, as Redis's
// sendTrackingMessage: a RESP3 connection gets a push, a RESP2 one
// subscribed to __redis__:invalidate a message, any other nothing. It
// counts the message against src, and reports whether it was queued.
func (t *tracker) sendLocked(c *conn, keys []string, all bool, src source) bool {
	to, redirected := c, false
	if id := c.track.redirect; id != 0 {
		to = t.s.connByID(id)
		if to == nil {
			c.track.broken = true
			if c.push.proto.Load() == 3 {
				f := append(t.frame[:0], ">2\r\n$21\r\ntracking-redir-broken\r\n:"...)
				f = strconv.AppendInt(f, id, 10)
				t.frame = append(f, '\r', '\n')
				c.enqueue(t.frame)
			}
			return false
		}
		redirected = true
	}
	f := t.frame[:0]
	switch {
	case to.push.proto.Load() == 3:
		f = append(f, ">2\r\n$10\r\ninvalidate\r\n"...)
	case redirected && to.push.subscribed.Load():
		f = append(f, "*3\r\n$7\r\nmessage\r\n$20\r\n"+invalidateChannel+"\r\n"...)
	default:
		return false
	}
	switch {
	case !all:
		f = append(f, '*')
		f = strconv.AppendInt(f, int64(len(keys)), 10)
		f = append(f, '\r', '\n')
		for _, k := range keys {
			f = append(f, '$')
			f = strconv.AppendInt(f, int64(len(k)), 10)
			f = append(f, '\r', '\n')
			f = append(f, k...)
			f = append(f, '\r', '\n')
		}
	case c.push.proto.Load() == 3: // the tracking client's null, as Redis
		f = append(f, "_\r\n"...)
	default:
		f = append(f, "$-1\r\n"...)
	}
	t.frame = f
	to.enqueue(f)
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

// enable turns tracking on for c with st (already checked), adding
// prefixes to those c has.
func (t *tracker) enable(c *conn, st trackState, prefixes []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.track == nil {
		t.on.Add(1)
		t.clients[c.id] = c
	} else {
		st.prefixes = c.track.prefixes
	}
	if st.bcast {
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		for _, p := range prefixes {
			cs := t.prefixes[p]
			if cs == nil {
				cs = map[*conn]struct{}{}
				t.prefixes[p] = cs
			}
			if _, ok := cs[c]; !ok {
				cs[c] = struct{}{}
				st.prefixes = append(st.prefixes, p)
			}
		}
	}
	c.track = &st
}

// disable turns tracking off for c. Its ids stay in the table until the
// keys are written or evicted, as in Redis: ids are never reused.
func (t *tracker) disable(c *conn) {
	if c.track == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range c.track.prefixes {
		if cs := t.prefixes[p]; cs != nil {
			delete(cs, c)
			if len(cs) == 0 {
				delete(t.prefixes, p)
				if ks := t.pending[p]; ks != nil {
					t.npending -= len(ks)
					delete(t.pending, p)
				}
			}
		}
	}
	delete(t.clients, c.id)
	t.on.Add(-1)
	c.track = nil
	c.caching = false
}

// counts are INFO's tracking_total_keys, _items and _prefixes.
func (t *tracker) counts() (keys, items, prefixes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys), t.items, len(t.prefixes)
}
