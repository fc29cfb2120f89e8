package proxy

import (
	"sync"
	"sync/atomic"
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
// The order argument is the feed's: a client arms its wait before it
// runs the command again, so a change after that run wakes it, and one
// before it was seen by the run. A route whose backend reports no change
// made elsewhere (PostgreSQL without an L1) is tried again every
// blockPoll as well. A blocked client that goes away is noticed within
// blockPoll, or at once by an INFO (forgetGone), CLIENT KILL and shutdown
// at once; CLIENT UNBLOCK ends the wait as a timeout or with an error.
//
// Clients blocked on one key are served in the order they blocked, as
// Redis serves them: a change of the key is a turn that goes from waiter
// to waiter in that order, each woken once the one before it has run its
// command again (served or not), never all at once, which let a later
// client pop before an earlier one. A change of the key during a turn, by
// anyone but the waiter whose run it is, starts a new turn once this one
// has gone through every waiter.
//
// A write that wakes blocked clients is answered once they have run, as
// Redis serves blocked clients before anything else (settle, waves.go).

// blockPoll is how often a blocked command runs again when its route's
// backend would not report a change, and how often a blocked client is
// checked for having gone (Config.BlockPoll, when set).
const blockPoll = 100 * time.Millisecond

// waiters are the blocked clients, by key as the client spells it.
type waiters struct {
	feed *changes.Feed
	mu   sync.Mutex
	by   map[string]map[*waiter]struct{}
	// turn is, by key, the waiter whose run the key's change waits on;
	// again marks a key changed since its turn began.
	turn    map[string]*waiter
	again   map[string]bool
	tickets uint64
	waves
	// blocked counts the clients in a blocking command that found
	// nothing, from its first wait to its answer: INFO's blocked_clients.
	blocked atomic.Int64
}

// waiter is one blocked command, from its first wait to its answer.
type waiter struct {
	client int64 // the connection's id: the writer of its own pops
	keys   []string
	ticket uint64 // the order it blocked in
	wake   chan struct{}
	woken  bool
	// counted says the waiter is in blocked; whoever clears it (the
	// command, or forgetGone) takes it out.
	counted atomic.Bool
}

func newWaiters(feed *changes.Feed) *waiters {
	w := &waiters{
		feed:  feed,
		by:    map[string]map[*waiter]struct{}{},
		turn:  map[string]*waiter{},
		again: map[string]bool{},
		waves: newWaves(),
	}
	feed.Subscribe(w)
	return w
}

// wait registers client's wait on keys, behind every wait registered
// before; the caller arms it before each run of the command, waits on
// what arm returned, and calls ran after each run and done at the end.
func (w *waiters) wait(client int64, keys []string) *waiter {
	wt := &waiter{client: client, keys: keys, wake: make(chan struct{})}
	w.mu.Lock()
	w.tickets++
	wt.ticket = w.tickets
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

// arm readies wt for the next change of its keys, and returns what that
// change closes.
func (w *waiters) arm(wt *waiter) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt.woken {
		wt.wake, wt.woken = make(chan struct{}), false
	}
	return wt.wake
}

// ran says wt has run its command again: the turns it held go on.
func (w *waiters) ran(wt *waiter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.passLocked(wt)
}

// done ends a wait, answered or not.
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
	w.passLocked(wt)
	w.mu.Unlock()
	w.feed.WantWrites(-1)
}

// passLocked hands each turn wt holds to the next waiter on its key.
func (w *waiters) passLocked(wt *waiter) {
	delete(w.holding, wt.client)
	for _, k := range wt.keys {
		if w.turn[k] != wt || w.giveLocked(k, wt.ticket) {
			continue
		}
		if w.again[k] {
			delete(w.again, k)
			w.giveLocked(k, 0)
		}
	}
}

