// Package changes is the feed of changes to the keys a route.Router
// serves. It fans in the two places a change comes from, keyed by route and
// key:
//
//   - writes through the routes, reported once the backend call has
//     returned (route.Writes; an atomic run's once it has committed), with
//     the client that made them (WithWriter);
//   - the changes each route's backend makes or hears of on its own
//     (backends.Notifier: an L1 tier's fences, a Valkey client cache's
//     invalidations, the memory store's expiries and evictions), followed
//     per route table: subscribed before the table serves, cancelled once
//     it has drained (route.Follower), and a reload that sends keys to
//     another backend reported as a change of everything.
//
// The promise. A subscriber is told of a change once this process's reads
// see it: a read that starts after the subscriber was told reads the new
// value. So a consumer that registers its interest in a key before it reads
// the key either reads the change or is told of it. CLIENT TRACKING
// (package tracking) rests on that; so can a client blocked on a key
// (BLPOP): register the wait, read the key, sleep if it is empty; a change
// after the read is told, and wakes it.
package changes

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// SourceReload is the Source of a reload that sent keys to another backend.
const SourceReload = "reload"

// Subscriber is told of every change from Subscribe to its cancel. Its
// methods run on the goroutine that made or heard of the change (the
// writer's, a backend's notifier) and must not block but for a short lock.
type Subscriber interface {
	// Wrote is a write of key, as r's backend stores it (without r's
	// prefix), through r; writer is the client that made it (WithWriter),
	// 0 for none.
	Wrote(r *route.Route, key string, writer int64)
	// Changed is any other change: a backend's report, or a reload.
	Changed(ch Change)
}

// Change is a change a route's backend reported (backends.Outside), or a
// reload.
type Change struct {
	// Route is the route whose backend reported the change; nil for a
	// reload.
	Route *route.Route
	// Keys changed, as Route stores them (without its prefix); nil with
	// All.
	Keys []string
	// All: any key of Route may have changed; for a reload, any key at all.
	All bool
	// Lost: changes of Route may be missed from now until its backend is
	// Watching again; implies All.
	Lost bool
	// Source names where the change came from: the backend's
	// ("postgres", "valkey", "expiry", "eviction"), or SourceReload.
	Source string
	// At is when the change was committed at its source, when known
	// (PostgreSQL's clock for a fence); zero otherwise.
	At time.Time

	routing routing // of the table the change came through: see Covers
}

// Covers reports whether key, as a client spells it, is one of Route's in
// the table the change came through. Any key is a reload's.
func (ch *Change) Covers(key string) bool {
	return ch.Route == nil || ch.routing.of(key) == ch.Route
}

// Reaches reports whether keys under prefix (a client's spelling) may be
// Route's. Any prefix reaches a reload.
func (ch *Change) Reaches(prefix string) bool {
	return ch.Route == nil || reaches(prefix, ch.Route)
}

// Feed is the changes of one Router's routes. It is the Router's
// route.Writes and route.Follower.
type Feed struct {
	router *route.Router
	want   atomic.Int64 // WantWrites: while 0, writes are not reported

	mu   sync.Mutex                  // orders Subscribe and cancel
	subs atomic.Pointer[[]Subscriber] // replaced, never changed; nil: none
}

// New returns the feed of router's changes, and has router report to it.
func New(router *route.Router) *Feed {
	f := &Feed{router: router}
	router.OnWrite(f)
	return f
}

// Subscribe tells s of every change from now on, until cancel. Writes reach
// it only while some subscriber wants them (WantWrites).
func (f *Feed) Subscribe(s Subscriber) (cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setSubs(append(f.list(), s))
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			subs := f.list()
			for i, x := range subs {
				if x == s {
					f.setSubs(append(subs[:i:i], subs[i+1:]...))
					break
				}
			}
		})
	}
}

// list is a copy of the subscribers; the caller holds mu.
func (f *Feed) list() []Subscriber {
	if p := f.subs.Load(); p != nil {
		return append([]Subscriber(nil), *p...)
	}
	return nil
}

func (f *Feed) setSubs(subs []Subscriber) {
	if len(subs) == 0 {
		f.subs.Store(nil)
		return
	}
	f.subs.Store(&subs)
}

// WantWrites adds delta to the count of those that want writes reported: a
// tracking client, a blocked client. A write that finds the count 0 is not
// reported: it came before any read that could keep its old value, since a
// reader wants writes before it reads.
func (f *Feed) WantWrites(delta int) { f.want.Add(int64(delta)) }

// Active is route.Writes': whether writes are wanted now. One atomic load:
// every write through the routes asks.
func (f *Feed) Active() bool { return f.want.Load() != 0 }

// Wrote is route.Writes: a write of key through r, once it has returned.
func (f *Feed) Wrote(ctx context.Context, r *route.Route, key string) {
	subs := f.subs.Load()
	if subs == nil {
		return
	}
	w := WriterOf(ctx)
	for _, s := range *subs {
		s.Wrote(r, key, w)
	}
}

// changed tells the subscribers of ch.
func (f *Feed) changed(ch Change) {
	if subs := f.subs.Load(); subs != nil {
		for _, s := range *subs {
			s.Changed(ch)
		}
	}
}

// Follow is route.Follower: it subscribes to the reports of each route of
// tbl whose backend is a Notifier, before tbl serves a request. The stop it
// returns, once tbl is retired and drained, cancels them; when the table
// now current sends some key to another backend than tbl did, it then
// reports a reload: a value read through tbl may differ from what the new
// backend holds, and no report of the old one comes any more.
func (f *Feed) Follow(tbl *route.Table) (stop func()) {
	rs := routingOf(tbl)
	var cancels []func()
	for _, r := range tbl.Routes() {
		n, ok := backends.As[backends.Notifier](r.Backend)
		if !ok || len(r.Prefixes) == 0 {
			continue
		}
		cancels = append(cancels, n.Notify(func(o backends.Outside) {
			f.changed(Change{Route: r, Keys: o.Keys, All: o.All || o.Lost, Lost: o.Lost,
				Source: o.Source, At: o.At, routing: rs})
		}))
	}
	return func() {
		for _, cancel := range cancels {
			cancel()
		}
		if cur := f.router.Current(); cur != tbl && !tbl.SameBackends(cur) {
			f.changed(Change{All: true, Source: SourceReload})
		}
	}
}

var (
	_ route.Writes   = (*Feed)(nil)
	_ route.Follower = (*Feed)(nil)
)
