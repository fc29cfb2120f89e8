package tracking

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/changes"
	"github.com/pgcache/pgcache/route"
)

// notifyingRig is a rig whose "postgres" route (pg:) stores in a
// backendtest.Notifying.
func notifyingRig(t *testing.T) (*rig, *backendtest.Notifying) {
	var nb *backendtest.Notifying
	g := newRig(t, func(r *route.Route) {
		if r.Name == "postgres" {
			nb = backendtest.NewNotifying(r.Backend)
			r.Backend = nb
		}
	})
	return g, nb
}

// TestNotifierReports: what a route's backend reports reaches the tracking
// clients. Keys come back with the route's prefix; All drops every key the
// route served, and only those, and tells BCAST clients whose prefixes
// reach the route to drop everything; Lost tells every client that read
// through the route to drop everything, and while the backend is not
// Watching its keys are bounced after each read.
func TestNotifierReports(t *testing.T) {
	g, nb := notifyingRig(t)
	a := g.on(Options{})
	bc := g.on(Options{BCAST: true, Prefixes: []string{"pg:a"}})
	far := g.on(Options{BCAST: true, Prefixes: []string{"zz"}})
	other := g.on(Options{}) // reads the memory route only
	for _, k := range []string{"pg:a", "pg:b", "pg:x:1", "mem"} {
		g.read(a, k)
	}
	g.read(other, "mem")

	commit := time.Now().Add(-20 * time.Millisecond)
	nb.Report(backends.Outside{Keys: []string{"a", "c"}, Source: "postgres", At: commit})
	a.want(t, "Keys", "pg:a")
	a.quiet(t, "after Keys")
	bc.want(t, "Keys, BCAST", "pg:a")
	if got := g.metric("pgcache_tracking_commit_to_push_seconds", ""); got != 1 {
		t.Errorf("commit-to-push observations: %v, want 1", got)
	}

	// pg:x:1 is the pgx route's (the longer prefix), mem the memory
	// route's: an All of the postgres route drops pg:b alone.
	nb.Report(backends.Outside{All: true, Source: "postgres"})
	a.want(t, "All", "pg:b")
	a.quiet(t, "after All")
	bc.want(t, "All, BCAST")
	far.quiet(t, "a BCAST prefix the route's keys never match")
	other.quiet(t, "a client that read other routes only")

	g.read(a, "pg:c")
	nb.Report(backends.Outside{Lost: true, All: true, Source: "postgres"})
	a.want(t, "Lost")
	a.quiet(t, "after Lost")
	bc.want(t, "Lost, BCAST")
	other.quiet(t, "Lost, a client that read other routes only")

	// Not Watching: a read of the route's keys is bounced, not kept.
	if got := g.read(a, "pg:d"); got[0] != "" {
		t.Fatalf("GET: %q", got[0])
	}
	a.want(t, "bounce", "pg:d")
	keys, _, _ := g.tracker.Counts()
	nb.SetWatching(true)
	g.read(a, "pg:e")
	a.quiet(t, "a read while Watching")
	if after, _, _ := g.tracker.Counts(); after != keys+1 {
		t.Errorf("tracked keys: %d after a read while Watching, want %d", after, keys+1)
	}

	for _, m := range []struct {
		name, src string
		want      float64
	}{
		{"pgcache_tracking_invalidations_total", "postgres", 3}, // pg:a to a and bc, pg:b to a
		{"pgcache_tracking_invalidations_total", "unseen", 1},
		{"pgcache_tracking_drop_all_total", "postgres", 3}, // bc on All, a and bc on Lost
		{"pgcache_tracking_drop_all_total", "flush", 0},
		{"pgcache_tracking_clients", "", 4},
	} {
		if got := g.metric(m.name, m.src); got != m.want {
			t.Errorf("%s{source=%q} = %v, want %v", m.name, m.src, got, m.want)
		}
	}
	if got, want := g.metric("pgcache_tracking_keys", ""), float64(keys+1); got != want {
		t.Errorf("pgcache_tracking_keys = %v, want %v", got, want)
	}
}

