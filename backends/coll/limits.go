package coll

import (
	"github.com/pgcache/pgcache/backends"
)

// Limits are Redis's encoding thresholds (hash-max-listpack-entries and
// the others, CONFIG GET/SET): what OBJECT ENCODING reports for a value,
// and the order Redis answers a small set of integers in (an intset is
// sorted). A value keeps the largest size it ever had, so a value that
// once passed a threshold reports the larger encoding for good, as Redis
// never converts back. They are the server's (backends.Encodings).
type Limits = backends.EncodingLimits

// DefaultLimits are Redis 7.0's defaults.
var DefaultLimits = backends.DefaultEncodings

// LimitsOf returns the limits of the server a View's store belongs to
// (a View with a Limits method), or Redis's defaults.
func LimitsOf(v backends.View) *Limits {
	if l, ok := v.(interface{ Limits() *Limits }); ok {
		if lim := l.Limits(); lim != nil {
			return lim
		}
	}
	return &DefaultLimits
}
