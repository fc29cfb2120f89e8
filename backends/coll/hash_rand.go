package coll

import (
	"math/rand/v2"

	"github.com/pgcache/pgcache/backends"
)

// HRANDFIELD, and the random picks it shares with SRANDMEMBER and SPOP.

// parseRandCount reads the count of HRANDFIELD, SRANDMEMBER and
// ZRANDMEMBER.
func parseRandCount(b []byte) (int64, error) {
	n, ok := backends.ParseInt(b)
	switch {
	case !ok:
		return 0, errNotInteger
	case n == minInt64:
		return 0, errCountRange
	}
	return n, nil
}

// parseRandPairs reads the [count [with]] of HRANDFIELD (with is
// "withvalues") and ZRANDMEMBER ("withscores"), the count first as Redis
// does: the count, whether it was given, and whether with was.
func parseRandPairs(args [][]byte, with string) (n int64, given, pairs bool, err error) {
	if len(args) < 3 {
		return 0, false, false, nil
	}
	if n, err = parseRandCount(args[2]); err != nil {
		return 0, false, false, err
	}
	if len(args) > 4 || len(args) == 4 && !is(args[3], with) {
		return 0, false, false, errSyntax
	}
	pairs = len(args) == 4
	// The pairs of a negative count are counted twice in a long.
	if pairs && (n < -maxInt64/2 || n > maxInt64/2) {
		return 0, false, false, errOutOfRange
	}
	return n, true, pairs, nil
}

// distinct returns count distinct indexes of [0, n), 0 < count < n, each
// set of them as likely as any other: in ascending order when ordered
// (selection sampling, O(n): what Redis's listpack picks return), else in
// no particular order, in O(count) when count is small next to n.
func distinct(n, count int, ordered bool) []int {
	out := make([]int, 0, count)
	switch {
	case ordered:
		for i := 0; i < n && len(out) < count; i++ {
			// Take i with probability (still wanted) / (still left).
			if rand.IntN(n-i) < count-len(out) {
				out = append(out, i)
			}
		}
	case count*3 > n:
		// Many of them: the first count of a partial shuffle.
		perm := make([]int, n)
		for i := range perm {
			perm[i] = i
		}
		for i := range count {
			j := i + rand.IntN(n-i)
			perm[i], perm[j] = perm[j], perm[i]
		}
		out = append(out, perm[:count]...)
	default:
		// Few of them: pick until count differ, most picks are new.
		seen := make(map[int]struct{}, count)
		for len(out) < count {
			i := rand.IntN(n)
			if _, dup := seen[i]; !dup {
				seen[i] = struct{}{}
				out = append(out, i)
			}
		}
	}
	return out
}

// HRandField is HRANDFIELD key [count [WITHVALUES]].
type HRandField struct {
	backends.Passed
	count      int64
	withCount  bool
	withValues bool

	// What Run picked: fields and values, or, for a negative count larger
	// than the hash, a copy of the hash (pool) that Reply picks from, so
	// that a huge count costs no memory (Redis writes its picks as it
	// makes them).
	found        bool
	fields, vals [][]byte
	poolF        []string
	poolV        [][]byte
	poolN        int64
}

// ParseHRandField reads HRANDFIELD.
func ParseHRandField(args [][]byte) (Command, error) {
	n, given, pairs, err := parseRandPairs(args, "withvalues")
	if err != nil {
		return nil, err
	}
	op := &HRandField{count: n, withCount: given, withValues: pairs}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*HRandField) Name() string            { return "hrandfield" }
func (*HRandField) Writes() backends.Writes { return backends.ReadOnly }

// Run needs the View's Limits: picks from a small hash come in its order.
func (op *HRandField) Run(v backends.View) error {
	op.found, op.fields, op.vals = false, op.fields[:0], op.vals[:0]
	op.poolF, op.poolV, op.poolN = nil, nil, 0
	h, err := collOf[*Hash](v, 0)
	if h == nil || err != nil {
		return err
	}
	size := h.Len()
	add := func(i int) {
		f, val := h.At(i)
		op.fields = append(op.fields, bytesOf(f))
		if op.withValues {
			op.vals = append(op.vals, val)
		}
	}
	count := op.count
	switch {
	case !op.withCount:
		op.found = true
		add(rand.IntN(size))
	case count == 0:
	case count < 0 && -count > int64(size):
		// Repeats, more than the hash holds: picked in Reply.
		op.poolF, op.poolN = append([]string(nil), h.fields...), -count
		if op.withValues {
			op.poolV = append([][]byte(nil), h.vals...)
		}
	case count < 0 || count == 1:
		for range abs(count) {
			add(rand.IntN(size))
		}
	case count >= int64(size):
		for i := range size {
			add(i)
		}
	default:
		for _, i := range distinct(size, int(count), h.small(LimitsOf(v))) {
			add(i)
		}
	}
	return nil
}

func (op *HRandField) Reply(w Writer) {
	if !op.withCount {
		if !op.found {
			w.Null()
			return
		}
		w.Bulk(op.fields[0])
		return
	}
	n := int64(len(op.fields))
	if op.poolF != nil {
		n = op.poolN
	}
	pairs := op.withValues && w.RESP3()
	if op.withValues && !pairs {
		w.Array(int(2 * n))
	} else {
		w.Array(int(n))
	}
	for i := range n {
		var f, val []byte
		if op.poolF != nil {
			k := rand.IntN(len(op.poolF))
			f = bytesOf(op.poolF[k])
			if op.withValues {
				val = op.poolV[k]
			}
		} else {
			f = op.fields[i]
			if op.withValues {
				val = op.vals[i]
			}
		}
		if pairs {
			w.Array(2)
		}
		w.Bulk(f)
		if op.withValues {
			w.Bulk(val)
		}
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
