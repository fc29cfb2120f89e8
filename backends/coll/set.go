package coll

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/pgcache/pgcache/backends"
)

// Set is a Redis set. Members are held in a dense slice with a map from
// member to position, so a lookup is O(1), and so is a member picked at
// random (SPOP, SRANDMEMBER), uniformly; a removal moves the last member
// into the hole.
//
// Redis 7.0 keeps a set of integers (each in canonical int64 form: no
// sign but '-', no leading zero) as an intset while it has at most
// set-max-intset-entries members, and answers it in ascending numeric
// order; any other set is a hash table, in no order a client can count
// on. A Set remembers what decides that (whether a member that is no such
// integer was ever added, and the most members it ever had) and, for a set
// that is an intset under the Limits in force, Sorted answers in Redis's
// order.
type Set struct {
	idx     map[string]int32
	members []string
	weight  int64
	// The largest the set ever was, and whether it ever held a member
	// that is not an integer: an intset never again (Encoding).
	maxLen int
	wide   bool
	j      *Journal
	// ordered caches an intset's members in numeric order, for reads
	// (SMEMBERS, SSCAN…) that run side by side: the first sorts and
	// stores it, a change drops it. It is never changed once stored.
	ordered atomic.Pointer[[]string]
}

// NewSet returns an empty set: an intset until a member makes it a hash
// table, as Redis's createIntsetObject.
func NewSet() *Set { return &Set{idx: make(map[string]int32)} }

func (s *Set) Type() backends.Type { return backends.TypeSet }
func (s *Set) Len() int            { return len(s.members) }
func (s *Set) Weight() int64       { return s.weight }

// Clone copies the set; member strings are shared (they never change).
func (s *Set) Clone() backends.Value {
	c := &Set{idx: make(map[string]int32, len(s.members)), members: slices.Clone(s.members),
		weight: s.weight, maxLen: s.maxLen, wide: s.wide}
	for i, m := range c.members {
		c.idx[m] = int32(i)
	}
	return c
}

// Journal makes the set record the members each change touches in j (nil:
// stop recording).
func (s *Set) Journal(j *Journal) { s.j = j }

// Has reports whether m is a member.
func (s *Set) Has(m string) bool {
	_, ok := s.idx[m]
	return ok
}

// Add adds m and reports whether it is new.
func (s *Set) Add(m string) bool {
	if _, ok := s.idx[m]; ok {
		return false
	}
	s.j.touch(m)
	s.ordered.Store(nil)
	if !s.wide && !isInt(m) {
		s.wide = true
	}
	s.idx[m] = int32(len(s.members))
	s.members = append(s.members, m)
	s.weight += int64(len(m)) + perEntry
	s.maxLen = max(s.maxLen, len(s.members))
	return true
}

// Rem removes m and reports whether it was there.
func (s *Set) Rem(m string) bool {
	i, ok := s.idx[m]
	if !ok {
		return false
	}
	s.j.touch(s.members[i]) // m may be borrowed
	s.ordered.Store(nil)
	s.weight -= int64(len(m)) + perEntry
	last := len(s.members) - 1
	if int(i) != last {
		s.members[i] = s.members[last]
		s.idx[s.members[i]] = i
	}
	s.members[last] = ""
	s.members = s.members[:last]
	delete(s.idx, m)
	return true
}

// At returns the i-th member, 0 <= i < Len(), in the set's own order
// (which a removal changes).
func (s *Set) At(i int) string { return s.members[i] }

// Random returns a member picked uniformly at random; the set must not be
// empty.
func (s *Set) Random() string { return s.members[rand.IntN(len(s.members))] }

// Encoding is what OBJECT ENCODING reports: intset while every member the
// set ever had was an integer and it never had more than l allows.
func (s *Set) Encoding(l *Limits) string { return either(s.intset(l), "intset", "hashtable") }

// intset reports whether the set is an intset to Redis under l (nil:
// DefaultLimits).
func (s *Set) intset(l *Limits) bool {
	if l == nil {
		l = &DefaultLimits
	}
	// Redis caps the intset at 2^30 entries whatever the setting.
	return !s.wide && int64(s.maxLen) <= min(l.SetMaxIntsetEntries, 1<<30)
}

// Sorted returns the members in the order Redis answers SMEMBERS in: an
// intset's ascending numeric order, the set's own order otherwise. The
// slice is never changed afterwards, by the set or by the caller.
func (s *Set) Sorted(l *Limits) []string {
	if !s.intset(l) {
		return slices.Clone(s.members)
	}
	if p := s.ordered.Load(); p != nil {
		return *p
	}
	out := slices.Clone(s.members)
	sortInts(out)
	s.ordered.Store(&out)
	return out
}

// rebuilt forgets the set's history, as if it were made anew from its
// members (SPOP keeps a new set of the members it leaves, in Redis).
func (s *Set) rebuilt() {
	s.ordered.Store(nil)
	s.maxLen, s.wide = len(s.members), false
	for _, m := range s.members {
		if !isInt(m) {
			s.wide = true
			break
		}
	}
}

// isInt reports whether m is an integer an intset holds: an int64 in
// canonical form (Redis's string2ll).
func isInt(m string) bool {
	_, ok := backends.ParseInt(bytesOf(m))
	return ok
}

// sortInts sorts integers in canonical form by value, without parsing
// them: a negative one is below any other; of two positive ones the
// shorter is lower, and of two negative ones the longer; same lengths
// compare as text (reversed for negative ones).
func sortInts(ms []string) {
	slices.SortFunc(ms, cmpInts)
}

func cmpInts(a, b string) int {
	an, bn := a[0] == '-', b[0] == '-'
	switch {
	case an != bn:
		if an {
			return -1
		}
		return 1
	case len(a) != len(b):
		if (len(a) < len(b)) != an {
			return -1
		}
		return 1
	case an:
		return strings.Compare(b, a)
	}
	return strings.Compare(a, b)
}

var _ backends.Value = (*Set)(nil)
