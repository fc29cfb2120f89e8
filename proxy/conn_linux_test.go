package proxy

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// A client whose last bytes and end of stream come in one segment (a
// script's `printf 'PING\r\n' | nc -N`, or a request cut short): their one
// wake-up brings both, and the read that takes the bytes leaves the end
// unread. The server must still close the connection (within probeAfter),
// not hold it and its goroutine for good. TCP_CORK on the client puts the
// bytes and the FIN in one segment; the PING before makes the server's
// wait follow a drained read, the case runFD cannot be sure of.
func TestEndWithTheLastBytes(t *testing.T) {
	ts := startServer(t, Config{})
	for _, tc := range []struct{ name, last, want string }{
		{"a whole request", "PING\r\n", "+PONG\r\n"},
		{"a request cut short", "*3\r\n$3\r\nSET\r\n$1\r\nx", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 5 {
				c := dial(t, ts.addr)
				if got := c.do("PING"); got != "+PONG\r\n" {
					t.Fatalf("PING = %q", got)
				}
				time.Sleep(10 * time.Millisecond) // the server waits
				cork(t, c.nc)
				io.WriteString(c.nc, tc.last)
				c.nc.(*net.TCPConn).CloseWrite()
				c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				rest, err := io.ReadAll(c.br)
				if err != nil || string(rest) != tc.want {
					t.Fatalf("round %d: after %q and the end of stream: %q, %v; want %q and a close", round, tc.last, rest, err, tc.want)
				}
			}
			if got := dial(t, ts.addr).do("EXISTS", "x"); got != ":0\r\n" {
				t.Errorf("EXISTS x = %q: the request cut short ran", got)
			}
		})
	}
}

// cork holds what is written to nc until it is closed for writing, so the
// bytes and the FIN leave in one segment.
func cork(t *testing.T, nc net.Conn) {
	t.Helper()
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1)
	}); err != nil || serr != nil {
		t.Fatalf("TCP_CORK: %v %v", err, serr)
	}
}
