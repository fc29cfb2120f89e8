package postgres

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// maxAttempts bounds how often one operation runs its statement: again
// when nothing reached the server (a pooled connection that died with a
// restart) or when the server rolled it back to break a deadlock.
const maxAttempts = 3

// setupRetry is how long a failed setup is answered from memory before the
// next request tries again: while the database is down, requests fail at
// once instead of each waiting for its own connect timeout.
const setupRetry = time.Second

// base is what kv and table stores share: the driver, the pool of the
// route's durability, and the route's first contact with its table.
type base struct {
	d     *Driver
	pool  *pgxpool.Pool
	route string
	table tableName
	where string // error prefix: `table "public"."kv"`; the caller names the backend
	setup setup
}

func (b *base) init(d *Driver, pool *pgxpool.Pool, route string, t tableName, setupFn func(context.Context) error) {
	b.d, b.pool, b.route, b.table = d, pool, route, t
	b.where = "table " + t.String()
	b.setup.fn = setupFn
	b.setup.where = b.where
	b.setup.timeout = time.Duration(d.opts.CommandTimeout)
}

func (b *base) core() *base { return b }

// do runs one operation: it sets the table up if that has not succeeded
// yet, bounds the operation by the command timeout (a context shared with
// the operations begun about the same time, see package deadline), runs f
// (again, up to maxAttempts, when that is safe), and turns its error into
// the backend's.
func (b *base) do(ctx context.Context, op string, f func(ctx context.Context) error) error {
	opCtx := b.d.deadlines.Of(ctx)
	if err := b.setup.ensure(opCtx); err != nil {
		return err
	}
	var err error
	for range maxAttempts {
		if err = f(opCtx); err == nil || !retryable(opCtx, err) {
			break
		}
	}
	if err == nil {
		return nil
	}
	if sqlState(err) == sqlstateUndefinedTable {
		b.setup.reset() // dropped under us: the next request creates or checks it again
	}
	return opError(ctx, b.where, op, err)
}

// attempts runs op as one operation (do) of attempts, each a transaction
// of its own (once), until one is done. An attempt whose insert of a key
// absent at its read met a row another session inserted since reports
// done false and rolls back; the next one reads that row. After
// maxSetRetries such attempts the operation fails with errContention.
func (b *base) attempts(ctx context.Context, op string, once func(ctx context.Context) (done bool, err error)) error {
	return b.do(ctx, op, func(ctx context.Context) error {
		for range maxSetRetries {
			if done, err := once(ctx); err != nil || done {
				return err
			}
		}
		return errContention
	})
}

// setup runs a store's first contact with its table (create or check a kv
// table, read a source table's columns) until it succeeds once. Until then
// every request tries it again, at most once per setupRetry; in between
// they get the last failure at once.
type setup struct {
	fn      func(ctx context.Context) error
	where   string        // error prefix
	timeout time.Duration // bounds one attempt
	done    atomic.Bool

	mu   sync.Mutex
	err  error
	last time.Time
}

func (s *setup) ensure(ctx context.Context) error {
	if s.done.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done.Load() {
		return nil
	}
	if s.err != nil && time.Since(s.last) < setupRetry {
		return s.err
	}
	// The attempt is the route's, not the caller's: a caller that gives up
	// must not leave its cancellation behind as the route's error.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	s.last = time.Now()
	if err := s.fn(actx); err != nil {
		s.err = opError(actx, s.where, "setup", err)
		return s.err
	}
	s.err = nil
	s.done.Store(true)
	return nil
}

// reset makes the next request run the setup again.
func (s *setup) reset() {
	s.mu.Lock()
	s.done.Store(false)
	s.err = nil
	s.mu.Unlock()
}

// fewKeys answers an MGet of no key or one (one is a Get, which shares a
// query with concurrent reads); done is false for more.
func fewKeys(ctx context.Context, keys []string, dst [][]byte,
	get func(context.Context, string) ([]byte, bool, error)) (out [][]byte, done bool, err error) {
	switch len(keys) {
	case 0:
		return dst, true, nil
	case 1:
		v, _, err := get(ctx, keys[0])
		if err != nil {
			return dst, true, err
		}
		return append(dst, v), true, nil
	}
	return dst, false, nil
}
