package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/snapshot"
)

// Atomic runs (MULTI/EXEC, a script) of a kv table and of a table route's
// rows: attempts, each one transaction (snapshotOnce) that locks the keys'
// rows and reads them, runs fn on a copy of them (package snapshot), and
// writes back what fn changed; a row another session inserted meanwhile
// makes it start over. The stores differ in how they lock, read and write
// (atomicRows).

// snapshotRun is one Atomically call: its keys as snapshot.Unique returns
// them, fn with its error in the last attempt, and the store's side.
type snapshotRun struct {
	keys  []string
	fn    func(tx backends.Backend) error
	fnErr error
	rows  atomicRows
}

// atomicRows is a store's side of an attempt, inside its transaction. ctx
// is the attempt's: each round trip is bounded by a command timeout of its
// own (deadlines.Of).
type atomicRows interface {
	// load locks the rows of keys and reads the live ones: an entry per
	// key (a nil Val when absent), lifetimes measured from now().
	load(ctx context.Context, tx pgx.Tx, keys []string) ([]backends.Expiring, error)
	// refuse says why the store cannot make writes, as fn's error:
	// nothing is written. nil: it can.
	refuse(writes []snapshot.Write) error
	// write makes writes; stored is false when a key absent at the load
	// has a live row now.
	write(ctx context.Context, tx pgx.Tx, writes []snapshot.Write) (stored bool, err error)
}

// snapshotOnce is one attempt of a run, in one transaction: load, fn on a
// copy, write. A key absent at the load locks no row: its row is inserted
// only if still absent, and a row another session inserted meanwhile makes
// the insert return nothing, so done is false, the transaction rolls back,
// and the run starts over and sees the row.
//
// Lifetimes are read and written relative to now(), the transaction's
// start, which is the load instant snapshot measures them from: a key fn
// did not touch is not written, and one it wrote with KEEPTTL gets back its
// exact deadline. Each round trip has its own command timeout; fn, which
// holds the locks meanwhile, is bounded by its caller (a script's limits).
func (b *base) snapshotOnce(ctx context.Context, run *snapshotRun) (done bool, err error) {
	// Before BEGIN, so before now(): a deadline in the scratch is never
	// later than its row's.
	start := time.Now()
	tx, err := b.pool.Begin(b.d.deadlines.Of(ctx))
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op

	state, err := run.rows.load(ctx, tx, run.keys)
	if err != nil {
		return false, err
	}
	writes, err := snapshot.Run(b.d.enc, run.keys, state, start, run.fn)
	if err == nil {
		err = run.rows.refuse(writes)
	}
	if run.fnErr = err; err != nil {
		return true, nil
	}
	if len(writes) > 0 {
		stored, err := run.rows.write(ctx, tx, writes)
		if err != nil || !stored {
			return false, err
		}
	}
	return true, tx.Commit(b.d.deadlines.Of(ctx))
}

// Atomically runs fn on the declared keys as one transaction (MULTI/EXEC, a
// script): see snapshotOnce and kvRows.
func (s *KV) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	if keys = snapshot.Unique(keys); len(keys) == 0 {
		return snapshot.Empty(fn)
	}
	params := make([]any, len(keys))
	for i, k := range keys {
		p, err := s.key.param(k)
		if err != nil {
			return opError(ctx, s.where, "atomic", err)
		}
		params[i] = p
	}
	var soonest time.Duration
	run := snapshotRun{keys: keys, fn: fn, rows: kvRows{s: s, params: s.key.array(params), locks: s.keyLocks(keys), soonest: &soonest}}
	// The attempt gets the caller's ctx, not the one operation's: each of
	// its round trips has a command timeout of its own.
	err := s.attempts(ctx, "atomic", func(context.Context) (bool, error) {
		return s.snapshotOnce(ctx, &run)
	})
	if err != nil {
		return err
	}
	if soonest > 0 {
		s.expires(backends.TTL{Mode: backends.TTLRelative, D: soonest})
	}
	return run.fnErr
}

