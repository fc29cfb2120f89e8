package proxy

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Where CLIENT TRACKING learns that a key may have changed, besides the
// writes through pgcache (Wrote): the reports of each route's backend
// that is a backends.Notifier, followed per route table (Follow, from
// route.Router on every reload), and the bounce of a key no backend
// reports (trackRead). See tracking.go for the order argument.

// routing is a table's RESP prefixes, longest first, to find the route a
// tracked key was read through without the routes' Canon (which may
// allocate): a key of a table route spelled otherwise still matches its
// prefix, so an All or a Lost report may invalidate more, never less.
type routing []routePrefix

type routePrefix struct {
	prefix string
	route  *route.Route
}

func routingOf(tbl *route.Table) routing {
	var rs routing
	for _, r := range tbl.Routes() {
		for _, p := range r.Prefixes {
			rs = append(rs, routePrefix{p, r})
		}
	}
	// Longest first, as Table.ForKey.
	slices.SortStableFunc(rs, func(a, b routePrefix) int { return len(b.prefix) - len(a.prefix) })
	return rs
}

// of returns the route serving key, or nil.
func (rs routing) of(key string) *route.Route {
	for _, p := range rs {
		if strings.HasPrefix(key, p.prefix) {
			return p.route
		}
	}
	return nil
}

// Follow is route.Follower: it subscribes to the reports of each route of
// tbl whose backend is a Notifier, before tbl serves a request. The stop
// it returns, once tbl is retired and drained, cancels them; when the
// table now current sends some key to another backend than tbl did, every
// tracking client is then told to drop everything, as a value read
// through tbl may differ from what the new backend holds, and no report
// of the old one reaches the tracker any more.
func (t *tracker) Follow(tbl *route.Table) (stop func()) {
	rs := routingOf(tbl)
	var cancels []func()
	for _, r := range tbl.Routes() {
		n, ok := backends.As[backends.Notifier](r.Backend)
		if !ok || len(r.Prefixes) == 0 {
			continue
		}
		cancels = append(cancels, n.Notify(func(o backends.Outside) { t.outside(rs, r, o) }))
	}
	return func() {
		for _, cancel := range cancels {
			cancel()
		}
		if cur := t.s.router.Current(); cur != tbl && !tbl.SameBackends(cur) {
			t.dropAll(srcReload)
		}
	}
}

// outside turns a report of route r's backend into invalidations: its
// keys, with each of r's prefixes put back in front; All, every tracked
// key r served and a null for the BCAST clients whose prefixes reach r's
// keys; Lost, a null for every client that read through r (or may have,
// BCAST). It runs on the notifier's goroutine and does not block but for
// the tracker's mutex.
func (t *tracker) outside(rs routing, r *route.Route, o backends.Outside) {
	if t.on.Load() == 0 {
		return // no registration yet: a read after this sees the change
	}
	src := sourceOf(o.Source)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.keys) == 0 && len(t.prefixes) == 0 {
		return
	}
	sent := t.sent
	switch {
	case o.Lost || o.All:
		t.allLocked(rs, r, o.Lost, src)
	default:
		for _, k := range o.Keys {
			for _, p := range r.Prefixes {
				t.invalidateLocked(p+k, nil, src)
			}
		}
	}
	t.broadcastLocked()
	if !o.At.IsZero() && t.sent != sent {
		t.stats.lag.Observe(max(time.Since(o.At), 0).Seconds())
	}
}

// allLocked handles an All or a Lost report of route r. It walks the
// whole table: such reports are rare (TRUNCATE, a whole-cache fence, a
// lost connection), and the table keeps no index by route, so reads pay
// nothing for them.
func (t *tracker) allLocked(rs routing, r *route.Route, lost bool, src source) {
	var drop map[*conn]struct{} // Lost: the clients told to drop everything
	if lost {
		drop = map[*conn]struct{}{}
	}
	for key, e := range t.keys {
		if rs.of(key) != r {
			continue
		}
		if !lost {
			t.tellReadersLocked(e, nil, src)
			continue
		}
		for _, id := range e.ids {
			if c := t.clients[id]; c != nil && !c.track.bcast {
				drop[c] = struct{}{}
			}
		}
		t.removeLocked(e)
	}
	for p, cs := range t.prefixes {
		if !reaches(p, r) {
			continue
		}
		if drop == nil {
			drop = map[*conn]struct{}{}
		}
		for c := range cs {
			drop[c] = struct{}{}
		}
	}
	for c := range drop {
		t.sendLocked(c, nil, true, src)
	}
}

