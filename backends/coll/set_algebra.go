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

// setsOf returns the sets of keys[from:], nil for a missing key.
func setsOf(v backends.View, from, n int) ([]*Set, error) {
	sets := make([]*Set, n)
	for i := range sets {
		s, err := collOf[*Set](v, from+i)
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

// setOpKind is what a command of several sets computes.
type setOpKind uint8

const (
	opUnion setOpKind = iota
	opInter
	opDiff
)

// setOpForm is one of the commands of several sets, sorted or not: what it
// computes, and whether it stores it (in keys[0]) or counts it.
type setOpForm struct {
	name        string
	kind        setOpKind
	store, card bool
}

func (f *setOpForm) Name() string            { return f.name }
func (f *setOpForm) Writes() backends.Writes { return storeWrites(f.store) }

// formOf is the form named name in forms.
func formOf(forms []setOpForm, name []byte) (setOpForm, error) {
	for _, f := range forms {
		if is(name, f.name) {
			return f, nil
		}
	}
	return setOpForm{}, unknownCommand(name)
}

var setOpForms = []setOpForm{
	{"sinter", opInter, false, false},
	{"sintercard", opInter, false, true},
	{"sinterstore", opInter, true, false},
	{"sunion", opUnion, false, false},
	{"sunionstore", opUnion, true, false},
	{"sdiff", opDiff, false, false},
	{"sdiffstore", opDiff, true, false},
}

// SetOp is SINTER, SUNION and SDIFF key [key ...], their *STORE forms
// (destination key [key ...]) and SINTERCARD numkeys key [key ...] [LIMIT
// limit].
type SetOp struct {
	backends.Passed
	setOpForm
	limit int64 // SINTERCARD's, 0 for none
	out   []string
	n     int64 // what a *STORE stored, or SINTERCARD counted
}

// ParseSetOp reads SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE,
// SDIFF and SDIFFSTORE.
func ParseSetOp(args [][]byte) (Command, error) {
	f, err := formOf(setOpForms, args[0])
	if err != nil {
		return nil, err
	}
	op := &SetOp{setOpForm: f}
	op.Args, op.KeyAt = args, keysAt(1, len(args)-1)
	if !f.card {
		return op, nil
	}
	numkeys, ok := backends.ParseInt(args[1])
	if !ok || numkeys < 1 {
		return nil, errNumkeys
	}
	if numkeys > int64(len(args)-2) {
		return nil, errNumkeysArgs
	}
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
	op.KeyAt = keysAt(2, int(numkeys))
	return op, nil
}

// Run needs the View's Limits (SINTER, SUNION, SDIFF): Redis answers a
// set that is an intset in numeric order.
func (op *SetOp) Run(v backends.View) error {
	op.out, op.n = nil, 0
	from := sourceAt(op.store)
	sets, err := setsOf(v, from, len(op.KeyAt)-from)
	if err != nil {
		return err
	}
	// The result is built as Redis builds it, member by member into a new
	// set, so that its encoding (and so its order) is what Redis's is.
	var result *Set
	switch op.kind {
	case opInter:
		op.inter(v, sets)
		return nil
	case opUnion:
		result = NewSet()
		for _, s := range sets {
			if s != nil {
				for _, m := range s.members {
					result.Add(m)
				}
			}
		}
	case opDiff:
		result = op.difference(sets)
	}
	if op.store {
		op.n = store(v, result)
		return nil
	}
	op.out = result.Sorted(LimitsOf(v))
	return nil
}

// inter is SINTER, SINTERCARD and SINTERSTORE: Redis walks the smallest
// set, in its order (numeric for an intset).
func (op *SetOp) inter(v backends.View, sets []*Set) {
	if slices.Contains(sets, nil) {
		if op.store {
			store(v, nil)
		}
		return
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
}

// difference is the first set less the others, by the algorithm Redis
// would pick: that decides whether the result ever held more members, or
// members that are not integers, than it ends with (its encoding).
func (op *SetOp) difference(sets []*Set) *Set {
	result := NewSet()
	first := sets[0]
	if first == nil {
		return result
	}
	from := sourceAt(op.store)
	key0 := op.Args[op.KeyAt[from]]
	for i, s := range sets[1:] {
		// The first set named again: the difference is empty.
		if s != nil && bytes.Equal(op.Args[op.KeyAt[from+1+i]], key0) {
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

func (op *SetOp) Reply(w Writer) {
	if op.store || op.card {
		w.Int(op.n)
		return
	}
	writeMembers(w, op.out)
}

var _ Command = (*SetOp)(nil)
