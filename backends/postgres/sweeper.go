package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/subs"
)

// maxSweepBatches bounds one sweep: a table that keeps filling with expired
// rows faster than they are deleted gets the rest at the next interval.
const maxSweepBatches = 1000

// unlockTimeout bounds releasing the sweep lock after the sweep's own
// context has ended.
const unlockTimeout = 5 * time.Second

// While someone listens for expired keys, sweeps follow the deadlines:
// they start at least minSweepGap apart, and sweepShare times as long
// apart as the last sweep took (a large table without an index on
// expires_at keeps sweeping to a tenth of one session), but no more than
// maxSweepGap: an expired event comes within about a second.
const (
	minSweepGap = 100 * time.Millisecond // Redis's active expiry runs ten times a second
	maxSweepGap = time.Second
	sweepShare  = 10
	sweepRetry  = 5 * time.Second // after a failed sweep
)

// sweeper deletes a kv table's expired rows. Reads already skip expired
// rows, so while nobody listens sweeping is about disk space, not
// correctness, and runs every interval. While someone listens
// (NotifyExpired) it is also Redis's "expired" event, which Redis sends
// about when the deadline passes: the sweeper then wakes at the earliest
// deadline it knows of, the soonest written through this store since the
// last sweep or the soonest in the table as the sweep left it (looked up
// after each), within the gaps above, and still every interval at the
// latest. Deadlines written through another instance are not known here:
// they are found by the look after a sweep, which a fence from elsewhere
// brings forward (LookSoon), or at the next interval.
type sweeper struct {
	kv       *KV
	interval time.Duration
	cancel   context.CancelFunc
	done     chan struct{}

	fns  subs.Set[func(keys []string)] // NotifyExpired's; while empty, sweeps keep to interval
	due  atomic.Int64                  // the soonest deadline written since the last sweep began, unix ns; 0: none
	wake chan struct{}                 // due was lowered
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
	w := &sweeper{kv: kv, interval: interval, cancel: cancel, done: make(chan struct{}),
		wake: make(chan struct{}, 1)}
	go w.loop(ctx)
	return w
}

func (w *sweeper) loop(ctx context.Context) {
	defer close(w.done)
	timer := time.NewTimer(w.interval)
	defer timer.Stop()
	next := time.Now().Add(w.interval) // when the timer fires
	var last time.Time                 // when the last sweep began
	gap := minSweepGap
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			if d := w.due.Load(); d != 0 {
				if at := later(time.Unix(0, d), last.Add(gap)); at.Before(next) {
					next = at
					timer.Reset(time.Until(next))
				}
			}
			continue
		case <-timer.C:
		}
		last = time.Now()
		// A deadline written from now on may be missed by the look below
		// (its write may commit after it): it stays in due.
		w.due.Store(0)
		listened := w.fns.Any()
		n, swept, err := w.kv.Sweep(ctx)
		var in time.Duration
		ok := false
		if err == nil && listened {
			in, ok, err = w.kv.nextExpiry(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.kv.d.log.Warn("sweep failed", zap.String("route", w.kv.route), zap.Error(err))
		case swept && n > 0:
			w.kv.d.log.Debug("swept expired rows", zap.String("route", w.kv.route), zap.Int64("rows", n))
		}
		next = last.Add(w.interval)
		if listened {
			gap = min(max(minSweepGap, sweepShare*time.Since(last)), maxSweepGap)
			switch {
			case err != nil:
				next = sooner(next, last.Add(max(gap, sweepRetry)))
			case !swept:
				next = sooner(next, last.Add(gap)) // another session is sweeping: again soon
			case ok:
				next = sooner(next, later(time.Now().Add(in), last.Add(gap)))
			}
		}
		if d := w.due.Load(); d != 0 {
			next = sooner(next, later(time.Unix(0, d), last.Add(gap)))
		}
		timer.Reset(time.Until(next))
	}
}

