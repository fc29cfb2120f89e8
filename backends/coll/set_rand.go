package coll

import (
	"math/rand/v2"
	"slices"

	"github.com/pgcache/pgcache/backends"
)

// SPOP and SRANDMEMBER: members picked uniformly at random (see distinct
// in hash_rand.go).

// SPop is SPOP key [count].
type SPop struct {
	backends.Passed
	count     int64
	withCount bool
	out       []string
}

// ParseSPop reads SPOP.
func ParseSPop(args [][]byte) (Command, error) { return fresh(new(SPop), args) }

func (op *SPop) reset() { *op = SPop{} }

func (op *SPop) parse(args [][]byte) (err error) {
	op.reset()
	if op.count, op.withCount, err = optionalCount(args, countArg); err != nil {
		return err
	}
	op.Args, op.KeyAt = args, at1
	return nil
}

func (*SPop) Name() string            { return "spop" }
func (*SPop) Writes() backends.Writes { return backends.WritesAll }

// Run needs the View's Limits: members popped in a set's order come in
// numeric order from an intset.
func (op *SPop) Run(v backends.View) error {
	op.out = nil
	s, err := collOf[*Set](v, 0)
	if s == nil || err != nil {
		return err
	}
	size := s.Len()
	count := int(min(op.count, int64(size)))
	switch {
	case !op.withCount:
		m := s.Random()
		s.Rem(m)
		op.out = []string{m}
	case count == 0:
	case count == size:
		// The whole set, in the order of a set made of its members, as
		// Redis answers it (through SUNION's code).
		op.out = slices.Clone(s.members)
		if l := LimitsOf(v); len(op.out) <= int(min(l.SetMaxIntsetEntries, 1<<30)) && allInts(op.out) {
			sortInts(op.out)
		}
		v.Put(0, nil)
	case (size-count)*5 > count:
		// Few of them: popped one by one.
		op.out = make([]string, 0, count)
		for range count {
			m := s.Random()
			s.Rem(m)
			op.out = append(op.out, m)
		}
	default:
		// Most of them: Redis picks those to keep, makes a new set of
		// them, and answers the rest in the old set's order.
		keep := make([]bool, size)
		for _, i := range distinct(size, size-count, false) {
			keep[i] = true
		}
		op.out = make([]string, 0, count)
		for i, m := range s.members {
			if !keep[i] {
				op.out = append(op.out, m)
			}
		}
		if s.intset(LimitsOf(v)) {
			sortInts(op.out)
		}
		for _, m := range op.out {
			s.Rem(m)
		}
		s.rebuilt()
	}
	return nil
}

func (op *SPop) Reply(w Writer) {
	if !op.withCount {
		writeOne(w, op.out)
		return
	}
	writeMembers(w, op.out)
}

// writeOne writes the member SPOP or SRANDMEMBER without a count picked,
// or nil when there was no key.
func writeOne(w Writer, out []string) {
	if out == nil {
		w.Null()
		return
	}
	w.Bulk(bytesOf(out[0]))
}

func allInts(ms []string) bool {
	for _, m := range ms {
		if !isInt(m) {
			return false
		}
	}
	return true
}

// SRandMember is SRANDMEMBER key [count].
type SRandMember struct {
	backends.Passed
	count     int64
	withCount bool
	out       []string
	// For a negative count larger than the set: a copy of the set that
	// Reply picks from (see HRandField).
	pool  []string
	poolN int64
}

// ParseSRandMember reads SRANDMEMBER.
func ParseSRandMember(args [][]byte) (Command, error) {
	n, given, err := optionalCount(args, parseRandCount)
	if err != nil {
		return nil, err
	}
	op := &SRandMember{count: n, withCount: given}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*SRandMember) Name() string            { return "srandmember" }
func (*SRandMember) Writes() backends.Writes { return backends.ReadOnly }

// Run needs the View's Limits: a whole intset comes in numeric order.
func (op *SRandMember) Run(v backends.View) error {
	op.out, op.pool, op.poolN = nil, nil, 0
	s, err := collOf[*Set](v, 0)
	if s == nil || err != nil {
		return err
	}
	size, count := s.Len(), op.count
	switch {
	case !op.withCount:
		op.out = []string{s.Random()}
	case count == 0:
	case count < 0 && -count > int64(size):
		op.pool, op.poolN = slices.Clone(s.members), -count
	case count < 0 || count == 1:
		op.out = make([]string, 0, abs(count))
		for range abs(count) {
			op.out = append(op.out, s.Random())
		}
	case count >= int64(size):
		op.out = s.Sorted(LimitsOf(v))
	default:
		op.out = make([]string, 0, count)
		for _, i := range distinct(size, int(count), false) {
			op.out = append(op.out, s.At(i))
		}
	}
	return nil
}

func (op *SRandMember) Reply(w Writer) {
	if !op.withCount {
		writeOne(w, op.out)
		return
	}
	if op.pool != nil {
		w.Array(int(op.poolN))
		for range op.poolN {
			w.Bulk(bytesOf(op.pool[rand.IntN(len(op.pool))]))
		}
		return
	}
	w.Array(len(op.out))
	for _, m := range op.out {
		w.Bulk(bytesOf(m))
	}
}
