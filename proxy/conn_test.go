package proxy

import (
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
