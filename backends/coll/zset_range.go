package coll

import (
	"slices"

	"github.com/pgcache/pgcache/backends"
)

// The range commands: ZRANGE and its older forms (ZREVRANGE,
// Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX), ZRANGESTORE, and
// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX.

// RangeBy is what a range is of.
type RangeBy uint8

const (
	ByRank  RangeBy = iota // an IndexRange
	ByScore                // a ScoreRange
	ByLex                  // a LexRange
)

// Bounds are the range a sorted set command names: of ranks, of scores
// or of members, as By says.
type Bounds struct {
	By         RangeBy
	IndexRange            // ByRank
	Score      ScoreRange // ByScore
	Lex        LexRange   // ByLex
}

// parseBounds reads min and max (start and stop, ByRank) of a range by.
func parseBounds(by RangeBy, lo, hi []byte) (Bounds, error) {
	b := Bounds{By: by}
	var err error
	switch by {
	case ByRank:
		err = b.IndexRange.parse(lo, hi)
	case ByScore:
		b.Score, err = parseScoreRange(lo, hi)
	case ByLex:
		b.Lex, err = parseLexRange(lo, hi)
	}
	return b, err
}

// nodes returns the first and last nodes of z within bounds of scores or
// members, nil and nil when none is.
func (b *Bounds) nodes(z *ZSet) (first, last *znode) {
	if b.By == ByLex {
		return b.Lex.nodes(z)
	}
	return b.Score.nodes(z)
}

// remove removes z's nodes within bounds of scores or members, and
// returns how many it removed.
func (b *Bounds) remove(z *ZSet) int {
	if b.By == ByLex {
		return z.removeRange(b.Lex.before, b.Lex.within)
	}
	return z.removeRange(b.Score.before, b.Score.within)
}

// ZRange is ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset
// count] [WITHSCORES], ZRANGESTORE dst src start stop [BYSCORE|BYLEX]
// [REV] [LIMIT offset count] (Store: keys[0] is dst, keys[1] src), and the
// older ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX and
// ZREVRANGEBYLEX, which are ZRANGE with By and Rev fixed.
//
// A store that ranges itself reads By, Rev and the range, Offset and Count,
// and fills Result in the order the reply lists it (descending when Rev).
type ZRange struct {
	backends.Passed
	Bounds
	Rev bool
	// Offset and Count are LIMIT's (ByScore and ByLex only): skip Offset
	// members (a negative Offset leaves none), then list at most Count
	// (a negative Count: all).
	Offset, Count int64
	WithScores    bool
	Store         bool
	Result        []ZEntry
	// Stored is how many members ZRANGESTORE stored: len(Result) after
	// Run; a store that stores the range itself may set it alone.
	Stored int64
	name   string
}

// The commands ZRange serves: where the key is, and what is fixed.
type zrangeForm struct {
	key      int // index of the (source) key
	store    bool
	by       RangeBy
	byFixed  bool
	rev      bool
	revFixed bool
}

var zrangeForms = []struct {
	name string
	zrangeForm
}{
	{"zrange", zrangeForm{key: 1}},
	{"zrangestore", zrangeForm{key: 2, store: true}},
	{"zrevrange", zrangeForm{key: 1, by: ByRank, byFixed: true, rev: true, revFixed: true}},
	{"zrangebyscore", zrangeForm{key: 1, by: ByScore, byFixed: true, revFixed: true}},
	{"zrevrangebyscore", zrangeForm{key: 1, by: ByScore, byFixed: true, rev: true, revFixed: true}},
	{"zrangebylex", zrangeForm{key: 1, by: ByLex, byFixed: true, revFixed: true}},
	{"zrevrangebylex", zrangeForm{key: 1, by: ByLex, byFixed: true, rev: true, revFixed: true}},
}

// ParseZRange reads ZRANGE, ZRANGESTORE, ZREVRANGE, ZRANGEBYSCORE,
// ZREVRANGEBYSCORE, ZRANGEBYLEX and ZREVRANGEBYLEX.
func ParseZRange(args [][]byte) (Command, error) {
	var f zrangeForm
	name := ""
	for _, c := range zrangeForms {
		if is(args[0], c.name) {
			f, name = c.zrangeForm, c.name
		}
	}
	if name == "" {
		return nil, unknownCommand(args[0])
	}
	op := &ZRange{name: name, Store: f.store, Rev: f.rev, Count: -1}
	op.By = f.by
	op.Args, op.KeyAt = args, at1
	if f.store {
		op.KeyAt = at12
	}
	byFixed, revFixed := f.byFixed, f.revFixed
	for j := f.key + 3; j < len(args); j++ {
		left := len(args) - j - 1
		switch a := args[j]; {
		case !f.store && is(a, "withscores"):
			op.WithScores = true
		case is(a, "limit") && left >= 2:
			var err error
			if op.Offset, err = longArg(args[j+1]); err != nil {
				return nil, err
			}
			if op.Count, err = longArg(args[j+2]); err != nil {
				return nil, err
			}
			j += 2
		case !revFixed && is(a, "rev"):
			op.Rev, revFixed = true, true
		case !byFixed && is(a, "bylex"):
			op.By, byFixed = ByLex, true
		case !byFixed && is(a, "byscore"):
			op.By, byFixed = ByScore, true
		default:
			return nil, errSyntax
		}
	}
	// Redis tells a LIMIT by its count not being -1.
	if op.Count != -1 && op.By == ByRank {
		return nil, errRangeLimit
	}
	if op.WithScores && op.By == ByLex {
		return nil, errRangeScores
	}
	lo, hi := args[f.key+1], args[f.key+2]
	if op.Rev && op.By != ByRank {
		lo, hi = hi, lo // given as max, min
	}
	var err error
	if op.Bounds, err = parseBounds(op.By, lo, hi); err != nil {
		return nil, err
	}
	return op, nil
}