// TestUnwatchedReadsBounce: a key a Notifier served but will not report
// the changes of (backends.UnwatchedReads) is invalidated for its reader
// alone once the read is over, in default mode and BCAST; a key served
// watched, or served unwatched before the read began, is kept.
func TestUnwatchedReadsBounce(t *testing.T) {
	var ub *backendtest.Unwatching
	g := newRig(t, func(r *route.Route) {
		if r.Name == "postgres" {
			ub = backendtest.NewUnwatching(r.Backend)
			r.Backend = ub
		}
	})
	a, b := g.on(Options{}), g.on(Options{})
	bc := g.on(Options{BCAST: true, Prefixes: []string{"pg:"}})
	g.read(b, "pg:u")
	ub.Unwatch("u")
	g.read(a, "pg:u", "pg:w")
	a.want(t, "an unwatched read", "pg:u")
	a.quiet(t, "after an unwatched read")
	b.quiet(t, "a client whose read of the key was watched")
	if keys, items, _ := g.tracker.Counts(); keys != 2 || items != 2 {
		t.Errorf("table: %d keys, %d items; want pg:u for b and pg:w for a", keys, items)
	}
	g.read(bc, "pg:u")
	bc.want(t, "a BCAST client's unwatched read", "pg:u")

	// A read whose token comes after the unwatched read it follows.
	tbl, release := g.router.Acquire()
	defer release()
	g.tracker.Read(a.Client, tbl, [][]byte{[]byte("pg:u")}, false)
	g.tracker.Served(a.Client)
	a.quiet(t, "a read that began after the unwatched one")
	if got := g.metric("pgcache_tracking_invalidations_total", "unseen"); got != 2 {
		t.Errorf("invalidations{source=unseen} = %v, want 2", got)
	}
}

