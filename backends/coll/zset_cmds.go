package coll

import (
	"math"

	"github.com/pgcache/pgcache/backends"
)

// Sorted set commands. Each is an Op: Parse… reads the request, checking
// it in the order redis-server 7.0 does (t_zset.c), Run does it on the
// ZSet, Reply answers as Redis does. This file has the commands on single
// members and counts; zset_range.go the ranges, zset_pop.go the pops
// (blocking ones too), zset_setops.go ZUNION and the others of several
// keys, zset_rand.go ZRANDMEMBER, and colls.go and scan.go ZCARD, ZREM and
// ZSCAN, which other types have too.
//
// Fields a store may read to do a command itself (PostgreSQL) are
// exported, and so are the results of the commands it is likely to do
// (ZADD, ZSCORE, ZCOUNT, the ranges): a store that did the command sets
// them and Reply answers from them.

// ZAdd is ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member
// ...], and ZINCRBY key increment member, which is ZADD key INCR.
type ZAdd struct {
	backends.Passed
	NX, XX, GT, LT, CH, Incr bool
	Scores                   []float64
	Members                  [][]byte
	incrby                   bool
	// Added and Updated count the members added and those whose score
	// changed; with Incr, Done says whether the member was changed and
	// Score is its new score.
	Added, Updated int64
	Done           bool
	Score          float64
	// One pair, the usual request, needs no slices of its own.
	score1  [1]float64
	member1 [1][]byte
}

// ParseZAdd reads ZADD and ZINCRBY.
func ParseZAdd(args [][]byte) (Command, error) { return fresh(new(ZAdd), args) }

func (op *ZAdd) reset() { *op = ZAdd{} }

func (op *ZAdd) parse(args [][]byte) error {
	op.reset()
	op.incrby = is(args[0], "zincrby")
	op.Args, op.KeyAt = args, at1
	op.Incr = op.incrby
	i := 2
options:
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case is(a, "nx"):
			op.NX = true
		case is(a, "xx"):
			op.XX = true
		case is(a, "ch"):
			op.CH = true
		case is(a, "incr"):
			op.Incr = true
		case is(a, "gt"):
			op.GT = true
		case is(a, "lt"):
			op.LT = true
		default:
			break options
		}
	}
	n := len(args) - i
	if n == 0 || n%2 != 0 {
		return errSyntax
	}
	n /= 2
	switch {
	case op.NX && op.XX:
		return errZAddXXNX
	case op.GT && op.NX, op.LT && op.NX, op.GT && op.LT:
		return errZAddGTLTNX
	case op.Incr && n > 1:
		return errZAddIncrPair
	}
	if n == 1 {
		op.Scores, op.Members = op.score1[:], op.member1[:]
	} else {
		op.Scores, op.Members = make([]float64, n), make([][]byte, n)
	}
	for j := range n {
		s, ok := parseScore(args[i+2*j])
		if !ok {
			return errNotFloat
		}
		op.Scores[j], op.Members[j] = s, args[i+2*j+1]
	}
	return nil
}

func (op *ZAdd) Name() string         { return either(op.incrby, "zincrby", "zadd") }
func (*ZAdd) Writes() backends.Writes { return backends.WritesAll }

func (op *ZAdd) Run(v backends.View) error {
	op.Added, op.Updated, op.Done, op.Score = 0, 0, false, 0
	z, err := collOf[*ZSet](v, 0)
	if err != nil {
		return err
	}
	if z == nil {
		if op.XX {
			return nil
		}
		z = NewZSet()
		v.Put(0, z)
	}
	lim := LimitsOf(v)
	for i, m := range op.Members {
		s := op.Scores[i]
		x, ok := z.nodes[stringOf(m)]
		switch {
		case ok:
			if op.NX {
				continue
			}
			cur := x.score
			if op.Incr {
				if s += cur; math.IsNaN(s) {
					return errNaNScore
				}
			}
			if (op.LT && s >= cur) || (op.GT && s <= cur) {
				continue
			}
			op.Done, op.Score = true, s
			if s != cur {
				z.rescore(x, lpScore(z.listpack(lim), s))
				op.Updated++
			}
		case !op.XX:
			z.insert(string(m), lpScore(z.listpackWith(lim, len(m)), s))
			op.Added++
			op.Done, op.Score = true, s
		}
	}
	return nil
}

func (op *ZAdd) Reply(w Writer) {
	switch {
	case op.Incr && op.Done:
		w.Double(op.Score)
	case op.Incr:
		w.Null()
	case op.CH:
		w.Int(op.Added + op.Updated)
	default:
		w.Int(op.Added)
	}
}

// ZScore is ZSCORE key member.
type ZScore struct {
	backends.Passed
	Member []byte
	Score  float64
	Found  bool
}

// ParseZScore reads ZSCORE.
func ParseZScore(args [][]byte) (Command, error) {
	op := &ZScore{Member: args[2]}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*ZScore) Name() string            { return "zscore" }
func (*ZScore) Writes() backends.Writes { return backends.ReadOnly }

func (op *ZScore) Run(v backends.View) error {
	op.Score, op.Found = 0, false
	z, err := collOf[*ZSet](v, 0)
	if z == nil || err != nil {
		return err
	}
	op.Score, op.Found = z.Score(stringOf(op.Member))
	return nil
}

