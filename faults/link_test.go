package faults

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer echoes every connection on a free port until the test ends,
// and reports each connection's end (EOF or error) on ended.
func echoServer(t *testing.T) (addr string, ended <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_, err := io.Copy(c, c)
				c.Close()
				ch <- err
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), ch
}

// TestLinkStall: a stalled connection forwards nothing either way and
// closes neither end, even when one end closes its own; Close ends it.
func TestLinkStall(t *testing.T) {
	addr, ended := echoServer(t)
	l, err := NewLink(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	quiet, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	talker, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer talker.Close()
	roundTrip := func(c net.Conn, msg string) error {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.WriteString(c, msg); err != nil {
			return err
		}
		buf := make([]byte, len(msg))
		_, err := io.ReadFull(c, buf)
		if err == nil && string(buf) != msg {
			err = errors.New("echo mismatch")
		}
		return err
	}
	for _, c := range []net.Conn{quiet, talker} {
		if err := roundTrip(c, "hello"); err != nil {
			t.Fatalf("relay before the stall: %v", err)
		}
	}
	if err := roundTrip(talker, "LISTEN x"); err != nil {
		t.Fatal(err)
	}

	if n := l.Stall(func(heard []byte) bool { return bytes.Contains(heard, []byte("LISTEN")) }); n != 1 {
		t.Fatalf("Stall matched %d connections, want 1", n)
	}
	err = roundTrip(talker, "anyone?")
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("stalled connection: %v, want a read that times out (no data, no close)", err)
	}
	if err := roundTrip(quiet, "still here"); err != nil {
		t.Fatalf("the other connection after the stall: %v", err)
	}
	talker.Close()
	select {
	case err := <-ended:
		t.Fatalf("the server saw the stalled connection end (%v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	if n := l.Conns(); n != 2 {
		t.Errorf("Conns = %d, want 2", n)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Fatal("Close left a server connection open")
		}
	}
}
