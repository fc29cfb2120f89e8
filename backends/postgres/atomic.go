package postgres

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/snapshot"
)

// Atomically runs fn on the declared keys as one transaction (MULTI/EXEC, a
// script): see atomicOnce. Only kv tables have it; a table route's rows are
// the application's, and a run over them is refused by the route.
func (s *KV) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	keys = snapshot.Unique(keys)
	if len(keys) == 0 {
		_, err := snapshot.Run(nil, nil, time.Now(), fn)
		return err
	}
	params := make([]any, len(keys))
	for i, k := range keys {
		p, err := s.key.param(k)
		if err != nil {
			return opError(ctx, s.where, "atomic", err)
		}
		params[i] = p
	}
	run := atomicRun{keys: keys, params: s.key.array(params), locks: s.keyLocks(keys), fn: fn}
	err := s.do(ctx, "atomic", func(context.Context) error {
		for range maxSetRetries {
			done, err := s.atomicOnce(ctx, &run)
			if err != nil || done {
				return err
			}
		}
		return errContention
	})
	if err != nil {
		return err
	}
	return run.fnErr
}

// atomicRun is one Atomically call: its keys as Unique returns them, as
// one array parameter, their advisory locks, and fn with its last error.
type atomicRun struct {
	keys   []string
	params any
	locks  []int64
	fn     func(tx backends.Backend) error
	fnErr  error
}

// keyLocks are the advisory lock keys of keys in this table, sorted and
// without duplicates: every run takes its locks in one global order, so two
// runs on overlapping keys, of this pgcache or another on the same
// database, queue and never deadlock. A hash collision only makes two keys
// share a lock.
func (s *KV) keyLocks(keys []string) []int64 {
	out := make([]int64, len(keys))
	prefix := []byte("pgcache atomic " + s.table.ident() + "\x00")
	for i, k := range keys {
		h := fnv.New64a()
		h.Write(prefix)
		h.Write([]byte(k))
		out[i] = int64(h.Sum64())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// atomicOnce is one attempt of a run, in one transaction:
//
//  1. take the keys' advisory locks, in order: runs on the same keys
//     serialize here, before they touch a row;
//  2. read the live rows of the keys FOR UPDATE, in key order as upserts
//     lock them: plain writes of those rows wait until the commit;
//  3. run fn on a copy of them (package snapshot);
//  4. write what fn changed: a row read is updated or deleted (it is
//     locked), a key absent at the read is inserted only if still no live
//     row has it (setNXSQL). A row another session inserted after the
//     read (a plain SET of a new key takes no lock this run holds) makes
//     the insert return nothing: done is false, the transaction rolls
//     back, and the run starts over and sees the row.
//
// Lifetimes are read and written relative to now(), the transaction's
// start, which is the load instant snapshot measures them from: a key fn
// did not touch is not written, and one it wrote with KEEPTTL gets back its
// exact deadline. Each round trip has its own command timeout; fn, which
// holds the locks meanwhile, is bounded by its caller (a script's limits).
func (s *KV) atomicOnce(ctx context.Context, run *atomicRun) (done bool, err error) {
	bounded := func() context.Context { return s.d.deadlines.Of(ctx) }
	// Before BEGIN, so before now(): a deadline in the scratch is never
	// later than its row's.
	start := time.Now()
	tx, err := s.pool.Begin(bounded())
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op

	state, err := s.atomicLoad(bounded(), tx, run)
	if err != nil {
		return false, err
	}
	writes, err := snapshot.Run(run.keys, state, start, run.fn)
	if err != nil {
		run.fnErr = err
		return true, nil
	}
	run.fnErr = nil
	if len(writes) > 0 {
		stored, err := s.atomicWrite(bounded(), tx, writes)
		if err != nil || !stored {
			return false, err
		}
	}
	return true, tx.Commit(bounded())
}

// atomicLoad locks the keys and reads their live rows, collections whole:
// one round trip.
func (s *KV) atomicLoad(ctx context.Context, tx pgx.Tx, run *atomicRun) ([]backends.Expiring, error) {
	if _, err := tx.Exec(ctx, lockKeysSQL, run.locks); err != nil {
		return nil, err
	}
	return s.load(ctx, tx, s.coll.loadLocked, run.params, run.keys)
}

// atomicWrite writes what fn changed: one round trip. stored is false when
// a key absent at the read has a live row now.
func (s *KV) atomicWrite(ctx context.Context, tx pgx.Tx, writes []snapshot.Write) (stored bool, err error) {
	b := &pgx.Batch{}
	var creates []int // results that say whether a new row went in
	for _, w := range writes {
		k, err := s.key.param(w.Key)
		if err != nil {
			return false, err
		}
		var ttl any // measured from now(), the load instant; nil: none
		if w.TTL != backends.TTLPersistent {
			ttl = w.TTL
		}
		switch {
		case w.Coll != nil:
			at, err := s.queueCollWrite(b, k, w)
			if err != nil {
				return false, err
			}
			if at >= 0 {
				creates = append(creates, at)
			}
		case w.Val == nil:
			b.Queue(s.coll.delRow, k)
		case w.Existed:
			b.Queue(s.sql.set, k, w.Val, ttl, nil, false)
		default:
			creates = append(creates, b.Len())
			b.Queue(s.sql.setNX, k, w.Val, ttl, nil)
		}
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	stored = true
	for i := range b.Len() {
		if len(creates) > 0 && creates[0] == i {
			creates = creates[1:]
			var ok bool
			switch err := br.QueryRow().Scan(&ok); {
			case errors.Is(err, pgx.ErrNoRows):
				stored = false // inserted by another since the read
			case err != nil:
				return false, err
			}
			continue
		}
		if _, err := br.Exec(); err != nil {
			return false, err
		}
	}
	return stored, br.Close()
}

// $1 advisory lock keys, sorted: taken in that order (unnest returns an
// array's elements in order), held until the transaction ends.
const lockKeysSQL = `SELECT pg_advisory_xact_lock(h) FROM unnest($1::int8[]) AS u(h)`

var _ backends.Atomic = (*KV)(nil)
