package backends

import (
	"sync/atomic"
	"time"
)

// DefaultBusyThreshold is Redis's busy-reply-threshold (lua-time-limit).
const DefaultBusyThreshold = 5 * time.Second

// BusyThreshold is one pgcache's busy-reply-threshold: how long a request
// waits for keys an atomic run holds before it fails with ErrBusy, and how
// long a script runs before it is busy. The server makes one, hands it to
// every driver it builds (Env) and to its RESP front, whose CONFIG SET
// changes it; two servers in one process have one each.
type BusyThreshold struct{ ns atomic.Int64 }

// NewBusyThreshold returns a threshold of d.
func NewBusyThreshold(d time.Duration) *BusyThreshold {
	b := new(BusyThreshold)
	b.Store(d)
	return b
}

// Load returns the threshold; a nil BusyThreshold is DefaultBusyThreshold,
// so that a store built without a server (tests, tools) has Redis's.
func (b *BusyThreshold) Load() time.Duration {
	if b == nil {
		return DefaultBusyThreshold
	}
	return time.Duration(b.ns.Load())
}

// Store sets the threshold; it applies to the waits under way too.
func (b *BusyThreshold) Store(d time.Duration) { b.ns.Store(int64(d)) }
