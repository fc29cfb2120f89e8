package proxy

import "github.com/pgcache/pgcache/tracking"

// CLIENT TRACKING's read hook. The tracker (package tracking) keeps the
// table, what feeds it and its metrics; the RESP front keeps the commands
// (cmd_tracking.go), the pushes (push.go: a conn is a tracking.Conn), and
// this hook, which the dispatcher (call) runs for each command of a
// tracking client. A run of pipelined GETs (group.go) calls the tracker
// itself: Read as each GET joins the run, Served once the run has ended.

// trackedCall runs cmd for a tracking client: the keys it reads are
// registered before it runs (tracking's Read), and once the outermost
// command is over (an atomic run's, after its backend confirmed its reads)
// those a backend served unwatched are dropped (tracking's Served).
func (c *conn) trackedCall(cmd *command, args [][]byte) {
	cl := c.track
	if cl.Sees(c.caching) {
		c.trackReads(cl, cmd, args)
	}
	cmd.fn(c, args)
	if c.held == nil {
		c.s.tracking.Served(cl)
	}
}

// trackReads registers the keys cmd reads: a read's own; for the EXEC of
// a transaction of reads alone, those of every queued read, since such a
// run reads all its keys at once, before its requests run. (An EXEC whose
// WATCH then fails has registered keys it did not read: the client may get
// an invalidation of a key it does not have, never miss one.)
func (c *conn) trackReads(cl *tracking.Client, cmd *command, args [][]byte) {
	switch {
	case cmd.kind == kindRead:
		if keys, bad := keysOf(cmd, args); bad == "" && len(keys) > 0 {
			c.s.tracking.Read(cl, c.t, keys, c.caching)
		}
	case cmd.name == "exec" && c.multi != nil && !c.multi.aborted && readsOnly(c.multi.queued):
		for _, q := range c.multi.queued {
			c.trackReads(cl, q.cmd, q.args)
		}
	}
}

// tracksRead reports whether the tracker must see c's next read (a
// tracking client that caches it).
func (c *conn) tracksRead() bool { return c.track != nil && c.track.Sees(c.caching) }

// endTracking is a closing connection's: its tracking and subscriptions end.
func (c *conn) endTracking() {
	c.s.tracking.Off(c.track)
	c.track, c.caching = nil, false
	c.push.subscribed.Store(false)
}

var _ tracking.Conn = (*conn)(nil)
