package deadline

import (
	"context"
	"testing"
	"time"
)

// Calls share one context while at least 9/10 of the timeout is left on
// it; a caller with a sooner deadline keeps its own, a caller with another
// parent gets its own, and a parent's cancellation reaches the shared one.
func TestSharesDeadline(t *testing.T) {
	s := New(10 * time.Second)
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := s.Of(parent), s.Of(parent)
	if a != b {
		t.Error("two calls in a row got different bounds")
	}
	dl, ok := a.Deadline()
	if left := time.Until(dl); !ok || left > 10*time.Second || left < 9*time.Second {
		t.Errorf("deadline %v away (set: %v), want between 0.9 and 1 timeout", left, ok)
	}
	soon, cancelSoon := context.WithTimeout(parent, 100*time.Millisecond)
	defer cancelSoon()
	if got := s.Of(soon); got != soon {
		t.Error("a caller whose deadline is sooner than the timeout did not keep its context")
	}
	other, cancelOther := context.WithCancel(context.Background())
	defer cancelOther()
	if c := s.Of(other); c == a || c.Done() == a.Done() {
		t.Error("a caller with another parent shared its bound")
	}
	// The bound is replaced once it is stale.
	s.other.Load().stale.Store(true)
	if s.Of(parent) == a {
		t.Error("a stale bound was reused")
	}
	cur := s.Of(parent)
	cancel()
	select {
	case <-cur.Done():
	case <-time.After(time.Second):
		t.Error("cancelling the parent did not end the shared bound")
	}
}

// Calls from a parent that never ends and from one that can, in turns,
// each keep sharing their own bound.
func TestParentsInTurns(t *testing.T) {
	s := New(10 * time.Second)
	srv, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, f := s.Of(srv), s.Of(context.Background())
	if a == f {
		t.Fatal("a server's context and Background shared a bound")
	}
	for range 3 {
		if s.Of(srv) != a || s.Of(context.Background()) != f {
			t.Fatal("calls in turns from two parents made new bounds")
		}
	}
	cancel()
	select {
	case <-a.Done():
	case <-time.After(time.Second):
		t.Error("cancelling the server's context did not end its bound")
	}
	if f.Err() != nil {
		t.Errorf("Background's bound ended with the server's context: %v", f.Err())
	}
}

// A tenth of the timeout after a bound is made, its timer marks it stale.
func TestGoesStale(t *testing.T) {
	s := New(50 * time.Millisecond)
	first := s.Of(context.Background())
	for end := time.Now().Add(10 * time.Second); s.Of(context.Background()) == first; {
		if time.Now().After(end) {
			t.Fatal("the first bound was still handed out 10 s later")
		}
		time.Sleep(time.Millisecond)
	}
	if dl, ok := first.Deadline(); !ok || dl.IsZero() {
		t.Error("the shared bound has no deadline")
	}
}
