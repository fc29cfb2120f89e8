package coll

import (
	"bytes"
	"math"
	"slices"

	"github.com/pgcache/pgcache/backends"
)

// SORT and SORT_RO: the elements of a list, a set or a sorted set, sorted
// as numbers (or as bytes with ALPHA), in a LIMIT window, answered or
// stored as a list. BY and GET with a pattern read keys the request does
// not name, which pgcache cannot route or lock beforehand: they are
// refused as Redis Cluster refuses them. The patterns that read no key
// are served as Redis serves them: BY without '*' (BY nosort) keeps the
// value's own order, GET # is the element, GET without '*' nothing.

// sortGetElement is GET's pattern of the element itself.
var sortGetElement = []byte("#")

// Sort is SORT key [BY pattern] [LIMIT offset count] [ASC|DESC] [ALPHA]
// [STORE destination], and SORT_RO without STORE. With STORE, keys[0] is
// the destination and keys[1] the source, as the other *STORE commands
// have them.
type Sort struct {
	backends.Passed
	ro            bool
	store         bool
	desc, alpha   bool
	dontsort      bool
	offset, count int64    // LIMIT's; count -1 for none
	gets          [][]byte // GET's patterns, each # or without '*'
	out           [][]byte // with gets, len(gets) entries an element; nil: none
	n             int64
}

// ParseSort reads SORT.
func ParseSort(args [][]byte) (Command, error) { return parseSort(args, false) }

// ParseSortRO reads SORT_RO.
func ParseSortRO(args [][]byte) (Command, error) { return parseSort(args, true) }

func parseSort(args [][]byte, ro bool) (Command, error) {
	op := &Sort{ro: ro, count: -1}
	dst := 0
	for i := 2; i < len(args); i++ {
		left := len(args) - i - 1
		switch a := args[i]; {
		case is(a, "asc"):
			op.desc = false
		case is(a, "desc"):
			op.desc = true
		case is(a, "alpha"):
			op.alpha = true
		case is(a, "limit") && left >= 2:
			off, ok1 := backends.ParseInt(args[i+1])
			n, ok2 := backends.ParseInt(args[i+2])
			if !ok1 || !ok2 {
				return nil, errNotInteger
			}
			op.offset, op.count = off, n
			i += 2
		case is(a, "store") && left >= 1 && !ro:
			op.store, dst = true, i+1
			i++
		case is(a, "by") && left >= 1:
			if bytes.IndexByte(args[i+1], '*') >= 0 {
				return nil, errSortBy
			}
			op.dontsort = true
			i++
		case is(a, "get") && left >= 1:
			if bytes.IndexByte(args[i+1], '*') >= 0 {
				return nil, errSortGet
			}
			op.gets = append(op.gets, args[i+1])
			i++
		default:
			return nil, errSyntax
		}
	}
	op.Args, op.KeyAt = args, at1
	if op.store {
		op.KeyAt = []int{dst, 1}
	}
	return op, nil
}

func (op *Sort) Name() string { return either(op.ro, "sort_ro", "sort") }

func (op *Sort) Writes() backends.Writes { return storeWrites(op.store) }

// Run follows Redis 7.0's sortCommand: the window is taken from the value
// in its own order when nothing is sorted (a list's or a sorted set's,
// from the end with DESC), after the sort otherwise. A set is sorted
// ALPHA when nothing else orders it and the result is stored, so that
// what is stored does not depend on the set's layout.
func (op *Sort) Run(v backends.View) error {
	op.out, op.n = op.out[:0], 0
	src := sourceAt(op.store)
	val, err := v.Get(src, backends.TypeNone)
	if err != nil {
		return err
	}
	dontsort, alpha := op.dontsort, op.alpha
	if val != nil {
		switch val.Type() {
		case backends.TypeList, backends.TypeZSet:
		case backends.TypeSet:
			if dontsort && op.store {
				dontsort, alpha = false, true
			}
		default:
			return backends.ErrWrongType
		}
	}
	n := 0
	if val != nil {
		n = val.Len()
	}
	start, end := op.window(n)
	if dontsort && val != nil && val.Type() != backends.TypeSet {
		op.out = ordered(val, start, end, op.desc, op.out)
	} else {
		elems := elementsOf(val, LimitsOf(v))
		if !dontsort {
			if err := sortElements(elems, op.desc, alpha); err != nil {
				return err
			}
		}
		if start <= end {
			op.out = append(op.out, elems[start:end+1]...)
		}
	}
	op.out = op.got(op.out)
	if !op.store {
		return nil
	}
	if len(op.out) == 0 {
		v.Put(0, nil)
		return nil
	}
	l := NewList()
	for _, e := range op.out {
		if e == nil {
			e = []byte{} // GET's nothing is stored as an empty string, as Redis stores it
		}
		l.Push(Right, e)
	}
	v.Put(0, l)
	op.n = int64(l.Len())
	return nil
}

