package valkey

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/testenv"
)

// Every operation, as a closure over a backend, for tests that need them
// all to answer the same way.
var ops = []struct {
	name string
	do   func(ctx context.Context, b backends.Backend) error
}{
	{"get", func(ctx context.Context, b backends.Backend) error { _, _, err := b.Get(ctx, "k"); return err }},
	{"mget", func(ctx context.Context, b backends.Backend) error {
		_, err := b.MGet(ctx, []string{"k", "j"}, nil)
		return err
	}},
	{"set", func(ctx context.Context, b backends.Backend) error {
		_, err := b.Set(ctx, "k", []byte("v"), backends.SetOptions{})
		return err
	}},
	{"mset", func(ctx context.Context, b backends.Backend) error {
		return b.MSet(ctx, []backends.KV{{Key: "k", Val: []byte("v")}})
	}},
	{"del", func(ctx context.Context, b backends.Backend) error { _, err := b.Del(ctx, []string{"k"}); return err }},
	{"exists", func(ctx context.Context, b backends.Backend) error {
		_, err := b.Exists(ctx, []string{"k"})
		return err
	}},
	{"getdel", func(ctx context.Context, b backends.Backend) error {
		_, _, err := backends.DoGetDel(ctx, b, "k")
		return err
	}},
	{"getex", func(ctx context.Context, b backends.Backend) error {
		_, _, err := backends.DoGetEx(ctx, b, "k", backends.TTL{Mode: backends.TTLNone})
		return err
	}},
	{"incrby", func(ctx context.Context, b backends.Backend) error {
		_, err := backends.DoIncrBy(ctx, b, "n", 1)
		return err
	}},
	{"expire", func(ctx context.Context, b backends.Backend) error {
		_, err := backends.DoExpire(ctx, b, "k", backends.TTL{Mode: backends.TTLRelative, D: time.Minute}, backends.ExpireAlways)
		return err
	}},
	{"ttl", func(ctx context.Context, b backends.Backend) error { _, err := b.TTL(ctx, "k"); return err }},
}

// A server that is down when pgcache starts: every call fails with
// ErrUnavailable, and once the server is up the backend serves without
// being rebuilt.
func TestUnavailableAtStart(t *testing.T) {
	for _, options := range []map[string]any{nil, cached(nil)} {
		name := "plain"
		if options != nil {
			name = "client_cache"
		}
		t.Run(name, func(t *testing.T) {
			srv := testenv.RedisFor(t)
			srv.Kill()
			d := newDriver(t, srv, options)
			s := open(t, d)
			ctx := ctxT(t)
			for _, op := range ops {
				if err := op.do(ctx, s); !errors.Is(err, backends.ErrUnavailable) {
					t.Errorf("%s with the server down = %v, want ErrUnavailable", op.name, err)
				}
			}
			if err := d.Check(ctx); !errors.Is(err, backends.ErrUnavailable) {
				t.Errorf("Check with the server down = %v, want ErrUnavailable", err)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			if !poll(500, func() bool { return d.Check(ctx) == nil }) {
				t.Fatal("not ready 5s after the server started")
			}
			for _, op := range ops {
				if err := op.do(ctx, s); err != nil {
					t.Errorf("%s after the server started: %v", op.name, err)
				}
			}
		})
	}
}

// The server is killed under load and restarted on the same port, empty.
// While it is down calls fail with ErrUnavailable and nothing piles up;
// after, the backend recovers by itself, and the client cache never serves
// what it held before the crash.
func TestServerKilledUnderLoad(t *testing.T) {
	srv := testenv.RedisFor(t)
	d := newDriver(t, srv, cached(nil))
	s := open(t, d)
	mustSet(t, s, "k", "old")
	for range 2 {
		mustGet(t, s, "k") // cached
	}

	var (
		restarted atomic.Bool  // the server has come back empty
		ok        atomic.Int64 // calls that succeeded
		down      atomic.Int64 // calls that failed with ErrUnavailable
		stale     atomic.Int64 // reads of k that returned "old" after the restart
		other     atomic.Value // an error that is not ErrUnavailable
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if w == 0 && i%2 == 1 {
					_, err = s.Set(ctx, "w"+strconv.Itoa(i%16), []byte("x"), backends.SetOptions{})
				} else {
					var v []byte
					if v, _, err = s.Get(ctx, "k"); err == nil && restarted.Load() && string(v) == "old" {
						stale.Add(1)
					}
				}
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, backends.ErrUnavailable):
					down.Add(1)
					time.Sleep(time.Millisecond) // failing fast: do not spin
				default:
					other.Store(err)
				}
			}
		}()
	}
	stopLoad := func() { close(stop); wg.Wait() }
	defer func() {
		if stop != nil {
			stopLoad()
		}
	}()
	if !poll(500, func() bool { return ok.Load() > 100 }) {
		t.Fatal("no load")
	}

	baseline := runtime.NumGoroutine()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if !poll(500, func() bool { return down.Load() > 100 }) {
		t.Fatal("calls did not fail while the server was down")
	}
	// Calls keep failing fast and leave nothing behind: sample a while.
	peak := 0
	for range 50 {
		peak = max(peak, runtime.NumGoroutine())
		time.Sleep(10 * time.Millisecond)
	}
	if peak > baseline+10 {
		t.Errorf("goroutines grew from %d to %d while the server was down", baseline, peak)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted.Store(true)
	if _, err := srv.Do(context.Background(), "SET", s.key("k"), "new"); err != nil {
		t.Fatal(err)
	}
	if !poll(500, func() bool { v, _, err := s.Get(ctxT(t), "k"); return err == nil && string(v) == "new" }) {
		t.Fatal("the backend did not serve the new value within 5s of the restart")
	}
	before := ok.Load()
	if !poll(500, func() bool { return ok.Load() > before+100 }) {
		t.Fatal("the load did not recover")
	}
	stopLoad()
	stop = nil

	if n := stale.Load(); n > 0 {
		t.Errorf("%d reads after the restart returned the value cached before the crash", n)
	}
	if err := other.Load(); err != nil {
		t.Errorf("a call failed with %v, want only ErrUnavailable", err)
	}
	if n := d.stats.errors.Load(); n == 0 {
		t.Error("errors_total did not count the failures")
	}
}

// Close leaves nothing running, whether connected or still connecting.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	down := testenv.RedisFor(t)
	down.Kill()
	baseline := runtime.NumGoroutine()
	for _, srv := range []*testenv.Redis{server, cluster, down} {
		for _, options := range []map[string]any{nil, cached(nil)} {
			f, _ := backends.Lookup(TypeName)
			opts := map[string]any{"addrs": []string{srv.Addr()}}
			for k, v := range options {
				opts[k] = v
			}
			d, err := f(context.Background(), "vk", opts, backends.Env{})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := d.Open(context.Background(), backends.RouteSpec{Name: "r"})
			b.Get(context.Background(), "k")
			b.Close()
			d.Close()
		}
	}
	if !poll(300, func() bool { return runtime.NumGoroutine() <= baseline }) {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
	}
}
