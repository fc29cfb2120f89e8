// Package deadline shares one command-timeout context among the backend calls
// begun close together.
//
// A context.WithTimeout per call starts a timer per call, and that is not
// cheap beside a hot client-cached Valkey read, which is a map lookup
// (docs/performance.md, One deadline for many calls). Worse, a new timer sooner than the one the
// runtime's network poller sleeps until makes the runtime wake the poller
// to sleep again (an eventfd write and read, an epoll_wait and a thread
// wake-up): a SET through a PostgreSQL route paid that on every call.
//
// A Shared hands out one context with the command timeout's deadline to
// every call begun within a tenth of the timeout after it was made. A timer
// marks it stale then, and calls begun after that get a new one, so every
// call is bounded by about 0.9 to 1 timeout (less only by how late that
// timer fires). The flag, not the clock, is what a call reads: on a VM
// whose clock source is kvm-clock, time.Now is a large part of a hot
// read's CPU. Nothing cancels the context early: it ends at its deadline, or with
// its parent.
package deadline

import (
	"context"
	"sync/atomic"
	"time"
)

// Shared bounds calls by one timeout, sharing contexts between them.
type Shared struct {
	timeout time.Duration
	// The context last made for parents that never end (Background, and
	// the like: no Done channel), and the one last made for any other.
	// Kept apart because a backend gets both (a server's context from its
	// fronts, Background from work that outlives a caller), in turns.
	forever, other atomic.Pointer[shared]
}

type shared struct {
	done  <-chan struct{} // the parent's Done: calls with another parent make their own
	ctx   context.Context
	stale atomic.Bool
}

// New returns a Shared with the given timeout, which must be positive.
func New(timeout time.Duration) *Shared { return &Shared{timeout: timeout} }

// Of returns ctx bounded by the timeout, unless its own deadline is
// sooner. Callers must not cancel it: others may hold it.
func (s *Shared) Of(ctx context.Context) context.Context {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= s.timeout {
		return ctx
	}
	slot := &s.other
	if ctx.Done() == nil {
		slot = &s.forever
	}
	if b := slot.Load(); b != nil && b.done == ctx.Done() && !b.stale.Load() {
		return b.ctx
	}
	bctx, cancel := context.WithTimeout(ctx, s.timeout)
	// Calls may hold it until its deadline, so nothing cancels it sooner;
	// cancel runs once it has ended, as the context contract asks.
	context.AfterFunc(bctx, cancel)
	b := &shared{done: ctx.Done(), ctx: bctx}
	time.AfterFunc(s.timeout/10, func() { b.stale.Store(true) })
	slot.Store(b)
	return bctx
}
