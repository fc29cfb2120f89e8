package proxy

import (
	"sync"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/changes"
	"github.com/pgcache/pgcache/route"
)

// Blocking commands (BLPOP, BZPOPMIN, BLMOVE…). A command that found
// nothing to pop waits for a change of one of its keys, on its own
// connection's goroutine, so a blocked client holds up no other: the
// server's waiters hear every change the feed reports (changes: writes
// through any connection, and what each route's backend reports, which
// for a PostgreSQL route with an L1 is every fence: a push through another
// instance, or plain SQL), and wake the clients waiting on the key.
//
// The order argument is the feed's: a client registers its wait before it
// runs the command again, so a change after that run wakes it, and one
// before it was seen by the run. A route whose backend reports no change
// made elsewhere (PostgreSQL without an L1) is tried again every
// blockPoll as well. A blocked client that goes away is noticed within
// blockPoll, CLIENT KILL and shutdown at once; CLIENT UNBLOCK ends the wait
// as a timeout or with an error.

// blockPoll is how often a blocked command runs again when its route's
// backend would not report a change, and how often a blocked client is
// checked for having gone.
const blockPoll = 100 * time.Millisecond

// waiters are the blocked clients, by key as the client spells it.
type waiters struct {
	feed *changes.Feed
	mu   sync.Mutex
	by   map[string]map[*waiter]struct{}
}

// waiter is one blocked command: woken once, by the first change of one
// of its keys.
type waiter struct {
	keys  []string
	wake  chan struct{}
	woken bool
}

func newWaiters(feed *changes.Feed) *waiters {
	w := &waiters{feed: feed, by: map[string]map[*waiter]struct{}{}}
	feed.Subscribe(w)
	return w
}

// wait registers a wait on keys; the caller runs the command after it,
// then waits on the waiter's wake, and calls done.
func (w *waiters) wait(keys []string) *waiter {
	wt := &waiter{keys: keys, wake: make(chan struct{})}
	w.mu.Lock()
	for _, k := range keys {
		set := w.by[k]
		if set == nil {
			set = map[*waiter]struct{}{}
			w.by[k] = set
		}
		set[wt] = struct{}{}
	}
	w.mu.Unlock()
	w.feed.WantWrites(1)
	return wt
}

// done ends a wait, woken or not.
func (w *waiters) done(wt *waiter) {
	w.mu.Lock()
	for _, k := range wt.keys {
		if set := w.by[k]; set != nil {
			delete(set, wt)
			if len(set) == 0 {
				delete(w.by, k)
			}
		}
	}
	w.mu.Unlock()
	w.feed.WantWrites(-1)
}

// wakeLocked wakes the clients waiting on key.
func (w *waiters) wakeLocked(key string) {
	for wt := range w.by[key] {
		if !wt.woken {
			wt.woken = true
			close(wt.wake)
		}
	}
}

// Wrote is changes.Subscriber's: a write through route r.
func (w *waiters) Wrote(r *route.Route, key string, _ int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.by) == 0 {
		return
	}
	for _, p := range r.Prefixes {
		w.wakeLocked(p + key)
	}
}

// Changed is changes.Subscriber's: a backend's report, or a reload.
func (w *waiters) Changed(ch changes.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.by) == 0 {
		return
	}
	if ch.All {
		for key := range w.by {
			if ch.Covers(key) {
				w.wakeLocked(key)
			}
		}
		return
	}
	for _, k := range ch.Keys {
		for _, p := range ch.Route.Prefixes {
			w.wakeLocked(p + k)
		}
	}
}

var _ changes.Subscriber = (*waiters)(nil)

// blocks reports whether a command that found nothing waits: outside
// MULTI and scripts (an atomic run answers at once), when the store did
// not wait itself (Valkey passes BLPOP on).
func (c *conn) blocks(op coll.Command) bool {
	b, ok := op.(coll.Blocker)
	return ok && !b.Ready() && c.held == nil && op.Request().Reply.Kind == backends.ReplyNone
}

// block waits until op, which found nothing, finds something, its timeout
// passes, or the client goes; then answers.
func (c *conn) block(args [][]byte, op coll.Command) {
	b := op.(coll.Blocker)
	req := op.Request()
	keys := make([]string, len(req.KeyAt))
	for i, at := range req.KeyAt {
		keys[i] = string(args[at]) // the request's bytes are the read buffer's, reused once this returns
	}
	r, _ := c.t.ForKey(keys[0])
	poll := r != nil && !notifies(r)
	var timeout <-chan time.Time
	if d := b.Timeout(); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	tick := time.NewTicker(blockPoll)
	defer tick.Stop()
	unblock := make(chan bool, 1)
	c.unblock.Store(&unblock)
	defer c.unblock.Store(nil)
	for {
		wt := c.s.waiters.wait(keys)
		if w, ok := op.(interface{ Wake() }); ok {
			w.Wake()
		}
		if !c.doOne(args, op) {
			c.s.waiters.done(wt)
			return
		}
		if !c.blocks(op) {
			c.s.waiters.done(wt)
			c.collEvents(args, op)
			c.writeOp(op)
			return
		}
		woken := false
		for !woken {
			select {
			case <-wt.wake:
				woken = true
			case <-tick.C:
				if c.peerGone() {
					c.s.waiters.done(wt)
					c.quit = true
					return
				}
				woken = poll
			case <-timeout:
				c.s.waiters.done(wt)
				b.TimedOut((*collWriter)(c))
				return
			case asError := <-unblock: // CLIENT UNBLOCK
				c.s.waiters.done(wt)
				if asError {
					c.writeError("UNBLOCKED client unblocked via CLIENT UNBLOCK")
				} else {
					b.TimedOut((*collWriter)(c))
				}
				return
			case <-c.ctx.Done(): // killed, or the server stops
				c.s.waiters.done(wt)
				c.quit = true
				return
			}
		}
		c.s.waiters.done(wt)
	}
}

// notifies reports whether r's backend reports the changes made elsewhere
// (a Notifier that is watching): otherwise a blocked command polls.
func notifies(r *route.Route) bool {
	n, ok := backends.As[backends.Notifier](r.Backend)
	return ok && n.Watching()
}

// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]: ends a blocked command of
// another client, as if it timed out, or with an error.
func cmdClientUnblock(c *conn, args [][]byte) {
	id, ok := parseInt(args[2])
	if !ok {
		c.writeError(errNotInteger)
		return
	}
	asError := false
	if len(args) == 4 {
		switch {
		case is(args[3], "timeout"):
		case is(args[3], "error"):
			asError = true
		default:
			c.writeError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	target := c.s.connByID(id)
	if target == nil {
		c.writeInt(0)
		return
	}
	ch := target.unblock.Load()
	if ch == nil {
		c.writeInt(0)
		return
	}
	select {
	case *ch <- asError:
		c.writeInt(1)
	default:
		c.writeInt(0) // unblocked already
	}
}
