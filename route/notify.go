package route

import (
	"context"
	"sync/atomic"
)

// Writes is told of every write through a route once it has returned:
// the changes feed (package changes), which CLIENT TRACKING reads, hangs on
// it. A write is reported after the backend call, never before: a reader
// that registers its interest in a key before reading it either reads the
// new value or is told of the write (see package tracking).
type Writes interface {
	// Wrote reports a write of key, as r's backend stores it. ctx is the
	// writer's, so a front can tell its own clients' writes apart.
	Wrote(ctx context.Context, r *Route, key string)
	// Active reports whether writes are wanted now. While it is false the
	// wrappers neither report nor collect them: a reader registers its
	// interest (making it true) before it reads, so a write that found it
	// false came before any read that could keep its old value.
	Active() bool
}

// Follower is a Writes that also follows each table its router serves:
// the RESP front subscribes to the changes the table's backends make on
// their own (backends.Notifier). Follow(t) runs before t becomes current,
// so no request on t comes before it; the stop it returns runs once t is
// retired and its requests have ended (or the drain gave up), before its
// backends are closed, and once for the current table when OnWrite
// replaces the Follower.
type Follower interface {
	Follow(t *Table) (stop func())
}

// notifier is what a route's wrapper calls; it is shared by every route of
// the tables a Router serves.
type notifier struct{ w atomic.Pointer[Writes] }

// active reports whether the router's Writes wants writes now.
func (n *notifier) active() bool {
	if n == nil {
		return false
	}
	w := n.w.Load()
	return w != nil && (*w).Active()
}

// wrote reports a write of key to the router's Writes, if any.
func (n *notifier) wrote(ctx context.Context, r *Route, key string) {
	if n == nil {
		return
	}
	if w := n.w.Load(); w != nil {
		(*w).Wrote(ctx, r, key)
	}
}

// OnWrite has w told of every write through the routes this router
// serves, now and after reloads; nil stops it.
func (r *Router) OnWrite(w Writes) {
	r.follow.Lock()
	defer r.follow.Unlock()
	cur := r.cur.Load()
	cur.unfollowLocked()
	if w == nil {
		r.notify.w.Store(nil)
		return
	}
	r.notify.w.Store(&w)
	if f, ok := w.(Follower); ok {
		cur.unfollow = f.Follow(cur)
	}
}

// attach points the routes of t at the router's notifier, and has the
// Follower, if any, follow t. It runs before t becomes current, whose
// atomic store publishes it to the requests.
func (r *Router) attach(t *Table) {
	for _, rt := range t.routes {
		rt.notify = &r.notify
	}
	r.follow.Lock()
	defer r.follow.Unlock()
	if w := r.notify.w.Load(); w != nil {
		if f, ok := (*w).(Follower); ok {
			t.unfollow = f.Follow(t)
		}
	}
}

// retired stops following t, a table no longer current whose requests
// have ended.
func (r *Router) retired(t *Table) {
	r.follow.Lock()
	defer r.follow.Unlock()
	t.unfollowLocked()
}

func (t *Table) unfollowLocked() {
	if t.unfollow != nil {
		t.unfollow()
		t.unfollow = nil
	}
}

// SameBackends reports whether t and o send every RESP key to the same
// opened backend, spelled the same way: a reload that kept them.
func (t *Table) SameBackends(o *Table) bool {
	if len(t.prefixed) != len(o.prefixed) {
		return false
	}
	for i, p := range t.prefixed {
		q := o.prefixed[i]
		if p.prefix != q.prefix || p.route.raw != q.route.raw || (p.route.Canon == nil) != (q.route.Canon == nil) {
			return false
		}
	}
	return true
}
