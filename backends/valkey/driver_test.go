package valkey

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
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

// Calls share one command_timeout context while at least 9/10 of the
// timeout is left on it; a caller with a sooner deadline keeps its own, a
// caller with another parent gets its own, and a parent's cancellation
// reaches the shared one.
func TestBoundedSharesDeadline(t *testing.T) {
	d := &Driver{timeout: 10 * time.Second}
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := d.bounded(parent), d.bounded(parent)
	if a != b {
		t.Error("two calls in a row got different bounds")
	}
	dl, ok := a.Deadline()
	if left := time.Until(dl); !ok || left > 10*time.Second || left < 9*time.Second {
		t.Errorf("deadline %v away (set: %v), want between 0.9 and 1 timeout", left, ok)
	}
	soon, cancelSoon := context.WithTimeout(parent, 100*time.Millisecond)
	defer cancelSoon()
	if got := d.bounded(soon); got != soon {
		t.Error("a caller whose deadline is sooner than the timeout did not keep its context")
	}
	other, cancelOther := context.WithCancel(context.Background())
	defer cancelOther()
	if c := d.bounded(other); c == a || c.Done() == a.Done() {
		t.Error("a caller with another parent shared its bound")
	}
	// The bound is replaced once it is stale.
	d.bound.Load().stale.Store(true)
	if d.bounded(parent) == a {
		t.Error("a stale bound was reused")
	}
	cur := d.bounded(parent)
	cancel()
	select {
	case <-cur.Done():
	case <-time.After(time.Second):
		t.Error("cancelling the parent did not end the shared bound")
	}
}

// A tenth of the timeout after a bound is made, its timer marks it stale.
func TestBoundGoesStale(t *testing.T) {
	d := &Driver{timeout: 50 * time.Millisecond}
	first := d.bounded(context.Background())
	for end := time.Now().Add(10 * time.Second); d.bounded(context.Background()) == first; {
		if time.Now().After(end) {
			t.Fatal("the first bound was still handed out 10 s later")
		}
		time.Sleep(time.Millisecond)
	}
	if dl, ok := first.Deadline(); !ok || dl.IsZero() {
		t.Error("the shared bound has no deadline")
	}
}
