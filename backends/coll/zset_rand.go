package coll

import (
	"math/rand/v2"

	"github.com/pgcache/pgcache/backends"
)

// ZRANDMEMBER: members picked at random.

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
	n, given, pairs, err := parseRandPairs(args, "withscores")
	if err != nil {
		return nil, err
	}
	op := &ZRandMember{count: n, hasCount: given, withScores: pairs}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*ZRandMember) Name() string            { return "zrandmember" }
func (*ZRandMember) Writes() backends.Writes { return backends.ReadOnly }

func (op *ZRandMember) Run(v backends.View) error {
	op.found, op.picks = false, op.picks[:0]
	z, err := collOf[*ZSet](v, 0)
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

var _ Command = (*ZRandMember)(nil)
