package coll

import (
	"bytes"
	"slices"

	"github.com/pgcache/pgcache/backends"
)

// The commands of several sets: SINTER, SINTERCARD, SINTERSTORE, SUNION,
// SUNIONSTORE, SDIFF, SDIFFSTORE. A missing key is an empty set; a key of
// another type fails the command even after a missing one. A *STORE
// command's keys[0] is its destination, which it replaces (or deletes,
// when the result is empty) once the result is whole, so a destination
// that is also a source is read first.

// keysFrom is the KeyAt of a command whose keys are its arguments from
// index from on.
func keysFrom(args [][]byte, from int) []int {
	at := make([]int, len(args)-from)
	for i := range at {
		at[i] = from + i
	}
	return at
}

// setsOf returns the sets of keys[from:], nil for a missing key.
func setsOf(v backends.View, from, n int) ([]*Set, error) {
	sets := make([]*Set, n)
	for i := range sets {
		s, err := setOf(v, from+i)
		if err != nil {
			return nil, err
		}
		sets[i] = s
	}
	return sets, nil
}

// storeWrites is the Writes of a command that reads its sources and, as a
// *STORE, writes its destination, keys[0].
func storeWrites(store bool) backends.Writes {
	if store {
		return backends.WritesFirst
	}
	return backends.ReadOnly
}

// sourceAt is the index of a command's (first) source key: 1 after a
// *STORE's destination.
func sourceAt(store bool) int {
	if store {
		return 1
	}
	return 0
}

// store makes result keys[0]'s value, or deletes keys[0] when it is empty,
// and returns its size.
func store(v backends.View, result *Set) int64 {
	if result == nil || result.Len() == 0 {
		v.Put(0, nil)
		return 0
	}
	v.Put(0, result)
	return int64(result.Len())
}

// SInter is SINTER key [key ...], SINTERSTORE destination key [key ...]
// and SINTERCARD numkeys key [key ...] [LIMIT limit].
type SInter struct {
	backends.Passed
	from  int // keys[from:] are the sets
	store bool
	card  bool
	limit int64 // SINTERCARD's, 0 for none
	out   []string
	n     int64
}

// ParseSInter reads SINTER.
func ParseSInter(args [][]byte) (Command, error) {
	op := &SInter{}
	op.Args, op.KeyAt = args, keysFrom(args, 1)
	return op, nil
}

// ParseSInterStore reads SINTERSTORE.
func ParseSInterStore(args [][]byte) (Command, error) {
	op := &SInter{from: 1, store: true}
	op.Args, op.KeyAt = args, keysFrom(args, 1)
	return op, nil
}

// ParseSInterCard reads SINTERCARD.
func ParseSInterCard(args [][]byte) (Command, error) {
	numkeys, ok := backends.ParseInt(args[1])
	if !ok || numkeys < 1 {
		return nil, errNumkeys
	}
	if numkeys > int64(len(args)-2) {
		return nil, errNumkeysArgs
	}
	op := &SInter{card: true}
	for i := 2 + int(numkeys); i < len(args); i++ {
		if !is(args[i], "limit") || i+1 == len(args) {
			return nil, errSyntax
		}
		i++
		n, ok := backends.ParseInt(args[i])
		if !ok || n < 0 {
			return nil, errLimitNegative
		}
		op.limit = n
	}
	op.Args, op.KeyAt = args, keysFrom(args[:2+numkeys], 2)
	return op, nil
}

func (op *SInter) Name() string {
	switch {
	case op.store:
		return "sinterstore"
	case op.card:
		return "sintercard"
	}
	return "sinter"
}

func (op *SInter) Writes() backends.Writes { return storeWrites(op.store) }

// Run needs the View's Limits (SINTER): Redis walks the smallest set, in
// its order, numeric for an intset.
func (op *SInter) Run(v backends.View) error {
	op.out, op.n = nil, 0
	sets, err := setsOf(v, op.from, len(op.KeyAt)-op.from)
	if err != nil {
		return err
	}
	if slices.Contains(sets, nil) {
		if op.store {
			store(v, nil)
		}
		return nil
	}
	// The smallest first (a stable sort, as glibc's qsort is for these).
	slices.SortStableFunc(sets, func(a, b *Set) int { return a.Len() - b.Len() })
	first, rest := sets[0], sets[1:]
	in := func(m string) bool {
		for _, s := range rest {
			if s != first && !s.Has(m) {
				return false
			}
		}
		return true
	}
	switch {
	case op.card:
		for _, m := range first.members {
			if in(m) {
				op.n++
				if op.limit > 0 && op.n >= op.limit {
					break
				}
			}
		}
	case op.store:
		result := NewSet()
		for _, m := range first.members {
			if in(m) {
				result.Add(m)
			}
		}
		op.n = store(v, result)
	default:
		for _, m := range first.Sorted(LimitsOf(v)) {
			if in(m) {
				op.out = append(op.out, m)
			}
		}
	}
	return nil
}

