package coll

import "github.com/pgcache/pgcache/backends"

// LPos is LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].
type LPos struct {
	backends.Passed
	elem   []byte
	rank   int64 // the first match to answer: 1 the first from the head, -1 the first from the tail
	count  int64 // how many matches to answer, 0 all; -1 when not given (one index, not an array)
	maxlen int64 // how many elements to compare, 0 all
	found  []int64
}

// ParseLPos reads LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].
func ParseLPos(args [][]byte) (Command, error) {
	op := &LPos{elem: args[2], rank: 1, count: -1}
	var err error
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case is(args[j], "rank") && more:
			j++
			if op.rank, err = longArg(args[j]); err != nil {
				return nil, err
			}
			if op.rank == 0 {
				return nil, errRankZero
			}
		case is(args[j], "count") && more:
			j++
			if op.count, err = rangeArg(args[j], 0, maxLong, errCountNegative); err != nil {
				return nil, err
			}
		case is(args[j], "maxlen") && more:
			j++
			if op.maxlen, err = rangeArg(args[j], 0, maxLong, errMaxlenNeg); err != nil {
				return nil, err
			}
		default:
			return nil, errSyntax
		}
	}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*LPos) Name() string            { return "lpos" }
func (*LPos) Writes() backends.Writes { return backends.ReadOnly }

// Run compares at most MAXLEN elements and answers at most COUNT matches
// (never more than the list has), so the work and the reply are bounded by
// the list whatever the numbers asked.
func (op *LPos) Run(v backends.View) error {
	op.found = op.found[:0]
	l, err := collOf[*List](v, 0)
	if l == nil || err != nil {
		return err
	}
	from, rank := Left, op.rank
	if rank < 0 {
		// Redis negates the rank as a C long: RANK -2^63 stays negative,
		// so every match passes "matches >= rank" and, with COUNT,
		// "matches-rank+1 >= count" (wrapping) never stops the scan.
		from, rank = Right, -rank
	}
	var matches int64
	l.Find(op.elem, from, op.maxlen, func(i int) bool {
		matches++
		if matches < rank {
			return true
		}
		op.found = append(op.found, int64(i))
		if op.count < 0 {
			return false
		}
		return op.count == 0 || matches-rank+1 < op.count
	})
	return nil
}

func (op *LPos) Reply(w Writer) {
	if op.count < 0 {
		if len(op.found) == 0 {
			w.Null()
			return
		}
		w.Int(op.found[0])
		return
	}
	w.Array(len(op.found))
	for _, i := range op.found {
		w.Int(i)
	}
}

var _ Command = (*LPos)(nil)
