package memory

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// outsides collects what a Notifier reports.
type outsides struct {
	mu  sync.Mutex
	got []backends.Outside
}

func (o *outsides) add(x backends.Outside) {
	o.mu.Lock()
	defer o.mu.Unlock()
	x.Keys = slices.Clone(x.Keys)
	o.got = append(o.got, x)
}

// keys returns the keys reported from source, in order.
func (o *outsides) keys(source string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ks []string
	for _, x := range o.got {
		if x.Source == source {
			ks = append(ks, x.Keys...)
		}
	}
	return ks
}

// waitKey waits up to 10 s (the sweeper walks within a few seconds) for key
// to be reported from source.
func (o *outsides) waitKey(t *testing.T, source, key string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if slices.Contains(o.keys(source), key) {
			return
		}
	}
	t.Fatalf("no %s report of %q; got %+v", source, key, o.got)
}

// TestNotifyExpiry: a key whose deadline passed is reported as "expiry",
// once the sweeper frees it or a read finds it; a key deleted or replaced
// through the store is not reported, and neither is one that has not
// expired.
func TestNotifyExpiry(t *testing.T) {
	d := NewDriver("mem", 64<<20)
	defer d.Close()
	s := open(t, d, "r")
	n := s.(backends.Notifier)
	if !n.Watching() {
		t.Fatal("a memory store is not Watching")
	}
	var o outsides
	cancel := n.Notify(o.add)
	defer cancel()
	ctx := context.Background()
	set := func(k string, ttl time.Duration) {
		t.Helper()
		opts := backends.SetOptions{}
		if ttl > 0 {
			opts.TTL = backends.TTL{Mode: backends.TTLRelative, D: ttl}
		}
		if _, err := s.Set(ctx, k, []byte("v"), opts); err != nil {
			t.Fatal(err)
		}
	}
	set("swept", 20*time.Millisecond)
	set("read", 20*time.Millisecond)
	set("deleted", time.Hour)
	set("replaced", time.Hour)
	set("forever", 0)
	time.Sleep(30 * time.Millisecond)
	// A read that finds "read" expired removes it, and it is reported then.
	if _, ok, _ := s.Get(ctx, "read"); ok {
		t.Fatal("an expired key was read")
	}
	o.waitKey(t, "expiry", "read")
	// The sweeper frees "swept".
	o.waitKey(t, "expiry", "swept")
	if _, err := s.Del(ctx, []string{"deleted"}); err != nil {
		t.Fatal(err)
	}
	set("replaced", 0)
	// A key expiring after the writes above is reported after them: so
	// were they reported, they would be there by now.
	set("marker", time.Millisecond)
	o.waitKey(t, "expiry", "marker")
	for _, k := range []string{"deleted", "replaced", "forever"} {
		if slices.Contains(o.keys("expiry"), k) || slices.Contains(o.keys("eviction"), k) {
			t.Errorf("%q reported, but it did not expire: %+v", k, o.got)
		}
	}
	for _, k := range []string{"read", "swept"} {
		if c := count(o.keys("expiry"), k); c != 1 {
			t.Errorf("%q reported %d times, want once", k, c)
		}
	}
	// Cancelled: nothing more.
	cancel()
	before := len(o.keys("expiry"))
	set("after", time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	s.Get(ctx, "after")
	time.Sleep(50 * time.Millisecond)
	if got := len(o.keys("expiry")); got != before {
		t.Errorf("%d reports after cancel", got-before)
	}
}

func count(ks []string, k string) (n int) {
	for _, x := range ks {
		if x == k {
			n++
		}
	}
	return n
}

// TestNotifyEviction: keys otter evicts for size are reported as
// "eviction", and an evicted key is gone for reads by the time it is
// reported.
func TestNotifyEviction(t *testing.T) {
	d := NewDriver("mem", 64<<10)
	defer d.Close()
	s := open(t, d, "r")
	var (
		mu      sync.Mutex
		evicted []string
		present []string // evicted keys a read found after the report
	)
	ctx := context.Background()
	cancel := s.(backends.Notifier).Notify(func(x backends.Outside) {
		if x.Source != "eviction" {
			return
		}
		for _, k := range x.Keys {
			// fn must not block, and a read of the store does not.
			_, ok, _ := s.Get(ctx, k)
			mu.Lock()
			evicted = append(evicted, k)
			if ok {
				present = append(present, k)
			}
			mu.Unlock()
		}
	})
	defer cancel()
	val := make([]byte, 1024)
	const n = 1000 // about 1 MiB into 64 KiB
	for i := range n {
		if _, err := s.Set(ctx, "k"+strconv.Itoa(i), val, backends.SetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	live := 0
	for i := range n {
		if _, ok, _ := s.Get(ctx, "k"+strconv.Itoa(i)); ok {
			live++
		}
	}
	want := n - live
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		got := len(evicted)
		mu.Unlock()
		if got >= want {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want == 0 || len(evicted) < want {
		t.Fatalf("%d keys evicted, %d reported", want, len(evicted))
	}
	// A key evicted, reported, and written again would be read back; none
	// is written again here.
	if len(present) > 0 {
		t.Fatalf("evicted keys still read after their report: %v", present[:min(5, len(present))])
	}
}