func (op *ZRange) Name() string { return op.name }

func (op *ZRange) Writes() backends.Writes { return storeWrites(op.Store) }

func (op *ZRange) Run(v backends.View) error {
	op.Result, op.Stored = op.Result[:0], 0
	src := sourceAt(op.Store)
	z, err := collOf[*ZSet](v, src)
	if err != nil {
		return err
	}
	switch {
	case z == nil:
	case op.By == ByRank:
		op.Result = z.appendRanks(op.Result, op.IndexRange, op.Rev)
	default:
		first, last := op.nodes(z)
		op.Result = z.appendSpan(op.Result, first, last, op.Offset, op.Count, op.Rev)
	}
	if op.Store {
		op.Stored = int64(len(op.Result))
		if len(op.Result) == 0 {
			v.Put(0, nil)
		} else {
			v.Put(0, op.stored(LimitsOf(v)))
		}
	}
	return nil
}

// stored is the set ZRANGESTORE makes of Result, which is not empty.
// Redis adds the members one by one to a listpack (to a skip list from the
// start when a rank range is known to be too long), which becomes a skip
// list once a member would not fit: the scores added while it was a
// listpack lose the sign of a -0.
func (op *ZRange) stored(l *Limits) *ZSet {
	es := slices.Clone(op.Result)
	listpack := !(op.By == ByRank && int64(len(es)) > l.ZSetMaxListpackEntries)
	longest := 0
	for i := range es {
		longest = max(longest, len(es[i].Member))
		listpack = listpack && fitsListpack(l, i+1, longest)
		es[i].Score = lpScore(listpack, es[i].Score)
	}
	if op.Rev {
		slices.Reverse(es)
	}
	return newZSetSorted(es)
}

func (op *ZRange) Reply(w Writer) {
	if op.Store {
		w.Int(op.Stored)
		return
	}
	writeEntries(w, op.Result, op.WithScores)
}

// appendRanks appends the members of ranks r (from the top when rev) to
// es.
func (z *ZSet) appendRanks(es []ZEntry, r IndexRange, rev bool) []ZEntry {
	from, to, ok := r.span(z.Len())
	if !ok {
		return es
	}
	n := to - from + 1
	es = slices.Grow(es, n)
	// The skip list counts ranks from 1.
	if rev {
		for x := z.sl.byRank(z.Len() - from); n > 0; x, n = x.prev, n-1 {
			es = append(es, ZEntry{x.member, x.score})
		}
		return es
	}
	for x := z.sl.byRank(from + 1); n > 0; x, n = x.next(), n-1 {
		es = append(es, ZEntry{x.member, x.score})
	}
	return es
}

// appendSpan appends to es the nodes from first to last, a range of the
// list (nil when it is empty), from last down when rev, skipping offset of
// them (a negative offset skips them all) and taking at most count (all
// when negative).
func (z *ZSet) appendSpan(es []ZEntry, first, last *znode, offset, count int64, rev bool) []ZEntry {
	if first == nil || offset < 0 {
		return es
	}
	lo, hi := int64(z.sl.rank(first)), int64(z.sl.rank(last))
	n := hi - lo + 1 - offset
	if n <= 0 || count == 0 {
		return es
	}
	if count > 0 {
		n = min(n, count)
	}
	es = slices.Grow(es, int(n))
	if rev {
		for x := z.sl.byRank(int(hi - offset)); n > 0; x, n = x.prev, n-1 {
			es = append(es, ZEntry{x.member, x.score})
		}
		return es
	}
	for x := z.sl.byRank(int(lo + offset)); n > 0; x, n = x.next(), n-1 {
		es = append(es, ZEntry{x.member, x.score})
	}
	return es
}

// ZRemRange is ZREMRANGEBYRANK key start stop, ZREMRANGEBYSCORE key min
// max and ZREMRANGEBYLEX key min max.
type ZRemRange struct {
	backends.Passed
	Bounds
	Removed int64
}

// ParseZRemRange reads ZREMRANGEBYRANK, ZREMRANGEBYSCORE and
// ZREMRANGEBYLEX.
func ParseZRemRange(args [][]byte) (Command, error) {
	by := ByLex
	switch {
	case is(args[0], "zremrangebyrank"):
		by = ByRank
	case is(args[0], "zremrangebyscore"):
		by = ByScore
	}
	b, err := parseBounds(by, args[2], args[3])
	if err != nil {
		return nil, err
	}
	op := &ZRemRange{Bounds: b}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (op *ZRemRange) Name() string {
	switch op.By {
	case ByRank:
		return "zremrangebyrank"
	case ByScore:
		return "zremrangebyscore"
	}
	return "zremrangebylex"
}
func (*ZRemRange) Writes() backends.Writes { return backends.WritesAll }

func (op *ZRemRange) Run(v backends.View) error {
	op.Removed = 0
	z, err := collOf[*ZSet](v, 0)
	if z == nil || err != nil {
		return err
	}
	var n int
	if op.By != ByRank {
		n = op.remove(z)
	} else if from, to, ok := op.span(z.Len()); ok {
		n = z.removeRanks(from+1, to+1) // 1-based
	}
	op.Removed = int64(n)
	return nil
}

func (op *ZRemRange) Reply(w Writer) { w.Int(op.Removed) }

var (
	_ Command = (*ZRange)(nil)
	_ Command = (*ZRemRange)(nil)
)
