package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/internal/testenv"
)

// PostgreSQL's NOTIFY queue is one per cluster, 8GB in PostgreSQL 15 (the
// size became a setting, max_notify_queue_pages, only in 17). A session
// that has run LISTEN and then sits in an open transaction reads no
// notification until the transaction ends, and the queue cannot be trimmed
// past what it has not read: it grows with every NOTIFY of the cluster,
// on any channel. When it is full, a transaction that sent NOTIFY fails at
// COMMIT with SQLSTATE 54000, "too many notifications in the NOTIFY queue".
//
// pgcache's writers never NOTIFY: their fences go to an UNLOGGED log that
// the relay drains into NOTIFYs. So a full queue fails the relay's
// transactions, not the writers': writes go on and succeed, fences pile up
// in the log, canaries stop coming back, and L1 goes off until the queue
// has room again.

// notifyPayload is the size of a filler notification: the largest that
// fits (8000 bytes with the channel name).
const notifyPayload = 7900

// holdNotifyQueue opens a session that runs LISTEN and then stays in an
// open transaction, pinning the queue; release ends the session (closing
// it, so it never has to read what piled up).
func holdNotifyQueue(t testing.TB, srv *testenv.PG) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+coherence.Channel); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			conn.Close(context.Background())
		}
	}
	t.Cleanup(release)
	return release
}

// fillNotifyQueue sends notifications on a channel no one listens on (they
// take queue space all the same) until about bytes have gone in, or the
// queue is full. It returns what went in and how long it took.
func fillNotifyQueue(t testing.TB, srv *testenv.PG, bytes int64) (sent int64, took time.Duration, full bool) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const perCommit = 2000 // 16MB: one statement, one commit
	start := time.Now()
	for batch := 0; sent < bytes; batch++ {
		// Payloads are unique within a transaction, or NOTIFY folds them.
		_, err := conn.Exec(ctx, `SELECT count(pg_notify('faults_filler', $1 || ':' || g || ':' || repeat('x', $2)))
			FROM generate_series(1, $3) g`, fmt.Sprint(batch), notifyPayload-16, perCommit)
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "54000" {
			return sent, time.Since(start), true
		}
		if err != nil {
			t.Fatalf("fill the NOTIFY queue: %v", err)
		}
		sent += perCommit * notifyPayload
	}
	return sent, time.Since(start), false
}

func queueUsage(t testing.TB, pool *pgxpool.Pool) float64 {
	t.Helper()
	var u float64
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pool.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&u); err != nil {
		t.Fatal(err)
	}
	return u
}

// The queue pinned by another session and filling, short of full: pgcache
// does not notice. L1 stays on, nothing fails; INFO reports the fill.
func TestNotifyQueueHeld(t *testing.T) {
	leakCheck(t)
	r := startRig(t, pg, "faults_held", rigConfig(pg.DSN(), "faults_held", ""))
	held := time.Now()
	release := holdNotifyQueue(t, pg)
	sent, took, full := fillNotifyQueue(t, pg, int64(size(256<<20, 32<<20)))
	if full {
		t.Fatal("the queue is full already: is another session holding it?")
	}
	usage := queueUsage(t, r.pool)
	if usage <= 0 {
		t.Fatalf("pg_notification_queue_usage() = %v after %d bytes, want > 0", usage, sent)
	}
	var reported string
	eventually(t, 2*coherence.DefaultPingInterval+5*time.Second, "INFO reports the queue's fill", func() bool {
		reported = r.p.info(t)["l1_pg_notify_queue_usage"]
		return reported != "" && reported != "0.000000"
	})
	r.load.waitOK(t, 500, 20*time.Second)
	if off := r.watch.firstAfter(held, "online", false); !off.IsZero() {
		t.Errorf("L1 went off %v after the queue was held, short of full", off.Sub(held))
	}
	release()
	trimmed := eventually(t, 30*time.Second, "the queue trimmed once the session ended", func() bool {
		return queueUsage(t, r.pool) < usage/10
	})
	v := r.verify()
	if v.failed > 0 {
		t.Errorf("%d requests failed while the queue was held:\n%s", v.failed, r.load.errorSummary())
	}
	rate := float64(sent) / took.Seconds()
	figure(t, "NOTIFY queue held, not full: %d MB in %.1fs (%.0f MB/s), usage %.4f (pgcache INFO l1_pg_notify_queue_usage:%s); "+
		"L1 stayed on; failed requests %d; trimmed %.2fs after the session ended; at this rate 8GB fills in %.0fs; "+
		"acked writes %d, lost %d; L1 entries %d, stale %d",
		sent>>20, took.Seconds(), rate/(1<<20), usage, reported, v.failed, trimmed.Seconds(),
		float64(8<<30)/rate, v.acked, v.lost, v.entries, v.stale)
}

// queueFullSQL makes the relay's COMMIT fail as a full queue makes it:
// SQLSTATE 54000 with PostgreSQL's message, raised at COMMIT by a deferred
// trigger on the rows the relay deletes from the fence log (no one else
// deletes them). Filling the real queue takes 8GB and minutes: see
// TestNotifyQueueFullReal.
var queueFullSQL = []string{
	`CREATE OR REPLACE FUNCTION public.faults_notify_queue_full() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		RAISE EXCEPTION 'too many notifications in the NOTIFY queue' USING ERRCODE = 'program_limit_exceeded';
	END $$`,
	`DROP TRIGGER IF EXISTS faults_notify_queue_full ON ` + coherence.Schema + `.fence_log`,
	`CREATE CONSTRAINT TRIGGER faults_notify_queue_full AFTER DELETE ON ` + coherence.Schema + `.fence_log
		DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.faults_notify_queue_full()`,
}

