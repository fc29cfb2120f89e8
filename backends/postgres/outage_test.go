package postgres

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/decode"
	"github.com/pgcache/pgcache/internal/testenv"
)

// The tests in this file stop and start PostgreSQL, so each has a server
// of its own.

// outageOptions make a dead server fail fast.
func outageOptions(dsn string) Options {
	return Options{
		DSN:            dsn,
		MaxConns:       4,
		ConnectTimeout: decode.Duration(time.Second),
		CommandTimeout: decode.Duration(3 * time.Second),
	}
}

// TestUnreachableAtStart: a driver and its routes are built while the
// database is down; requests fail with ErrUnavailable; once the database
// is up the routes set their tables up and serve, without being rebuilt.
func TestUnreachableAtStart(t *testing.T) {
	srv := testenv.Postgres(t)
	if err := srv.Shutdown(testenv.ShutdownFast); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, outageOptions(srv.DSN()))
	ctx := testCtx(t)
	kvb, err := d.Open(ctx, backends.RouteSpec{Name: "kv", Table: "kv", Durability: DurabilityAsync})
	if err != nil {
		t.Fatalf("Open while the database is down: %v", err)
	}
	defer kvb.Close()
	tb, err := d.Open(ctx, backends.RouteSpec{Name: "rows", SourceTable: "public.rows"})
	if err != nil {
		t.Fatalf("Open of a table route while the database is down: %v", err)
	}
	defer tb.Close()

	checks := map[string]error{"Check": d.Check(ctx)}
	_, _, checks["Get"] = kvb.Get(ctx, "k")
	_, checks["Set"] = kvb.Set(ctx, "k", []byte("v"), backends.SetOptions{})
	_, _, checks["table Get"] = tb.Get(ctx, "1")
	for op, err := range checks {
		if !errors.Is(err, backends.ErrUnavailable) {
			t.Errorf("%s while down = %v, want ErrUnavailable", op, err)
		}
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	pollFor(t, 20*time.Second, "the kv route recovering", func() bool {
		_, err := kvb.Set(ctx, "k", []byte("v"), backends.SetOptions{})
		return err == nil
	})
	if v, ok, err := kvb.Get(ctx, "k"); err != nil || !ok || string(v) != "v" {
		t.Fatalf("Get after recovery = %q, %v, %v", v, ok, err)
	}
	// The table route now reaches the catalog, and says the table is missing.
	pollFor(t, 5*time.Second, "the table route reaching the catalog", func() bool {
		_, _, err := tb.Get(ctx, "1")
		return errors.Is(err, ErrNoTable)
	})
	srvSQL(t, srv, `CREATE TABLE public.rows (id int PRIMARY KEY, note text); INSERT INTO public.rows VALUES (1, 'one')`)
	pollFor(t, 5*time.Second, "the table route serving", func() bool {
		v, ok, err := tb.Get(ctx, "1")
		return err == nil && ok && string(v) == `{"id":1,"note":"one"}`
	})
	if err := d.Check(ctx); err != nil {
		t.Fatalf("Check after recovery: %v", err)
	}
}

// TestRestartUnderLoad: writers keep writing through a fast restart. While
// the server is away they get ErrUnavailable and nothing else; afterwards
// they succeed on the same driver; and every write that was acknowledged
// is there (a clean shutdown loses no committed write).
func TestRestartUnderLoad(t *testing.T) {
	srv := testenv.Postgres(t)
	d := newDriver(t, outageOptions(srv.DSN()))
	s := openKV(t, d, "kv", DurabilityStandard, "")
	ctx := testCtx(t)

	var ok, unavailable atomic.Int64
	var acked sync.Map // key -> value
	var unexpected atomic.Pointer[error]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k, v := fmt.Sprintf("w%d-%d", w, i), strconv.Itoa(i)
				_, err := s.Set(ctx, k, []byte(v), backends.SetOptions{})
				switch {
				case err == nil:
					acked.Store(k, v)
					ok.Add(1)
				case errors.Is(err, backends.ErrUnavailable):
					unavailable.Add(1)
					time.Sleep(10 * time.Millisecond)
				default:
					unexpected.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	pollFor(t, 10*time.Second, "writes before the restart", func() bool { return ok.Load() >= 50 })
	if err := srv.Shutdown(testenv.ShutdownFast); err != nil {
		t.Fatal(err)
	}
	pollFor(t, 10*time.Second, "writers seeing the outage", func() bool { return unavailable.Load() > 0 })
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	after := ok.Load()
	pollFor(t, 20*time.Second, "writes after the restart", func() bool { return ok.Load() >= after+50 })
	close(stop)
	wg.Wait()
	stop = make(chan struct{}) // for the deferred close

	if err := unexpected.Load(); err != nil {
		t.Fatalf("an error other than ErrUnavailable: %v", *err)
	}
	var keys []string
	var want []string
	acked.Range(func(k, v any) bool {
		keys, want = append(keys, k.(string)), append(want, v.(string))
		return true
	})
	got, err := s.MGet(ctx, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if string(got[i]) != want[i] {
			t.Fatalf("acknowledged write %s = %q lost (got %q)", keys[i], want[i], got[i])
		}
	}
	t.Logf("%d writes acknowledged, %d refused as unavailable", len(keys), unavailable.Load())
}

// TestCrashUnlogged: after a crash (immediate stop) an UNLOGGED table
// comes back empty, a logged one keeps its committed rows, and the routes
// serve again on the same driver.
func TestCrashUnlogged(t *testing.T) {
	srv := testenv.Postgres(t)
	d := newDriver(t, outageOptions(srv.DSN()))
	unlogged := openKV(t, d, "cache", DurabilityUnlogged, "")
	logged := openKV(t, d, "sessions", DurabilityStandard, "")
	ctx := testCtx(t)
	var pairs []backends.KV
	var keys []string
	for i := range 100 {
		k := "k" + strconv.Itoa(i)
		keys = append(keys, k)
		pairs = append(pairs, backends.KV{Key: k, Val: []byte("v")})
	}
	for _, s := range []*KV{unlogged, logged} {
		if err := s.MSet(ctx, pairs); err != nil {
			t.Fatal(err)
		}
	}

	if err := srv.Shutdown(testenv.ShutdownImmediate); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var n int64
	pollFor(t, 20*time.Second, "the unlogged route serving after the crash", func() bool {
		var err error
		n, err = unlogged.Exists(ctx, keys)
		return err == nil
	})
	if n != 0 {
		t.Fatalf("%d keys in the UNLOGGED table after a crash, want 0", n)
	}
	if n, err := logged.Exists(ctx, keys); err != nil || n != 100 {
		t.Fatalf("%d keys in the logged table after a crash (%v), want 100", n, err)
	}
	if _, err := unlogged.Set(ctx, "after", []byte("crash"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := unlogged.Get(ctx, "after"); err != nil || !ok || string(v) != "crash" {
		t.Fatalf("Get = %q, %v, %v", v, ok, err)
	}
}

// srvSQL runs statements on a server of the test's own.
func srvSQL(t *testing.T, srv *testenv.PG, stmts string) {
	t.Helper()
	d := newDriver(t, Options{DSN: srv.DSN()})
	if _, err := d.pool.Exec(testCtx(t), stmts); err != nil {
		t.Fatal(err)
	}
}
