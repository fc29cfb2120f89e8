package otterread

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/maypok86/otter/v2"
)

// A read-through cache of 2,000 entries in front of 100,000 keys read with
// a Zipf skew: the policy must still keep the hot keys when it hears of
// one read in Rate. Both caches see the same key sequence.
func TestHitRatio(t *testing.T) {
	const keys, capacity, reads = 100_000, 2_000, 400_000
	newCache := func() *otter.Cache[string, []byte] {
		return otter.Must(&otter.Options[string, []byte]{
			MaximumSize: capacity,
			Executor:    func(fn func()) { fn() },
		})
	}
	every, sampled := newCache(), newCache()
	defer every.StopAllGoroutines()
	defer sampled.StopAllGoroutines()
	names := make([]string, keys)
	for i := range names {
		names[i] = "key:" + strconv.Itoa(i)
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, keys-1)
	val := []byte("v")
	var hitsEvery, hitsSampled int
	for range reads {
		k := names[zipf.Uint64()]
		if _, ok := every.GetIfPresent(k); ok {
			hitsEvery++
		} else {
			every.Set(k, val)
		}
		if _, ok := Get(sampled, k); ok {
			hitsSampled++
		} else {
			sampled.Set(k, val)
		}
	}
	rEvery, rSampled := float64(hitsEvery)/reads, float64(hitsSampled)/reads
	t.Logf("hit ratio: every read told %.4f, one in %d told %.4f", rEvery, Rate, rSampled)
	if rEvery < 0.5 {
		t.Fatalf("hit ratio %.4f with every read told: the workload is not the skewed one meant", rEvery)
	}
	if rSampled < rEvery-0.01 {
		t.Errorf("hit ratio %.4f when one read in %d is told, %.4f when all are: the policy lost the hot keys", rSampled, Rate, rEvery)
	}
}

// Get finds what is there and not what is not, sampled or not.
func TestGet(t *testing.T) {
	c := otter.Must(&otter.Options[string, int]{MaximumSize: 100})
	defer c.StopAllGoroutines()
	c.Set("a", 1)
	for range 100 {
		if v, ok := Get(c, "a"); !ok || v != 1 {
			t.Fatalf("Get(a) = %d, %v", v, ok)
		}
		if v, ok := Get(c, "b"); ok {
			t.Fatalf("Get(b) = %d, %v; want absent", v, ok)
		}
	}
}
