package coll

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/pgcache/pgcache/backends"
)

// ZUNION, ZINTER, ZDIFF, ZINTERCARD and the *STORE forms: one Op over
// several keys. Their inputs may be sorted sets or sets, a set's members
// having score 1, as in Redis.

// setMembers is what these commands read of a set (a value of
// backends.TypeSet) given as an input: a Set must have these methods.
var _ setMembers = (*Set)(nil)

type setMembers interface {
	Len() int
	// At returns the i-th member, 0 <= i < Len(), in any order.
	At(i int) string
	// Has reports whether m is a member.
	Has(m string) bool
}

// Aggregate is how ZUNION and ZINTER combine a member's scores.
type Aggregate uint8

const (
	AggregateSum Aggregate = iota
	AggregateMin
	AggregateMax
)

// ZSetOp is ZUNION, ZINTER, ZDIFF (numkeys key [key ...] [WEIGHTS weight
// ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES], without WEIGHTS and AGGREGATE
// for ZDIFF), ZINTERCARD numkeys key [key ...] [LIMIT limit], and
// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE destination numkeys key [key ...]
// (keys[0] the destination).
type ZSetOp struct {
	backends.Passed
	setOpForm
	weights    []float64
	aggregate  Aggregate
	withScores bool
	limit      int64
	// Redis looks the keys up, and fails on one of the wrong type, before
	// it reads the options: an error in them waits for Run.
	optErr error
	result []ZEntry
	count  int64 // ZINTERCARD's
}

var zsetOpForms = []setOpForm{
	{"zunion", opUnion, false, false},
	{"zinter", opInter, false, false},
	{"zdiff", opDiff, false, false},
	{"zintercard", opInter, false, true},
	{"zunionstore", opUnion, true, false},
	{"zinterstore", opInter, true, false},
	{"zdiffstore", opDiff, true, false},
}

// ParseZSetOp reads ZUNION, ZINTER, ZDIFF, ZINTERCARD, ZUNIONSTORE,
// ZINTERSTORE and ZDIFFSTORE.
func ParseZSetOp(args [][]byte) (Command, error) {
	f, err := formOf(zsetOpForms, args[0])
	if err != nil {
		return nil, err
	}
	op := &ZSetOp{setOpForm: f}
	at := 1 // numkeys
	if op.store {
		at = 2
	}
	n, err := longArg(args[at])
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errNoInputKey(op.name)
	}
	if n > int64(len(args)-at-1) {
		return nil, errSyntax
	}
	setnum := int(n)
	op.Args, op.KeyAt = args, make([]int, 0, 1+setnum)
	if op.store {
		op.KeyAt = append(op.KeyAt, 1) // the destination
	}
	for i := range setnum {
		op.KeyAt = append(op.KeyAt, at+1+i)
	}
	op.optErr = op.parseOptions(args[at+1+setnum:], setnum)
	return op, nil
}

// parseOptions reads the options after the keys.
func (op *ZSetOp) parseOptions(opts [][]byte, setnum int) error {
	for j := 0; j < len(opts); {
		left := len(opts) - j
		switch a := opts[j]; {
		case op.kind != opDiff && !op.card && left >= setnum+1 && is(a, "weights"):
			op.weights = make([]float64, setnum)
			for i := range setnum {
				w, ok := parseScore(opts[j+1+i])
				if !ok {
					return errWeight
				}
				op.weights[i] = w
			}
			j += 1 + setnum
		case op.kind != opDiff && !op.card && left >= 2 && is(a, "aggregate"):
			switch b := opts[j+1]; {
			case is(b, "sum"):
				op.aggregate = AggregateSum
			case is(b, "min"):
				op.aggregate = AggregateMin
			case is(b, "max"):
				op.aggregate = AggregateMax
			default:
				return errSyntax
			}
			j += 2
		case !op.store && !op.card && is(a, "withscores"):
			op.withScores = true
			j++
		case op.card && left >= 2 && is(a, "limit"):
			n, ok := backends.ParseInt(opts[j+1])
			if !ok || n < 0 {
				return errLimitNegative
			}
			op.limit = n
			j += 2
		default:
			return errSyntax
		}
	}
	return nil
}

// zsrc is one input: a sorted set or a set (or nothing), with its weight.
type zsrc struct {
	val    backends.Value // nil when the key does not exist
	z      *ZSet
	s      setMembers
	weight float64
}

func (s *zsrc) len() int {
	switch {
	case s.z != nil:
		return s.z.Len()
	case s.s != nil:
		return s.s.Len()
	}
	return 0
}

// at returns the i-th member and its score (1 for a set's).
func (s *zsrc) at(i int) (string, float64) {
	if s.z != nil {
		return s.z.At(i)
	}
	return s.s.At(i), 1
}

func (s *zsrc) find(m string) (float64, bool) {
	switch {
	case s.z != nil:
		return s.z.Score(m)
	case s.s != nil:
		return 1, s.s.Has(m)
	}
	return 0, false
}