// kvRows is a kv table's side of a run: its keys as one array parameter,
// and their advisory locks. An attempt
//
//  1. takes the keys' advisory locks, in order: runs on the same keys
//     serialize here, before they touch a row;
//  2. reads the live rows of the keys FOR UPDATE, in key order as upserts
//     lock them: plain writes of those rows wait until the commit;
//  3. runs fn on a copy of them;
//  4. writes what fn changed: a row read is updated or deleted (it is
//     locked), a key absent at the read is inserted only if still no live
//     row has it (setNXSQL): a plain SET of a new key takes no lock this
//     run holds.
type kvRows struct {
	s       *KV
	params  any
	locks   []int64
	soonest *time.Duration // the shortest lifetime the last write gave a key, for the sweeper; 0: none
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

// load locks the keys and reads their live rows, collections whole: one
// round trip of three statements, each with a snapshot of its own. The
// keys' advisory locks; their rows' locks, which also wait for the native
// commands' writes (collnative.go), which take no advisory lock; then the
// read, whose snapshot, taken after both, holds every item committed
// before. A read that waited for the row locks itself would read the items
// as they were before the writer it waited for (its snapshot is older).
func (r kvRows) load(ctx context.Context, tx pgx.Tx, keys []string) ([]backends.Expiring, error) {
	b := &pgx.Batch{}
	b.Queue(lockKeysSQL, r.locks)
	b.Queue(r.s.coll.lockKeys, r.params)
	b.Queue(r.s.coll.loadLocked, r.params)
	br := tx.SendBatch(r.s.d.deadlines.Of(ctx), b)
	defer br.Close()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	state, err := r.s.load(ctx, nextResult{br}, "", nil, keys)
	if err != nil {
		return nil, err
	}
	return state, br.Close()
}

// nextResult is a batch's next result as a querier, for the readers that
// send their own statement otherwise.
type nextResult struct{ br pgx.BatchResults }

func (q nextResult) Query(context.Context, string, ...any) (pgx.Rows, error) { return q.br.Query() }

// refuse refuses nothing: a kv table stores whatever fn left.
func (kvRows) refuse([]snapshot.Write) error { return nil }

// write writes what fn changed: one round trip.
func (r kvRows) write(ctx context.Context, tx pgx.Tx, writes []snapshot.Write) (stored bool, err error) {
	s := r.s
	b := &pgx.Batch{}
	var creates []int // results that say whether a new row went in
	*r.soonest = 0
	for _, w := range writes {
		k, err := s.key.param(w.Key)
		if err != nil {
			return false, err
		}
		var ttl any // measured from now(), the load instant; nil: none
		if w.TTL != backends.TTLPersistent {
			ttl = w.TTL
			if w.Val != nil || w.Coll != nil {
				*r.soonest = shorter(*r.soonest, w.TTL)
			}
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
	br := tx.SendBatch(s.d.deadlines.Of(ctx), b)
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

// shorter is the shorter of two lifetimes, 0 standing for none.
func shorter(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}

// $1 advisory lock keys, sorted: taken in that order (unnest returns an
// array's elements in order), held until the transaction ends.
const lockKeysSQL = `SELECT pg_advisory_xact_lock(h) FROM unnest($1::int8[]) AS u(h)`

// Atomically runs fn on the declared rows as one transaction (MULTI/EXEC,
// a script; valkey-go's cached read is MULTI, PTTL, GET, EXEC): see
// snapshotOnce and tableRows. Rows do not expire, so a run that gives one
// a lifetime is refused, and nothing is written.
func (s *Table) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	if keys = snapshot.Unique(keys); len(keys) == 0 {
		return snapshot.Empty(fn)
	}
	sh, args, err := s.prepareMany(ctx, keys)
	if err != nil {
		return err
	}
	run := snapshotRun{keys: keys, fn: fn, rows: tableRows{s: s, sh: sh, args: args}}
	err = s.attempts(ctx, "atomic", func(ctx context.Context) (bool, error) {
		return s.snapshotOnce(ctx, &run)
	})
	if err != nil {
		return err
	}
	return run.fnErr
}

// tableRows is a table route's side of a run: the rows are read FOR UPDATE
// (plain writes of them wait until the commit); a key absent at the read
// locks nothing.
type tableRows struct {
	s    *Table
	sh   *tableShape
	args []any // the keys, as sh.lockMany takes them
}

// load locks and reads the rows of keys: one round trip.
func (r tableRows) load(ctx context.Context, tx pgx.Tx, keys []string) ([]backends.Expiring, error) {
	state := make([]backends.Expiring, len(keys))
	rows, err := tx.Query(r.s.d.deadlines.Of(ctx), r.sh.lockMany, r.args...)
	if err != nil {
		return nil, keyErr(err)
	}
	var i int64
	var v []byte
	if _, err := pgx.ForEachRow(rows, []any{&i, &v}, func() error {
		state[i-1] = backends.Expiring{Val: v, TTL: backends.TTLPersistent}
		return nil
	}); err != nil {
		return nil, keyErr(err)
	}
	return state, nil
}

// refuse refuses a row with a lifetime: rows do not expire.
func (r tableRows) refuse(writes []snapshot.Write) error {
	for _, w := range writes {
		if w.Val != nil && w.TTL != backends.TTLPersistent {
			return fmt.Errorf("%s: a row with an expiry: rows do not expire: %w", r.s.where, backends.ErrUnsupported)
		}
	}
	return nil
}

// write writes the rows one by one, each with a command timeout of its own.
func (r tableRows) write(ctx context.Context, tx pgx.Tx, writes []snapshot.Write) (stored bool, err error) {
	for _, w := range writes {
		if stored, err := r.writeOne(r.s.d.deadlines.Of(ctx), tx, w); err != nil || !stored {
			return false, err
		}
	}
	return true, nil
}

// writeOne writes one key of a run: the row deleted, updated (it was
// read, so it is locked) or inserted if still absent (stored false when
// another session has inserted it since the read).
func (r tableRows) writeOne(ctx context.Context, tx pgx.Tx, w snapshot.Write) (stored bool, err error) {
	sh := r.sh
	vals, err := parseRowKey(w.Key, sh.pkColumns())
	if err != nil {
		return false, err
	}
	if w.Val == nil {
		arrays := make([]any, len(vals))
		for i, v := range vals {
			arrays[i] = []string{v}
		}
		_, err := tx.Exec(ctx, sh.del, arrays...)
		return err == nil, keyErr(err)
	}
	row, err := rowValue(w.Val, &sh.rel, vals)
	if err != nil {
		return false, err
	}
	if w.Existed {
		_, err := tx.Exec(ctx, sh.upsert, row)
		return err == nil, valueErr(err)
	}
	err = storedRow(tx.QueryRow(ctx, sh.insert, row), &stored)
	return stored, valueErr(err)
}

var (
	_ backends.Atomic = (*KV)(nil)
	_ backends.Atomic = (*Table)(nil)
	_ atomicRows      = kvRows{}
	_ atomicRows      = tableRows{}
)
