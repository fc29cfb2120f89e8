package changes

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/backends/memory"
	"github.com/pgcache/pgcache/route"
)

// feedRig is a feed over two memory routes, "plain" (the catch-all) and
// "notes" (n:), whose backend is a backendtest.Notifying.
type feedRig struct {
	router *route.Router
	feed   *Feed
	nb     *backendtest.Notifying
	raws   []*route.Route // as opened, to build other tables
}

func newFeedRig(t *testing.T) *feedRig {
	t.Helper()
	drv := memory.NewDriver("mem", 16<<20)
	t.Cleanup(func() { drv.Close() })
	g := &feedRig{}
	var routes []*route.Route
	for _, rr := range []struct{ name, prefix string }{{"plain", ""}, {"notes", "n:"}} {
		b, err := drv.Open(context.Background(), backends.RouteSpec{Name: rr.name})
		if err != nil {
			t.Fatal(err)
		}
		if rr.name == "notes" {
			g.nb = backendtest.NewNotifying(b)
			b = g.nb
		}
		routes = append(routes, &route.Route{Name: rr.name, Prefixes: []string{rr.prefix}, BackendName: "mem", Backend: b})
		g.raws = append(g.raws, &route.Route{Name: rr.name, Prefixes: []string{rr.prefix}, BackendName: "mem", Backend: b})
	}
	tbl, err := route.NewTable(routes, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.router = route.NewRouter(tbl)
	g.feed = New(g.router)
	return g
}

// set writes key (a client's spelling) through its route with ctx.
func (g *feedRig) set(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	tbl, release := g.router.Acquire()
	defer release()
	r, stored := tbl.ForKey(key)
	if _, err := r.Backend.Set(ctx, stored, []byte("v"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// recorder is a Subscriber that keeps what it is told.
type recorder struct {
	mu      sync.Mutex
	writes  []string // route/key/writer
	changes []Change
}

func (r *recorder) Wrote(rt *route.Route, key string, writer int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, rt.Name+"/"+key+"/"+strconv.FormatInt(writer, 10))
}

func (r *recorder) Changed(ch Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch.Keys = slices.Clone(ch.Keys)
	r.changes = append(r.changes, ch)
}

func (r *recorder) take() ([]string, []Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, c := r.writes, r.changes
	r.writes, r.changes = nil, nil
	return w, c
}

// TestWrites: a write through a route reaches the subscribers with the
// route, the key as the route stores it and the writer, once it has
// returned (an atomic run's once it has committed), and only while some
// subscriber wants writes.
func TestWrites(t *testing.T) {
	g := newFeedRig(t)
	rec := &recorder{}
	cancel := g.feed.Subscribe(rec)
	ctx := WithWriter(context.Background(), 7)

	g.set(t, ctx, "n:a")
	if w, _ := rec.take(); len(w) != 0 || g.feed.Active() {
		t.Fatalf("writes nobody wants: told %v, Active %v", w, g.feed.Active())
	}
	g.feed.WantWrites(1)
	g.set(t, ctx, "n:a")
	g.set(t, context.Background(), "b")
	if w, _ := rec.take(); !slices.Equal(w, []string{"notes/a/7", "plain/b/0"}) {
		t.Fatalf("writes: %q", w)
	}

	tbl, release := g.router.Acquire()
	r, _ := tbl.ForKey("n:x")
	err := r.Backend.(backends.Atomic).Atomically(ctx, []string{"x", "y"}, func(tx backends.Backend) error {
		for _, k := range []string{"x", "y"} {
			if _, err := tx.Set(ctx, k, []byte("1"), backends.SetOptions{}); err != nil {
				return err
			}
		}
		if w, _ := rec.take(); len(w) != 0 {
			t.Errorf("an atomic run's writes told before it committed: %q", w)
		}
		return nil
	})
	release()
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := rec.take(); !slices.Equal(w, []string{"notes/x/7", "notes/y/7"}) {
		t.Fatalf("an atomic run's writes: %q", w)
	}

	cancel()
	g.set(t, ctx, "n:a")
	if w, _ := rec.take(); len(w) != 0 {
		t.Fatalf("told after cancel: %q", w)
	}
	g.feed.WantWrites(-1)
}

// TestReports: a route's Notifier reports reach the subscribers as
// changes of the route, which cover its keys in the client's spelling
// and no other route's; a reload that keeps the backends reports nothing,
// one that moves a prefix to another backend reports a reload, which
// covers every key; the old table's Notifiers are cancelled.
func TestReports(t *testing.T) {
	g := newFeedRig(t)
	rec := &recorder{}
	defer g.feed.Subscribe(rec)()

	at := time.Now()
	g.nb.Report(backends.Outside{Keys: []string{"a"}, Source: "postgres", At: at})
	_, chs := rec.take()
	if len(chs) != 1 {
		t.Fatalf("changes: %+v", chs)
	}
	ch := chs[0]
	if ch.Route == nil || ch.Route.Name != "notes" || !slices.Equal(ch.Keys, []string{"a"}) || ch.All ||
		ch.Source != "postgres" || !ch.At.Equal(at) {
		t.Fatalf("keys report: %+v", ch)
	}
	for _, tc := range []struct {
		key    string
		covers bool
	}{{"n:a", true}, {"n:", true}, {"a", false}, {"m:a", false}} {
		if got := ch.Covers(tc.key); got != tc.covers {
			t.Errorf("Covers(%q) = %v, want %v", tc.key, got, tc.covers)
		}
	}
	for _, tc := range []struct {
		prefix  string
		reaches bool
	}{{"n", true}, {"n:a", true}, {"", true}, {"m", false}} {
		if got := ch.Reaches(tc.prefix); got != tc.reaches {
			t.Errorf("Reaches(%q) = %v, want %v", tc.prefix, got, tc.reaches)
		}
	}

	g.nb.Report(backends.Outside{Lost: true, Source: "postgres"})
	if _, chs := rec.take(); len(chs) != 1 || !chs[0].Lost || !chs[0].All || chs[0].Route.Name != "notes" {
		t.Fatalf("a Lost report: %+v", chs)
	}

	swap := func(routes []*route.Route) {
		t.Helper()
		var cp []*route.Route
		for _, r := range routes {
			c := *r
			cp = append(cp, &c)
		}
		tbl, err := route.NewTable(cp, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := g.router.Swap(ctx, tbl); err != nil {
			t.Fatal(err)
		}
	}
	swap(g.raws)
	if _, chs := rec.take(); len(chs) != 0 {
		t.Fatalf("a reload that kept the backends: %+v", chs)
	}
	if got := g.nb.Subscribers(); got != 1 {
		t.Fatalf("subscribers after a reload: %d, want 1", got)
	}
	moved := slices.Clone(g.raws)
	moved[1] = &route.Route{Name: "notes", Prefixes: []string{"n:"}, BackendName: "mem", Backend: g.raws[0].Backend}
	swap(moved)
	_, chs = rec.take()
	if len(chs) != 1 || chs[0].Route != nil || !chs[0].All || chs[0].Source != SourceReload || !chs[0].Covers("anything") {
		t.Fatalf("a reload that moved n:: %+v", chs)
	}
	if got := g.nb.Subscribers(); got != 0 {
		t.Fatalf("subscribers of the old backend: %d, want 0", got)
	}
}

// waiters is how clients blocked on a key (BLPOP) would use the feed:
// each waits on a key in its own spelling, wants writes while it waits,
// and is woken by any change that may be of its key. Woken, it reads the
// key again (and waits again if it is still empty): a change that came
// between its read and its wait was told after the wait was registered.
type waiters struct {
	feed *Feed
	mu   sync.Mutex
	by   map[string][]chan struct{}
}

// wait registers a wait on key; the caller reads the key after it.
func (w *waiters) wait(key string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.by[key] = append(w.by[key], ch)
	w.feed.WantWrites(1)
	return ch
}

func (w *waiters) wakeLocked(key string) {
	for _, ch := range w.by[key] {
		close(ch)
		w.feed.WantWrites(-1)
	}
	delete(w.by, key)
}

func (w *waiters) Wrote(r *route.Route, key string, _ int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range r.Prefixes {
		w.wakeLocked(p + key)
	}
}

func (w *waiters) Changed(ch Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch.All {
		for key := range w.by {
			if ch.Covers(key) {
				w.wakeLocked(key)
			}
		}
		return
	}
	for _, k := range ch.Keys {
		for _, p := range ch.Route.Prefixes {
			w.wakeLocked(p + k)
		}
	}
}

// TestKeyWaiters: a second consumer of the feed, a blocked clients'
// registry, is woken by a write of its key through this instance, by a
// backend's report of it (a change from elsewhere) and by a report that
// the backend's changes may be missed; a waiter on another key sleeps on.
func TestKeyWaiters(t *testing.T) {
	g := newFeedRig(t)
	w := &waiters{feed: g.feed, by: map[string][]chan struct{}{}}
	defer g.feed.Subscribe(w)()
	woken := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}

	list, other := w.wait("n:list"), w.wait("n:other")
	g.set(t, context.Background(), "n:list")
	if !woken(list) || woken(other) {
		t.Fatalf("a write of n:list: woken %v, the other %v", woken(list), woken(other))
	}
	list = w.wait("n:list")
	g.nb.Report(backends.Outside{Keys: []string{"list"}, Source: "valkey"})
	if !woken(list) || woken(other) {
		t.Fatalf("a report of list: woken %v, the other %v", woken(list), woken(other))
	}
	plain := w.wait("list")
	g.nb.Report(backends.Outside{Lost: true, All: true, Source: "valkey"})
	if !woken(other) || woken(plain) {
		t.Fatalf("Lost: woken %v, the catch-all route's waiter %v", woken(other), woken(plain))
	}
	g.set(t, context.Background(), "list")
	if !woken(plain) || g.feed.Active() {
		t.Fatalf("a write of list: woken %v; Active with nobody waiting %v", woken(plain), g.feed.Active())
	}
}

// expiring is a backend that reports expired keys as the test says
// (backends.ExpiryNotifier), and counts its subscribers.
type expiring struct {
	backends.Backend
	mu  sync.Mutex
	fns map[int]func([]string)
	n   int
}

func (e *expiring) NotifyExpired(fn func([]string)) (cancel func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := e.n
	e.n++
	e.fns[id] = fn
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.fns, id)
	}
}

func (e *expiring) subscribers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.fns)
}

