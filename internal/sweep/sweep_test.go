package sweep

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/internal/testenv"
)

type item struct{ exp int64 }

func start(t *testing.T) (*otter.Cache[string, item], *Sweeper[item]) {
	clock := NewClock()
	c := otter.Must(&otter.Options[string, item]{MaximumSize: 100_000, Clock: clock})
	s := Start(c, func(it item) int64 { return it.exp })
	t.Cleanup(func() { s.Stop(); c.StopAllGoroutines(); clock.Stop() })
	return c, s
}

// set writes an item as the caches of pgcache do: the write, then Wrote.
func set(c *otter.Cache[string, item], s *Sweeper[item], k string, exp time.Time) {
	var e int64
	if !exp.IsZero() {
		e = exp.UnixNano()
	}
	c.Set(k, item{exp: e})
	if e != 0 {
		s.Wrote(e)
	}
}

// waitFor polls cond for up to 10 s (a generous bound on a loaded machine;
// the sweeper is due within a few MinGap).
func waitFor(cond func() bool) bool {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// Items are freed after their deadline and never before; items without
// one, or with one far off, stay.
func TestFreesExpiredOnly(t *testing.T) {
	c, s := start(t)
	begin := time.Now()
	const n = 50
	deadline := func(i int) time.Time { return begin.Add(time.Duration(i+1) * 30 * time.Millisecond) }
	for i := range n {
		set(c, s, "e"+strconv.Itoa(i), deadline(i))
	}
	set(c, s, "forever", time.Time{})
	set(c, s, "later", begin.Add(time.Hour))
	for time.Now().Before(deadline(n - 1)) {
		for i := range n {
			before := time.Now()
			if _, ok := c.GetIfPresent("e" + strconv.Itoa(i)); !ok && before.Before(deadline(i)) {
				t.Fatalf("item %d was freed before its deadline", i)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !waitFor(func() bool { return c.EstimatedSize() == 2 }) {
		t.Fatalf("%d items left after every deadline passed, want 2", c.EstimatedSize())
	}
	for _, k := range []string{"forever", "later"} {
		if _, ok := c.GetIfPresent(k); !ok {
			t.Errorf("%s was freed", k)
		}
	}
	if got := s.Freed(); got != n {
		t.Errorf("Freed() = %d, want %d", got, n)
	}
}

// A cache where nothing carries a deadline is never walked; the first item
// with one, written after the sweeper had nothing to wait for, is freed.
func TestWalksOnlyWhenDue(t *testing.T) {
	c, s := start(t)
	for i := range 1000 {
		set(c, s, strconv.Itoa(i), time.Time{})
	}
	time.Sleep(MinGap * 5 / 2)
	if w := s.Walks(); w != 0 {
		t.Fatalf("%d walks of a cache without deadlines", w)
	}
	set(c, s, "soon", time.Now().Add(50*time.Millisecond))
	if !waitFor(func() bool { _, ok := c.GetIfPresent("soon"); return !ok }) {
		t.Fatal("an item with a deadline was not freed")
	}
	if c.EstimatedSize() != 1000 {
		t.Errorf("%d items left, want the 1000 without deadlines", c.EstimatedSize())
	}
}

// An item whose deadline is moved later after a walk found it pending is
// freed at the new deadline, not before, and one moved earlier (Wrote with
// the earlier deadline) at the earlier one.
func TestDeadlinesMove(t *testing.T) {
	c, s := start(t)
	now := time.Now()
	set(c, s, "moved-later", now.Add(100*time.Millisecond))
	set(c, s, "moved-earlier", now.Add(time.Hour))
	set(c, s, "moved-later", now.Add(3*MinGap))
	set(c, s, "moved-earlier", now.Add(100*time.Millisecond))
	if !waitFor(func() bool { _, ok := c.GetIfPresent("moved-earlier"); return !ok }) {
		t.Fatal("an item whose deadline moved earlier was not freed")
	}
	before := time.Now()
	if _, ok := c.GetIfPresent("moved-later"); !ok && before.Before(now.Add(3*MinGap)) {
		t.Fatal("an item whose deadline moved later was freed at the old one")
	}
	if !waitFor(func() bool { _, ok := c.GetIfPresent("moved-later"); return !ok }) {
		t.Fatal("an item whose deadline moved later was not freed at the new one")
	}
}

// Stop ends a walk under way.
func TestStopDuringWalk(t *testing.T) {
	clock := NewClock()
	defer clock.Stop()
	c := otter.Must(&otter.Options[string, item]{Clock: clock})
	defer c.StopAllGoroutines()
	past := time.Now().Add(-time.Hour).UnixNano()
	for i := range 200_000 {
		c.Set(strconv.Itoa(i), item{exp: past})
	}
	s := &Sweeper[item]{c: c, exp: func(it item) int64 { return it.exp }, stop: make(chan struct{}), done: make(chan struct{})}
	close(s.stop)
	if _, ok := s.walk(time.Now().UnixNano()); ok {
		t.Fatal("a walk went on after Stop")
	}
	if s.Freed() >= 200_000 {
		t.Fatalf("a stopped walk freed all %d items", s.Freed())
	}
}

// BenchmarkWalk measures a walk of a million items that are not expired:
// its length, times spacing, is the least time between two walks.
func BenchmarkWalk(b *testing.B) {
	clock := NewClock()
	defer clock.Stop()
	c := otter.Must(&otter.Options[string, item]{Clock: clock})
	defer c.StopAllGoroutines()
	later := time.Now().Add(time.Hour).UnixNano()
	const n = 1_000_000
	for i := range n {
		c.Set(strconv.Itoa(i), item{exp: later})
	}
	s := &Sweeper[item]{c: c, exp: func(it item) int64 { return it.exp }, stop: make(chan struct{})}
	b.ResetTimer()
	for range b.N {
		if _, ok := s.walk(time.Now().UnixNano()); !ok {
			b.Fatal("walk stopped")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/item")
}

// BenchmarkExpiry writes and reads random keys of a cache that is not
// full, from every core, its items carrying a deadline an hour away: with
// a Sweeper (sweeper; what the caches of pgcache do) and with otter's own
// expiry (otter; an ExpiryCalculator giving otter each item's deadline, a
// MinGap late as otter's clock is coarse). The sweeper earns its code
// while sweeper is faster than otter, for SET above all
// (docs/performance.md says how to read it).
func BenchmarkExpiry(b *testing.B) {
	const keys = 100_000
	names := make([]string, keys)
	for i := range names {
		names[i] = "key:" + strconv.Itoa(i)
	}
	exp := func(it item) int64 { return it.exp }
	otterExpiry := otter.ExpiryWritingFunc(func(e otter.Entry[string, item]) time.Duration {
		if e.Value.exp == 0 {
			return time.Duration(math.MaxInt64)
		}
		return max(time.Duration(e.Value.exp-time.Now().UnixNano()), 0) + MinGap
	})
	for _, op := range []string{"SET", "GET"} {
		for _, sweeper := range []bool{true, false} {
			name := op + "/sweeper"
			if !sweeper {
				name = op + "/otter"
			}
			b.Run(name, func(b *testing.B) {
				clock := NewClock()
				defer clock.Stop()
				o := &otter.Options[string, item]{
					MaximumSize: 10 * keys,
					Clock:       clock,
					Executor:    func(fn func()) { fn() },
				}
				if !sweeper {
					o.ExpiryCalculator = otterExpiry
				}
				c := otter.Must(o)
				defer c.StopAllGoroutines()
				wrote := func(int64) {}
				if sweeper {
					s := Start(c, exp)
					defer s.Stop()
					wrote = s.Wrote
				}
				later := item{exp: time.Now().Add(time.Hour).UnixNano()}
				for _, k := range names {
					c.Set(k, later)
					wrote(later.exp)
				}
				b.ReportAllocs()
				b.ResetTimer()
				defer testenv.CPUPerOp(b)()
				b.RunParallel(func(pb *testing.PB) {
					r := rand.New(rand.NewPCG(rand.Uint64(), 0))
					for pb.Next() {
						k := names[r.IntN(keys)]
						if op == "SET" {
							c.Set(k, later)
							wrote(later.exp)
						} else if it, ok := c.GetIfPresent(k); !ok || it.exp != later.exp {
							b.Error("a key was missing")
							return
						}
					}
				})
			})
		}
	}
}
