package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// TestHotKeyWrites: many writers of one list, while atomic runs take the
// key now and then, lose no element and keep each writer's order: writes
// left with the stripe's holder run as their own would (run with -race).
func TestHotKeyWrites(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	const writers, each = 16, 300
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := s.Do(ctx, []string{"q"}, cmd(t, coll.ParseRPush, "rpush", "q", fmt.Sprintf("%d-%d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	runs := make(chan struct{})
	go func() {
		defer close(runs)
		for range 50 {
			err := s.Atomically(ctx, []string{"q"}, func(tx backends.Backend) error {
				time.Sleep(50 * time.Microsecond) // writers queue meanwhile
				return tx.Do(ctx, []string{"q"}, cmd(t, coll.ParseRPush, "rpush", "q", "run"))
			})
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	<-runs
	op := cmd(t, coll.ParseLRange, "lrange", "q", "0", "-1")
	if err := s.Do(ctx, []string{"q"}, op); err != nil {
		t.Fatal(err)
	}
	var r capture
	op.Reply(&r)
	next := make([]int, writers) // each writer's next element
	runsSeen := 0
	for _, e := range r.bulks {
		if e == "run" {
			runsSeen++
			continue
		}
		var w, i int
		if _, err := fmt.Sscanf(e, "%d-%d", &w, &i); err != nil {
			t.Fatalf("element %q", e)
		}
		if i != next[w] {
			t.Fatalf("writer %d's element %d came where %d was due", w, i, next[w])
		}
		next[w]++
	}
	for w, n := range next {
		if n != each {
			t.Errorf("writer %d: %d elements in the list, want %d", w, n, each)
		}
	}
	if runsSeen != 50 {
		t.Errorf("%d of the atomic runs' elements in the list, want 50", runsSeen)
	}
}

// blockingOp is a write whose Run waits for release, holding its stripe.
type blockingOp struct {
	inside, release chan struct{}
}

func (*blockingOp) Name() string            { return "block" }
func (*blockingOp) Writes() backends.Writes { return backends.WritesAll }
func (op *blockingOp) Run(backends.View) error {
	close(op.inside)
	<-op.release
	return nil
}

// panicOp is a write whose Run panics.
type panicOp struct{}

func (panicOp) Name() string            { return "panic" }
func (panicOp) Writes() backends.Writes { return backends.WritesAll }
func (panicOp) Run(backends.View) error { panic("the op's own panic") }

// TestLeftWritePanics: a write left with the stripe's holder that panics
// panics in its own writer's goroutine, not the holder's, and the writes
// left beside it are run.
func TestLeftWritePanics(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	// The key exists: writes of a key that does not may be done without
	// the stripe (noneThere).
	if err := s.Do(ctx, []string{"k"}, cmd(t, coll.ParseRPush, "rpush", "k", "first")); err != nil {
		t.Fatal(err)
	}
	hold := &blockingOp{inside: make(chan struct{}), release: make(chan struct{})}
	held := make(chan error)
	go func() { held <- s.Do(ctx, []string{"k"}, hold) }()
	<-hold.inside

	panicked := make(chan any)
	go func() {
		defer func() { panicked <- recover() }()
		s.Do(ctx, []string{"k"}, panicOp{})
	}()
	pushed := make(chan error)
	go func() { pushed <- s.Do(ctx, []string{"k"}, cmd(t, coll.ParseRPush, "rpush", "k", "x")) }()
	st := s.locks.of("k")
	for n := 0; n < 2; { // both left with the holder
		n = 0
		for w := st.left.Load(); w != nil; w = w.next {
			n++
		}
		time.Sleep(time.Millisecond)
	}
	close(hold.release)
	if err := <-held; err != nil {
		t.Fatalf("the holder's own write: %v", err)
	}
	if p := <-panicked; p == nil || !strings.Contains(fmt.Sprint(p), "the op's own panic") {
		t.Errorf("the panicking write's writer recovered %v, want its op's panic", p)
	}
	if err := <-pushed; err != nil {
		t.Errorf("the write left beside it: %v", err)
	}
	op := cmd(t, coll.ParseLLen, "llen", "k")
	if err := s.Do(ctx, []string{"k"}, op); err != nil {
		t.Fatal(err)
	}
	var r capture
	op.Reply(&r)
	if r.n != 2 {
		t.Errorf("LLEN k = %d, want 2", r.n)
	}
}

// TestPopOfNoKeyWhileHeld: a pop of a key that does not exist is answered
// while another write holds the key's stripe; a push to it, which makes
// the key, waits for the holder.
func TestPopOfNoKeyWhileHeld(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	other := "other"
	for s.locks.index(other) != s.locks.index("k") {
		other += "x"
	}
	hold := &blockingOp{inside: make(chan struct{}), release: make(chan struct{})}
	held := make(chan error)
	go func() { held <- s.Do(ctx, []string{"k"}, hold) }()
	<-hold.inside

	pop := cmd(t, coll.ParseRPop, "rpop", other)
	popped := make(chan error, 1)
	go func() { popped <- s.Do(ctx, []string{other}, pop) }()
	select {
	case err := <-popped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // the holder holds on until released
		close(hold.release)
		t.Fatal("RPOP of a key that does not exist waited for the stripe's holder")
	}
	var r capture
	pop.Reply(&r)
	if !r.null {
		t.Errorf("RPOP of a key that does not exist answered %q, want nil", r.bulk)
	}
	pushed := make(chan error)
	go func() { pushed <- s.Do(ctx, []string{other}, cmd(t, coll.ParseRPush, "rpush", other, "x")) }()
	select {
	case err := <-pushed:
		t.Fatalf("a push that makes the key did not wait for the stripe's holder (%v)", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(hold.release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
}
