package proxy

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgcache/pgcache/pubsub"
)

// Pushes: messages another goroutine sends a connection (an invalidation,
// CLIENT TRACKING: the tracker calls a tracking client's PushKeys and
// PushAll, as tracking.Conn; a Pub/Sub message: the broker calls Deliver,
// cmd_pubsub.go). The connection's goroutine alone writes its socket.
// A sender appends the message to the connection's queue; the goroutine
// writes the queue before each wait for the client's next request (ready,
// deadlinePassed), after the replies of the batch it ran, so a push never
// lands inside a reply. A sender that finds the goroutine waiting wakes it
// by moving its read deadline to the past, as Shutdown does; the wait ends
// with a deadline error, and deadlinePassed writes the queue and waits
// again.
//
// No wake-up is lost: the goroutine marks itself waiting under the
// queue's lock only when it found the queue empty, after arming its read
// deadline. A message queued before that is written by the goroutine; one
// queued after finds it waiting and moves the deadline, which the wait
// then sees. A wake-up that lands during a batch only makes the next wait
// end at once, once.

// invalidateChannel is the Pub/Sub channel of RESP2 invalidations.
const invalidateChannel = "__redis__:invalidate"

// pushQueue is a connection's pending pushes.
type pushQueue struct {
	mu      sync.Mutex
	buf     []byte
	waiting bool // the goroutine waits for input with the queue empty
	over    bool // the queue passed the output limit: the connection is closed

	softSince time.Time // when the queue last went past the pubsub soft limit, zero: below it

	used       atomic.Bool  // a push was ever queued: until then, waits skip the lock
	proto      atomic.Int32 // the connection's protocol, for senders
	subscribed atomic.Bool  // to invalidateChannel (RESP2 redirection)
	redirect   atomic.Int64 // CLIENT TRACKING REDIRECT's client id, 0 none
	broken     atomic.Bool  // the redirect target is gone
}

// ID is tracking.Conn's: the client's id.
func (c *conn) ID() int64 { return c.id }

// PushKeys is tracking.Conn's: an invalidation of keys.
func (c *conn) PushKeys(keys []string) bool { return c.invalidate(keys, false) }

// PushAll is tracking.Conn's: an invalidation of everything, a null.
func (c *conn) PushAll() bool { return c.invalidate(nil, true) }

// invalidate queues an invalidation of keys (all: of everything) for c, on
// c's connection or the one it redirects to, as Redis's
// sendTrackingMessage: a RESP3 connection gets a push, a RESP2 one
// subscribed to __redis__:invalidate a message, any other nothing. It
// reports whether it was queued. The tracker calls it under its lock, so
// pushes of one change reach every connection in one order.
func (c *conn) invalidate(keys []string, all bool) bool {
	to, redirected := c, false
	if id := c.push.redirect.Load(); id != 0 {
		to = c.s.connByID(id)
		if to == nil {
			c.push.broken.Store(true)
			if c.push.proto.Load() == 3 {
				c.enqueue(&pushMsg{broken: id})
			}
			return false
		}
		redirected = true
	}
	var m pushMsg
	switch {
	case to.push.proto.Load() == 3:
		m.head = ">2\r\n$10\r\ninvalidate\r\n"
	case redirected && to.push.subscribed.Load():
		m.head = "*3\r\n$7\r\nmessage\r\n$20\r\n" + invalidateChannel + "\r\n"
	default:
		return false
	}
	switch {
	case !all:
		m.keys = keys
	case c.push.proto.Load() == 3: // the tracking client's null, as Redis
		m.null = "_\r\n"
	default:
		m.null = "$-1\r\n"
	}
	to.enqueue(&m)
	return true
}

// pushMsg is one message: an invalidation (its head, then keys as an
// array, or null), tracking-redir-broken with the id of the client gone,
// or a Pub/Sub message.
type pushMsg struct {
	head, null string
	keys       []string
	broken     int64
	pub        *pubsub.Message
}

func (m *pushMsg) appendTo(b []byte, proto int32) []byte {
	if m.pub != nil {
		return appendMessage(b, proto, m.pub)
	}
	if m.broken != 0 {
		b = append(b, ">2\r\n$21\r\ntracking-redir-broken\r\n:"...)
		b = strconv.AppendInt(b, m.broken, 10)
		return append(b, '\r', '\n')
	}
	b = append(b, m.head...)
	if m.null != "" {
		return append(b, m.null...)
	}
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(m.keys)), 10)
	b = append(b, '\r', '\n')
	for _, k := range m.keys {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, '\r', '\n')
		b = append(b, k...)
		b = append(b, '\r', '\n')
	}
	return b
}

// enqueue appends m to c's queue; it runs on the sender's goroutine.
func (c *conn) enqueue(m *pushMsg) {
	q := &c.push
	first := !q.used.Swap(true)
	q.mu.Lock()
	if q.over {
		q.mu.Unlock()
		return
	}
	q.buf = m.appendTo(q.buf, q.proto.Load())
	var over bool
	if m.pub != nil {
		over = q.pubOver(c.s.pubLimit.Load())
	} else {
		over = int64(len(q.buf)) > c.s.config().OutputBufferLimit
	}
	if over { // a client that never reads: closed, as for its replies
		q.over, q.buf = true, nil
	}
	wake := q.waiting || first
	q.waiting = false
	q.mu.Unlock()
	switch {
	case over:
		c.s.stats.OutputLimitDisconnects.Add(1)
		c.nc.Close()
	case wake:
		c.nc.SetReadDeadline(time.Unix(1, 0))
	}
}

// pubOver reports whether the queue, holding a Pub/Sub message just added,
// is over l: past its hard limit, or past its soft one for longer than
// allowed. It runs under q.mu.
func (q *pushQueue) pubOver(l *pubLimit) bool {
	n := int64(len(q.buf))
	if l.hard > 0 && n > l.hard {
		return true
	}
	if l.soft <= 0 || n <= l.soft {
		q.softSince = time.Time{}
		return false
	}
	now := time.Now()
	if q.softSince.IsZero() {
		q.softSince = now
	}
	return now.Sub(q.softSince) > l.softFor
}

// flushPushes writes the queued pushes, and marks the goroutine waiting
// once the queue is empty. It runs right before each wait.
func (c *conn) flushPushes() error {
	q := &c.push
	if !q.used.Load() {
		return nil
	}
	for {
		q.mu.Lock()
		if len(q.buf) == 0 {
			q.waiting = true
			q.mu.Unlock()
			return nil
		}
		c.out = append(c.out, q.buf...)
		q.softSince = time.Time{}
		if cap(q.buf) > maxIdleOut {
			q.buf = nil
		} else {
			q.buf = q.buf[:0]
		}
		q.mu.Unlock()
		if err := c.flush(); err != nil {
			return err
		}
	}
}
