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
	if r.n != 1 {
		t.Errorf("LLEN k = %d, want 1", r.n)
	}
}
