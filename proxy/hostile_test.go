package proxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Hostile clients: each gets what Redis would give it and is closed, the
// server's memory stays bounded, and every other client goes on being
// served.

// heapBound is how much the heap may grow across a hostile case. It is
// generous: the point is that 200MB of input or of unread replies do not
// stay on the heap.
const heapBound = 64 << 20

func TestMalformedFrames(t *testing.T) {
	ts := startServer(t, Config{})
	for _, tc := range []struct{ name, in, want string }{
		{"overflow frame", "*1\r\n$9223372036854775807\r\nx\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"huge multibulk count", "*1048577\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"multibulk count past int64", "*99999999999999999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"huge bulk length", "*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"negative bulk length", "*2\r\n$3\r\nGET\r\n$-7\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"expected dollar", "*1\r\nx3\r\n", "-ERR Protocol error: expected '$', got 'x'\r\n"},
		{"unbalanced quotes", "GET \"k\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, ts.addr)
			c.send(tc.in)
			if got := c.reply(); got != tc.want {
				t.Errorf("reply = %q, want %q", got, tc.want)
			}
			if !c.closed() {
				t.Errorf("connection still open")
			}
			serves(t, ts.addr)
		})
	}
	// Negative counts are empty requests, as in Redis: the client goes on.
	c := dial(t, ts.addr)
	c.send("*-1\r\n*-9223372036854775808\r\n*0\r\n")
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING after negative counts = %q", got)
	}
}

// An inline request with a NUL byte before its newline can never be run:
// Redis waits for 64KiB before refusing it, pgcache answers the protocol
// error and closes as soon as the NUL arrives, with the rest of the line
// (and its newline) never sent. The deadline is a bound for the failure,
// not a speed: before, the connection waited for 64KiB that never came.
func TestInlineNULClosesAtOnce(t *testing.T) {
	ts := startServer(t, Config{})
	for _, in := range []string{"\x00", "\x00 garbage", "\x00\x01\xfe\r", "SET k a\x00b", "GET \x00\r\nPING\r\n"} {
		t.Run(strconv.Quote(in), func(t *testing.T) {
			nc, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := io.WriteString(nc, in); err != nil {
				t.Fatal(err)
			}
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(nc)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("still open after 5s with %q answered", got)
			}
			if want := "-ERR Protocol error: NUL byte in inline request\r\n"; string(got) != want {
				t.Errorf("answer %q, want %q and a close", got, want)
			}
			serves(t, ts.addr)
		})
	}
}

// TestHugeInlineLine sends 200MB without a newline, in chunks, until the
// server hangs up: it must after 64KiB, without holding the rest.
func TestHugeInlineLine(t *testing.T) {
	ts := startServer(t, Config{})
	before := heapInuse()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	sent := 0
	for sent < 200<<20 {
		nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		n, err := nc.Write(chunk)
		sent += n
		if err != nil {
			break
		}
	}
	if sent >= 200<<20 {
		t.Fatalf("the server took all %d bytes of an inline line", sent)
	}
	eventually(t, "protocol error counted", func() bool { return ts.Stats().ProtocolErrors.Load() == 1 })
	if after := heapInuse(); after > before+heapBound {
		t.Errorf("heap grew from %d to %d bytes", before, after)
	}
	serves(t, ts.addr)
}

// TestAnnouncedBulkIsNotAllocated: a client announcing a 500MB value and
// then stalling costs the server what it sent, not what it announced.
func TestAnnouncedBulkIsNotAllocated(t *testing.T) {
	ts := startServer(t, Config{})
	before := heapInuse()
	var conns []*rawClient
	for range 4 {
		c := dial(t, ts.addr)
		c.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000000\r\n" + strings.Repeat("x", 100<<10))
		conns = append(conns, c)
	}
	serves(t, ts.addr) // all four have been read by now, or at least accepted
	if after := heapInuse(); after > before+heapBound {
		t.Errorf("heap grew from %d to %d bytes for 4 x 100KiB sent", before, after)
	}
	for _, c := range conns {
		c.nc.Close()
	}
}

// TestNeverReadingClient pipelines GETs of a 1MB value and never reads the
// replies: the server must disconnect it once its unread replies pass the
// output limit, rather than hold them.
func TestNeverReadingClient(t *testing.T) {
	ts := startServer(t, Config{OutputBufferLimit: 4 << 20})
	c := dial(t, ts.addr)
	if got := c.do("SET", "big", strings.Repeat("v", 1<<20)); got != "+OK\r\n" {
		t.Fatalf("SET = %q", got)
	}
	before := heapInuse()
	hog, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hog.Close()
	hog.(*net.TCPConn).SetReadBuffer(64 << 10)
	hog.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(hog, strings.Repeat(encode("GET", "big"), 200)); err != nil {
		t.Fatalf("write: %v", err)
	}
	eventually(t, "output limit disconnect", func() bool { return ts.Stats().OutputLimitDisconnects.Load() == 1 })
	if after := heapInuse(); after > before+heapBound {
		t.Errorf("heap grew from %d to %d bytes", before, after)
	}
	serves(t, ts.addr)
}