// reaches reports whether a BCAST prefix p may match keys of route r.
func reaches(p string, r *route.Route) bool {
	for _, q := range r.Prefixes {
		if strings.HasPrefix(p, q) || strings.HasPrefix(q, p) {
			return true
		}
	}
	return false
}

// trackRead runs before a read command reads: for a client that may cache
// what it reads (BCAST, or default mode not opted out of this read), it
// registers the keys in default mode, and bounces the keys no backend
// reports the changes of: those of a route that is not a Notifier, and
// those of a Notifier that is not Watching, checked after the
// registration (tracking.go).
func (c *conn) trackRead(cmd *command, args [][]byte) {
	st := c.track
	if st == nil || cmd.kind != kindRead {
		return
	}
	remember := !st.bcast && !(st.optin && !c.caching) && !(st.optout && c.caching)
	if !remember && !st.bcast {
		return // the client does not cache this read
	}
	keys, bad := keysOf(cmd, args)
	if bad != "" || len(keys) == 0 {
		return
	}
	seen, unseen := c.trackKeys[:0], c.unseenKeys[:0]
	watched := c.watched[:0]
	for _, k := range keys {
		r, _ := c.t.ForKey(bstr(k))
		if r == nil {
			seen = append(seen, k) // no backend: nothing changes it but a write
			continue
		}
		if n, ok := backends.As[backends.Notifier](r.Backend); ok {
			seen = append(seen, k)
			watched = append(watched, watchedKey{k, n})
			continue
		}
		unseen = append(unseen, k)
	}
	if remember && len(seen) > 0 {
		c.s.tracking.remember(c, seen)
	}
	for _, w := range watched {
		if !w.n.Watching() {
			unseen = append(unseen, w.key)
		}
	}
	if len(unseen) > 0 {
		c.s.tracking.bounce(c, unseen)
	}
	clear(seen)
	clear(unseen)
	clear(watched)
	c.trackKeys, c.unseenKeys, c.watched = seen[:0], unseen[:0], watched[:0]
}

// trackScratch is trackRead's, reused from read to read.
type trackScratch struct {
	trackKeys, unseenKeys [][]byte
	watched               []watchedKey
	// notWatched is set by a backend that served a read it will not
	// report the changes of (backends.ReadNotWatched; c.ctx carries it).
	notWatched atomic.Bool
}

// bounceNotWatched runs after a command: when a backend marked one of its
// reads as not watched, the read's keys are bounced for c alone. Inside
// an atomic run (EXEC, a script) the mark, set when the run loaded its
// keys, holds for every command of the run; the command that began it
// clears it first.
func (c *conn) bounceNotWatched(cmd *command, args [][]byte) {
	if !c.notWatched.Load() || cmd.kind != kindRead {
		return
	}
	if keys, bad := keysOf(cmd, args); bad == "" && len(keys) > 0 {
		c.s.tracking.bounce(c, keys)
	}
}

type watchedKey struct {
	key []byte
	n   backends.Notifier
}

// bounce invalidates keys for c alone, and forgets that c read them: the
// push leaves after the reply of the read that registered them.
func (t *tracker) bounce(c *conn, keys [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		if e := t.keys[string(k)]; e != nil {
			if i := slices.Index(e.ids, c.id); i >= 0 {
				e.ids = append(e.ids[:i], e.ids[i+1:]...)
				t.items--
				if len(e.ids) == 0 {
					t.removeLocked(e)
				}
			}
		}
		t.one[0] = string(k)
		t.sendLocked(c, t.one[:], false, srcUnseen)
	}
}