// got is the window's elements as GET gives them: for each, one entry a
// pattern, the element for #, nil for a pattern without '*'. elems is
// returned as it is without GET.
func (op *Sort) got(elems [][]byte) [][]byte {
	if len(op.gets) == 0 {
		return elems
	}
	out := make([][]byte, 0, len(elems)*len(op.gets))
	for _, e := range elems {
		for _, g := range op.gets {
			if bytes.Equal(g, sortGetElement) {
				out = append(out, e)
			} else {
				out = append(out, nil)
			}
		}
	}
	return out
}

// window is LIMIT's window over n elements as Redis computes it: indexes
// start..end, empty when end < start.
func (op *Sort) window(n int) (start, end int) {
	s, e := max(op.offset, 0), int64(n)-1
	if op.count >= 0 {
		e = s + op.count - 1
	}
	if s >= int64(n) {
		s, e = int64(n)-1, int64(n)-2
	}
	e = min(e, int64(n)-1)
	return int(s), int(e)
}

// ordered appends the elements start..end of a list, or the members of a
// sorted set by rank, counted from the end when desc.
func ordered(val backends.Value, start, end int, desc bool, out [][]byte) [][]byte {
	for i := start; i <= end; i++ {
		at := i
		if desc {
			at = val.Len() - 1 - i
		}
		switch val := val.(type) {
		case *List:
			out = append(out, val.At(at))
		case *ZSet:
			m, _ := val.ByRank(at)
			out = append(out, bytesOf(m))
		}
	}
	return out
}

// elementsOf is what SORT sorts: a list's elements, a set's members (in
// the order Redis walks them), a sorted set's members; nil for no value.
func elementsOf(val backends.Value, l *Limits) [][]byte {
	switch val := val.(type) {
	case *List:
		out := make([][]byte, val.Len())
		for i := range out {
			out[i] = val.At(i)
		}
		return out
	case *Set:
		ms := val.Sorted(l)
		out := make([][]byte, len(ms))
		for i, m := range ms {
			out[i] = bytesOf(m)
		}
		return out
	case *ZSet:
		out := make([][]byte, 0, val.Len())
		for m := range val.All() {
			out = append(out, bytesOf(m))
		}
		return out
	}
	return nil
}

// sortElements sorts elems as numbers, equal ones by their bytes, or by
// their bytes alone with alpha; reversed with desc. An element that is
// not a whole number as C's strtod reads it fails the sort.
func sortElements(elems [][]byte, desc, alpha bool) error {
	sign := 1
	if desc {
		sign = -1
	}
	if alpha {
		slices.SortFunc(elems, func(a, b []byte) int { return sign * bytes.Compare(a, b) })
		return nil
	}
	type scored struct {
		e []byte
		f float64
	}
	s := make([]scored, len(elems))
	for i, e := range elems {
		f, n, erange := strtod(e)
		if n != len(e) || erange || math.IsNaN(f) {
			return errSortNotFloat
		}
		s[i] = scored{e, f}
	}
	slices.SortFunc(s, func(a, b scored) int {
		switch {
		case a.f < b.f:
			return -sign
		case a.f > b.f:
			return sign
		}
		return sign * bytes.Compare(a.e, b.e)
	})
	for i := range s {
		elems[i] = s[i].e
	}
	return nil
}

func (op *Sort) Reply(w Writer) {
	if op.store {
		w.Int(op.n)
		return
	}
	bulksOrNull(w, op.out)
}
