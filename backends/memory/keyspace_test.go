package memory

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/cursor"
)

func fill(t *testing.T, b backends.Backend, n int) {
	t.Helper()
	pairs := make([]backends.KV, n)
	for i := range pairs {
		pairs[i] = backends.KV{Key: fmt.Sprintf("k%06d", i), Val: []byte("v")}
	}
	if err := b.MSet(context.Background(), pairs); err != nil {
		t.Fatal(err)
	}
}

// Scans abandoned half way are bounded: the route keeps at most
// cursor.DefaultMax of them, and releases (stops) the iterators it drops.
func TestAbandonedScansBounded(t *testing.T) {
	d := NewDriver("mem", 64<<20)
	defer d.Close()
	s := open(t, d, "r").(*Store)
	fill(t, s, 10_000)
	before := runtime.NumGoroutine()
	for range 3 * cursor.DefaultMax {
		next, keys, err := s.Scan(context.Background(), 0, "", 5)
		if err != nil || next == 0 || len(keys) == 0 {
			t.Fatalf("Scan = %d, %d keys, %v", next, len(keys), err)
		}
	}
	if n := s.cursors.Len(); n != cursor.DefaultMax {
		t.Fatalf("%d scans kept, want %d", n, cursor.DefaultMax)
	}
	if grown := runtime.NumGoroutine() - before; grown > cursor.DefaultMax+10 {
		t.Fatalf("%d more goroutines after %d abandoned scans: dropped iterators were not stopped", grown, 3*cursor.DefaultMax)
	}
	s.Close() // the route's last Store: its scans are released
	d.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if grown := runtime.NumGoroutine() - before; grown > 10 {
		t.Fatalf("%d goroutines left after the route closed", grown)
	}
}

// A cursor the route never gave starts the scan over: it still returns
// every key.
func TestScanUnknownCursorStartsOver(t *testing.T) {
	d := NewDriver("mem", 64<<20)
	defer d.Close()
	s := open(t, d, "r").(*Store)
	fill(t, s, 100)
	seen := map[string]bool{}
	cur := uint64(987654321)
	for {
		next, keys, err := s.Scan(context.Background(), cur, "", 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		if next == 0 {
			break
		}
		cur = next
	}
	if len(seen) != 100 {
		t.Fatalf("a scan from an unknown cursor found %d of 100 keys", len(seen))
	}
}

// A scan survives a reload: the reopened route finds its scans too.
func TestScanAcrossReopen(t *testing.T) {
	d := NewDriver("mem", 64<<20)
	defer d.Close()
	old := open(t, d, "r").(*Store)
	fill(t, old, 100)
	next, first, err := old.Scan(context.Background(), 0, "", 50)
	if err != nil || next == 0 {
		t.Fatalf("Scan = %d, %v", next, err)
	}
	reopened := open(t, d, "r").(*Store)
	old.Close()
	seen := map[string]bool{}
	for _, k := range first {
		seen[k] = true
	}
	for next != 0 {
		var keys []string
		next, keys, err = reopened.Scan(context.Background(), next, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if seen[k] {
				t.Fatalf("%s returned twice: the scan started over", k)
			}
			seen[k] = true
		}
	}
	if len(seen) != 100 {
		t.Fatalf("found %d of 100 keys", len(seen))
	}
}