func (op *SInter) Reply(w Writer) {
	if op.store || op.card {
		w.Int(op.n)
		return
	}
	writeMembers(w, op.out)
}

// SUnion is SUNION key [key ...] and SUNIONSTORE destination key [key
// ...], and SDIFF and SDIFFSTORE, which take the same arguments.
type SUnion struct {
	backends.Passed
	from  int
	store bool
	diff  bool
	out   []string
	n     int64
}

// ParseSUnion reads SUNION.
func ParseSUnion(args [][]byte) (Command, error) { return parseUnionDiff(args, false, false), nil }

// ParseSUnionStore reads SUNIONSTORE.
func ParseSUnionStore(args [][]byte) (Command, error) { return parseUnionDiff(args, true, false), nil }

// ParseSDiff reads SDIFF.
func ParseSDiff(args [][]byte) (Command, error) { return parseUnionDiff(args, false, true), nil }

// ParseSDiffStore reads SDIFFSTORE.
func ParseSDiffStore(args [][]byte) (Command, error) { return parseUnionDiff(args, true, true), nil }

func parseUnionDiff(args [][]byte, store, diff bool) *SUnion {
	op := &SUnion{store: store, diff: diff}
	if store {
		op.from = 1
	}
	op.Args, op.KeyAt = args, keysFrom(args, 1)
	return op
}

func (op *SUnion) Name() string {
	switch {
	case op.diff && op.store:
		return "sdiffstore"
	case op.diff:
		return "sdiff"
	case op.store:
		return "sunionstore"
	}
	return "sunion"
}

func (op *SUnion) Writes() backends.Writes { return storeWrites(op.store) }

// Run needs the View's Limits (SUNION, SDIFF): a result that is an intset
// answers in numeric order.
func (op *SUnion) Run(v backends.View) error {
	op.out, op.n = nil, 0
	sets, err := setsOf(v, op.from, len(op.KeyAt)-op.from)
	if err != nil {
		return err
	}
	// The result is built as Redis builds it, member by member into a new
	// set, so that its encoding (and so its order) is what Redis's is.
	var result *Set
	if op.diff {
		result = op.difference(sets)
	} else {
		result = NewSet()
		for _, s := range sets {
			if s != nil {
				for _, m := range s.members {
					result.Add(m)
				}
			}
		}
	}
	if op.store {
		op.n = store(v, result)
		return nil
	}
	op.out = result.Sorted(LimitsOf(v))
	return nil
}

// difference is the first set less the others, by the algorithm Redis
// would pick: that decides whether the result ever held more members, or
// members that are not integers, than it ends with (its encoding).
func (op *SUnion) difference(sets []*Set) *Set {
	result := NewSet()
	first := sets[0]
	if first == nil {
		return result
	}
	key0 := op.Args[op.KeyAt[op.from]]
	for i, s := range sets[1:] {
		// The first set named again: the difference is empty.
		if s != nil && bytes.Equal(op.Args[op.KeyAt[op.from+1+i]], key0) {
			return result
		}
	}
	// Redis's costs: walking the first set once per set (halved, it is
	// cheaper per step), against walking every set once.
	var one, two int
	for _, s := range sets {
		if s != nil {
			one += first.Len()
			two += s.Len()
		}
	}
	if one/2 <= two {
		for _, m := range first.members {
			in := false
			for _, s := range sets[1:] {
				if s != nil && s.Has(m) {
					in = true
					break
				}
			}
			if !in {
				result.Add(m)
			}
		}
		return result
	}
	for _, m := range first.members {
		result.Add(m)
	}
	for _, s := range sets[1:] {
		if s == nil {
			continue
		}
		for _, m := range s.members {
			result.Rem(m)
		}
		if result.Len() == 0 {
			break
		}
	}
	return result
}

func (op *SUnion) Reply(w Writer) {
	if op.store {
		w.Int(op.n)
		return
	}
	writeMembers(w, op.out)
}
