// Package coarse lets an otter cache free items that carry their own
// deadline without reading the precise clock on every lookup.
//
// Otter reads its clock on every lookup of a cache with expiry; on a VM
// whose clock source is kvm-clock a precise read was a seventh of a memory
// route's GET, and otter recomputing the deadline on each read another
// third. The caches of pgcache check each item's deadline against the
// precise clock themselves, on every read, so otter's expiry only frees
// memory and can run on a coarse clock, which lags by up to Resolution.
// A deadline otter computes from that clock may then fall early by as much,
// so each gets Resolution more: otter never drops an item before the
// deadline the reads check, and an expired item holds its memory up to two
// resolutions longer.
package coarse

import (
	"math"
	"time"

	"github.com/maypok86/otter/v2"
)

// Resolution is how often the coarse clock is read.
const Resolution = time.Second

// NewClock returns a coarse clock for otter's Options.Clock. Stop it when
// the caches using it are closed.
func NewClock() *otter.CoarseClock { return otter.NewCoarseClock(Resolution) }

// Expiry tells otter the deadline of each item: exp returns it in unix
// nanoseconds, 0 for none. A write sets the deadline and a read keeps it,
// so otter does not ask on reads.
func Expiry[V any](exp func(V) int64) otter.ExpiryCalculator[string, V] {
	return otter.ExpiryWritingFunc(func(e otter.Entry[string, V]) time.Duration {
		at := exp(e.Value)
		if at == 0 {
			return time.Duration(math.MaxInt64)
		}
		return max(time.Duration(at-time.Now().UnixNano()), 0) + Resolution
	})
}
