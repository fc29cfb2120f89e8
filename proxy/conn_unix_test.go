//go:build unix

package proxy

import (
	"net"
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
	addrs := map[string]string{"fd": ts.addr, "netconn": ts.serveNoDescriptor(b)}
	val := strings.Repeat("v", 64)
	for _, tc := range []struct{ name, req, reply string }{
		{"GET", encode("GET", "bench:key"), "$64\r\n" + val + "\r\n"},
		{"SET", encode("SET", "bench:key", val), "+OK\r\n"},
	} {
		for _, pipeline := range []int{1, 16} {
			for _, loop := range []string{"fd", "netconn"} {
				b.Run(tc.name+"/P"+strconv.Itoa(pipeline)+"/"+loop, func(b *testing.B) {
					c := dial(b, addrs[loop])
					c.do("SET", "bench:key", val)
					sc := ts.only(b)
					pingPong(b, c, tc.req, tc.reply, pipeline)
					c.nc.Close()
					if got, want := ts.forgotten(b, sc).raw == nil, loop == "netconn"; got != want {
						b.Fatalf("served through net.Conn: %v, want %v", got, want)
					}
				})
			}
		}
	}
}

// noDescriptor is a listener whose connections hide their descriptor, as
// TLS connections do, so the server serves them through net.Conn.
type noDescriptor struct{ net.Listener }

func (l noDescriptor) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return struct{ net.Conn }{nc}, nil // without SyscallConn
}

// serveNoDescriptor has ts serve a second listener, of connections without
// a descriptor, and returns its address.
func (ts *testServer) serveNoDescriptor(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- ts.Serve(noDescriptor{ln}) }()
	t.Cleanup(func() {
		ts.stop(t)
		if err := <-errc; err != nil {
			t.Errorf("Serve returned %v after Shutdown, want nil", err)
		}
	})
	return ln.Addr().String()
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