// TestLargeValues: values much larger than the buffers go through whole.
func TestLargeValues(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	for _, size := range []int{16<<10 - 1, 16 << 10, 100 << 10, 4 << 20} {
		v := strings.Repeat(strconv.Itoa(size%10), size)
		if got := c.do("SET", "large", v); got != "+OK\r\n" {
			t.Fatalf("SET of %d bytes = %q", size, got)
		}
		if got := c.do("GET", "large"); got != "$"+strconv.Itoa(size)+"\r\n"+v+"\r\n" {
			t.Fatalf("GET of %d bytes returned %d bytes", size, len(got))
		}
	}
}

// TestQueryLimit: a request over MaxQueryBytes ends the connection without
// a reply, as Redis's client-query-buffer-limit does.
func TestQueryLimit(t *testing.T) {
	ts := startServer(t, Config{MaxQueryBytes: 1 << 20})
	c := dial(t, ts.addr)
	v := strings.Repeat("v", 600<<10)
	go c.nc.Write([]byte(encode("MSET", "a", v, "b", v)))
	if !c.closed() {
		t.Fatal("connection still open")
	}
	if n := ts.Stats().QueryLimitDisconnects.Load(); n != 1 {
		t.Errorf("QueryLimitDisconnects = %d, want 1", n)
	}
	serves(t, ts.addr)
}

// TestSlowClient sends a pipeline one byte per write.
func TestSlowClient(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	in := encode("SET", "slow", "v a l") + "GET slow\r\n" + encode("MGET", "slow", "pg:nosuch") + "PING\n" + encode("INCRBY", "n", "12")
	for i := range len(in) {
		c.send(in[i : i+1])
	}
	want := []string{"+OK\r\n", "$5\r\nv a l\r\n", "*2\r\n$5\r\nv a l\r\n$-1\r\n", "+PONG\r\n", ":12\r\n"}
	for _, w := range want {
		if got := c.reply(); got != w {
			t.Errorf("reply = %q, want %q", got, w)
		}
	}
}

func TestMaxClients(t *testing.T) {
	ts := startServer(t, Config{MaxClients: 2})
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	a.do("PING")
	b.do("PING")
	c := dial(t, ts.addr)
	if got := c.reply(); got != "-ERR max number of clients reached\r\n" {
		t.Errorf("third client got %q", got)
	}
	if !c.closed() {
		t.Error("third client still connected")
	}
	if n := ts.Stats().RejectedConnections.Load(); n != 1 {
		t.Errorf("RejectedConnections = %d", n)
	}
	a.nc.Close()
	eventually(t, "first client gone", func() bool { return ts.Stats().ConnectedClients.Load() == 1 })
	serves(t, ts.addr)
	if got := b.do("PING"); got != "+PONG\r\n" {
		t.Errorf("second client: %q", got)
	}
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, Config{IdleTimeout: 100 * time.Millisecond})
	c := dial(t, ts.addr)
	if !c.closed() {
		t.Fatal("idle client still connected")
	}
	eventually(t, "idle client gone", func() bool { return ts.Stats().ConnectedClients.Load() == 0 })
	serves(t, ts.addr) // within 100ms of connecting, or the test machine is very slow
}

// TestPanicRecovery: a handler's panic closes that connection only, and
// the route table it held is released.
func TestPanicRecovery(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	c.send(encode("SET", "p", "1") + encode("DEBUG-PANIC") + encode("PING"))
	if !c.closed() {
		t.Fatal("connection open after a panic")
	}
	if n := ts.Stats().Panics.Load(); n != 1 {
		t.Errorf("Panics = %d", n)
	}
	serves(t, ts.addr)
	b, err := ts.driver.Open(context.Background(), backends.RouteSpec{Name: "next"})
	if err != nil {
		t.Fatal(err)
	}
	next, err := route.NewTable([]*route.Route{{Name: "next", Prefixes: []string{""}, BackendName: "mem", Backend: b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ts.router.Swap(ctx, next); err != nil {
		t.Errorf("route swap after a panic: %v (the panicking batch kept its table)", err)
	}
}

// TestWriteTimeout: a client that stops reading with fewer unread replies
// than the output limit is closed once a write waits longer than
// WriteTimeout.
func TestWriteTimeout(t *testing.T) {
	ts := startServer(t, Config{WriteTimeout: 50 * time.Millisecond})
	c := dial(t, ts.addr)
	c.do("SET", "big", strings.Repeat("v", 1<<20))
	c.nc.(*net.TCPConn).SetReadBuffer(64 << 10)
	c.send(strings.Repeat(encode("GET", "big"), 30)) // 30MB, under the 64MiB limit
	eventually(t, "client closed", func() bool { return ts.Stats().ConnectedClients.Load() == 0 })
	if n := ts.Stats().OutputLimitDisconnects.Load(); n != 0 {
		t.Errorf("OutputLimitDisconnects = %d, want 0: the write timeout should have closed it", n)
	}
	serves(t, ts.addr)
}
