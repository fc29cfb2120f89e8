// Package rawio reads and writes non-blocking sockets with raw system
// calls: without telling the scheduler, since they cannot block.
//
// A read or write through net.Conn enters the system call through the
// scheduler (entersyscall), and when the scheduler's monitor thread
// (sysmon) is asleep because every P was idle, that wakes it; it then
// polls every 20 µs for a millisecond before it sleeps again. A process
// that is idle between requests, as a cache in front of PostgreSQL mostly
// is at a few clients, paid that on nearly every request (perf showed it
// in runtime.sysmon's nanosleep). The polling was not all waste: it kept
// the VM's CPU from halting during long waits, so one client SETting into
// a standard table, whose commit waits for the WAL, was a little slower
// without it. Figures, and BenchmarkRoundTrip to check that this still
// pays: docs/performance.md.
//
// Conn wraps a TCP or Unix connection so that its Read and Write do this;
// waiting, deadlines and closing are still the runtime's.
package rawio

import (
	"io"
	"net"
	"os"
	"syscall"
)

// Conn is a net.Conn whose reads and writes are raw system calls on its
// non-blocking descriptor. Wrap makes one.
type Conn struct {
	net.Conn
	raw syscall.RawConn
}

// Wrap returns nc with raw reads and writes, or nc itself when it has no
// descriptor of its own (or the platform has no raw calls).
func Wrap(nc net.Conn) net.Conn {
	if !supported {
		return nc
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nc
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	return &Conn{Conn: nc, raw: raw}
}

// Read reads what has arrived, waiting for something when nothing has.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	werr := c.raw.Read(func(fd uintptr) bool {
		for {
			n, err = Read(fd, p)
			switch err {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until readable
			}
			return true
		}
	})
	switch {
	case werr != nil:
		return 0, werr
	case err != nil:
		return 0, c.opError("read", err)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting while the socket is full.
func (c *Conn) Write(p []byte) (int, error) {
	var done int
	var err error
	werr := c.raw.Write(func(fd uintptr) bool {
		for done < len(p) {
			n, e := Write(fd, p[done:])
			switch e {
			case nil:
				done += n
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable
			default:
				err = e
				return true
			}
		}
		return true
	})
	switch {
	case werr != nil:
		return done, werr
	case err != nil:
		return done, c.opError("write", err)
	}
	return done, nil
}

// opError is the error net.Conn gives for a failed system call.
func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(),
		Err: os.NewSyscallError(op, err)}
}
