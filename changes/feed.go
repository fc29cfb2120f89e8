package changes

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Feed is the changes of one Router's routes. It is the Router's
// route.Writes and route.Follower.
type Feed struct {
	router *route.Router
	want   atomic.Int64 // WantWrites: while 0, writes are not reported

	mu   sync.Mutex                   // orders Subscribe and cancel
	subs atomic.Pointer[[]Subscriber] // replaced, never changed; nil: none

	// Expired keys (backends.ExpiryNotifier) are reported only while
	// someone wants them (WantExpiries): a store that reports them sweeps
	// more often. Under mu.
	expiring int
	followed map[*route.Table]routing                        // tables between Follow and its stop
	expiries map[backends.ExpiryNotifier]*expirySubscription // while expiring > 0
}

// expirySubscription is one store's expired keys, subscribed to once
// however many followed tables have it (a reload keeps the backend of an
// unchanged route), so each is reported once; they are reported as any of
// those tables' route over it, which all have the same prefixes.
type expirySubscription struct {
	cancel func()
	routes []tableRoute
}

type tableRoute struct {
	tbl *route.Table
	r   *route.Route
	rs  routing
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
// tbl whose backend is a Notifier, before tbl serves a request, and while
// they are wanted to its expired keys (WantExpiries). The stop it
// returns, once tbl is retired and drained, cancels them; when the table
// now current sends some key to another backend than tbl did, it then
// reports a reload: a value read through tbl may differ from what the new
// backend holds, and no report of the old one comes any more.
func (f *Feed) Follow(tbl *route.Table) (stop func()) {
	rs := routingOf(tbl)
	f.mu.Lock()
	if f.followed == nil {
		f.followed = map[*route.Table]routing{}
	}
	f.followed[tbl] = rs
	if f.expiring > 0 {
		f.subscribeExpiries(tbl, rs)
	}
	f.mu.Unlock()
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
		f.mu.Lock()
		f.unsubscribeExpiries(tbl)
		delete(f.followed, tbl)
		f.mu.Unlock()
		if cur := f.router.Current(); cur != tbl && !tbl.SameBackends(cur) {
			f.changed(Change{All: true, Source: SourceReload})
		}
	}
}

// WantExpiries adds delta to the count of those that want expired keys
// reported (a RESP front whose notify-keyspace-events has x): while it is
// above 0, the feed subscribes to each followed route's
// backends.ExpiryNotifier and reports its keys as a Change with Source
// "expiry". The memory store reports its expiries as a Notifier, always.
func (f *Feed) WantExpiries(delta int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	was := f.expiring
	f.expiring += delta
	switch {
	case was == 0 && f.expiring > 0:
		for tbl, rs := range f.followed {
			f.subscribeExpiries(tbl, rs)
		}
	case was > 0 && f.expiring == 0:
		for _, sub := range f.expiries {
			sub.cancel()
		}
		f.expiries = nil
	}
}

// subscribeExpiries subscribes to the expired keys of tbl's routes; f.mu
// is held.
func (f *Feed) subscribeExpiries(tbl *route.Table, rs routing) {
	for _, r := range tbl.Routes() {
		e, ok := backends.As[backends.ExpiryNotifier](r.Backend)
		if !ok || len(r.Prefixes) == 0 {
			continue
		}
		if f.expiries == nil {
			f.expiries = map[backends.ExpiryNotifier]*expirySubscription{}
		}
		sub := f.expiries[e]
		if sub == nil {
			sub = &expirySubscription{}
			sub.cancel = e.NotifyExpired(func(keys []string) { f.expired(e, keys) })
			f.expiries[e] = sub
		}
		sub.routes = append(sub.routes, tableRoute{tbl, r, rs})
	}
}

// unsubscribeExpiries drops tbl's routes from the expiry subscriptions,
// and cancels those no other table has; f.mu is held.
func (f *Feed) unsubscribeExpiries(tbl *route.Table) {
	for e, sub := range f.expiries {
		sub.routes = slices.DeleteFunc(sub.routes, func(tr tableRoute) bool { return tr.tbl == tbl })
		if len(sub.routes) == 0 {
			sub.cancel()
			delete(f.expiries, e)
		}
	}
}

// expired reports keys e deleted as expired, as a change of a route over e.
func (f *Feed) expired(e backends.ExpiryNotifier, keys []string) {
	f.mu.Lock()
	sub := f.expiries[e]
	if sub == nil {
		f.mu.Unlock()
		return // cancelled meanwhile
	}
	tr := sub.routes[len(sub.routes)-1]
	f.mu.Unlock()
	f.changed(Change{Route: tr.r, Keys: keys, Source: SourceExpiry, routing: tr.rs})
}

var (
	_ route.Writes   = (*Feed)(nil)
	_ route.Follower = (*Feed)(nil)
)
