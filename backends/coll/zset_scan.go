package coll

import (
	"math/rand/v2"
	"strconv"

	"github.com/pgcache/pgcache/backends"
)

// ZSCAN and ZRANDMEMBER: the commands that visit members in no order of
// scores.

// ZScan is ZSCAN key cursor [MATCH pattern] [COUNT count].
//
// A set Redis would hold as a listpack is answered whole, in order of
// scores, with cursor 0, as Redis does. A larger one is paged over its
// dense slice from the highest position down: the cursor is how many
// positions are left below. A removal moves the last member into the
// hole; the last member sits at or above every position still to visit
// only if it was visited, and one moved down into the unvisited part
// (a hole below the cursor) is returned again, never skipped; members
// below the cursor otherwise stay where they are, and members added
// meanwhile go above it. So a member present for the whole scan is
// returned at least once, as SCAN guarantees; one added or removed during
// it may or may not be.
type ZScan struct {
	backends.Passed
	cursor   uint64
	match    string
	hasMatch bool
	count    int64
	// Redis reads the options only once it found the key: an error in
	// them waits for Run.
	optErr error
	found  bool
	next   uint64
	lp     bool // answer scores as a listpack holds them
	items  []ZEntry
}

// ParseZScan reads ZSCAN.
func ParseZScan(args [][]byte) (Command, error) {
	cursor, err := parseCursor(args[2])
	if err != nil {
		return nil, err
	}
	op := &ZScan{cursor: cursor, count: 10}
	op.Args, op.KeyAt = args, at1
	for i := 3; i < len(args); i += 2 {
		more := len(args) - i
		switch {
		case is(args[i], "count") && more >= 2:
			n, err := longArg(args[i+1])
			if err == nil && n < 1 {
				err = errSyntax
			}
			if err != nil {
				op.optErr = err
				return op, nil
			}
			op.count = n
		case is(args[i], "match") && more >= 2:
			op.match, op.hasMatch = string(args[i+1]), true
		default:
			op.optErr = errSyntax
			return op, nil
		}
	}
	return op, nil
}

func (*ZScan) Name() string            { return "zscan" }
func (*ZScan) Writes() backends.Writes { return backends.ReadOnly }

func (op *ZScan) Run(v backends.View) error {
	op.found, op.next, op.lp, op.items = false, 0, false, op.items[:0]
	z, err := zsetOf(v, 0)
	if z == nil || err != nil {
		return err
	}
	if op.optErr != nil {
		return op.optErr
	}
	op.found = true
	if z.listpack(LimitsOf(v)) {
		op.lp = true
		for x := z.sl.first(); x != nil; x = x.next() {
			if op.matches(x.member) {
				op.items = append(op.items, ZEntry{x.member, x.score})
			}
		}
		return nil
	}
	hi := uint64(z.Len())
	if op.cursor != 0 && op.cursor < hi {
		hi = op.cursor
	}
	lo := uint64(0)
	if uint64(op.count) < hi {
		lo = hi - uint64(op.count)
	}
	for i := hi; i > lo; i-- {
		x := z.dense[i-1]
		if op.matches(x.member) {
			op.items = append(op.items, ZEntry{x.member, x.score})
		}
	}
	op.next = lo
	return nil
}

// matches reports whether member m matches MATCH's pattern. Unlike
// backends.Match, an empty pattern matches only the empty member, as in
// Redis's ZSCAN.
func (op *ZScan) matches(m string) bool {
	if op.hasMatch && op.match == "" {
		return m == ""
	}
	return backends.Match(op.match, m)
}

func (op *ZScan) Reply(w Writer) {
	w.Array(2)
	var buf [24]byte
	w.Bulk(strconv.AppendUint(buf[:0], op.next, 10))
	w.Array(2 * len(op.items))
	for _, e := range op.items {
		w.Bulk(bytesOf(e.Member))
		if op.lp {
			w.Bulk(appendListpackScore(buf[:0], e.Score))
		} else {
			w.Bulk([]byte(FormatScore(e.Score)))
		}
	}
}

