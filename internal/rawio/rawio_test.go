package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// pair returns a wrapped client connection and the server's end.
func pair(t testing.TB) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, _ := ln.Accept()
		accepted <- nc
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	c, ok := Wrap(nc).(*Conn)
	if !ok {
		t.Fatal("a TCP connection was not wrapped")
	}
	t.Cleanup(func() { c.Close(); srv.Close() })
	return c, srv
}

// What is written whole arrives whole, both ways, including more than the
// sockets hold at once (writes that wait for room, reads that wait for
// bytes), and the peer's close reads as io.EOF.
func TestRoundTrip(t *testing.T) {
	c, srv := pair(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	errc := make(chan error, 1)
	go func() {
		n, err := c.Write(big)
		if err == nil && n != len(big) {
			err = io.ErrShortWrite
		}
		errc <- err
	}()
	got := make([]byte, len(big))
	if _, err := io.ReadFull(srv, got); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Write: %v", err)
	}
	if !bytes.Equal(got, big) {
		t.Fatal("the bytes written are not the bytes read")
	}
	go func() {
		_, err := srv.Write(big)
		srv.Close()
		errc <- err
	}()
	back, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("ReadAll to the peer's close: %v", err)
	}
	if !bytes.Equal(back, big) {
		t.Fatalf("read back %d bytes, want the %d written", len(back), len(big))
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("Read after EOF = %d, %v", n, err)
	}
}

// Deadlines and Close end waiting reads and writes with the errors
// net.Conn gives, and a write to a peer that reset fails as a net.OpError.
func TestErrors(t *testing.T) {
	c, srv := pair(t)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 8))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("Read past its deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})

	// Nobody reads srv: a write of more than the sockets hold waits, and
	// its deadline ends it.
	c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	n, err := c.Write(make([]byte, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) || n >= 64<<20 {
		t.Errorf("Write past its deadline: %d, %v, want a timeout and a short count", n, err)
	}
	c.SetWriteDeadline(time.Time{})

	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read on a closed conn: %v, want net.ErrClosed", err)
	}

	c2, srv2 := pair(t)
	srv2.(*net.TCPConn).SetLinger(0)
	srv2.Close() // a reset
	srv.Close()
	var oe *net.OpError
	for range 100 { // the first write may go out before the reset is seen
		if _, err = c2.Write([]byte("x")); err != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !errors.As(err, &oe) || oe.Op != "write" {
		t.Errorf("Write to a reset peer: %v, want a net.OpError from write", err)
	}
}

// A connection without a descriptor of its own is left as it is.
func TestWrapPipe(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Wrap(a) != a {
		t.Error("net.Pipe was wrapped")
	}
}

// BenchmarkRoundTrip sends 64 bytes over loopback TCP and waits for them
// to come back, both ends through Conn (raw) or both through the plain
// net.Conn (netconn): the backends' sessions to PostgreSQL and Valkey
// (a request, then a wait for its reply) with and without this package.
// Conn earns its code while raw costs less than netconn, in cpu-ns/op above
// all (docs/performance.md says how to read it).
func BenchmarkRoundTrip(b *testing.B) {
	for _, raw := range []bool{true, false} {
		name := "raw"
		if !raw {
			name = "netconn"
		}
		b.Run(name, func(b *testing.B) {
			c, srv := pair(b)
			var client, echo net.Conn = c, srv
			if raw {
				echo = Wrap(srv)
			} else {
				client = c.Conn
			}
			go func() {
				buf := make([]byte, 64)
				for {
					if _, err := io.ReadFull(echo, buf); err != nil {
						return
					}
					if _, err := echo.Write(buf); err != nil {
						return
					}
				}
			}()
			msg, got := bytes.Repeat([]byte("x"), 64), make([]byte, 64)
			b.ReportAllocs()
			b.ResetTimer()
			stop := testenv.CPUPerOp(b)
			for range b.N {
				if _, err := client.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(client, got); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			stop()
		})
	}
}
