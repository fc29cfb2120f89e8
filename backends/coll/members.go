package coll

import (
	"fmt"

	"github.com/pgcache/pgcache/backends"
)

// Member is one member of a collection as a store keeps it outside memory
// (a row of PostgreSQL's items table, a field of Valkey's hash): a hash's
// field and its value, a set's member, a sorted set's member and its
// score, a list's element (Value; Member unused), in the list's order.
type Member struct {
	Member []byte
	Score  float64
	Value  []byte
}

// New returns an empty collection of type t.
func New(t backends.Type) backends.Value {
	switch t {
	case backends.TypeHash:
		return NewHash()
	case backends.TypeList:
		return NewList()
	case backends.TypeSet:
		return NewSet()
	case backends.TypeZSet:
		return NewZSet()
	}
	panic(fmt.Sprintf("coll: New of type %v", t))
}

// Add adds a member to v as Each gives it: a list's is appended at the
// tail. The member's bytes are kept: the caller must not change them.
func Add(v backends.Value, m Member) {
	switch v := v.(type) {
	case *Hash:
		v.Set(string(m.Member), m.Value)
	case *List:
		v.Push(Right, m.Value)
	case *Set:
		v.Add(string(m.Member))
	case *ZSet:
		v.Add(string(m.Member), m.Score)
	default:
		panic(fmt.Sprintf("coll: Add to %T", v))
	}
}

// Each calls fn for each member of v until fn returns false: a list's from
// head to tail, the others in no particular order. The bytes are v's:
// never changed, but v must not change while Each runs.
func Each(v backends.Value, fn func(Member) bool) {
	switch v := v.(type) {
	case *Hash:
		for i := range v.Len() {
			f, val := v.At(i)
			if !fn(Member{Member: bytesOf(f), Value: val}) {
				return
			}
		}
	case *List:
		for i := range v.Len() {
			if !fn(Member{Value: v.At(i)}) {
				return
			}
		}
	case *Set:
		for i := range v.Len() {
			if !fn(Member{Member: bytesOf(v.At(i))}) {
				return
			}
		}
	case *ZSet:
		for i := range v.Len() {
			m, score := v.At(i)
			if !fn(Member{Member: bytesOf(m), Score: score}) {
				return
			}
		}
	default:
		panic(fmt.Sprintf("coll: Each of %T", v))
	}
}

// Lookup returns v's member named m (a list has none: ok is false).
func Lookup(v backends.Value, m string) (Member, bool) {
	switch v := v.(type) {
	case *Hash:
		val, ok := v.Get(m)
		return Member{Member: bytesOf(m), Value: val}, ok
	case *Set:
		return Member{Member: bytesOf(m)}, v.Has(m)
	case *ZSet:
		score, ok := v.Score(m)
		return Member{Member: bytesOf(m), Score: score}, ok
	}
	return Member{}, false
}

// remove removes v's member m (a list has none) and reports whether it
// was there; l is a hash's Limits (Hash.Del).
func remove(v backends.Value, m string, l *Limits) bool {
	switch v := v.(type) {
	case *Hash:
		return v.Del(m, l)
	case *Set:
		return v.Rem(m)
	case *ZSet:
		return v.Del(m)
	}
	return false
}

// Record makes v record in j the members each change touches (nil: stop).
func Record(v backends.Value, j *Journal) {
	switch v := v.(type) {
	case *Hash:
		v.Journal(j)
	case *List:
		v.Journal(j)
	case *Set:
		v.Journal(j)
	case *ZSet:
		v.Journal(j)
	default:
		panic(fmt.Sprintf("coll: Record on %T", v))
	}
}
