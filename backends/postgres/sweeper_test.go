package postgres

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/internal/decode"
)

// fillExpired inserts n rows that expired an hour ago and live ones.
func fillExpired(t *testing.T, s *KV, expired, live int) {
	t.Helper()
	sql(t, `INSERT INTO `+s.table.ident()+` (key, value, expires_at)
		SELECT 'x' || i, 'v', now() - interval '1 hour' FROM generate_series(1, $1) AS i`, expired)
	sql(t, `INSERT INTO `+s.table.ident()+` (key, value, expires_at)
		SELECT 'live' || i, 'v', CASE WHEN i % 2 = 0 THEN 'infinity' ELSE now() + interval '1 hour' END
		FROM generate_series(1, $1) AS i`, live)
}

func TestSweep(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	const expired, live = 2*sweepBatch + 123, 10 // three batches, the last one short
	fillExpired(t, s, expired, live)

	n, swept, err := s.Sweep(ctx)
	if err != nil || !swept || n != expired {
		t.Fatalf("Sweep = %d, %v, %v; want %d, true", n, swept, err, expired)
	}
	if got := queryInt(t, "SELECT count(*) FROM "+s.table.ident()); got != live {
		t.Fatalf("%d rows left, want the %d live ones", got, live)
	}
	if n, swept, err := s.Sweep(ctx); err != nil || !swept || n != 0 {
		t.Fatalf("second Sweep = %d, %v, %v", n, swept, err)
	}
	if got := s.sweepStats.runs.Load(); got != 2 {
		t.Errorf("sweep runs = %d, want 2", got)
	}
}

// TestSweepOneAtATime: while another session (here the test's, standing in
// for another pgcache instance) holds the table's sweep lock, a sweep
// skips and deletes nothing; once it is released, the sweep runs. Two
// drivers on one table sweep it in turn, never together.
func TestSweepOneAtATime(t *testing.T) {
	d1 := newDriver(t, Options{})
	d2 := newDriver(t, Options{})
	table := uniqueTable(t)
	s1 := openKV(t, d1, table, DurabilityUnlogged, "")
	s2 := openKV(t, d2, table, DurabilityUnlogged, "")
	ctx := testCtx(t)
	fillExpired(t, s1, 100, 0)

	other, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var locked bool
	if err := other.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", s1.table.lockKey("sweep")).Scan(&locked); err != nil || !locked {
		t.Fatalf("taking the sweep lock: %v, %v", locked, err)
	}
	for _, s := range []*KV{s1, s2} {
		if n, swept, err := s.Sweep(ctx); err != nil || swept || n != 0 {
			t.Fatalf("Sweep while the lock is held = %d, %v, %v; want a skip", n, swept, err)
		}
	}
	if got := queryInt(t, "SELECT count(*) FROM "+table); got != 100 {
		t.Fatalf("%d rows after skipped sweeps, want 100", got)
	}
	if _, err := other.Exec(ctx, "SELECT pg_advisory_unlock($1)", s1.table.lockKey("sweep")); err != nil {
		t.Fatal(err)
	}
	if n, swept, err := s2.Sweep(ctx); err != nil || !swept || n != 100 {
		t.Fatalf("Sweep after release = %d, %v, %v", n, swept, err)
	}
	// The sweep released its lock: the other session can take it now.
	if err := other.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", s1.table.lockKey("sweep")).Scan(&locked); err != nil || !locked {
		t.Fatalf("the sweep kept its lock: %v, %v", locked, err)
	}
	if got := s1.sweepStats.skipped.Load(); got != 1 {
		t.Errorf("skipped sweeps = %d, want 1", got)
	}
}

// TestSweeperLoop: the background sweeper deletes expired rows by itself
// and stops with the route.
func TestSweeperLoop(t *testing.T) {
	d := newDriver(t, Options{SweepInterval: decode.Duration(20 * time.Millisecond)})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	if _, err := s.Set(ctx, "short", []byte("v"), backends.SetOptions{TTL: rel(time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ctx, "long", []byte("v"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the sweeper deleting the expired row", func() bool {
		return queryInt(t, "SELECT count(*) FROM "+s.table.ident()) == 1
	})
	s.Close()
	if s.sweeper != nil {
		select {
		case <-s.sweeper.done:
		default:
			t.Fatal("sweeper still running after Close")
		}
	}
}

// TestSweeperReportsExpired: while someone listens, the sweeper deletes
// rows close to their deadlines, though its interval is an hour, and
// reports each key once: a string and a hash given lifetimes, not a key
// whose lifetime a SET took away before its deadline, nor one deleted.
func TestSweeperReportsExpired(t *testing.T) {
	d := newDriver(t, Options{SweepInterval: decode.Duration(time.Hour)})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	got := make(backendtest.Expired, 100)
	defer s.NotifyExpired(got.Fn)()

	set := func(key string, ttl time.Duration) {
		t.Helper()
		opts := backends.SetOptions{}
		if ttl > 0 {
			opts.TTL = rel(ttl)
		}
		if _, err := s.Set(ctx, key, []byte("v"), opts); err != nil {
			t.Fatal(err)
		}
	}
	set("str", 300*time.Millisecond)
	if _, err := do(t, s, coll.ParseHSet, "hset", "hash", "f", "v"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Expire(ctx, "hash", rel(300*time.Millisecond), backends.ExpireAlways); err != nil || !ok {
		t.Fatalf("EXPIRE hash = %v, %v", ok, err)
	}
	set("kept", 300*time.Millisecond)
	set("kept", 0)
	set("gone", 300*time.Millisecond)
	if _, err := s.Del(ctx, []string{"gone"}); err != nil {
		t.Fatal(err)
	}
	got.Once(t, "expired keys", "str", "hash")
	set("marker", 100*time.Millisecond)
	got.Once(t, "a key expiring after them", "marker")
	if n := queryInt(t, "SELECT count(*) FROM "+s.table.ident()); n != 1 {
		t.Errorf("%d rows left, want kept's", n)
	}
	if n := items(t, s, "hash"); n != 0 {
		t.Errorf("the expired hash left %d items", n)
	}
}

// TestNotifyExpiredNeedsASweeper: a route whose sweep_interval is
// negative (pg_cron sweeps) reports nothing, though its Sweep deletes; one
// with a sweeper reports, from the subscription on, rows that expired
// before it too.
func TestNotifyExpiredNeedsASweeper(t *testing.T) {
	d := newDriver(t, Options{}) // sweep_interval -1
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	got := make(backendtest.Expired, 10)
	defer s.NotifyExpired(got.Fn)()
	fillExpired(t, s, 2, 0)
	if n, _, err := s.Sweep(ctx); err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	if len(got) != 0 {
		t.Fatalf("a route without a sweeper reported %d keys", len(got))
	}

	d2 := newDriver(t, Options{SweepInterval: decode.Duration(time.Hour)})
	s2 := openKV(t, d2, uniqueTable(t), DurabilityUnlogged, "")
	fillExpired(t, s2, 2, 1)
	defer s2.NotifyExpired(got.Fn)()
	got.Once(t, "rows expired before the subscription", "x1", "x2")
}
