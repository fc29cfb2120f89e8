package route

import (
	"context"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/backends/memory"
)

// TestConformance runs the Backend contract through a route's
// instrumented wrapper (metrics, the value limit), so the wrapper answers
// as the backend it wraps does.
func TestConformance(t *testing.T) {
	d := memory.NewDriver("mem", 64<<20)
	t.Cleanup(func() { d.Close() })
	backendtest.Run(t, func(t *testing.T) backends.Backend { return routeOver(t, d, nil) })
}

// routeOver is the backend of a route of its own on a store of d, wrap of
// the store when wrap is not nil.
func routeOver(t *testing.T, d backends.Driver, wrap func(backends.Backend) backends.Backend) backends.Backend {
	b, err := d.Open(context.Background(), backends.RouteSpec{Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		b = wrap(b)
	}
	tab, err := NewTable([]*Route{{Name: t.Name(), Backend: b, BackendName: "mem", MaxValueBytes: 1 << 20}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.Close() })
	return tab.ByName(t.Name()).Backend
}

// TestConformanceOverAStoreThatRunsOneOpAtATime: over a store that is no
// backends.Sequencer (PostgreSQL, Valkey), the wrapper's DoSeq runs a
// pipelined run one Do at a time, answering as Do does.
func TestConformanceOverAStoreThatRunsOneOpAtATime(t *testing.T) {
	d := memory.NewDriver("mem", 64<<20)
	t.Cleanup(func() { d.Close() })
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		return routeOver(t, d, func(b backends.Backend) backends.Backend { return oneAtATime{b} })
	})
}

// oneAtATime hides its store's DoSeq from a type assertion; backends.As
// still finds the store's other capabilities.
type oneAtATime struct{ backends.Backend }

func (o oneAtATime) Unwrap() backends.Backend { return o.Backend }

// TestAtomicConformance runs atomic runs through the wrapper (over the
// memory store, which keeps a failed run's changes in place).
func TestAtomicConformance(t *testing.T) {
	d := memory.NewDriver("mem", 64<<20)
	t.Cleanup(func() { d.Close() })
	backendtest.RunAtomic(t, func(t *testing.T) backends.Backend {
		b, err := d.Open(context.Background(), backends.RouteSpec{Name: t.Name()})
		if err != nil {
			t.Fatal(err)
		}
		tab, err := NewTable([]*Route{{Name: t.Name(), Backend: b, BackendName: "mem"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tab.Close() })
		return tab.ByName(t.Name()).Backend
	}, backendtest.InPlaceKept())
}

// TestCapabilitiesThroughWrapper: optional capabilities of the backend are
// found through the wrapper.
func TestCapabilitiesThroughWrapper(t *testing.T) {
	tab := table(t, map[string][]string{"all": {""}})
	r := tab.ByName("all")
	if _, ok := r.Backend.(backends.Sizer); ok {
		t.Fatal("the wrapper itself is a Sizer: the test proves nothing")
	}
	s, ok := backends.As[backends.Sizer](r.Backend)
	if !ok {
		t.Fatal("Sizer of the memory backend not found through the wrapper")
	}
	if _, err := r.Backend.Set(context.Background(), "k", []byte("v"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Len(context.Background()); err != nil || n != 1 {
		t.Fatalf("Len = %d, %v; want 1", n, err)
	}
}

// TestValueLimitOnUpdates: an update may not write past max_value_bytes.
func TestValueLimitOnUpdates(t *testing.T) {
	d := memory.NewDriver("mem", 1<<20)
	t.Cleanup(func() { d.Close() })
	b, err := d.Open(context.Background(), backends.RouteSpec{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := NewTable([]*Route{{Name: "r", Backend: b, MaxValueBytes: 4}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.Close() })
	rb := tab.ByName("r").Backend
	ctx := context.Background()
	if _, err := backends.DoIncrBy(ctx, rb, "n", 12); err != nil {
		t.Fatal(err)
	}
	grow := &setTo{val: []byte("12345")}
	if err := rb.Update(ctx, "n", grow); err != backends.ErrValueTooLarge {
		t.Fatalf("update writing 5 bytes past a 4-byte limit: %v", err)
	}
	if v, _, _ := rb.Get(ctx, "n"); string(v) != "12" {
		t.Fatalf("value after a refused update = %q", v)
	}
}

type setTo struct{ val []byte }

func (*setTo) Op() string { return "setto" }
func (u *setTo) Apply(backends.Current) (backends.Change, error) {
	return backends.Change{Kind: backends.Put, Val: u.val, TTL: backends.TTL{Mode: backends.TTLKeep}}, nil
}
