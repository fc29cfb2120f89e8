package tracking

import (
	"slices"
	"unsafe"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// The read hook: Read before a client's command reads, Served once it has
// ended. Both run on the client's goroutine.

// Read runs before cl reads keys (the client's spelling) through tbl: when
// cl caches the read (Sees), it registers the keys in default mode, and
// bounces the keys no backend reports the changes of: those of a route
// that is not a Notifier, and those of a Notifier that is not Watching,
// checked after the registration (see the order argument in tracking.go).
// It takes the read token of each backend that may serve the read
// unwatched, for Served. keys may point into the connection's read buffer:
// they must stay put until Served.
func (t *Tracker) Read(cl *Client, tbl *route.Table, keys [][]byte, caching bool) {
	remember := cl.remembers(caching)
	if !remember && !cl.opts.BCAST {
		return // the client does not cache this read
	}
	seen, unseen, watched := cl.seen[:0], cl.unseen[:0], cl.watched[:0]
	for _, k := range keys {
		r, stored := tbl.ForKey(unsafe.String(unsafe.SliceData(k), len(k)))
		if r == nil {
			seen = append(seen, k) // no backend: nothing changes it but a write
			continue
		}
		n, ok := backends.As[backends.Notifier](r.Backend)
		if !ok {
			unseen = append(unseen, k)
			continue
		}
		seen = append(seen, k)
		watched = append(watched, watchedKey{k, n})
		if u, ok := backends.As[backends.UnwatchedReads](r.Backend); ok {
			cl.unsure = append(cl.unsure, unsureRead{key: k, stored: stored, u: u, tok: u.ReadToken()})
		}
	}
	if remember && len(seen) > 0 {
		t.mu.Lock()
		t.rememberLocked(cl, seen)
		t.mu.Unlock()
	}
	for _, w := range watched {
		if !w.n.Watching() {
			unseen = append(unseen, w.key)
		}
	}
	if len(unseen) > 0 {
		t.bounce(cl, unseen)
	}
	clear(seen)
	clear(unseen)
	clear(watched)
	cl.seen, cl.unseen, cl.watched = seen[:0], unseen[:0], watched[:0]
}

// Served runs once the command that read (Read) has ended, with every read
// it made: an atomic run's too, which its backend confirms as it returns.
// The keys a backend served unwatched since Read (backends.UnwatchedReads)
// are bounced, once each.
func (t *Tracker) Served(cl *Client) {
	if len(cl.unsure) > 0 {
		t.bounceUnwatched(cl)
	}
}

func (t *Tracker) bounceUnwatched(cl *Client) {
	bad := cl.unseen[:0]
	for _, r := range cl.unsure {
		if r.u.Unwatched(r.stored, r.tok) && !slices.ContainsFunc(bad, func(k []byte) bool { return string(k) == string(r.key) }) {
			bad = append(bad, r.key)
		}
	}
	if len(bad) > 0 {
		t.bounce(cl, bad)
	}
	clear(bad)
	clear(cl.unsure)
	cl.unseen, cl.unsure = bad[:0], cl.unsure[:0]
}

// bounce invalidates keys for cl alone, and forgets that cl read them: the
// push leaves after the reply of the read that registered them.
func (t *Tracker) bounce(cl *Client, keys [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		if e := t.keys[string(k)]; e != nil {
			if i := slices.Index(e.ids, cl.id); i >= 0 {
				e.ids = append(e.ids[:i], e.ids[i+1:]...)
				t.items--
				if len(e.ids) == 0 {
					t.removeLocked(e)
				}
			}
		}
		t.one[0] = string(k)
		t.sendLocked(cl, t.one[:], false, srcUnseen)
	}
}
