//go:build unix

package proxy

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkConnLoop runs the connection loop of runFD (reads and writes as
// raw system calls on the descriptor, from inside one RawConn.Read) beside
// the plain net.Conn loop (runConn and waiting writes) it replaces, over
// loopback with the same client. runFD earns its code while fd is faster
// than netconn at P1, where a client waits for each reply and runFD saves
// a read that fails with EAGAIN per request (docs/performance.md says how
// to read it).
func BenchmarkConnLoop(b *testing.B) {
	ts := startServer(b, Config{})
	val := strings.Repeat("v", 64)
	for _, tc := range []struct{ name, req, reply string }{
		{"GET", encode("GET", "bench:key"), "$64\r\n" + val + "\r\n"},
		{"SET", encode("SET", "bench:key", val), "+OK\r\n"},
	} {
		for _, pipeline := range []int{1, 16} {
			for _, loop := range []struct {
				name        string
				netConnOnly bool
			}{{"fd", false}, {"netconn", true}} {
				b.Run(tc.name+"/P"+strconv.Itoa(pipeline)+"/"+loop.name, func(b *testing.B) {
					netConnOnly.Store(loop.netConnOnly)
					defer netConnOnly.Store(false)
					c := dial(b, ts.addr)
					c.do("SET", "bench:key", val)
					sc := ts.only(b)
					pingPong(b, c, tc.req, tc.reply, pipeline)
					c.nc.Close()
					if got := ts.forgotten(b, sc).raw == nil; got != loop.netConnOnly {
						b.Fatalf("served through net.Conn: %v, want %v", got, loop.netConnOnly)
					}
				})
			}
		}
	}
}

// only returns the one connection the server has.
func (ts *testServer) only(b *testing.B) *conn {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.conns) != 1 {
		b.Fatalf("%d connections, want 1", len(ts.conns))
	}
	for c := range ts.conns {
		return c
	}
	return nil
}

// forgotten waits until c's goroutine has ended (it was closed), after
// which its fields may be read: forget took ts.mu after the goroutine
// last wrote them.
func (ts *testServer) forgotten(b *testing.B, c *conn) *conn {
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		ts.mu.Lock()
		_, open := ts.conns[c]
		ts.mu.Unlock()
		if !open {
			return c
		}
		if time.Now().After(end) {
			b.Fatal("the server kept a closed connection for 10 s")
		}
	}
}
