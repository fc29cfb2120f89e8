//go:build unix

package proxy

import "syscall"

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
	n, err := syscall.Write(int(fd), c.wbuf)
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
