//go:build unix

package proxy

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/pgcache/pgcache/internal/rawio"
)

// rawConn writes to the connection's descriptor without waiting, so a
// batch can push replies out as it goes and still notice a client that
// does not read them (see conn.room).
type rawConn struct {
	raw     syscall.RawConn // nil when the connection has no descriptor
	writeFn func(fd uintptr) bool

	wbuf []byte
	wn   int
	werr error
}

func (c *conn) initRaw() {
	if sc, ok := c.nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw = raw
			c.writeFn = c.writeFD // bound once: no allocation per write
		}
	}
}

// writeNow writes as much of p as the socket takes without waiting. On a
// connection without a descriptor of its own (TLS, a pipe in tests) it
// waits instead, up to WriteTimeout.
func (c *conn) writeNow(p []byte) (int, error) {
	if c.raw == nil {
		return c.writeWaiting(p)
	}
	c.wbuf = p
	err := c.raw.Write(c.writeFn)
	n, werr := c.wn, c.werr
	c.wbuf, c.wn, c.werr = nil, 0, nil
	if err != nil {
		return 0, err
	}
	return n, werr
}

// writeFD is one write(2) on the non-blocking descriptor; returning true
// tells the runtime not to wait for the socket to become writable.
func (c *conn) writeFD(fd uintptr) bool {
	n, err := rawio.Write(fd, c.wbuf)
	if n < 0 {
		n = 0
	}
	if err == syscall.EAGAIN || err == syscall.EINTR {
		err = nil
	}
	c.wn, c.werr = n, err
	return true
}

// nonBlocking reports whether writeNow returns without waiting.
func (c *conn) nonBlocking() bool { return c.raw != nil }

// run serves the client: on its descriptor when it has one (runFD),
// through net.Conn otherwise (TLS, pipes in tests).
func (c *conn) run() error {
	if c.raw == nil {
		return c.runConn()
	}
	return c.runFD()
}

// runFD serves the client from inside RawConn.Read, reading the
// descriptor itself, to save a system call per request.
//
// Through net.Conn, a read that brought a request is followed, once its
// replies are written, by a read that fails with EAGAIN before the
// goroutine waits: the runtime forgets readiness it saw before a Read
// begins, so a Read must try the socket before it waits. A client that
// waits for each reply (redis-benchmark -P 1, most applications) makes
// that failed read every time, one system call in three, and on this VM a
// system call is most of a request's cost.
//
// Inside RawConn.Read the runtime forgets readiness once, before the first
// call of the function; after that every byte that arrives is remembered
// and wakes the wait. So a read that took less than the room it had
// (drained: the socket's queue was empty of data when it ran, and data
// that arrives later will wake us) lets us wait at once; a read that
// filled the buffer reads again first.
//
// The end of the stream is the exception. A read takes every byte queued
// but not the end of stream queued behind them, and when the bytes and
// the end came together (in one segment, or before the poller looked)
// their one wake-up is spent: nothing will wake the wait. So a wait after
// a drained read is unsure, and ready arms a deadline at most probeAfter
// away; when it passes, serveFD is entered again and its first read looks.
// A busy client pays for that one deadline per probeAfter, not per
// request, and a client whose last request came with its end of stream
// is closed within probeAfter rather than held for good.
//
// The first read of each serveFD is followed by another for the same
// reason (readiness that came before the call is forgotten): one EAGAIN
// per entry, not per request.
func (c *conn) runFD() error {
	if err := c.ready(false); err != nil {
		return err
	}
	for {
		err := c.serveFD()
		if err != errReadDeadline {
			return err
		}
		if err := c.deadlinePassed(); err != nil {
			return err
		}
	}
}

// errReadDeadline is serveFD's report of a wait that reached its deadline,
// kept apart from a write's deadline, which ends the connection.
var errReadDeadline = errors.New("read deadline")

// serveFD is one RawConn.Read: it serves requests until the connection
// ends or a wait reaches its deadline (errReadDeadline).
func (c *conn) serveFD() error {
	var end error
	first := true
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, drained, err := c.rd.fillFD(int(fd))
			if err == syscall.EINTR {
				continue
			}
			wasFirst := first
			drained = drained && !first
			first = false
			switch {
			case err == syscall.EAGAIN && wasFirst:
				return false // nothing came since the deadline was armed
			case err == syscall.EAGAIN:
				end = c.ready(false)
				return end != nil
			case err != nil:
				end = err
				return true
			case n == 0:
				end = io.EOF
				return true
			}
			if end = c.serveBatch(); end != nil {
				return true
			}
			if drained {
				end = c.ready(true)
				return end != nil
			}
		}
	})
	if end != nil {
		return end
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errReadDeadline
	}
	return err
}

// fillFD is fill with one read(2) of the non-blocking descriptor. drained
// reports that the read took less than the room it had: the socket had no
// more then.
func (rd *reader) fillFD(fd int) (n int, drained bool, err error) {
	rd.makeRoom()
	room := len(rd.buf) - rd.w
	n, err = rawio.Read(uintptr(fd), rd.buf[rd.w:])
	rd.w += n
	return n, n < room, err
}

// peerGone reports whether the client has closed its end (or reset it):
// a blocked command asks it (blocking.go), the connection's reads being on
// hold. Commands sent after the blocking one and not read yet do not hide
// the close behind them (peerClosed).
func (c *conn) peerGone() bool {
	if c.raw == nil {
		return false
	}
	gone := false
	c.raw.Control(func(fd uintptr) { gone = peerClosed(int(fd)) })
	return gone
}
