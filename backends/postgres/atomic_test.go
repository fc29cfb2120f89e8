package postgres

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
)

// move is a run that moves one unit from key from to key to.
func move(ctx context.Context, from, to string) func(tx backends.Backend) error {
	return func(tx backends.Backend) error {
		if _, err := backends.DoIncrBy(ctx, tx, from, -1); err != nil {
			return err
		}
		_, err := backends.DoIncrBy(ctx, tx, to, 1)
		return err
	}
}

// TestAtomicAllOrNothing: a reader that reads both keys in one statement
// while runs move units between them never sees the sum change: each
// run's writes become visible together.
func TestAtomicAllOrNothing(t *testing.T) {
	d := newDriver(t, Options{MaxConns: 8})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	const total, workers, each = 1000, 4, 40
	if err := s.MSet(ctx, []backends.KV{{Key: "a", Val: []byte(strconv.Itoa(total))}, {Key: "b", Val: []byte("0")}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	fail := func(err error) { failed.CompareAndSwap(nil, &err) }
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				from, to := "a", "b"
				if (w+i)%3 == 2 { // some runs move back: both keys change both ways
					from, to = to, from
				}
				if err := s.Atomically(ctx, []string{"a", "b"}, move(ctx, from, to)); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var reads atomic.Int64
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			vals, err := s.MGet(ctx, []string{"a", "b"}, nil)
			if err != nil {
				fail(err)
				return
			}
			a, _ := strconv.Atoi(string(vals[0]))
			b, _ := strconv.Atoi(string(vals[1]))
			if a+b != total {
				fail(errors.New("a reader saw a=" + string(vals[0]) + " b=" + string(vals[1])))
				return
			}
			reads.Add(1)
		}
	}()
	wg.Wait()
	close(stop)
	<-readerDone
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
	if reads.Load() == 0 {
		t.Fatal("the reader read nothing")
	}
	back := 0
	for w := range workers {
		for i := range each {
			if (w+i)%3 == 2 {
				back++
			}
		}
	}
	moved := workers*each - 2*back
	vals, err := s.MGet(ctx, []string{"a", "b"}, nil)
	if err != nil || string(vals[0]) != strconv.Itoa(total-moved) || string(vals[1]) != strconv.Itoa(moved) {
		t.Fatalf("a, b = %q, %v; want %d, %d", vals, err, total-moved, moved)
	}
	t.Logf("%d reads during %d runs", reads.Load(), workers*each)
}