// TestFollowsReloads: a new table's Notifiers are subscribed before it
// serves, the old table's unsubscribed once it has drained; a reload that
// keeps every backend changes nothing for the clients, one that sends a
// prefix to another backend tells them to drop everything.
func TestFollowsReloads(t *testing.T) {
	var raws []*route.Route
	var nb *backendtest.Notifying
	g := newRig(t, func(r *route.Route) {
		if r.Name == "postgres" {
			nb = backendtest.NewNotifying(r.Backend)
			r.Backend = nb
		}
		raws = append(raws, &route.Route{Name: r.Name, Prefixes: r.Prefixes, BackendName: r.BackendName, Backend: r.Backend})
	})
	c := g.on(Options{})
	g.read(c, "pg:k")
	if got := nb.Subscribers(); got != 1 {
		t.Fatalf("subscribers at start: %d, want 1", got)
	}
	swap := func(routes []*route.Route) {
		t.Helper()
		tbl, err := route.NewTable(routes, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := g.router.Swap(ctx, tbl); err != nil {
			t.Fatal(err)
		}
	}
	clone := func(rs []*route.Route) []*route.Route {
		var out []*route.Route
		for _, r := range rs {
			cp := *r
			out = append(out, &cp)
		}
		return out
	}

	swap(clone(raws))
	if got := nb.Subscribers(); got != 1 {
		t.Fatalf("subscribers after a reload with the same backends: %d, want 1", got)
	}
	c.quiet(t, "a reload that kept the backends")
	nb.Report(backends.Outside{Keys: []string{"k"}, Source: "postgres"})
	c.want(t, "a report after the reload", "pg:k")

	g.read(c, "pg:k")
	moved := clone(raws)
	nb2 := backendtest.NewNotifying(moved[0].Backend) // pg: now stores in the memory route's store
	for _, r := range moved {
		if r.Name == "postgres" {
			r.Backend = nb2
		}
	}
	swap(moved)
	c.want(t, "a reload that moved pg:")
	if got, got2 := nb.Subscribers(), nb2.Subscribers(); got != 0 || got2 != 1 {
		t.Fatalf("subscribers after the move: old %d, new %d; want 0 and 1", got, got2)
	}
	if got := g.metric("pgcache_tracking_drop_all_total", "reload"); got != 1 {
		t.Errorf("drop_all{source=reload} = %v, want 1", got)
	}
}

// TestBCASTBatches: BCAST clients get the keys a batch (or a transaction)
// changed under each prefix in one array per prefix, sorted, as Redis
// sends them once per event-loop iteration; NOLOOP leaves out the
// client's own.
func TestBCASTBatches(t *testing.T) {
	g := newRig(t, nil)
	all := g.on(Options{BCAST: true})
	ab := g.on(Options{BCAST: true, Prefixes: []string{"a:", "b:"}})
	self := g.on(Options{BCAST: true, Prefixes: []string{"a:"}, NoLoop: true})
	const w = 1000 // a writer that does not track

	g.write(w, "c:1", "x", "a:2", "y", "a:1", "z")
	all.want(t, "MSET, empty prefix", "a:1", "a:2", "c:1")
	ab.want(t, "MSET, a: and b:", "a:1", "a:2")
	self.want(t, "MSET, NOLOOP reader", "a:1", "a:2")

	// A transaction's writes are reported once it has committed.
	tbl, release := g.router.Acquire()
	r, _ := tbl.ForKey("b:1")
	keys := []string{"b:1", "a:3", "c:2", "b:2"}
	err := r.Backend.(backends.Atomic).Atomically(changes.WithWriter(context.Background(), w), keys, func(tx backends.Backend) error {
		for _, k := range keys {
			if _, err := tx.Set(context.Background(), k, []byte("1"), backends.SetOptions{}); err != nil {
				return err
			}
		}
		ab.quiet(t, "inside the transaction")
		return nil
	})
	release()
	if err != nil {
		t.Fatal(err)
	}
	g.tracker.EndBatch()
	ab.want(t, "EXEC, first prefix", "a:3")
	ab.want(t, "EXEC, second prefix", "b:1", "b:2")
	ab.quiet(t, "after EXEC")
	self.want(t, "EXEC, NOLOOP reader", "a:3")

	// A batch of the NOLOOP client's own writes, and one by another
	// client of the same key: the last writer decides.
	g.write(self.id, "a:own", "1", "a:mine", "2")
	self.quiet(t, "NOLOOP, its own writes")
	g.write(self.id, "a:k", "1")
	g.write(w, "a:k", "2")
	self.want(t, "NOLOOP, another client's write", "a:k")
}

// TestTableFull: one client reads ten times tracking-table-max-keys in
// distinct keys. The table stays at the bound, the heap does not grow with
// the keys read, and the client is told of every key evicted: the oldest.
func TestTableFull(t *testing.T) {
	const bound = 5000
	g := newRig(t, nil)
	g.tracker.SetMaxKeys(bound)
	c := g.on(Options{})
	told := make([]bool, 10*bound) // by key number: the test keeps no strings
	ntold := 0
	c.onPush = func(keys []string) {
		if len(keys) != 1 {
			t.Fatalf("not a one-key invalidation: %q", keys)
		}
		i, err := strconv.Atoi(strings.TrimPrefix(keys[0], "key:"))
		if err != nil || i >= len(told) || told[i] {
			t.Fatalf("invalidation of %q: not a key read, or twice", keys[0])
		}
		told[i] = true
		ntold++
	}
	read := func(from, to int) {
		for i := from; i < to; i++ {
			g.read(c, "key:"+strconv.Itoa(i))
		}
	}
	read(0, bound)
	before := heapInuse()
	for i := 1; i < 10; i++ {
		read(i*bound, (i+1)*bound)
	}
	after := heapInuse()
	t.Logf("heap in use: %d bytes after the first %d keys, %d after 10×", before, bound, after)
	if ntold != 9*bound {
		t.Fatalf("%d keys evicted with an invalidation, want %d", ntold, 9*bound)
	}
	for i := range 9 * bound { // the oldest were evicted
		if !told[i] {
			t.Fatalf("key:%d was evicted without an invalidation", i)
		}
	}
	if keys, items, _ := g.tracker.Counts(); keys != bound || items != bound {
		t.Errorf("tracking table: %d keys, %d items; want %d of each", keys, items, bound)
	}
	if got := g.metric("pgcache_tracking_invalidations_total", "table-full"); got != 9*bound {
		t.Errorf("invalidations{source=table-full} = %v, want %d", got, 9*bound)
	}
	// Had the table kept every key, it would hold 9×bound more entries of
	// about 120 bytes (a key, its entry, its map slot): over 1,000 bytes
	// per bound key. Allow 300 per bound key for the collector's noise.
	if after > before && after-before > 300*bound {
		t.Errorf("heap grew from %d to %d bytes reading 10×%d keys", before, after, bound)
	}
}
