package proxy

import (
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The connection loop waits for the socket only after a read that left
// room in the buffer (runFD). These cases would hang, and fail at the
// client's 10 s deadline, if it waited with bytes unread or lost a
// wake-up.

// A pipeline several times the read buffer, written at once, before the
// server's first read: reads that fill the buffer must be followed by
// reads, not waits.
func TestPipelineLargerThanReadBuffer(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	val := strings.Repeat("v", 200)
	var b strings.Builder
	const n = 1000 // ~240 KB, 15 read buffers
	for i := range n {
		b.WriteString(encode("SET", "k"+strings.Repeat("x", i%7), val))
	}
	b.WriteString(encode("GET", "kxx"))
	c.send(b.String())
	for i := range n {
		if got := c.reply(); got != "+OK\r\n" {
			t.Fatalf("reply %d = %q", i, got)
		}
	}
	if got := c.reply(); got != "$200\r\n"+val+"\r\n" {
		t.Fatalf("GET after the pipeline = %q", got)
	}
}

// One request at a time, each sent once the last reply is in, on several
// connections at once: every request arrives after the read that drained
// the socket, so each must wake the wait.
func TestRequestReplyRounds(t *testing.T) {
	ts := startServer(t, Config{})
	clients := make([]*rawClient, 4)
	for i := range clients {
		clients[i] = dial(t, ts.addr)
	}
	var wg sync.WaitGroup
	for w, c := range clients {
		wg.Go(func() {
			key := "rr" + strconv.Itoa(w)
			for i := 1; i <= 500; i++ {
				got, err := c.try(encode("INCR", key))
				if want := ":" + strconv.Itoa(i) + "\r\n"; err != nil || got != want {
					t.Errorf("client %d: INCR %d = %q, %v", w, i, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A request split across writes with pauses: the reads between them find
// the socket drained with the request incomplete, and wait for the rest.
func TestRequestInPieces(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	req := encode("SET", "pieces", strings.Repeat("p", 5000))
	for rest := req; rest != ""; {
		k := min(len(rest), 1500)
		c.send(rest[:k])
		rest = rest[k:]
		time.Sleep(20 * time.Millisecond)
	}
	if got := c.reply(); got != "+OK\r\n" {
		t.Fatalf("SET in pieces = %q", got)
	}
	if got := c.do("GET", "pieces"); got != "$5000\r\n"+strings.Repeat("p", 5000)+"\r\n" {
		t.Fatalf("GET after the SET in pieces = %.40q…", got)
	}
}

// A client that writes part of a request and closes before the server's
// loop begins: its data and its end of stream arrived, and woke the poller,
// before the loop's first read. The server must still see the end and
// close, not wait for a wake-up that came before it began.
func TestEndBeforeFirstRead(t *testing.T) {
	ts := startServer(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gl := &gatedListener{Listener: ln, gate: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- ts.Serve(gl) }()

	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := io.WriteString(nc, "*3\r\n$3\r\nSET\r\n$1\r\nx"); err != nil {
		t.Fatal(err)
	}
	nc.(*net.TCPConn).CloseWrite()
	time.Sleep(50 * time.Millisecond) // the bytes and the FIN reach the server's socket
	gl.gate <- struct{}{}             // only now does the server start serving it

	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, err := io.ReadAll(nc)
	if err != nil || len(rest) > 0 {
		t.Errorf("after a truncated request and EOF: %q, %v; want a close and nothing", rest, err)
	}
	if got := dial(t, ts.addr).do("EXISTS", "x"); got != ":0\r\n" {
		t.Errorf("EXISTS x = %q: the truncated SET ran", got)
	}
	close(gl.gate)
	ts.stop(t)
	if err := <-served; err != nil {
		t.Errorf("Serve on the gated listener: %v", err)
	}
}

// The probes that look for an unseen end of stream must not disturb a
// client: one that pauses longer than probeAfter between requests, and in
// the middle of one, is served throughout; with idle_timeout set it is
// not closed before it has been idle that long, and is closed once it has.
func TestProbesKeepClientsAndIdleTimeout(t *testing.T) {
	const idle = time.Second
	ts := startServer(t, Config{IdleTimeout: idle})
	c := dial(t, ts.addr)
	start := time.Now()
	for i := 1; i <= 3; i++ {
		if got := c.do("INCR", "slow"); got != ":"+strconv.Itoa(i)+"\r\n" {
			t.Fatalf("INCR %d = %q", i, got)
		}
		time.Sleep(probeAfter * 3 / 2)
	}
	req := encode("SET", "half", "v")
	c.send(req[:10])
	time.Sleep(probeAfter * 3)
	// The server's idle clock cannot start before it has the last bytes,
	// so the earliest close it may make is idle after this moment; a mark
	// taken after the reply would be late by the reply's round trip.
	last := time.Now()
	c.send(req[10:])
	if got := c.reply(); got != "+OK\r\n" {
		t.Fatalf("SET sent in two halves %v apart = %q", probeAfter*3, got)
	}
	if time.Since(start) < idle {
		t.Fatalf("the client was not busy past idle_timeout %v", idle)
	}
	c.nc.SetReadDeadline(time.Now().Add(idle + 10*time.Second))
	_, err := io.ReadAll(c.br)
	if err != nil {
		t.Fatalf("the idle client was not closed: %v", err)
	}
	if after := time.Since(last); after < idle {
		t.Errorf("closed %v after its last request, before idle_timeout %v", after, idle)
	}
}

// gatedListener hands each accepted connection over only when gate
// yields: the connection exists (and is watched by the poller) before
// the server starts serving it.
type gatedListener struct {
	net.Listener
	gate chan struct{}
}

func (l *gatedListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err == nil {
		<-l.gate
	}
	return nc, err
}
