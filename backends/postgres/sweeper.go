package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// maxSweepBatches bounds one sweep: a table that keeps filling with expired
// rows faster than they are deleted gets the rest at the next interval.
const maxSweepBatches = 1000

// unlockTimeout bounds releasing the sweep lock after the sweep's own
// context has ended.
const unlockTimeout = 5 * time.Second

// sweeper deletes a kv table's expired rows every interval. Reads already
// skip expired rows; sweeping is about disk space, not correctness.
type sweeper struct {
	kv     *KV
	cancel context.CancelFunc
	done   chan struct{}
}

// sweepStats count what a table's sweeps did, for /metrics and INFO.
type sweepStats struct {
	runs    atomic.Int64 // sweeps that ran
	skipped atomic.Int64 // sweeps skipped: another session held the lock
	failed  atomic.Int64 // sweeps that failed (database unreachable, …)
	deleted atomic.Int64 // expired rows deleted
}

func startSweeper(kv *KV, interval time.Duration) *sweeper {
	ctx, cancel := context.WithCancel(context.Background())
	w := &sweeper{kv: kv, cancel: cancel, done: make(chan struct{})}
	go w.loop(ctx, interval)
	return w
}

func (w *sweeper) loop(ctx context.Context, interval time.Duration) {
	defer close(w.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, swept, err := w.kv.Sweep(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.kv.d.log.Warn("sweep failed", zap.String("route", w.kv.route), zap.Error(err))
		case swept && n > 0:
			w.kv.d.log.Debug("swept expired rows", zap.String("route", w.kv.route), zap.Int64("rows", n))
		}
	}
}

// stop ends the loop and waits for a sweep in progress to give up.
func (w *sweeper) stop() {
	w.cancel()
	<-w.done
}

// Sweep deletes the table's expired rows now, in batches of sweepBatch,
// while a batch comes back full. Only one session sweeps a table at a
// time, whichever pgcache instance it belongs to: the sweep holds a
// session advisory lock on a key derived from the table's name, and when
// another session holds it Sweep returns at once with swept false.
//
// The lock is taken and released on one connection held for the whole
// sweep (session locks belong to the connection). Each batch commits on its
// own, so no transaction holds many row locks for long.
func (s *KV) Sweep(ctx context.Context) (deleted int64, swept bool, err error) {
	if err := s.setup.ensure(ctx); err != nil {
		s.sweepStats.failed.Add(1)
		return 0, false, err
	}
	deleted, swept, err = s.sweep(ctx)
	switch {
	case err != nil:
		s.sweepStats.failed.Add(1)
		err = opError(ctx, s.where, "sweep", err)
	case swept:
		s.sweepStats.runs.Add(1)
	default:
		s.sweepStats.skipped.Add(1)
	}
	s.sweepStats.deleted.Add(deleted)
	return deleted, swept, err
}

func (s *KV) sweep(ctx context.Context) (deleted int64, swept bool, err error) {
	// Every step is bounded like any other operation: a database that
	// stops answering fails the sweep instead of hanging the sweeper.
	step := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, time.Duration(s.d.opts.CommandTimeout))
	}
	sctx, cancel := step()
	conn, err := s.d.pool.Acquire(sctx) // how the deletes commit does not matter: the standard pool
	cancel()
	if err != nil {
		return 0, false, err
	}
	defer conn.Release()
	lock := s.table.lockKey("sweep")
	sctx, cancel = step()
	err = conn.QueryRow(sctx, "SELECT pg_try_advisory_lock($1)", lock).Scan(&swept)
	cancel()
	if err != nil || !swept {
		return 0, false, err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		if _, uerr := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", lock); uerr != nil {
			// A connection that may still hold the lock must not go back
			// to the pool; closing it ends the session and its locks.
			conn.Conn().Close(uctx)
		}
	}()
	for range maxSweepBatches {
		sctx, cancel = step()
		tag, err := conn.Exec(sctx, s.sql.sweep)
		cancel()
		if err != nil {
			return deleted, true, err
		}
		deleted += tag.RowsAffected()
		if tag.RowsAffected() < sweepBatch {
			break
		}
	}
	return deleted, true, nil
}
