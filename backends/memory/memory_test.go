package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
)

func open(t *testing.T, d *Driver, route string) backends.Backend {
	t.Helper()
	b, err := d.Open(context.Background(), backends.RouteSpec{Name: route})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		d := NewDriver("mem", 64<<20)
		t.Cleanup(func() { d.Close() })
		return open(t, d, "r")
	})
}

func TestNamespaces(t *testing.T) {
	d := NewDriver("mem", 1<<20)
	defer d.Close()
	a, b := open(t, d, "a"), open(t, d, "b")
	ctx := context.Background()
	if _, err := a.Set(ctx, "k", []byte("in a"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Get(ctx, "k"); ok {
		t.Fatalf("route b sees route a's key")
	}
	// Reopening a route (a reload) finds its keys again.
	if v, ok, _ := open(t, d, "a").Get(ctx, "k"); !ok || string(v) != "in a" {
		t.Fatalf("reopened route lost its key: %q %v", v, ok)
	}
	if n, _ := a.(backends.Sizer).Len(ctx); n != 1 {
		t.Fatalf("Len(a) = %d, want 1", n)
	}
	if n, _ := b.(backends.Sizer).Len(ctx); n != 0 {
		t.Fatalf("Len(b) = %d, want 0", n)
	}
	// Two routes split the budget; closing one gives it all back.
	if ca, cb := a.(*Store).c.GetMaximum(), b.(*Store).c.GetMaximum(); ca != 1<<19 || cb != 1<<19 {
		t.Fatalf("budgets = %d, %d; want half each", ca, cb)
	}
	b.Close()
	if ca := a.(*Store).c.GetMaximum(); ca != 1<<20 {
		t.Fatalf("budget after the other route closed = %d, want all of it", ca)
	}
	// The last Store of a route drops its keys.
	b2 := open(t, d, "b")
	b2.Set(ctx, "k", []byte("v"), backends.SetOptions{})
	b2.Close()
	if _, ok, _ := open(t, d, "b").Get(ctx, "k"); ok {
		t.Fatalf("a route closed for good kept its keys")
	}
}

func TestMaxBytes(t *testing.T) {
	const budget = 1 << 20
	d := NewDriver("mem", budget)
	defer d.Close()
	b := open(t, d, "r")
	ctx := context.Background()
	val := make([]byte, 1024)
	for i := range 10_000 { // 10 MiB offered to a 1 MiB cache
		if _, err := b.Set(ctx, fmt.Sprintf("k%d", i), val, backends.SetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c := b.(*Store).c
	c.CleanUp()
	if used := c.WeightedSize(); used > budget {
		t.Fatalf("cache holds %d bytes, over its %d budget", used, budget)
	}
}

// Expired keys give their memory back: the route's sweeper frees keys
// set with a lifetime, by SET and by EXPIRE, and leaves the others.
func TestExpiredKeysAreFreed(t *testing.T) {
	d := NewDriver("mem", 64<<20)
	defer d.Close()
	b := open(t, d, "r")
	ctx := context.Background()
	short := backends.TTL{Mode: backends.TTLRelative, D: 50 * time.Millisecond}
	for i := range 1000 {
		if _, err := b.Set(ctx, fmt.Sprintf("px%d", i), []byte("v"), backends.SetOptions{TTL: short}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Set(ctx, fmt.Sprintf("keep%d", i), []byte("v"), backends.SetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b.Set(ctx, "expire", []byte("v"), backends.SetOptions{})
	if ok, err := backends.DoExpire(ctx, b, "expire", short, backends.ExpireAlways); !ok || err != nil {
		t.Fatalf("EXPIRE = %v, %v", ok, err)
	}
	c := b.(*Store).c
	for end := time.Now().Add(10 * time.Second); c.EstimatedSize() > 1000 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := c.EstimatedSize(); n != 1000 {
		t.Fatalf("%d keys held, want the 1000 without a lifetime", n)
	}
	if _, ok, _ := b.Get(ctx, "keep999"); !ok {
		t.Fatal("a key without a lifetime was freed")
	}
	expired := "(none)"
	for _, kv := range d.Info(ctx) {
		if kv[0] == "backend_mem_expired_keys" {
			expired = kv[1]
		}
	}
	if expired != "1001" {
		t.Errorf("INFO backend_mem_expired_keys: %s, want 1001", expired)
	}
}

func TestConcurrentIncrAndSetNX(t *testing.T) {
	d := NewDriver("mem", 1<<20)
	defer d.Close()
	b := open(t, d, "r")
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := 0
	for range 50 {
		wg.Go(func() {
			for range 200 {
				if _, err := backends.DoIncrBy(ctx, b, "counter", 1); err != nil {
					t.Error(err)
					return
				}
			}
			res, err := b.Set(ctx, "lock", []byte("x"), backends.SetOptions{Cond: backends.SetIfAbsent})
			if err != nil {
				t.Error(err)
				return
			}
			if res.Stored {
				mu.Lock()
				stored++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if v, _, _ := b.Get(ctx, "counter"); string(v) != "10000" {
		t.Fatalf("counter = %s, want 10000", v)
	}
	if stored != 1 {
		t.Fatalf("SET NX stored %d times, want 1", stored)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    map[string]any
		wantErr string
	}{
		{"default", nil, ""},
		{"size", map[string]any{"max_bytes": "64MiB"}, ""},
		{"unknown", map[string]any{"maxbytes": "64MiB"}, "maxbytes"},
		{"bad size", map[string]any{"max_bytes": "lots"}, "lots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(context.Background(), "mem", tc.opts, backends.Env{})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				d.Close()
				return
			}
			if err == nil || !contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
			}
		})
	}
	d := NewDriver("mem", 1<<20)
	defer d.Close()
	if _, err := d.Open(context.Background(), backends.RouteSpec{Name: "x", Table: "t"}); err == nil {
		t.Fatalf("memory accepted a table option")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// benchStore opens a route on a 64 MiB memory driver that lives as long as
// the benchmark.
func benchStore(b *testing.B) (backends.Backend, context.Context) {
	d := NewDriver("mem", 64<<20)
	b.Cleanup(func() { d.Close() })
	s, err := d.Open(context.Background(), backends.RouteSpec{Name: "r"})
	if err != nil {
		b.Fatal(err)
	}
	return s, context.Background()
}

func BenchmarkGet(b *testing.B) {
	s, ctx := benchStore(b)
	s.Set(ctx, "key:000042", make([]byte, 100), backends.SetOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, _ := s.Get(ctx, "key:000042"); !ok {
			b.Fatal("miss")
		}
	}
}

func BenchmarkSet(b *testing.B) {
	s, ctx := benchStore(b)
	val := make([]byte, 100)
	b.ReportAllocs()
	for b.Loop() {
		s.Set(ctx, "key:000042", val, backends.SetOptions{})
	}
}

// BenchmarkSetSpread stores over 100,000 keys, as redis-benchmark -r 100000
// does: after the first pass every SET replaces a value.
func BenchmarkSetSpread(b *testing.B) {
	s, ctx := benchStore(b)
	val := make([]byte, 100)
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%012d", i)
		s.Set(ctx, keys[i], val, backends.SetOptions{})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Set(ctx, keys[i], val, backends.SetOptions{})
		i = (i + 7919) % len(keys)
	}
}

// TestAtomicConformance: a failed run keeps what it changed in place in a
// collection, as a failed Redis script does (coll.go).
func TestAtomicConformance(t *testing.T) {
	backendtest.RunAtomic(t, func(t *testing.T) backends.Backend {
		d := NewDriver("mem", 64<<20)
		t.Cleanup(func() { d.Close() })
		return open(t, d, "r")
	}, backendtest.InPlaceKept())
}
