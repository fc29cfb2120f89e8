package memory

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
)

func openStore(t *testing.T, opts ...DriverOption) *Store {
	t.Helper()
	d := NewDriver("mem", 64<<20, opts...)
	t.Cleanup(func() { d.Close() })
	b, err := d.Open(context.Background(), backends.RouteSpec{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	return b.(*Store)
}

// TestAtomicIsolation moves units between two keys in atomic runs while
// readers MGET both: no reader may see the sum change.
func TestAtomicIsolation(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	s.MSet(ctx, []backends.KV{{Key: "a", Val: []byte("1000")}, {Key: "b", Val: []byte("0")}})
	const moves = 2000
	var stop atomic.Bool
	var bad atomic.Int64
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				vals, err := s.MGet(ctx, []string{"a", "b"}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				x, _ := strconv.Atoi(string(vals[0]))
				y, _ := strconv.Atoi(string(vals[1]))
				if x+y != 1000 {
					bad.Add(1)
				}
				reads.Add(1)
			}
		})
	}
	for deadline := time.Now().Add(5 * time.Second); reads.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the readers run beside the moves, not after them
	}
	for i := range moves {
		from, to := "a", "b"
		if i%2 == 1 {
			from, to = to, from
		}
		err := s.Atomically(ctx, []string{"a", "b"}, func(tx backends.Backend) error {
			if _, err := backends.DoIncrBy(ctx, tx, from, -1); err != nil {
				return err
			}
			runtimeYield()
			_, err := backends.DoIncrBy(ctx, tx, to, 1)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d of %d MGETs saw half a transaction", bad.Load(), reads.Load())
	}
	if reads.Load() == 0 {
		t.Fatal("no reads ran beside the transactions")
	}
}

func runtimeYield() { time.Sleep(0) }

// TestAtomicExcludesWriters: a plain write of a held key waits for the run.
func TestAtomicExcludesWriters(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.Atomically(ctx, []string{"k"}, func(tx backends.Backend) error {
			_, err := tx.Set(ctx, "k", []byte("run"), backends.SetOptions{})
			close(inside)
			<-release
			return err
		})
	}()
	<-inside
	wrote := make(chan struct{})
	go func() {
		s.Set(ctx, "k", []byte("plain"), backends.SetOptions{})
		close(wrote)
	}()
	select {
	case <-wrote:
		t.Fatal("a plain SET of a held key ran inside the atomic run")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-wrote
	if v, _, _ := s.Get(ctx, "k"); string(v) != "plain" {
		t.Fatalf("k = %q, want the plain SET's value, which came after", v)
	}
}

// TestAtomicBusy: past the driver's busy threshold, requests for a held
// key fail with ErrBusy; other keys are served.
func TestAtomicBusy(t *testing.T) {
	busy := backends.NewBusyThreshold(time.Hour)
	s := openStore(t, WithBusyThreshold(busy))
	busy.Store(20 * time.Millisecond) // a change reaches the open stores
	ctx := context.Background()
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.Atomically(ctx, []string{"held"}, func(backends.Backend) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	if _, _, err := s.Get(ctx, "held"); !errors.Is(err, backends.ErrBusy) {
		t.Errorf("GET of a key held past the threshold: %v, want ErrBusy", err)
	}
	if _, err := s.Set(ctx, "held", []byte("x"), backends.SetOptions{}); !errors.Is(err, backends.ErrBusy) {
		t.Errorf("SET of a key held past the threshold: %v, want ErrBusy", err)
	}
	other := "other"
	for s.locks.index(other) == s.locks.index("held") {
		other += "x"
	}
	if _, err := s.Set(ctx, other, []byte("x"), backends.SetOptions{}); err != nil {
		t.Errorf("SET of another key: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ctx, "held", []byte("x"), backends.SetOptions{}); err != nil {
		t.Errorf("SET after the run: %v", err)
	}
}

// TestReadAcrossAtomicRun: an MGET whose reads began before an atomic run
// and ended after it reads again, and returns the run's writes together;
// both while no other run is under way (the route-wide check) and while
// one holds another key (the stripes' sequences).
func TestReadAcrossAtomicRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other bool // another run holds a key meanwhile
	}{{"no run under way", false}, {"another run under way", true}} {
		t.Run(tc.name, func(t *testing.T) { readAcrossAtomicRun(t, tc.other) })
	}
}

func readAcrossAtomicRun(t *testing.T, other bool) {
	s := openStore(t)
	ctx := context.Background()
	s.MSet(ctx, []backends.KV{{Key: "a", Val: []byte("old")}, {Key: "b", Val: []byte("old")}})
	if other {
		held := "held"
		for s.locks.index(held) == s.locks.index("a") || s.locks.index(held) == s.locks.index("b") {
			held += "x"
		}
		inside, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
		go func() {
			done <- s.Atomically(ctx, []string{held}, func(backends.Backend) error {
				close(inside)
				<-release
				return nil
			})
		}()
		<-inside
		defer func() {
			close(release)
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
	}
	first := true
	readsThen(s, func() {
		if !first {
			return
		}
		first = false
		// Between the reader's reads and its check: a run writes both.
		err := s.Atomically(ctx, []string{"a", "b"}, func(tx backends.Backend) error {
			return tx.MSet(ctx, []backends.KV{{Key: "a", Val: []byte("new")}, {Key: "b", Val: []byte("new")}})
		})
		if err != nil {
			t.Error(err)
		}
	})
	vals, err := s.MGet(ctx, []string{"a", "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(vals[0]) != "new" || string(vals[1]) != "new" {
		t.Fatalf("MGET across an atomic run = %q, %q; want both new", vals[0], vals[1])
	}
}

// readsThen has s run fn after each MGet's reads, before MGet checks
// that no atomic run wrote the keys meanwhile. s must not be in use yet.
func readsThen(s *Store, fn func()) {
	s.reads = func(s *Store, keys []string, dst [][]byte) [][]byte {
		dst = s.mget(keys, dst)
		fn()
		return dst
	}
}

// TestMSetNeverLandsInsideARun: batches of plain SETs (which take no
// stripe while no run is under way) race runs that read their key twice:
// no run may see the key change between its two reads.
func TestMSetNeverLandsInsideARun(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop.Store(true)
	var batches atomic.Int64
	for w := range 2 {
		wg.Go(func() {
			// x last in a long batch: a run that began during the batch
			// would see x written inside it.
			pairs := make([]backends.KV, 64)
			for i := range pairs {
				pairs[i].Key = "y" + strconv.Itoa(i)
			}
			pairs[len(pairs)-1].Key = "x"
			for i := 0; !stop.Load(); i++ {
				v := []byte(strconv.Itoa(w) + ":" + strconv.Itoa(i))
				for j := range pairs {
					pairs[j].Val = v
				}
				if err := s.MSet(ctx, pairs); err != nil {
					t.Error(err)
					return
				}
				batches.Add(1)
			}
		})
	}
	for batches.Load() < 10 {
		runtime.Gosched()
	}
	for run := range 2000 {
		err := s.Atomically(ctx, []string{"x"}, func(tx backends.Backend) error {
			before, _, _ := tx.Get(ctx, "x")
			time.Sleep(20 * time.Microsecond)
			after, _, _ := tx.Get(ctx, "x")
			if string(before) != string(after) {
				return errors.New("x went from " + string(before) + " to " + string(after) + " inside the run")
			}
			return nil
		})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
}
