package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// TestTableAtomically: a run over rows reads them, updates one, deletes
// one and inserts one in one transaction; TTL answers -1 for a row and -2
// for none (valkey-go's cached read is MULTI, PTTL, GET, EXEC); a run that
// gives a row an expiry, or fails, writes nothing.
func TestTableAtomically(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	source := "public." + uniqueTable(t)
	sql(t, "CREATE TABLE "+source+" (id int PRIMARY KEY, n int)")
	sql(t, "INSERT INTO "+source+" VALUES (1, 10), (2, 20)")
	s := openTableRoute(t, d, source)

	err := s.Atomically(ctx, []string{"1", "2", "3"}, func(tx backends.Backend) error {
		if ttl, err := tx.TTL(ctx, "1"); err != nil || ttl != backends.TTLPersistent {
			return fmt.Errorf("TTL(1) = %v, %v", ttl, err)
		}
		if ttl, err := tx.TTL(ctx, "3"); err != nil || ttl != backends.TTLMissing {
			return fmt.Errorf("TTL(3) = %v, %v", ttl, err)
		}
		v, ok, err := tx.Get(ctx, "1")
		if err != nil || !ok || row(t, v)["n"] != float64(10) {
			return fmt.Errorf("Get(1) = %s, %v, %v", v, ok, err)
		}
		if _, err := tx.Set(ctx, "1", []byte(`{"n": 11}`), backends.SetOptions{}); err != nil {
			return err
		}
		if _, err := tx.Del(ctx, []string{"2"}); err != nil {
			return err
		}
		_, err = tx.Set(ctx, "3", []byte(`{"n": 30}`), backends.SetOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, "SELECT coalesce(sum(n * id), 0) FROM "+source); got != 11+90 {
		t.Fatalf("after the run, sum(n*id) = %d, want 101 (1:11, 3:30)", got)
	}
	if got := queryInt(t, "SELECT count(*) FROM "+source+" WHERE id = 2"); got != 0 {
		t.Fatal("row 2 not deleted")
	}

	boom := errors.New("boom")
	for _, fn := range []func(tx backends.Backend) error{
		func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "1", []byte(`{"n": 12}`), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLRelative, D: time.Minute}})
			return err
		},
		func(tx backends.Backend) error {
			tx.Set(ctx, "1", []byte(`{"n": 13}`), backends.SetOptions{})
			return boom
		},
	} {
		if err := s.Atomically(ctx, []string{"1"}, fn); err == nil {
			t.Fatal("a run that gives a row an expiry or fails succeeded")
		}
		if got := queryInt(t, "SELECT n FROM "+source+" WHERE id = 1"); got != 11 {
			t.Fatalf("a refused run wrote row 1: n = %d", got)
		}
	}
}

// TestTableAtomicallyIsolated: runs that read a row's counter and write it
// back, from many goroutines, lose no increment, while plain SQL updates
// of the same row interleave; two runs inserting one absent row both land
// (the second sees the first's row and updates it).
func TestTableAtomicallyIsolated(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	source := "public." + uniqueTable(t)
	sql(t, "CREATE TABLE "+source+" (id int PRIMARY KEY, n int)")
	s := openTableRoute(t, d, source)
	incr := func(key string) func(tx backends.Backend) error {
		return func(tx backends.Backend) error {
			v, ok, err := tx.Get(ctx, key)
			if err != nil {
				return err
			}
			n := 0.0
			if ok {
				n = row(t, v)["n"].(float64)
			}
			b, _ := json.Marshal(map[string]any{"n": n + 1})
			_, err = tx.Set(ctx, key, b, backends.SetOptions{})
			return err
		}
	}
	const workers, each = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := s.Atomically(ctx, []string{"1"}, incr("1")); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // plain SQL beside the runs: +100 each, row locks order them
		defer wg.Done()
		for range each {
			if _, err := d.pool.Exec(context.Background(),
				"INSERT INTO "+source+" VALUES (1, 100) ON CONFLICT (id) DO UPDATE SET n = "+source+".n + 100"); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := queryInt(t, "SELECT n FROM "+source+" WHERE id = 1"); got != workers*each+100*each {
		t.Fatalf("n = %d, want %d: an increment was lost", got, workers*each+100*each)
	}
}
