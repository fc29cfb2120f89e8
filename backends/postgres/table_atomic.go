package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/snapshot"
)

// Atomically runs fn on the declared rows as one transaction (MULTI/EXEC,
// a script; valkey-go's cached read is MULTI, PTTL, GET, EXEC): see
// atomicOnce. Rows do not expire, so a run that gives one a lifetime is
// refused, and nothing is written.
func (s *Table) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	keys = snapshot.Unique(keys)
	if len(keys) == 0 {
		_, err := snapshot.Run(nil, nil, time.Now(), fn)
		return err
	}
	sh, args, err := s.prepareMany(ctx, keys)
	if err != nil {
		return err
	}
	var fnErr error
	err = s.do(ctx, "atomic", func(ctx context.Context) error {
		for range maxSetRetries {
			done, err := s.atomicOnce(ctx, sh, keys, args, fn, &fnErr)
			if err != nil || done {
				return err
			}
		}
		return errContention
	})
	if err != nil {
		return err
	}
	return fnErr
}

// atomicOnce is one attempt of a run, in one transaction: read the rows
// FOR UPDATE (plain writes of them wait until the commit), run fn on a
// copy (package snapshot), and write what it changed. A key absent at the
// read locks nothing: its row is inserted only if still absent, and a row
// another session inserted meanwhile makes the insert return nothing, so
// done is false, the transaction rolls back, and the run starts over.
func (s *Table) atomicOnce(ctx context.Context, sh *tableShape, keys []string, args []any,
	fn func(tx backends.Backend) error, fnErr *error) (done bool, err error) {
	bounded := func() context.Context { return s.d.deadlines.Of(ctx) }
	start := time.Now()
	tx, err := s.pool.Begin(bounded())
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op

	state := make([]backends.Expiring, len(keys))
	rows, err := tx.Query(bounded(), sh.lockMany, args...)
	if err != nil {
		return false, keyErr(err)
	}
	var i int64
	var v []byte
	if _, err := pgx.ForEachRow(rows, []any{&i, &v}, func() error {
		state[i-1] = backends.Expiring{Val: v, TTL: backends.TTLPersistent}
		return nil
	}); err != nil {
		return false, keyErr(err)
	}
	writes, err := snapshot.Run(keys, state, start, fn)
	if err != nil {
		*fnErr = err
		return true, nil
	}
	*fnErr = nil
	for _, w := range writes {
		if w.Val != nil && w.TTL != backends.TTLPersistent {
			*fnErr = fmt.Errorf("%s: a row with an expiry: rows do not expire: %w", s.where, backends.ErrUnsupported)
			return true, nil
		}
	}
	for _, w := range writes {
		stored, err := s.atomicWrite(bounded(), tx, sh, w)
		if err != nil || !stored {
			return false, err
		}
	}
	return true, tx.Commit(bounded())
}

// atomicWrite writes one key of a run: the row deleted, updated (it was
// read, so it is locked) or inserted if still absent (stored false when
// another session has inserted it since the read).
func (s *Table) atomicWrite(ctx context.Context, tx pgx.Tx, sh *tableShape, w snapshot.Write) (stored bool, err error) {
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

var _ backends.Atomic = (*Table)(nil)
