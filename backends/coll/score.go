package coll

import (
	"math"
	"strconv"
)

// FormatScore formats a score as Redis 7.0 replies with one (%.17g; inf
// and -inf).
func FormatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