const queueFreeSQL = `DROP TRIGGER IF EXISTS faults_notify_queue_full ON ` + coherence.Schema + `.fence_log`

// The NOTIFY queue full, as the relay sees it: every COMMIT that would
// publish fences fails. Writes go on and succeed (writers never NOTIFY);
// L1 goes off once a canary is overdue, so reads go to PostgreSQL and stay
// correct; once the queue has room the relay publishes the backlog in
// order and L1 comes back, with nothing stale.
func TestNotifyQueueFull(t *testing.T) {
	leakCheck(t)
	r := startRig(t, pg, "faults_full", rigConfig(pg.DSN(), "faults_full", ""))
	t.Cleanup(func() { testenv.Exec(t, r.pool, queueFreeSQL) })
	queueFullCase(t, r, func() {
		for _, sql := range queueFullSQL {
			testenv.Exec(t, r.pool, sql)
		}
	}, func() { testenv.Exec(t, r.pool, queueFreeSQL) }, "injected at the relay's COMMIT", time.Minute)
}

// The real thing, on a PostgreSQL of its own: a session pins the queue and
// 8GB of notifications fill it (minutes, and 8GB of disk under $TMPDIR).
// Opt in with PGCACHE_FAULTS_FILL_NOTIFY_QUEUE=1; `make test-faults` does
// not, TestNotifyQueueFull stands in for it there.
func TestNotifyQueueFullReal(t *testing.T) {
	if os.Getenv("PGCACHE_FAULTS_FILL_NOTIFY_QUEUE") == "" {
		t.Skip("fills PostgreSQL's 8GB NOTIFY queue (minutes, 8GB of disk): set PGCACHE_FAULTS_FILL_NOTIFY_QUEUE=1 to run it")
	}
	leakCheck(t)
	srv := testenv.Postgres(t)
	r := startRig(t, srv, "faults_full_real", rigConfig(srv.DSN(), "faults_full_real", ""))
	var release func()
	queueFullCase(t, r, func() {
		release = holdNotifyQueue(t, srv)
		sent, took, full := fillNotifyQueue(t, srv, 16<<30)
		if !full {
			t.Fatalf("%d bytes went in without filling the queue", sent)
		}
		figure(t, "real NOTIFY queue filled: %d MB in %.0fs (%.0f MB/s), usage %.4f",
			sent>>20, took.Seconds(), float64(sent)/took.Seconds()/(1<<20), queueUsage(t, r.pool))
	}, func() {
		release()
		writable := eventually(t, 10*time.Minute, "the queue takes a NOTIFY again", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := r.pool.Exec(ctx, "NOTIFY faults_probe")
			return err == nil
		})
		figure(t, "real NOTIFY queue: takes a NOTIFY again %.1fs after the pinning session ended", writable.Seconds())
	}, "8GB of real notifications", 10*time.Minute)
}

// queueFullCase makes the queue full, checks what pgcache does, frees it
// and checks that pgcache recovers.
func queueFullCase(t *testing.T, r *pgRig, fill, free func(), how string, recovery time.Duration) {
	t.Helper()
	failedBefore := r.load.failed.Load()
	start := time.Now()
	fill()
	full := time.Now()
	bound := coherence.DefaultDeadAfter + coherence.DefaultPingInterval + 5*time.Second
	eventually(t, bound, "L1 off once a canary is overdue", func() bool { return r.p.listener(t, "pg") != "online" })
	off := r.watch.firstAfter(full, "online", false)
	if off.IsZero() {
		off = time.Now()
	}
	// Writes go on, and reads go to PostgreSQL.
	r.load.waitOK(t, 500, 30*time.Second)
	r.churn.waitReads(t, 200, 30*time.Second)
	backlog := fenceLogRows(t, r.pool)
	if backlog == 0 {
		t.Error("the fence log is empty while the queue is full: the fences went somewhere")
	}
	freed := time.Now()
	free()
	r.waitOnline(recovery)
	online := time.Now()
	eventually(t, 30*time.Second, "the backlog published", func() bool { return fenceLogRows(t, r.pool) < backlog })
	if n, age := r.churn.staleBetween(off.Add(tick), freed); n > 0 {
		t.Errorf("%d stale reads (up to %v old) while L1 was off", n, age)
	}
	v := r.verify()
	if n := r.load.failed.Load() - failedBefore; n > 0 {
		t.Errorf("%d requests failed while the queue was full; writers never NOTIFY:\n%s", n, r.load.errorSummary())
	}
	t.Logf("listener: %s", r.watch.history(start))
	figure(t, "NOTIFY queue full (%s): L1 off %.2fs after the queue was full; writes answered +OK meanwhile, all in the table "+
		"(acked %d, lost %d, failed requests %d); fence log backlog %d rows; L1 online %.2fs after the queue had room; "+
		"L1 entries %d, stale %d",
		how, off.Sub(full).Seconds(), v.acked, v.lost, v.failed, backlog, online.Sub(freed).Seconds(), v.entries, v.stale)
}

func fenceLogRows(t testing.TB, pool *pgxpool.Pool) int64 {
	t.Helper()
	var n int64
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+coherence.Schema+".fence_log").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
