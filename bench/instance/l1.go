package instance

import (
	"fmt"
	"strconv"
	"strings"
)

// L1Reads are the read counters of one route's L1, as a pgcache's INFO
// backends section gives them (l1_<route>_hits, …).
type L1Reads struct{ Hits, Misses, Bypassed int64 }

// Total is every read the L1 saw.
func (r L1Reads) Total() int64 { return r.Hits + r.Misses + r.Bypassed }

// Plus and Minus add and subtract counters: several instances' sums, or a
// phase's share as after minus before.
func (r L1Reads) Plus(o L1Reads) L1Reads {
	return L1Reads{r.Hits + o.Hits, r.Misses + o.Misses, r.Bypassed + o.Bypassed}
}

func (r L1Reads) Minus(o L1Reads) L1Reads {
	return L1Reads{r.Hits - o.Hits, r.Misses - o.Misses, r.Bypassed - o.Bypassed}
}

// HitRatio is the share of the reads the L1 served, 0 when there were none.
func (r L1Reads) HitRatio() float64 {
	if n := r.Total(); n > 0 {
		return float64(r.Hits) / float64(n)
	}
	return 0
}

// ParseL1Reads reads route's L1 counters from the text of INFO backends.
func ParseL1Reads(info, route string) (L1Reads, error) {
	var r L1Reads
	fields := map[string]*int64{
		"l1_" + route + "_hits":     &r.Hits,
		"l1_" + route + "_misses":   &r.Misses,
		"l1_" + route + "_bypassed": &r.Bypassed,
	}
	seen := 0
	for line := range strings.Lines(info) {
		name, val, _ := strings.Cut(strings.TrimSpace(line), ":")
		if p := fields[name]; p != nil {
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return L1Reads{}, fmt.Errorf("INFO %s: %w", name, err)
			}
			*p = n
			seen++
		}
	}
	if seen != len(fields) {
		return L1Reads{}, fmt.Errorf("INFO has no L1 counters of route %s", route)
	}
	return r, nil
}
