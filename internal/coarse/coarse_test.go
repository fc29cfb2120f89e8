package coarse

import (
	"testing"
	"time"

	"github.com/maypok86/otter/v2"
)

type item struct{ exp int64 }

func newCache(t *testing.T) *otter.Cache[string, item] {
	clock := NewClock()
	c := otter.Must(&otter.Options[string, item]{
		MaximumSize:      1000,
		ExpiryCalculator: Expiry(func(it item) int64 { return it.exp }),
		Clock:            clock,
	})
	t.Cleanup(func() { c.StopAllGoroutines(); clock.Stop() })
	return c
}

// Otter keeps an item at least until its deadline, however far the coarse
// clock lags, and drops it within two resolutions after.
func TestNeverEarly(t *testing.T) {
	c := newCache(t)
	// The clock read the time when it was made and reads it again one
	// resolution later: items set in between see it lag by up to that.
	time.Sleep(Resolution * 9 / 10)
	start := time.Now()
	const n = 50
	for i := range n {
		c.Set(string(rune('a'+i)), item{exp: start.Add(time.Duration(i+1) * 20 * time.Millisecond).UnixNano()})
	}
	c.Set("forever", item{})
	last := start.Add(n * 20 * time.Millisecond)
	for time.Now().Before(last) {
		for i := range n {
			k := string(rune('a' + i))
			before := time.Now().UnixNano()
			_, ok := c.GetIfPresent(k)
			if !ok && before < start.Add(time.Duration(i+1)*20*time.Millisecond).UnixNano() {
				t.Fatalf("item %d was dropped before its deadline", i)
			}
		}
		time.Sleep(time.Millisecond)
	}
	gone := last.Add(2*Resolution + 500*time.Millisecond)
	for time.Now().Before(gone) {
		time.Sleep(50 * time.Millisecond)
	}
	for i := range n {
		if _, ok := c.GetIfPresent(string(rune('a' + i))); ok {
			t.Errorf("item %d is still held two resolutions after its deadline", i)
		}
	}
	if _, ok := c.GetIfPresent("forever"); !ok {
		t.Error("an item without a deadline was dropped")
	}
}