// TestAtomicErrorWritesNothing: fn's error comes back as it is, and none
// of its writes is stored.
func TestAtomicErrorWritesNothing(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityAsync, "")
	ctx := testCtx(t)
	if _, err := s.Set(ctx, "a", []byte("1"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	boom := backends.Refusal("ERR boom")
	err := s.Atomically(ctx, []string{"a", "c"}, func(tx backends.Backend) error {
		if _, err := tx.Set(ctx, "a", []byte("2"), backends.SetOptions{}); err != nil {
			return err
		}
		if _, err := tx.Set(ctx, "c", []byte("new"), backends.SetOptions{}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("Atomically = %v, want fn's error %v as it is", err, boom)
	}
	if v, ok := mustGetKV(t, s, "a"); !ok || v != "1" {
		t.Errorf("a = %q, %v; want 1", v, ok)
	}
	if v, ok := mustGetKV(t, s, "c"); ok {
		t.Errorf("c = %q; want absent", v)
	}
}

// TestAtomicPlainWriteWaits: a plain SET of a key a run has read waits on
// its row until the run commits, and then overwrites what the run wrote.
func TestAtomicPlainWriteWaits(t *testing.T) {
	d := newDriver(t, Options{MaxConns: 4})
	table := uniqueTable(t)
	s := openKV(t, d, table, DurabilityAsync, "")
	ctx := testCtx(t)
	if _, err := s.Set(ctx, "a", []byte("0"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	enter, releaseOnce := sync.OnceFunc(func() { close(entered) }), sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // a failed test must not leave the run holding a connection
	runDone := make(chan error, 1)
	go func() {
		runDone <- s.Atomically(ctx, []string{"a"}, func(tx backends.Backend) error {
			enter()
			<-release
			_, err := tx.Set(ctx, "a", []byte("run"), backends.SetOptions{})
			return err
		})
	}()
	<-entered
	setDone := make(chan error, 1)
	go func() {
		_, err := s.Set(ctx, "a", []byte("plain"), backends.SetOptions{})
		setDone <- err
	}()
	// The SET is waiting on the row lock: PostgreSQL says so.
	pollFor(t, 20*time.Second, "the plain SET waits on a lock", func() bool {
		return queryInt(t, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, table) > 0
	})
	select {
	case err := <-setDone:
		t.Fatalf("the plain SET returned (%v) while the run held the key", err)
	default:
	}
	releaseOnce()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	if err := <-setDone; err != nil {
		t.Fatal(err)
	}
	if v, _ := mustGetKV(t, s, "a"); v != "plain" {
		t.Fatalf("a = %q, want the plain SET's value, written after the run", v)
	}
}

// TestAtomicRetriesOnInsertedKey: a key absent when the run read it and
// created by a plain SET before the run wrote it makes the run start over
// and see it.
func TestAtomicRetriesOnInsertedKey(t *testing.T) {
	d := newDriver(t, Options{MaxConns: 4})
	s := openKV(t, d, uniqueTable(t), DurabilityAsync, "")
	ctx := testCtx(t)
	var calls int
	err := s.Atomically(ctx, []string{"n"}, func(tx backends.Backend) error {
		if calls++; calls == 1 {
			if _, err := s.Set(ctx, "n", []byte("p"), backends.SetOptions{}); err != nil {
				return err
			}
		}
		v, _, err := tx.Get(ctx, "n")
		if err != nil {
			return err
		}
		_, err = tx.Set(ctx, "n", append(v, "+run"...), backends.SetOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := mustGetKV(t, s, "n"); v != "p+run" || calls != 2 {
		t.Fatalf("n = %q after %d runs of fn; want p+run after 2", v, calls)
	}
}

// TestAtomicTTL: a key the run did not change is not written (its row
// version stays); one written with KEEPTTL keeps its exact deadline; new
// lifetimes are set.
func TestAtomicTTL(t *testing.T) {
	d := newDriver(t, Options{})
	table := uniqueTable(t)
	s := openKV(t, d, table, DurabilityAsync, "")
	ctx := testCtx(t)
	for k, ttl := range map[string]time.Duration{"keep": time.Hour, "kept": time.Hour, "persist": time.Hour, "plain": 0} {
		opts := backends.SetOptions{}
		if ttl > 0 {
			opts.TTL = rel(ttl)
		}
		if _, err := s.Set(ctx, k, []byte("v"), opts); err != nil {
			t.Fatal(err)
		}
	}
	deadline := func(k string) int64 {
		return queryInt(t, `SELECT CASE WHEN expires_at = 'infinity' THEN -1
			ELSE (extract(epoch FROM expires_at) * 1000000)::int8 END FROM `+table+` WHERE key = $1`, k)
	}
	version := func(k string) int64 {
		return queryInt(t, `SELECT xmin::text::int8 FROM `+table+` WHERE key = $1`, k)
	}
	keepAt, keptAt := deadline("keep"), deadline("kept")
	keepV, plainV := version("keep"), version("plain")
	err := s.Atomically(ctx, []string{"keep", "kept", "set", "persist", "plain"}, func(tx backends.Backend) error {
		if _, err := tx.MGet(ctx, []string{"keep", "plain"}, nil); err != nil {
			return err
		}
		if _, err := tx.Set(ctx, "kept", []byte("w"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLKeep}}); err != nil {
			return err
		}
		if _, err := tx.Set(ctx, "set", []byte("w"), backends.SetOptions{TTL: rel(100 * time.Second)}); err != nil {
			return err
		}
		_, err := backends.DoExpire(ctx, tx, "persist", backends.TTL{Mode: backends.TTLNone}, backends.ExpireAlways)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := version("keep"); v != keepV {
		t.Errorf("keep was written (xmin %d, was %d)", v, keepV)
	}
	if v := version("plain"); v != plainV {
		t.Errorf("plain was written (xmin %d, was %d)", v, plainV)
	}
	if got := deadline("keep"); got != keepAt {
		t.Errorf("keep's deadline = %d, want %d", got, keepAt)
	}
	if got := deadline("kept"); got != keptAt {
		t.Errorf("kept's deadline = %d, want exactly %d (KEEPTTL)", got, keptAt)
	}
	if v, _ := mustGetKV(t, s, "kept"); v != "w" {
		t.Errorf("kept = %q, want w", v)
	}
	if ttl, err := s.TTL(ctx, "set"); err != nil || ttl <= 90*time.Second || ttl > 100*time.Second {
		t.Errorf("TTL set = %v, %v; want about 100s", ttl, err)
	}
	for _, k := range []string{"persist", "plain"} {
		if ttl, err := s.TTL(ctx, k); err != nil || ttl != backends.TTLPersistent {
			t.Errorf("TTL %s = %v, %v; want none", k, ttl, err)
		}
	}
}

// TestAtomicUndeclared: a key the run did not declare is refused, and the
// run's error leaves everything as it was; a key the table cannot hold is
// refused before anything runs.
func TestAtomicUndeclared(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityAsync, "")
	ctx := testCtx(t)
	err := s.Atomically(ctx, []string{"a"}, func(tx backends.Backend) error {
		if _, err := tx.Set(ctx, "a", []byte("1"), backends.SetOptions{}); err != nil {
			return err
		}
		_, _, err := tx.Get(ctx, "other")
		return err
	})
	if !errors.Is(err, backends.ErrUndeclaredKey) {
		t.Fatalf("Atomically = %v, want ErrUndeclaredKey", err)
	}
	if v, ok := mustGetKV(t, s, "a"); ok {
		t.Errorf("a = %q, want absent", v)
	}

	ints := openKV(t, d, uniqueTable(t), DurabilityAsync, KeyBigint)
	ran := false
	err = ints.Atomically(ctx, []string{"1", "x"}, func(backends.Backend) error { ran = true; return nil })
	if !errors.Is(err, backends.ErrBadKey) || ran {
		t.Fatalf("Atomically on a bigint table with key x = %v (fn ran: %v), want ErrBadKey", err, ran)
	}
}

// TestAtomicTwoInstances: two pgcache instances (two drivers, two pools)
// running atomic increments of the same keys, absent at first, serialize
// on the keys' advisory locks: no increment is lost.
func TestAtomicTwoInstances(t *testing.T) {
	table := uniqueTable(t)
	var stores []*KV
	for range 2 {
		stores = append(stores, openKV(t, newDriver(t, Options{MaxConns: 4}), table, DurabilityUnlogged, ""))
	}
	ctx := testCtx(t)
	const workers, each = 3, 30 // per instance
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for _, s := range stores {
		for range workers {
			wg.Go(func() {
				for range each {
					err := s.Atomically(ctx, []string{"c", "d"}, func(tx backends.Backend) error {
						if _, err := backends.DoIncrBy(ctx, tx, "c", 1); err != nil {
							return err
						}
						_, err := backends.DoIncrBy(ctx, tx, "d", 1)
						return err
					})
					if err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
	want := strconv.Itoa(2 * workers * each)
	vals, err := stores[1].MGet(ctx, []string{"c", "d"}, nil)
	if err != nil || string(vals[0]) != want || string(vals[1]) != want {
		t.Fatalf("c, d = %q, %v; want %s each", vals, err, want)
	}
}

// TestAtomicAdvisoryLock: a run first waits for its keys' advisory locks,
// which another instance's run on the same table holds, before it reads.
func TestAtomicAdvisoryLock(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityAsync, "")
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	other, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Rollback(ctx); conn.Close(ctx) }) // before the driver closes
	if _, err := other.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", s.keyLocks([]string{"k"})[0]); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Bool
	runDone := make(chan error, 1)
	go func() {
		runDone <- s.Atomically(ctx, []string{"k"}, func(tx backends.Backend) error {
			ran.Store(true)
			_, err := tx.Set(ctx, "k", []byte("run"), backends.SetOptions{})
			return err
		})
	}()
	pollFor(t, 20*time.Second, "the run waits on the advisory lock", func() bool {
		return queryInt(t, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'`) > 0
	})
	if ran.Load() {
		t.Fatal("fn ran while another session held the key's advisory lock")
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	if v, _ := mustGetKV(t, s, "k"); v != "run" {
		t.Fatalf("k = %q, want run", v)
	}
}

func mustGetKV(t *testing.T, s *KV, k string) (string, bool) {
	t.Helper()
	v, ok, err := s.Get(testCtx(t), k)
	if err != nil {
		t.Fatalf("GET %s: %v", k, err)
	}
	return string(v), ok
}
