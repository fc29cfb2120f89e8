package otterread

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/internal/testenv"
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

// BenchmarkGet reads random keys of a full cache (where otter's policy
// hears of reads; a cache less than half full skips its read buffer) from
// every core, through Get (sampled) and through otter's own GetIfPresent
// (every read told). Get earns its code while sampled is faster than
// every (docs/performance.md says how to read it).
func BenchmarkGet(b *testing.B) {
	const keys = 100_000
	names := make([]string, keys)
	for i := range names {
		names[i] = "key:" + strconv.Itoa(i)
	}
	for _, tc := range []struct {
		name string
		get  func(*otter.Cache[string, []byte], string) ([]byte, bool)
	}{
		{"sampled", Get[string, []byte]},
		{"every", (*otter.Cache[string, []byte]).GetIfPresent},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := otter.Must(&otter.Options[string, []byte]{
				MaximumSize: keys,
				Executor:    func(fn func()) { fn() },
			})
			defer c.StopAllGoroutines()
			val := make([]byte, 64)
			for _, k := range names {
				c.Set(k, val)
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer testenv.CPUPerOp(b)()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(rand.Uint64(), 0))
				for pb.Next() {
					if _, ok := tc.get(c, names[r.IntN(keys)]); !ok {
						b.Error("a key was missing")
						return
					}
				}
			})
		})
	}
}
