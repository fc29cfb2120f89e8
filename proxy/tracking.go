package proxy

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Client-side caching (CLIENT TRACKING), as Redis 6+ has it: a tracking
// client's reads are remembered per key (default mode) or its prefixes
// are (BCAST), and a write of such a key through any route of this
// pgcache sends it an invalidation: a RESP3 push on its own connection,
// or a Pub/Sub message on the connection it redirects to.
//
// The order guarantee. A client must never keep a value older than a
// write it was not told of. A read registers its keys in the table before
// the backend is read (conn.trackRead, from call and join), and a write
// is reported after the backend call has returned (route.Writes; an
// atomic run's writes after it commits). The table is one mutex, so for a
// read R and a write W of one key either R's registration comes first,
// and W's report finds it and invalidates, or W's report comes first, so
// W had returned before R registered, and R's read, after that, sees W.
// The invalidation goes to the client's push queue (push.go), which its
// goroutine writes only between batches: after the reply of a read in the
// batch that raced, never before it, so the client caches the value and
// then drops it. A client redirecting to another connection (RESP2) gets
// the message there, in no order with its replies: Redis has the same
// race, and clients handle it by dropping a value whose invalidation
// arrived while its read was in flight.
//
// Keys are the client's spelling of them: a write reports the key as the
// route stores it, and each of the route's prefixes is put back in front.
// A table route's key read in another spelling than its canonical one
// (CRUD:t:[42] for 42) is not matched by a write of it.

// DefaultTrackingTableMaxKeys is Redis's tracking-table-max-keys.
const DefaultTrackingTableMaxKeys = 1_000_000

// tracker is the server's tracking table and its BCAST prefixes.
type tracker struct {
	s  *Server
	on atomic.Int64 // clients with tracking on: while 0, writes cost a load

	mu       sync.Mutex
	keys     map[string]*trackedKey
	oldest   *trackedKey // the next key evicted when the table is full
	newest   *trackedKey
	items    int // client ids across keys
	prefixes map[string]map[*conn]struct{}
	clients  map[int64]*conn // tracking on
	maxKeys  int             // 0: no bound
	frame    []byte          // scratch for one message
}

// trackedKey is one key of the table, with the clients that may have it.
type trackedKey struct {
	key        string
	ids        []int64
	prev, next *trackedKey // by insertion: oldest first
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
	return &tracker{s: s, keys: map[string]*trackedKey{}, prefixes: map[string]map[*conn]struct{}{},
		clients: map[int64]*conn{}, maxKeys: DefaultTrackingTableMaxKeys}
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
		t.invalidateLocked(p+key, writer)
	}
}

// invalidateLocked tells the clients that may have key that it changed,
// and forgets it; writer (nil: none) is not told when it asked NOLOOP.
func (t *tracker) invalidateLocked(key string, writer *conn) {
	if e := t.keys[key]; e != nil {
		for _, id := range e.ids {
			c := t.clients[id]
			if c == nil || c.track.bcast || c.track.noloop && c == writer {
				continue
			}
			t.sendLocked(c, key, false)
		}
		t.removeLocked(e)
	}
	for p, cs := range t.prefixes {
		if !strings.HasPrefix(key, p) {
			continue
		}
		for c := range cs {
			if c.track.noloop && c == writer {
				continue
			}
			t.sendLocked(c, key, false)
		}
	}
}

// dropAll tells every tracking client to drop every key it has (FLUSHALL,
// a source lost), with a null as Redis does, and empties the table.
func (t *tracker) dropAll() {
	if t.on.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.clients {
		t.sendLocked(c, "", true)
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
		if !containsID(e.ids, c.id) {
			e.ids = append(e.ids, c.id)
			t.items++
		}
	}
	t.evictLocked()
}

// evictLocked drops the oldest keys while the table is over its bound,
// telling their readers as if they had been written.
func (t *tracker) evictLocked() {
	for t.maxKeys > 0 && len(t.keys) > t.maxKeys {
		t.invalidateLocked(t.oldest.key, nil)
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

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
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

// sendLocked queues an invalidation of key (all: of everything) for c,
// on c's connection or the one it redirects to, as Redis's
// sendTrackingMessage: a RESP3 connection gets a push, a RESP2 one
// subscribed to __redis__:invalidate a message, any other nothing.
func (t *tracker) sendLocked(c *conn, key string, all bool) {
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
			return
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
		return
	}
	switch {
	case !all:
		f = append(f, "*1\r\n$"...)
		f = strconv.AppendInt(f, int64(len(key)), 10)
		f = append(f, '\r', '\n')
		f = append(f, key...)
		f = append(f, '\r', '\n')
	case c.push.proto.Load() == 3: // the tracking client's null, as Redis
		f = append(f, "_\r\n"...)
	default:
		f = append(f, "$-1\r\n"...)
	}
	t.frame = f
	to.enqueue(f)
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

// trackRead registers the keys a read command is about to read, for a
// client tracking in default mode that did not opt out of this read. A
// key of a route whose backend may change where pgcache does not see it
// (not a backends.SoleWriter) is invalidated right after the reply
// instead, in every mode: the client may cache it for that long only.
func (c *conn) trackRead(cmd *command, args [][]byte) {
	st := c.track
	if st == nil || cmd.kind != kindRead {
		return
	}
	keys, bad := keysOf(cmd, args)
	if bad != "" || len(keys) == 0 {
		return
	}
	seen := keys[:0:0]
	var unseen [][]byte
	for _, k := range keys {
		if r, _ := c.t.ForKey(bstr(k)); r != nil {
			if _, ok := backends.As[backends.SoleWriter](r.Backend); !ok {
				unseen = append(unseen, k)
				continue
			}
		}
		seen = append(seen, k)
	}
	if len(unseen) > 0 {
		c.s.tracking.bounce(c, unseen)
	}
	if st.bcast || st.optin && !c.caching || st.optout && c.caching {
		return
	}
	c.s.tracking.remember(c, seen)
}

// bounce invalidates keys for c alone: the push leaves after the reply
// of the read that registered them.
func (t *tracker) bounce(c *conn, keys [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		t.sendLocked(c, string(k), false)
	}
}
