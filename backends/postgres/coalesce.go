package postgres

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/pgcache/pgcache/backends"
)

// Concurrent single-key reads of one table share queries when the pool is
// busy, and so do concurrent plain SETs of one kv table. While fewer reads are in flight than the pool has connections, a
// read runs its own statement at once, so an idle pgcache adds no latency.
// Past that, reads queue, and each read that finishes hands its slot to
// everything queued meanwhile (up to maxCoalesced keys), read by one
// `key = ANY($1)` query. A query of 8 keys costs PostgreSQL about what a
// query of 1 does (docs/performance.md, Shared reads), so under load a
// read costs a fraction of a statement.
//
// A queued read sees every write that completed before it was asked: the
// query that answers it starts after it queued. Queued SETs are one upsert
// of many rows: all are stored or none, and each is answered after the
// statement commits.

// maxCoalesced bounds the keys of one shared query.
const maxCoalesced = 128

// coalescer shares the requests of one store: Q is a request (a key to
// read, a row to write), T its answer.
type coalescer[Q, T any] struct {
	slots int // requests in flight before requests queue
	// one runs a request alone; many runs requests in one statement and
	// returns one answer per request, in their order.
	one  func(ctx context.Context, q Q) (T, error)
	many func(ctx context.Context, qs []Q) ([]T, error)
	// own copies what a request borrows from its caller (keys, values),
	// which is the caller's only until get returns: a caller whose ctx
	// ends returns before the shared statement runs.
	own func(Q) Q

	mu      sync.Mutex
	running int // statements in flight, shared or not
	queue   []*waiter[Q, T]

	shared atomic.Int64 // requests answered by a shared statement
}

// waiter is a queued request.
type waiter[Q, T any] struct {
	q    Q
	val  T
	err  error
	done chan struct{}
}

// get runs q alone when a slot is free, else with the requests queued
// beside it. A request whose ctx ends while queued returns at once; the
// statement it was part of still answers the others (and a queued write
// may still be stored: the caller was told its context ended, not that it
// failed).
func (c *coalescer[Q, T]) get(ctx context.Context, q Q) (T, error) {
	c.mu.Lock()
	if c.running < c.slots {
		c.running++
		c.mu.Unlock()
		v, err := c.one(ctx, q)
		c.release()
		return v, err
	}
	w := &waiter[Q, T]{q: c.own(q), done: make(chan struct{})}
	c.queue = append(c.queue, w)
	c.mu.Unlock()
	select {
	case <-w.done:
		return w.val, w.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// release ends a query: its slot goes to the reads that queued, served by
// a goroutine of their own so that the reader who held it returns now.
func (c *coalescer[Q, T]) release() {
	if batch := c.next(); batch != nil {
		go c.serve(batch)
	}
}

// next takes the queued reads for the slot being released, or frees the
// slot when none are queued.
func (c *coalescer[Q, T]) next() []*waiter[Q, T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		c.running--
		return nil
	}
	n := min(len(c.queue), maxCoalesced)
	batch := make([]*waiter[Q, T], n)
	copy(batch, c.queue)
	rest := copy(c.queue, c.queue[n:])
	clear(c.queue[rest:])
	c.queue = c.queue[:rest]
	return batch
}

// serve answers queued requests, one shared statement per batch, until the
// queue is empty.
func (c *coalescer[Q, T]) serve(batch []*waiter[Q, T]) {
	for ; batch != nil; batch = c.next() {
		// The query answers readers that may have gone; the store's
		// command timeout bounds it.
		ctx := context.Background()
		if len(batch) == 1 {
			w := batch[0]
			w.val, w.err = c.one(ctx, w.q)
			close(w.done)
			continue
		}
		qs := make([]Q, len(batch))
		for i, w := range batch {
			qs[i] = w.q
		}
		vals, err := c.many(ctx, qs)
		c.shared.Add(int64(len(batch)))
		for i, w := range batch {
			switch {
			case errors.Is(err, backends.ErrBadKey):
				// A key only the database could refuse (a table
				// route's key that does not cast): each alone.
				w.val, w.err = c.one(ctx, w.q)
			case err != nil:
				w.err = err
			default:
				w.val = vals[i]
			}
			close(w.done)
		}
	}
}
