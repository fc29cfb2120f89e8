package backends

import (
	"sync"
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

// EncodingLimits are Redis's encoding thresholds (hash-max-listpack-entries
// and the others): what OBJECT ENCODING reports for a collection, and the
// order a small set of integers is answered in. Package coll reads them
// (coll.Limits); DefaultEncodings are Redis 7.0's.
type EncodingLimits struct {
	HashMaxListpackEntries int64 // 512
	HashMaxListpackValue   int64 // 64 bytes, of a field or a value
	SetMaxIntsetEntries    int64 // 512
	ZSetMaxListpackEntries int64 // 128
	ZSetMaxListpackValue   int64 // 64 bytes, of a member
	ListMaxListpackSize    int64 // -2 (8 KiB a node): reported, no effect here
	ListCompressDepth      int64 // 0: reported, no effect here
}

// DefaultEncodings are Redis 7.0's defaults.
var DefaultEncodings = EncodingLimits{
	HashMaxListpackEntries: 512,
	HashMaxListpackValue:   64,
	SetMaxIntsetEntries:    512,
	ZSetMaxListpackEntries: 128,
	ZSetMaxListpackValue:   64,
	ListMaxListpackSize:    -2,
	ListCompressDepth:      0,
}

// Encodings are one pgcache's thresholds, as BusyThreshold is its busy
// threshold: the server makes them, hands them to every driver it builds
// (Env), and CONFIG SET replaces them.
type Encodings struct {
	p  atomic.Pointer[EncodingLimits]
	mu sync.Mutex // orders Updates
}

// Load returns the thresholds; a nil Encodings, or one never set, is
// DefaultEncodings.
func (e *Encodings) Load() *EncodingLimits {
	if e != nil {
		if l := e.p.Load(); l != nil {
			return l
		}
	}
	return &DefaultEncodings
}

// Update applies change to a copy of the thresholds and makes the copy
// theirs: a reader sees one whole set, never one being changed.
func (e *Encodings) Update(change func(*EncodingLimits)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := *e.Load()
	change(&l)
	e.p.Store(&l)
}
