package route

import (
	"context"
	"sync/atomic"
)

// Writes is told of every write through a route once it has returned:
// the client-side caching of the RESP front (CLIENT TRACKING) hangs on it.
// A write is reported after the backend call, never before: a reader that
// registers its interest in a key before reading it either reads the new
// value or is told of the write (see proxy/tracking.go).
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
	if w == nil {
		r.notify.w.Store(nil)
		return
	}
	r.notify.w.Store(&w)
}

// attach points the routes of t at the router's notifier. It runs before
// t becomes current, whose atomic store publishes it to the requests.
func (r *Router) attach(t *Table) {
	for _, rt := range t.routes {
		rt.notify = &r.notify
	}
}