// appendListpackScore formats s as a listpack holds it: an integer when
// it is one (and within ±2^62), otherwise as a reply formats a score.
func appendListpackScore(b []byte, s float64) []byte {
	const lim = float64(1<<62 - 1)
	if s >= -lim && s <= lim && s == float64(int64(s)) {
		return strconv.AppendInt(b, int64(s), 10)
	}
	return append(b, FormatScore(s)...)
}

// maxRandomPicks bounds ZRANDMEMBER's negative count, which may repeat
// members: Redis 7.0 tries to answer any count and runs out of memory.
const maxRandomPicks = 1 << 20

// ZRandMember is ZRANDMEMBER key [count [WITHSCORES]].
type ZRandMember struct {
	backends.Passed
	hasCount   bool
	count      int64
	withScores bool
	found      bool
	picks      []ZEntry
}

// ParseZRandMember reads ZRANDMEMBER.
func ParseZRandMember(args [][]byte) (Command, error) {
	op := &ZRandMember{}
	op.Args, op.KeyAt = args, at1
	if len(args) < 3 {
		return op, nil
	}
	n, err := parseRandCount(args[2])
	if err != nil {
		return nil, err
	}
	if len(args) > 4 || (len(args) == 4 && !is(args[3], "withscores")) {
		return nil, errSyntax
	}
	if len(args) == 4 {
		op.withScores = true
		if n < -(1<<63-1)/2 || n > (1<<63-1)/2 {
			return nil, errOutOfRange
		}
	}
	op.hasCount, op.count = true, n
	return op, nil
}

func (*ZRandMember) Name() string            { return "zrandmember" }
func (*ZRandMember) Writes() backends.Writes { return backends.ReadOnly }

func (op *ZRandMember) Run(v backends.View) error {
	op.found, op.picks = false, op.picks[:0]
	z, err := zsetOf(v, 0)
	if z == nil || err != nil {
		return err
	}
	op.found = true
	if !op.hasCount {
		m, s := z.Random()
		op.picks = append(op.picks, ZEntry{m, s})
		return nil
	}
	size := z.Len()
	switch n := op.count; {
	case n == 0:
	case n < 0 || n == 1:
		// Repeats allowed: each pick uniform and independent.
		k := -n
		if n == 1 {
			k = 1
		}
		if k > maxRandomPicks {
			return errOutOfRange
		}
		for range k {
			m, s := z.Random()
			op.picks = append(op.picks, ZEntry{m, s})
		}
	case n >= int64(size):
		// The whole set, from the highest score down, as Redis answers it.
		for x := z.sl.tail; x != nil; x = x.prev {
			op.picks = append(op.picks, ZEntry{x.member, x.score})
		}
	case n*3 > int64(size):
		// Most of the set: drop members at random from a copy.
		all := make([]*znode, size)
		copy(all, z.dense)
		for len(all) > int(n) {
			i := rand.IntN(len(all))
			all[i] = all[len(all)-1]
			all = all[:len(all)-1]
		}
		for _, x := range all {
			op.picks = append(op.picks, ZEntry{x.member, x.score})
		}
	default:
		// A few of many: pick until n distinct.
		seen := make(map[*znode]struct{}, n)
		for len(op.picks) < int(n) {
			x := z.dense[rand.IntN(size)]
			if _, dup := seen[x]; dup {
				continue
			}
			seen[x] = struct{}{}
			op.picks = append(op.picks, ZEntry{x.member, x.score})
		}
	}
	return nil
}

func (op *ZRandMember) Reply(w Writer) {
	switch {
	case !op.hasCount && !op.found:
		w.Null()
	case !op.hasCount:
		w.Bulk(bytesOf(op.picks[0].Member))
	default:
		writeEntries(w, op.picks, op.withScores)
	}
}

var (
	_ Command = (*ZScan)(nil)
	_ Command = (*ZRandMember)(nil)
)
