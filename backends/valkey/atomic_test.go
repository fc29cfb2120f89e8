package valkey

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// TestAtomicAllOrNothing: a reader MGET-ing both keys while runs move
// units between them never sees the sum change: each run's writes become
// visible together, and none is lost to a concurrent run.
func TestAtomicAllOrNothing(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	const total, workers, each = 1000, 4, 50
	if err := s.MSet(ctx, []backends.KV{{Key: "a", Val: []byte(strconv.Itoa(total))}, {Key: "b", Val: []byte("0")}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	fail := func(err error) { failed.CompareAndSwap(nil, &err) }
	back := 0
	for w := range workers {
		for i := range each {
			if (w+i)%3 == 2 {
				back++
			}
		}
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
	stop, readerDone := make(chan struct{}), make(chan struct{})
	var reads atomic.Int64
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
	moved := workers*each - 2*back
	if a, _ := mustGet(t, s, "a"); a != strconv.Itoa(total-moved) {
		t.Errorf("a = %s, want %d", a, total-moved)
	}
	if b, _ := mustGet(t, s, "b"); b != strconv.Itoa(moved) {
		t.Errorf("b = %s, want %d", b, moved)
	}
	t.Logf("%d reads during %d runs", reads.Load(), workers*each)
}

// TestAtomicErrorWritesNothing: fn's error comes back as it is, and none
// of its writes reaches the server.
func TestAtomicErrorWritesNothing(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	mustSet(t, s, "a", "1")
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
	if v, ok := mustGet(t, s, "a"); !ok || v != "1" {
		t.Errorf("a = %q, %v; want 1", v, ok)
	}
	if v, ok := mustGet(t, s, "c"); ok {
		t.Errorf("c = %q; want absent", v)
	}
}

// TestAtomicConcurrentWrite: a plain write of a declared key between the
// run's read and its EXEC aborts the EXEC; the run reads again, and the
// result holds both writes. Likewise a run that only read, or failed, is
// run again when a key changed under it: what fn saw must have been the
// store's state at one instant.
func TestAtomicConcurrentWrite(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	for _, tc := range []struct {
		name    string
		last    func(tx backends.Backend) error // what fn does after the first call's plain SET
		wantErr error
		want    string
	}{
		{"write", func(tx backends.Backend) error {
			_, err := backends.DoIncrBy(ctx, tx, "n", 1)
			return err
		}, nil, "21"},
		{"read only", func(tx backends.Backend) error {
			_, _, err := tx.Get(ctx, "n")
			return err
		}, nil, "20"},
		{"error", func(backends.Backend) error { return backends.ErrNotInteger }, backends.ErrNotInteger, "20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustSet(t, s, "n", "10")
			var calls int
			var seen []string
			err := s.Atomically(ctx, []string{"n"}, func(tx backends.Backend) error {
				v, _, err := tx.Get(ctx, "n")
				if err != nil {
					return err
				}
				seen = append(seen, string(v))
				if calls++; calls == 1 {
					mustSet(t, s, "n", "20") // another client, between the WATCH and the EXEC
				}
				return tc.last(tx)
			})
			if err != tc.wantErr {
				t.Fatalf("Atomically = %v, want %v", err, tc.wantErr)
			}
			if strings.Join(seen, ",") != "10,20" {
				t.Errorf("fn saw %q, want 10 then 20", seen)
			}
			if v, _ := mustGet(t, s, "n"); v != tc.want {
				t.Errorf("n = %q, want %s", v, tc.want)
			}
		})
	}
}

// TestAtomicTTL: a key the run did not change is not written; one written
// with KEEPTTL keeps its exact deadline; new lifetimes are set.
func TestAtomicTTL(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	for k, ttl := range map[string]time.Duration{"keep": time.Hour, "kept": time.Hour, "persist": time.Hour, "expire": 0, "plain": 0} {
		opts := backends.SetOptions{}
		if ttl > 0 {
			opts.TTL = backends.TTL{Mode: backends.TTLRelative, D: ttl}
		}
		if _, err := s.Set(ctx, k, []byte("v"), opts); err != nil {
			t.Fatal(err)
		}
	}
	expireTime := func(k string) string {
		v, err := server.Do(ctx, "PEXPIRETIME", s.key(k))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	keepAt, keptAt := expireTime("keep"), expireTime("kept")
	err := s.Atomically(ctx, []string{"keep", "kept", "set", "persist", "expire", "plain"}, func(tx backends.Backend) error {
		if _, err := tx.MGet(ctx, []string{"keep", "plain"}, nil); err != nil {
			return err
		}
		if _, err := tx.Set(ctx, "kept", []byte("w"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLKeep}}); err != nil {
			return err
		}
		if _, err := tx.Set(ctx, "set", []byte("w"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLRelative, D: 100 * time.Second}}); err != nil {
			return err
		}
		if _, err := backends.DoExpire(ctx, tx, "expire", backends.TTL{Mode: backends.TTLRelative, D: 50 * time.Second}, backends.ExpireAlways); err != nil {
			return err
		}
		_, err := backends.DoExpire(ctx, tx, "persist", backends.TTL{Mode: backends.TTLNone}, backends.ExpireAlways)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := expireTime("keep"); got != keepAt {
		t.Errorf("keep's deadline = %s, want %s", got, keepAt)
	}
	if got := expireTime("kept"); got != keptAt {
		t.Errorf("kept's deadline = %s, want exactly %s (KEEPTTL)", got, keptAt)
	}
	if v, _ := mustGet(t, s, "kept"); v != "w" {
		t.Errorf("kept = %q, want w", v)
	}
	for k, want := range map[string]time.Duration{"set": 100 * time.Second, "expire": 50 * time.Second} {
		if ttl, err := s.TTL(ctx, k); err != nil || ttl <= want-10*time.Second || ttl > want {
			t.Errorf("TTL %s = %v, %v; want about %v", k, ttl, err, want)
		}
	}
	for _, k := range []string{"persist", "plain"} {
		if ttl, err := s.TTL(ctx, k); err != nil || ttl != backends.TTLPersistent {
			t.Errorf("TTL %s = %v, %v; want none", k, ttl, err)
		}
	}
}

// TestAtomicUndeclared: a key the run did not declare is refused, and the
// run's error leaves everything as it was.
func TestAtomicUndeclared(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
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
	if v, ok := mustGet(t, s, "a"); ok {
		t.Errorf("a = %q, want absent", v)
	}
}

// TestAtomicWrongType: a declared key of a type the run cannot hold (a
// stream) fails the run with WRONGTYPE before fn runs, instead of passing
// for absent.
func TestAtomicWrongType(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	if _, err := server.Do(ctx, "XADD", s.key("stream"), "*", "f", "v"); err != nil {
		t.Fatal(err)
	}
	ran := false
	err := s.Atomically(ctx, []string{"stream"}, func(backends.Backend) error { ran = true; return nil })
	if !errors.Is(err, backends.ErrWrongType) || ran {
		t.Fatalf("Atomically on a stream = %v (fn ran: %v), want WRONGTYPE", err, ran)
	}
}

// TestAtomicClientCache: a process reads its own atomic writes at once
// through the client cache.
func TestAtomicClientCache(t *testing.T) {
	s := open(t, newDriver(t, server, cached(nil)))
	ctx := ctxT(t)
	mustSet(t, s, "a", "1")
	for range 2 { // the second read is a client-cache hit
		if v, _ := mustGet(t, s, "a"); v != "1" {
			t.Fatalf("a = %q, want 1", v)
		}
	}
	if err := s.Atomically(ctx, []string{"a"}, func(tx backends.Backend) error {
		_, err := backends.DoIncrBy(ctx, tx, "a", 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if v, _ := mustGet(t, s, "a"); v != "2" {
		t.Fatalf("a after the run = %q, want 2", v)
	}
}

// TestAtomicCluster: in a cluster the keys of one run must share a slot
// (a hash tag makes them); others are refused as Redis Cluster refuses them.
func TestAtomicCluster(t *testing.T) {
	s := open(t, newDriver(t, cluster, nil))
	ctx := ctxT(t)
	ran := false
	err := s.Atomically(ctx, []string{"a", "b"}, func(backends.Backend) error { ran = true; return nil })
	var r backends.Refusal
	if !errors.As(err, &r) || !strings.HasPrefix(string(r), "CROSSSLOT") || ran {
		t.Fatalf("Atomically over two slots = %v (fn ran: %v), want CROSSSLOT", err, ran)
	}
	mustSet(t, s, "{u}a", "5")
	if err := s.Atomically(ctx, []string{"{u}a", "{u}b"}, move(ctx, "{u}a", "{u}b")); err != nil {
		t.Fatal(err)
	}
	vals, err := s.MGet(ctx, []string{"{u}a", "{u}b"}, nil)
	if err != nil || string(vals[0]) != "4" || string(vals[1]) != "1" {
		t.Fatalf("{u}a, {u}b = %q, %v; want 4, 1", vals, err)
	}
}
