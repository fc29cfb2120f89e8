// Package otterread reads otter caches the way pgcache's hot paths do:
// telling the eviction policy of one read in Rate (a sampled read).
//
// Telling otter of a read is a store into its read buffer, a ring every
// core writes, and the later replay of that buffer moves the entry in the
// policy's queues and counts it in the frequency sketch: a good part of a
// memory-route GET's CPU under redis-benchmark -P 16 (docs/performance.md;
// BenchmarkGet runs both ways). Otter's
// read buffer is lossy by design (it drops reads when it is full), and a
// key that is read often is still heard of often when only some reads are
// told: TestHitRatio checks that a skewed workload in a cache too small for
// it keeps its hit ratio. (The caches of pgcache have no otter expiry, see
// package sweep, so otter skips the buffer of one that is less than half
// full; sampling is what a full cache saves.)
package otterread

import (
	"math/rand/v2"

	"github.com/maypok86/otter/v2"
)

// Rate is how many reads the policy hears of one in; a power of two.
const Rate = 4

// Get returns k's value, as c.GetIfPresent does, but records the read in
// c's policy (and stats) only for one call in Rate, chosen at random.
func Get[K comparable, V any](c *otter.Cache[K, V], k K) (V, bool) {
	if rand.Uint32()&(Rate-1) == 0 {
		return c.GetIfPresent(k)
	}
	e, ok := c.GetEntryQuietly(k)
	return e.Value, ok
}
