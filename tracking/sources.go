package tracking

import (
	"time"

	"github.com/pgcache/pgcache/changes"
	"github.com/pgcache/pgcache/route"
)

// Where the tracker learns that a key may have changed: the changes feed
// (a changes.Subscriber), which reports the writes through every route and
// what each route's backend reports on its own. The bounces of keys no
// backend reports are the read hook's (reads.go). See tracking.go for the
// order argument.

// Wrote is changes.Subscriber's: a write of key through route r by writer
// (0: not a client: a broadcast goes out at once).
func (t *Tracker) Wrote(r *route.Route, key string, writer int64) {
	if t.on.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.keys) == 0 && len(t.prefixes) == 0 {
		return
	}
	for _, p := range r.Prefixes {
		t.invalidateLocked(p+key, writer, srcWrite)
	}
	if writer == 0 {
		t.broadcastLocked()
	}
}

// Changed is changes.Subscriber's: a report of a route's backend, or a
// reload. A report's keys come with each of the route's prefixes put back
// in front; All drops every tracked key the route served, and sends a
// null to the BCAST clients whose prefixes reach the route's keys; Lost
// sends a null to every client that read through the route (or may have,
// BCAST). A reload that moved keys to other backends drops everything. It
// runs on the notifier's goroutine and does not block but for the
// tracker's mutex.
func (t *Tracker) Changed(ch changes.Change) {
	if ch.Route == nil {
		t.dropAll(srcReload)
		return
	}
	if t.on.Load() == 0 {
		return // no registration yet: a read after this sees the change
	}
	src := sourceOf(ch.Source)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.keys) == 0 && len(t.prefixes) == 0 {
		return
	}
	sent := t.sent
	switch {
	case ch.All:
		t.allLocked(&ch, src)
	default:
		for _, k := range ch.Keys {
			for _, p := range ch.Route.Prefixes {
				t.invalidateLocked(p+k, 0, src)
			}
		}
	}
	t.broadcastLocked()
	if !ch.At.IsZero() && t.sent != sent {
		t.stats.lag.Observe(max(time.Since(ch.At), 0).Seconds())
	}
}

// allLocked handles an All or a Lost report. It walks the whole table:
// such reports are rare (TRUNCATE, a whole-cache fence, a lost
// connection), and the table keeps no index by route, so reads pay
// nothing for them.
func (t *Tracker) allLocked(ch *changes.Change, src source) {
	var drop map[*Client]struct{} // Lost: the clients told to drop everything
	if ch.Lost {
		drop = map[*Client]struct{}{}
	}
	for key, e := range t.keys {
		if !ch.Covers(key) {
			continue
		}
		if !ch.Lost {
			t.tellReadersLocked(e, 0, src)
			continue
		}
		for _, id := range e.ids {
			if cl := t.clients[id]; cl != nil && !cl.opts.BCAST {
				drop[cl] = struct{}{}
			}
		}
		t.removeLocked(e)
	}
	for p, cs := range t.prefixes {
		if !ch.Reaches(p) {
			continue
		}
		if drop == nil {
			drop = map[*Client]struct{}{}
		}
		for cl := range cs {
			drop[cl] = struct{}{}
		}
	}
	for cl := range drop {
		t.sendLocked(cl, nil, true, src)
	}
}

var _ changes.Subscriber = (*Tracker)(nil)
