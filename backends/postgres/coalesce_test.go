package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// gated is a store whose single reads wait for a gate, so a test can hold
// every slot and queue reads behind them.
type gated struct {
	gate  chan struct{}
	mu    sync.Mutex
	batch [][]string // the keys of each shared query
	fail  error
}

func (g *gated) one(ctx context.Context, key string) (string, error) {
	<-g.gate
	return "one:" + key, nil
}

func (g *gated) many(ctx context.Context, keys []string) ([]string, error) {
	g.mu.Lock()
	g.batch = append(g.batch, slices.Clone(keys))
	g.mu.Unlock()
	if g.fail != nil {
		return nil, g.fail
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = "many:" + k
	}
	return out, nil
}

// queued waits until n reads are queued.
func queued(t *testing.T, c *coalescer[string, string], n int) {
	t.Helper()
	for range 1000 {
		c.mu.Lock()
		got := len(c.queue)
		c.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d reads never queued", n)
}

// While the slots are busy, reads queue and are answered by one shared
// query, each with its own answer; with a free slot a read runs alone.
func TestCoalescerSharesQueuedReads(t *testing.T) {
	g := &gated{gate: make(chan struct{})}
	c := &coalescer[string, string]{slots: 1, one: g.one, many: g.many, own: strings.Clone}
	ctx := context.Background()

	first := make(chan string)
	go func() { v, _ := c.get(ctx, "first"); first <- v }()
	holding(t, c)
	const n = 10
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, err := c.get(ctx, fmt.Sprint("k", i))
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	queued(t, c, n)
	close(g.gate)
	if v := <-first; v != "one:first" {
		t.Fatalf("the first read = %q", v)
	}
	wg.Wait()
	for i, v := range got {
		if want := fmt.Sprint("many:k", i); v != want {
			t.Errorf("read %d = %q, want %q", i, v, want)
		}
	}
	if len(g.batch) != 1 || len(g.batch[0]) != n {
		t.Errorf("shared queries = %q, want one of %d keys", g.batch, n)
	}
	if s := c.shared.Load(); s != n {
		t.Errorf("shared reads = %d, want %d", s, n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != 0 || len(c.queue) != 0 {
		t.Errorf("after: %d running, %d queued, want none", c.running, len(c.queue))
	}
}

// A failed shared query fails each read in it; a queued read whose
// context ends returns at once, and the others are still answered.
func TestCoalescerErrorsAndCancel(t *testing.T) {
	g := &gated{gate: make(chan struct{}), fail: errors.New("connection refused")}
	c := &coalescer[string, string]{slots: 1, one: g.one, many: g.many, own: strings.Clone}
	ctx := context.Background()
	go c.get(ctx, "holder")
	holding(t, c)
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error)
	go func() { _, err := c.get(cctx, "gone"); gone <- err }()
	errs := make(chan error, 2)
	for _, k := range []string{"a", "b"} {
		go func() { _, err := c.get(ctx, k); errs <- err }()
	}
	queued(t, c, 3)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled queued read = %v", err)
	}
	close(g.gate)
	for range 2 {
		if err := <-errs; err != g.fail {
			t.Errorf("a read of the failed query = %v, want %v", err, g.fail)
		}
	}
}

// holding waits until a read holds the only slot.
func holding(t *testing.T, c *coalescer[string, string]) {
	t.Helper()
	for range 1000 {
		c.mu.Lock()
		r := c.running
		c.mu.Unlock()
		if r == 1 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no read took the slot")
}