// aggregate combines val into *target as Redis's zunionInterAggregate: a
// sum of +inf and -inf is 0; a NaN is never the minimum or maximum.
func aggregate(target *float64, val float64, how Aggregate) {
	switch how {
	case AggregateSum:
		if *target += val; math.IsNaN(*target) {
			*target = 0
		}
	case AggregateMin:
		if val < *target {
			*target = val
		}
	case AggregateMax:
		if val > *target {
			*target = val
		}
	}
}

func (op *ZSetOp) Run(v backends.View) error {
	op.result, op.count = op.result[:0], 0
	first := sourceAt(op.store)
	srcs := make([]zsrc, len(op.KeyAt)-first)
	for i := range srcs {
		val, err := v.Get(first+i, backends.TypeNone)
		if err != nil {
			return err
		}
		srcs[i] = zsrc{val: val, weight: 1}
		switch {
		case val == nil:
		case val.Type() == backends.TypeZSet:
			srcs[i].z = val.(*ZSet)
		case val.Type() == backends.TypeSet:
			s, ok := val.(setMembers)
			if !ok {
				return fmt.Errorf("coll: %T, a set, has not the methods ZUNION reads", val)
			}
			srcs[i].s = s
		default:
			return backends.ErrWrongType
		}
	}
	if op.optErr != nil {
		return op.optErr
	}
	for i, w := range op.weights {
		srcs[i].weight = w
	}
	switch op.kind {
	case opUnion:
		op.union(srcs)
	case opInter:
		op.inter(srcs)
	case opDiff:
		op.diff(srcs)
	}
	if op.card {
		return nil
	}
	slices.SortFunc(op.result, func(a, b ZEntry) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.Member, b.Member))
	})
	if op.store {
		if len(op.result) == 0 {
			v.Put(0, nil)
			return nil
		}
		// Redis builds a skip list, then makes it a listpack when it
		// fits, and a listpack keeps no -0.
		longest := 0
		for _, e := range op.result {
			longest = max(longest, len(e.Member))
		}
		es := op.result
		if fitsListpack(LimitsOf(v), len(es), longest) {
			es = slices.Clone(es)
			for i := range es {
				es[i].Score = lpScore(true, es[i].Score)
			}
		}
		v.Put(0, newZSetSorted(es))
	}
	return nil
}

// bySize orders the inputs from the smallest, as Redis does before a union
// or an intersection (the order a member's scores are summed in).
func bySize(srcs []zsrc) {
	slices.SortStableFunc(srcs, func(a, b zsrc) int { return cmp.Compare(a.len(), b.len()) })
}

func (op *ZSetOp) union(srcs []zsrc) {
	bySize(srcs)
	acc := make(map[string]float64, srcs[len(srcs)-1].len())
	var order []string
	for i := range srcs {
		s := &srcs[i]
		for k := range s.len() {
			m, score := s.at(k)
			score *= s.weight
			if math.IsNaN(score) {
				score = 0
			}
			if cur, ok := acc[m]; ok {
				aggregate(&cur, score, op.aggregate)
				acc[m] = cur
				continue
			}
			acc[m] = score
			order = append(order, m)
		}
	}
	for _, m := range order {
		op.result = append(op.result, ZEntry{m, acc[m]})
	}
}

func (op *ZSetOp) inter(srcs []zsrc) {
	bySize(srcs)
	s0 := &srcs[0]
	for k := range s0.len() {
		m, score0 := s0.at(k)
		score := score0 * s0.weight
		if math.IsNaN(score) {
			score = 0
		}
		in := true
		for j := 1; j < len(srcs) && in; j++ {
			s := &srcs[j]
			if s.val == s0.val {
				aggregate(&score, score0*s.weight, op.aggregate)
			} else if v, ok := s.find(m); ok {
				aggregate(&score, v*s.weight, op.aggregate)
			} else {
				in = false
			}
		}
		if !in {
			continue
		}
		if op.card {
			op.count++
			if op.limit > 0 && op.count >= op.limit {
				return
			}
			continue
		}
		op.result = append(op.result, ZEntry{m, score})
	}
}

func (op *ZSetOp) diff(srcs []zsrc) {
	s0 := &srcs[0]
	for j := 1; j < len(srcs); j++ {
		if s0.val != nil && srcs[j].val == s0.val {
			return // a key less itself
		}
	}
	for k := range s0.len() {
		m, score := s0.at(k)
		in := false
		for j := 1; j < len(srcs) && !in; j++ {
			_, in = srcs[j].find(m)
		}
		if !in {
			op.result = append(op.result, ZEntry{m, score})
		}
	}
}

func (op *ZSetOp) Reply(w Writer) {
	switch {
	case op.card:
		w.Int(op.count)
	case op.store:
		w.Int(int64(len(op.result)))
	default:
		writeEntries(w, op.result, op.withScores)
	}
}

var _ Command = (*ZSetOp)(nil)
