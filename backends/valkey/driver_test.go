package valkey

import (
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/rawio"
)

func TestOpen(t *testing.T) {
	ctx := ctxT(t)
	t.Run("namespace", func(t *testing.T) {
		d := newDriver(t, server, nil)
		a, b := open(t, d), open(t, d)
		mustSet(t, a, "k", "a")
		mustSet(t, b, "k", "b")
		if v, _ := mustGet(t, a, "k"); v != "a" {
			t.Fatalf("route a reads %q: routes collide", v)
		}
		if got, err := server.Do(ctx, "GET", a.route+":k"); err != nil || got != "a" {
			t.Fatalf("GET %s:k on the server = %q, %v", a.route, got, err)
		}
	})
	t.Run("raw_keys", func(t *testing.T) {
		d := newDriver(t, server, map[string]any{"raw_keys": true})
		b, err := d.Open(ctx, backends.RouteSpec{Name: "only"})
		if err != nil {
			t.Fatal(err)
		}
		mustSet(t, b, "raw-k", "v")
		if got, err := server.Do(ctx, "GET", "raw-k"); err != nil || got != "v" {
			t.Fatalf("GET raw-k on the server = %q, %v", got, err)
		}
		// The same route again (a reload) is fine; another route is not
		// until the first is gone.
		again, err := d.Open(ctx, backends.RouteSpec{Name: "only"})
		if err != nil {
			t.Fatalf("reopening the route: %v", err)
		}
		var se *backends.SpecError
		if _, err := d.Open(ctx, backends.RouteSpec{Name: "second"}); !errors.As(err, &se) {
			t.Fatalf("second route on raw_keys = %v, want a SpecError", err)
		}
		b.Close()
		b.Close() // idempotent: the claim is released once
		again.Close()
		if _, err := d.Open(ctx, backends.RouteSpec{Name: "second"}); err != nil {
			t.Fatalf("second route after the first closed: %v", err)
		}
	})
	t.Run("spec", func(t *testing.T) {
		d := newDriver(t, server, nil)
		var se *backends.SpecError
		if _, err := d.Open(ctx, backends.RouteSpec{Name: "r", Table: "t"}); !errors.As(err, &se) || se.Field != "table" {
			t.Fatalf("Open with a table = %v, want a SpecError on table", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		d := newDriver(t, server, nil)
		s := open(t, d)
		d.Close()
		if _, _, err := s.Get(ctx, "k"); !errors.Is(err, backends.ErrUnavailable) {
			t.Fatalf("Get after Close = %v, want ErrUnavailable", err)
		}
		if _, err := d.Open(ctx, backends.RouteSpec{Name: "r"}); err == nil {
			t.Fatal("Open after Close succeeded")
		}
	})
}

// Plain connections to Valkey read and write with raw system calls
// (package rawio); TLS ones are dialed as valkey-go dials them.
func TestDialRaw(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			nc.Close()
		}
	}()
	nc, err := dial(ctxT(t), ln.Addr().String(), &net.Dialer{Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, ok := nc.(*rawio.Conn); !ok {
		t.Errorf("plain dial gave %T, want *rawio.Conn", nc)
	}
	// The server closes at once: a TLS handshake fails, as valkey-go's own
	// dial would, rather than hand back a connection that is not TLS.
	if nc, err := dial(ctxT(t), ln.Addr().String(), &net.Dialer{Timeout: 5 * time.Second}, &tls.Config{ServerName: "x"}); err == nil {
		nc.Close()
		t.Error("a TLS dial to a server that speaks no TLS succeeded")
	}
}
