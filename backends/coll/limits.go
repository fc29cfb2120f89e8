package coll

import "github.com/pgcache/pgcache/backends"

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
// (a View with a Limits method), or DefaultLimits.
func LimitsOf(v backends.View) *Limits {
	if l, ok := v.(interface{ Limits() *Limits }); ok {
		if lim := l.Limits(); lim != nil {
			return lim
		}
	}
	return &DefaultLimits
}
