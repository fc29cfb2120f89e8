package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
)

// updateTx runs u in a transaction of its own: the key's live row is read
// FOR UPDATE, so no other write of it comes between the read and the
// write. An absent key has no row to lock; its write is an insert that
// finds no live row (setNXSQL), and when another one came first the whole
// update runs again and sees it.
func (s *KV) updateTx(ctx context.Context, key string, u backends.Update) error {
	k, err := s.key.param(key)
	if err != nil {
		return err
	}
	var applyErr error
	err = s.attempts(ctx, u.Op(), func(ctx context.Context) (bool, error) {
		return s.updateOnce(ctx, k, u, &applyErr)
	})
	if err != nil {
		return err
	}
	return applyErr
}

// updateOnce is one attempt of updateTx; done is false when an absent
// key's insert met a row inserted meanwhile.
func (s *KV) updateOnce(ctx context.Context, k any, u backends.Update, applyErr *error) (done bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op

	cur := backends.Current{TTL: backends.TTLPersistent}
	var val []byte
	var us int64
	var kind byte
	switch err := tx.QueryRow(ctx, s.sql.lock, k).Scan(&val, &us, &kind); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return false, err
	case kind != kindString:
		// A collection: the updates of its expiry run natively
		// (expireSQL, persistSQL); every other one reads a string.
		*applyErr = backends.ErrWrongType
		return true, nil
	default:
		cur.Val = value(val)
		if us >= 0 {
			cur.TTL = time.Duration(us) * time.Microsecond
		}
	}
	ch, err := u.Apply(cur)
	if err != nil || ch.Kind == backends.Keep {
		*applyErr = err
		return true, nil
	}
	switch {
	case ch.Kind == backends.Delete:
		if cur.Found() {
			if _, err := tx.Exec(ctx, s.sql.getDel, k); err != nil {
				return false, err
			}
		}
	case cur.Found():
		ttl, at, keep := expiry(ch.TTL)
		if _, err := tx.Exec(ctx, s.sql.set, k, value(ch.Val), ttl, at, keep); err != nil {
			return false, err
		}
	default:
		ttl, at, _ := expiry(ch.TTL) // KEEPTTL of an absent key: none
		var stored bool
		switch err := tx.QueryRow(ctx, s.sql.setNX, k, value(ch.Val), ttl, at).Scan(&stored); {
		case errors.Is(err, pgx.ErrNoRows):
			return false, nil // inserted by another since the read: again
		case err != nil:
			return false, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	s.expires(ch.TTL)
	return true, nil
}