func sooner(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// stop ends the loop and waits for a sweep in progress to give up.
func (w *sweeper) stop() {
	w.cancel()
	<-w.done
}

// subscribe adds fn to NotifyExpired's and has the next sweep run now: the
// deadlines in the table are not known yet.
func (w *sweeper) subscribe(fn func(keys []string)) (cancel func()) {
	cancel = w.fns.Add(fn)
	w.expires(time.Now())
	return cancel
}

// expires tells the sweeper of a deadline written through the store, once
// the write has committed (so a sweep that begins after this sees the
// row), while someone listens.
func (w *sweeper) expires(at time.Time) {
	if w == nil || !w.fns.Any() {
		return
	}
	n := at.UnixNano()
	for {
		cur := w.due.Load()
		if cur != 0 && cur <= n {
			return
		}
		if w.due.CompareAndSwap(cur, n) {
			break
		}
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// listened reports whether anyone wants the keys sweeps delete.
func (w *sweeper) listened() bool { return w != nil && w.fns.Any() }

// report tells NotifyExpired's subscribers of keys a sweep deleted.
func (w *sweeper) report(keys []string) {
	if len(keys) == 0 {
		return
	}
	for _, fn := range w.fns.List(nil) {
		fn(keys)
	}
}

// NotifyExpired calls fn with the keys this route's sweeps delete
// (backends.ExpiryNotifier), until cancel. While anyone is subscribed
// the sweeper follows the deadlines (see sweeper). Once the sweeps log
// what they delete (LogExpiries), fn hears nothing from here: whoever
// reads the log reports them, for every instance. With sweep_interval
// negative nothing is swept and nothing reported.
func (s *KV) NotifyExpired(fn func(keys []string)) (cancel func()) {
	if s.sweeper == nil {
		return func() {}
	}
	return s.sweeper.subscribe(fn)
}

// LogExpiries has every later sweep run insert in the transaction of its
// DELETE: a statement that reads the keys deleted from expired(key) (the
// coherence package's fence log, which every instance hears).
func (s *KV) LogExpiries(insert string) {
	sql := s.sql.expired + `, logged AS (` + insert + `) SELECT count(*) FROM expired`
	s.expiryLog.Store(&sql)
}

// LookSoon has the sweeper, while someone listens, sweep and look up the
// next deadline within its gap: rows were written elsewhere (another
// instance's fences came), whose deadlines it does not know.
func (s *KV) LookSoon() { s.sweeper.expires(time.Now()) }

// expires tells the sweeper of a deadline t has written, once written.
func (s *KV) expires(t backends.TTL) {
	if at, ok := t.Deadline(time.Now()); ok {
		s.sweeper.expires(at)
	}
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
		n, err := s.sweepBatch(sctx, conn.Conn())
		cancel()
		if err != nil {
			return deleted, true, err
		}
		deleted += n
		if n < sweepBatch {
			break
		}
	}
	return deleted, true, nil
}

// sweepBatch deletes one batch of expired rows, and tells whoever wants
// them which: in the fence log, in the same transaction (LogExpiries), or
// NotifyExpired's subscribers, once the statement has committed (an
// implicit transaction commits before the rows' reader returns).
func (s *KV) sweepBatch(ctx context.Context, conn *pgx.Conn) (n int64, err error) {
	if logged := s.expiryLog.Load(); logged != nil {
		err = conn.QueryRow(ctx, *logged).Scan(&n)
		return n, err
	}
	if !s.sweeper.listened() {
		err = conn.QueryRow(ctx, s.sql.sweep).Scan(&n)
		return n, err
	}
	rows, err := conn.Query(ctx, s.sql.sweepKeys)
	if err != nil {
		return 0, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	s.sweeper.report(keys)
	return int64(len(keys)), nil
}

// nextExpiry is how long until the table's next row expires, by the
// database's clock; ok is false when none will.
func (s *KV) nextExpiry(ctx context.Context) (in time.Duration, ok bool, err error) {
	err = s.do(ctx, "sweep", func(ctx context.Context) error {
		var us *int64
		if err := s.pool.QueryRow(ctx, s.sql.nextExpiry).Scan(&us); err != nil {
			return err
		}
		if ok = us != nil; ok {
			in = max(time.Duration(*us)*time.Microsecond, 0)
		}
		return nil
	})
	return in, ok, err
}

var _ backends.ExpiryNotifier = (*KV)(nil)
