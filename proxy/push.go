package proxy

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pushes: messages another goroutine sends a connection (an invalidation,
// CLIENT TRACKING). The connection's goroutine alone writes its socket.
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

	used       atomic.Bool  // a push was ever queued: until then, waits skip the lock
	proto      atomic.Int32 // the connection's protocol, for senders
	subscribed atomic.Bool  // to invalidateChannel (RESP2 redirection)
}

// enqueue queues one message for c; it runs on the sender's goroutine.
func (c *conn) enqueue(msg []byte) {
	q := &c.push
	first := !q.used.Swap(true)
	q.mu.Lock()
	if q.over {
		q.mu.Unlock()
		return
	}
	q.buf = append(q.buf, msg...)
	over := int64(len(q.buf)) > c.s.config().OutputBufferLimit
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