// giveLocked gives key's turn to its first waiter after ticket, and
// wakes it; false, and the turn ended, when there is none.
func (w *waiters) giveLocked(key string, after uint64) bool {
	var next *waiter
	for wt := range w.by[key] {
		if wt.ticket > after && (next == nil || wt.ticket < next.ticket) {
			next = wt
		}
	}
	if next == nil {
		delete(w.turn, key)
		w.endLocked(key)
		return false
	}
	w.turn[key] = next
	w.holdLocked(key, next.client)
	if !next.woken {
		next.woken = true
		close(next.wake)
	}
	return true
}

// changedLocked starts a turn of key, or marks it for another when one
// is going; a write by the waiter whose run it is (its pop) is part of
// the turn.
func (w *waiters) changedLocked(key string, writer int64) {
	if len(w.by[key]) == 0 {
		return
	}
	if t := w.turn[key]; t != nil {
		if writer == 0 || t.client != writer {
			w.again[key] = true
		}
		return
	}
	w.startLocked(key, writer)
	w.giveLocked(key, 0)
}

// Wrote is changes.Subscriber's: a write through route r.
func (w *waiters) Wrote(r *route.Route, key string, writer int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.by) == 0 {
		return
	}
	for _, p := range r.Prefixes {
		w.changedLocked(p+key, writer)
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
				w.changedLocked(key, 0)
			}
		}
		return
	}
	for _, k := range ch.Keys {
		for _, p := range ch.Route.Prefixes {
			w.changedLocked(p+k, 0)
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
	tick := time.NewTicker(c.s.blockPoll())
	defer tick.Stop()
	unblock := make(chan bool, 1)
	c.unblock.Store(&unblock)
	defer c.unblock.Store(nil)
	wt := c.s.waiters.wait(c.id, keys)
	defer c.s.waiters.done(wt)
	defer c.s.waiters.uncount(wt)
	for {
		wake := c.s.waiters.arm(wt)
		if w, ok := op.(coll.Waker); ok {
			w.Wake()
		}
		ok := c.doOne(args, op)
		c.s.waiters.ran(wt)
		if !ok {
			return
		}
		if !c.blocks(op) {
			c.collEvents(args, op)
			c.writeOp(op)
			return
		}
		if wt.counted.CompareAndSwap(false, true) {
			c.s.waiters.blocked.Add(1)
		}
		woken := false
		for !woken {
			select {
			case <-wake:
				woken = true
			case <-tick.C:
				if c.peerGone() {
					c.quit = true
					return
				}
				woken = poll
			case <-timeout:
				b.TimedOut((*collWriter)(c))
				return
			case asError := <-unblock: // CLIENT UNBLOCK
				if asError {
					c.writeError("UNBLOCKED client unblocked via CLIENT UNBLOCK")
				} else {
					b.TimedOut((*collWriter)(c))
				}
				return
			case <-c.ctx.Done(): // killed
				c.quit = true
				return
			case <-c.s.stopping:
				c.quit = true
				return
			}
		}
	}
}

// uncount takes wt out of blocked, if it is in.
func (w *waiters) uncount(wt *waiter) {
	if wt.counted.CompareAndSwap(true, false) {
		w.blocked.Add(-1)
	}
}

// counted are the waiters in blocked.
func (w *waiters) counted() []*waiter {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[*waiter]bool{} // a waiter on several keys is in each one's set
	var out []*waiter
	for _, set := range w.by {
		for wt := range set {
			if wt.counted.Load() && !seen[wt] {
				seen[wt] = true
				out = append(out, wt)
			}
		}
	}
	return out
}

// forgetGone ends at once the blocking commands of clients that have
// closed their connection, which each would notice within blockPoll by
// itself: INFO's blocked_clients and connected_clients count none of them,
// as Redis's count none (it hears of a close at once).
func (s *Server) forgetGone() {
	for _, wt := range s.waiters.counted() {
		c := s.connByID(wt.client)
		if c == nil || !c.peerGone() {
			continue
		}
		s.waiters.uncount(wt)
		s.kill(c)
	}
}

// blockPoll is Config.BlockPoll, or the default.
func (s *Server) blockPoll() time.Duration {
	if d := s.config().BlockPoll; d > 0 {
		return d
	}
	return blockPoll
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