func (op *ZScore) Reply(w Writer) {
	if !op.Found {
		w.Null()
		return
	}
	w.Double(op.Score)
}

// ZMScore is ZMSCORE key member [member ...].
type ZMScore struct {
	backends.Passed
	Members [][]byte
	Scores  []float64 // result: each member's score
	Found   []bool    // result: whether each member is in the set
}

// ParseZMScore reads ZMSCORE.
func ParseZMScore(args [][]byte) (Command, error) {
	op := &ZMScore{Members: args[2:]}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*ZMScore) Name() string            { return "zmscore" }
func (*ZMScore) Writes() backends.Writes { return backends.ReadOnly }

func (op *ZMScore) Run(v backends.View) error {
	op.Scores, op.Found = op.Scores[:0], op.Found[:0]
	z, err := collOf[*ZSet](v, 0)
	if err != nil {
		return err
	}
	for _, m := range op.Members {
		var s float64
		var ok bool
		if z != nil {
			s, ok = z.Score(stringOf(m))
		}
		op.Scores, op.Found = append(op.Scores, s), append(op.Found, ok)
	}
	return nil
}

func (op *ZMScore) Reply(w Writer) {
	w.Array(len(op.Scores))
	for i, s := range op.Scores {
		if op.Found[i] {
			w.Double(s)
		} else {
			w.Null()
		}
	}
}

// ZRank is ZRANK key member and ZREVRANK key member.
type ZRank struct {
	backends.Passed
	Member []byte
	Rev    bool
	Rank   int64 // result: the member's rank, from the top when Rev
	Found  bool  // result
}

// ParseZRank reads ZRANK and ZREVRANK.
func ParseZRank(args [][]byte) (Command, error) {
	op := &ZRank{Member: args[2], Rev: is(args[0], "zrevrank")}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (op *ZRank) Name() string         { return either(op.Rev, "zrevrank", "zrank") }
func (*ZRank) Writes() backends.Writes { return backends.ReadOnly }

func (op *ZRank) Run(v backends.View) error {
	op.Rank, op.Found = 0, false
	z, err := collOf[*ZSet](v, 0)
	if z == nil || err != nil {
		return err
	}
	r, ok := z.Rank(stringOf(op.Member))
	if ok && op.Rev {
		r = z.Len() - 1 - r
	}
	op.Rank, op.Found = int64(r), ok
	return nil
}

func (op *ZRank) Reply(w Writer) {
	if !op.Found {
		w.Null()
		return
	}
	w.Int(op.Rank)
}

// RangeCount is ZCOUNT key min max (R a ScoreRange) and ZLEXCOUNT key min
// max (R a LexRange): how many members are in Range. One generic type, so
// that each command's op holds its own range alone (ZCOUNT's stays in a
// smaller allocation).
type RangeCount[R any, P zrange[R]] struct {
	backends.Passed
	Range R
	Count int64
}

// zrange is a range of a sorted set, by score or by member.
type zrange[R any] interface {
	*R
	nodes(z *ZSet) (first, last *znode)
}

// ZCount and ZLexCount are ZCOUNT's and ZLEXCOUNT's ops.
type (
	ZCount    = RangeCount[ScoreRange, *ScoreRange]
	ZLexCount = RangeCount[LexRange, *LexRange]
)

// ParseZCount reads ZCOUNT.
func ParseZCount(args [][]byte) (Command, error) {
	return parseRangeCount[ScoreRange](args, parseScoreRange)
}

// ParseZLexCount reads ZLEXCOUNT.
func ParseZLexCount(args [][]byte) (Command, error) {
	return parseRangeCount[LexRange](args, parseLexRange)
}

func parseRangeCount[R any, P zrange[R]](args [][]byte, parse func(min, max []byte) (R, error)) (Command, error) {
	r, err := parse(args[2], args[3])
	if err != nil {
		return nil, err
	}
	op := &RangeCount[R, P]{Range: r}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (op *RangeCount[R, P]) Name() string {
	if _, lex := any(&op.Range).(*LexRange); lex {
		return "zlexcount"
	}
	return "zcount"
}

func (*RangeCount[R, P]) Writes() backends.Writes { return backends.ReadOnly }

func (op *RangeCount[R, P]) Run(v backends.View) error {
	op.Count = 0
	z, err := collOf[*ZSet](v, 0)
	if z == nil || err != nil {
		return err
	}
	op.Count = z.count(P(&op.Range).nodes(z))
	return nil
}

func (op *RangeCount[R, P]) Reply(w Writer) { w.Int(op.Count) }

// count is how many nodes there are from first to last, 0 when first is
// nil.
func (z *ZSet) count(first, last *znode) int64 {
	if first == nil {
		return 0
	}
	return int64(z.sl.rank(last) - z.sl.rank(first) + 1)
}

var (
	_ Command = (*ZAdd)(nil)
	_ Command = (*ZScore)(nil)
	_ Command = (*ZMScore)(nil)
	_ Command = (*ZRank)(nil)
	_ Command = (*ZCount)(nil)
	_ Command = (*ZLexCount)(nil)
)