func (e *expiring) expire(keys ...string) {
	e.mu.Lock()
	var fns []func([]string)
	for _, fn := range e.fns {
		fns = append(fns, fn)
	}
	e.mu.Unlock()
	for _, fn := range fns {
		fn(keys)
	}
}

// TestExpiries: a route's expired keys are subscribed to only while
// someone wants them, however many want them, and once however many
// followed tables have the backend (a reload that keeps it): each expiry
// is reported once, as a change of the route with Source "expiry".
func TestExpiries(t *testing.T) {
	drv := memory.NewDriver("mem", 16<<20)
	t.Cleanup(func() { drv.Close() })
	b, err := drv.Open(context.Background(), backends.RouteSpec{Name: "exp"})
	if err != nil {
		t.Fatal(err)
	}
	e := &expiring{Backend: b, fns: map[int]func([]string){}}
	table := func() *route.Table {
		t.Helper()
		tbl, err := route.NewTable([]*route.Route{{Name: "exp", Prefixes: []string{"e:"}, BackendName: "mem", Backend: e}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	router := route.NewRouter(table())
	feed := New(router)
	rec := &recorder{}
	defer feed.Subscribe(rec)()
	once := func(what string) {
		t.Helper()
		e.expire("k")
		_, chs := rec.take()
		if len(chs) != 1 || chs[0].Route.Name != "exp" || !slices.Equal(chs[0].Keys, []string{"k"}) ||
			chs[0].Source != SourceExpiry || !chs[0].Covers("e:k") {
			t.Fatalf("%s: changes %+v, want one of key k", what, chs)
		}
	}
	if got := e.subscribers(); got != 0 {
		t.Fatalf("subscribers while nobody wants expiries: %d", got)
	}
	feed.WantExpiries(1)
	feed.WantExpiries(1)
	if got := e.subscribers(); got != 1 {
		t.Fatalf("subscribers while two want expiries: %d, want 1", got)
	}
	once("wanted")
	feed.WantExpiries(-1)
	once("still wanted by one")

	stop := feed.Follow(table()) // a reload's new table, before the old one stops
	if got := e.subscribers(); got != 1 {
		t.Fatalf("subscribers while two tables have the backend: %d, want 1", got)
	}
	once("two tables")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := router.Swap(ctx, table()); err != nil { // the old table's stop
		t.Fatal(err)
	}
	once("after a reload")
	stop()
	once("after the other table stopped")
	feed.WantExpiries(-1)
	if got := e.subscribers(); got != 0 {
		t.Fatalf("subscribers once nobody wants expiries: %d", got)
	}
	e.expire("k")
	if _, chs := rec.take(); len(chs) != 0 {
		t.Fatalf("changes once nobody wants expiries: %+v", chs)
	}
}
