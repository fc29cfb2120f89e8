package route

import (
	"context"
	"strconv"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
)

// memoryRoute is a route r on a memory store of its own.
func memoryRoute(t *testing.T) *Route {
	t.Helper()
	d := memory.NewDriver("mem", 1<<20)
	t.Cleanup(func() { d.Close() })
	b, err := d.Open(context.Background(), backends.RouteSpec{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := NewTable([]*Route{{Name: "r", Backend: b, BackendName: "mem"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.Close() })
	return tab.ByName("r")
}

// TestWatchCollections: a command on collections that writes, through the
// route's wrapper or an atomic run on it, changes WATCH's mark of the keys
// it changed (all of them, or a *STORE's destination alone; SMOVE's
// destination when it lacked the member); one that only reads changes
// none.
func TestWatchCollections(t *testing.T) {
	r := memoryRoute(t)
	ctx := context.Background()
	do := func(b backends.Backend, words ...string) {
		t.Helper()
		args := make([][]byte, len(words))
		for i, w := range words {
			args[i] = []byte(w)
		}
		op := parseColl(t, args)
		keys := make([]string, 0, len(op.Request().KeyAt))
		for _, at := range op.Request().KeyAt {
			keys = append(keys, words[at])
		}
		if err := b.Do(ctx, keys, op); err != nil {
			t.Fatalf("%q: %v", words, err)
		}
	}
	// A source and a destination in buckets of their own, so a write of
	// one cannot look like a write of the other.
	src, dst := "src", "dst"
	for i := 0; r.watch.bucket(src) == r.watch.bucket(dst); i++ {
		dst = "dst" + string(rune('a'+i))
	}
	do(r.Backend, "sadd", src, "a", "b")
	moves := 0

	for _, tc := range []struct {
		name    string
		write   func(b backends.Backend)
		changed map[string]bool
	}{
		{"read", func(b backends.Backend) { do(b, "sunion", src, dst) }, map[string]bool{src: false, dst: false}},
		{"write", func(b backends.Backend) { do(b, "sadd", src, "c") }, map[string]bool{src: true, dst: false}},
		{"store", func(b backends.Backend) { do(b, "sunionstore", dst, src) }, map[string]bool{src: false, dst: true}},
		{"move", func(b backends.Backend) {
			moves++
			m := "m" + strconv.Itoa(moves) // in neither set yet
			do(b, "sadd", src, m)
			do(b, "smove", src, dst, m)
		}, map[string]bool{src: true, dst: true}},
		// As Redis, SMOVE changes no destination that has the member, and
		// nothing when the source has not.
		{"move to a set that has it", func(b backends.Backend) {
			do(b, "sadd", src, "k")
			do(b, "smove", src, dst, "k") // dst has k: see before
		}, map[string]bool{src: true, dst: false}},
		{"move of a member the source has not", func(b backends.Backend) { do(b, "smove", src, dst, "none") },
			map[string]bool{src: false, dst: false}},
		{"hash", func(b backends.Backend) { do(b, "hset", dst+"h", "f", "v") }, map[string]bool{dst + "h": true}},
		{"list", func(b backends.Backend) { do(b, "lpush", src+"l", "x") }, map[string]bool{src + "l": true}},
		{"zset", func(b backends.Backend) { do(b, "zincrby", src+"z", "1", "m") }, map[string]bool{src + "z": true}},
	} {
		for _, inRun := range []bool{false, true} {
			do(r.Backend, "sadd", dst, "k") // before the marks
			marks := map[string]Mark{}
			for k := range tc.changed {
				marks[k] = r.Watch(ctx, k)
			}
			if inRun {
				keys := []string{src, dst, dst + "h", src + "l", src + "z"}
				err := r.Backend.(backends.Atomic).Atomically(ctx, keys, func(tx backends.Backend) error {
					tc.write(tx)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			} else {
				tc.write(r.Backend)
			}
			for k, want := range tc.changed {
				if got := r.Changed(k, marks[k]); got != want {
					t.Errorf("%s (in a run: %v): Changed(%s) = %v, want %v", tc.name, inRun, k, got, want)
				}
				r.Unwatch()
			}
		}
	}
}

// TestWatchWritesThatChangeNothing: as Redis, a DEL of missing keys and a
// COPY that does not copy leave WATCH's marks as they were; a write in
// flight (begun, not ended) counts as a change until it ends.
func TestWatchWritesThatChangeNothing(t *testing.T) {
	r := memoryRoute(t)
	ctx := context.Background()
	m := r.Watch(ctx, "k")
	defer r.Unwatch()
	if _, err := r.Backend.Del(ctx, []string{"k"}); err != nil {
		t.Fatal(err)
	}
	if r.Changed("k", m) {
		t.Error("DEL of a missing key changed the mark")
	}
	if _, err := r.Backend.(backends.Copier).Copy(ctx, "missing", "k", backends.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if r.Changed("k", m) {
		t.Error("COPY from a missing source changed the mark")
	}
	if !r.watch.begin("k") {
		t.Fatal("begin counted nothing while k is watched")
	}
	if !r.ChangedHere("k", m) {
		t.Error("a write in flight is not seen")
	}
	r.watch.end("k", false)
	if r.Changed("k", m) {
		t.Error("a write that ended changing nothing changed the mark")
	}
	if _, err := r.Backend.Set(ctx, "k", []byte("v"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if !r.Changed("k", m) {
		t.Error("SET did not change the mark")
	}
}
