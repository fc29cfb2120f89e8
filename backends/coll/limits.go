package coll

import (
	"sync"
	"sync/atomic"

	"github.com/pgcache/pgcache/backends"
)

// Limits are Redis's encoding thresholds (hash-max-listpack-entries and
// the rest, CONFIG GET/SET): what OBJECT ENCODING reports for a value, and
// the order Redis answers a small set of integers in (an intset is
// sorted). A value keeps the largest size it ever had, so a value that
// once passed a threshold reports the larger encoding for good, as Redis
// never converts back.
type Limits struct {
	HashMaxListpackEntries int64 // 512
	HashMaxListpackValue   int64 // 64 bytes, of a field or a value
	SetMaxIntsetEntries    int64 // 512
	ZSetMaxListpackEntries int64 // 128
	ZSetMaxListpackValue   int64 // 64 bytes, of a member
	ListMaxListpackSize    int64 // -2 (8 KiB a node): reported, no effect here
	ListCompressDepth      int64 // 0: reported, no effect here
}

// DefaultLimits are Redis 7.0's defaults.
var DefaultLimits = Limits{
	HashMaxListpackEntries: 512,
	HashMaxListpackValue:   64,
	SetMaxIntsetEntries:    512,
	ZSetMaxListpackEntries: 128,
	ZSetMaxListpackValue:   64,
	ListMaxListpackSize:    -2,
	ListCompressDepth:      0,
}

// LimitsOf returns the limits of the server a View's store belongs to
// (a View with a Limits method), or the process's (CurrentLimits).
func LimitsOf(v backends.View) *Limits {
	if l, ok := v.(interface{ Limits() *Limits }); ok {
		if lim := l.Limits(); lim != nil {
			return lim
		}
	}
	return CurrentLimits()
}

// The process's limits, which CONFIG SET changes (hash-max-listpack-entries
// and the rest): a Redis server has one set, and so does a pgcache
// process, whatever its routes. Replaced whole, never changed in place, so
// an Op reads one consistent set without a lock; limitsMu orders the
// replacements.
var (
	current  atomic.Pointer[Limits]
	limitsMu sync.Mutex
)

// CurrentLimits are the process's limits: DefaultLimits until
// UpdateLimits changes them. The Limits returned are never modified.
func CurrentLimits() *Limits {
	if l := current.Load(); l != nil {
		return l
	}
	return &DefaultLimits
}

// UpdateLimits applies change to a copy of the process's limits and makes
// the copy current: a View made afterwards, with no limits of its own,
// reports encodings by it.
func UpdateLimits(change func(*Limits)) {
	limitsMu.Lock()
	defer limitsMu.Unlock()
	l := *CurrentLimits()
	change(&l)
	current.Store(&l)
}
