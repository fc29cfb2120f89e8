package coll

import "github.com/pgcache/pgcache/backends"

// Slots is a View over values the caller holds, one slot per distinct key:
// what an L1 tier, an atomic run's scratch store and the tests run Ops on.
// The caller fills the slots, runs the Op, and reads back what it left.
type Slots struct {
	slot     []int            // key index -> slot
	vals     []backends.Value // per slot; nil when absent or a string
	strs     []bool           // per slot: holds a string
	replaced []bool           // per slot: Put was called
	limits   *Limits
}

// NewSlots makes a View over keys, with one empty slot per distinct key
// (a key named twice is one slot).
func NewSlots(keys []string, limits *Limits) *Slots {
	s := &Slots{slot: make([]int, len(keys)), limits: limits}
	first := make(map[string]int, len(keys))
	for i, k := range keys {
		n, ok := first[k]
		if !ok {
			n = len(s.vals)
			first[k] = n
			s.vals = append(s.vals, nil)
			s.strs = append(s.strs, false)
			s.replaced = append(s.replaced, false)
		}
		s.slot[i] = n
	}
	return s
}

// Slot is the slot of keys[i].
func (s *Slots) Slot(i int) int { return s.slot[i] }

// Len is the number of slots.
func (s *Slots) Len() int { return len(s.vals) }

// Load puts a slot's value before the Op runs: v, or a string when str.
func (s *Slots) Load(slot int, v backends.Value, str bool) {
	s.vals[slot], s.strs[slot], s.replaced[slot] = v, str && v == nil, false
}

// Value is what a slot holds after the Op: nil when absent (or a string
// the Op did not replace), and whether Put replaced it.
func (s *Slots) Value(slot int) (v backends.Value, replaced bool) {
	v = s.vals[slot]
	if v != nil && v.Len() == 0 {
		v = nil
	}
	return v, s.replaced[slot]
}

func (s *Slots) Get(i int, want backends.Type) (backends.Value, error) {
	n := s.slot[i]
	if s.strs[n] {
		return nil, backends.ErrWrongType
	}
	v := s.vals[n]
	if v == nil || v.Len() == 0 {
		return nil, nil
	}
	if want != backends.TypeNone && v.Type() != want {
		return nil, backends.ErrWrongType
	}
	return v, nil
}

func (s *Slots) Put(i int, v backends.Value) {
	n := s.slot[i]
	s.vals[n], s.strs[n], s.replaced[n] = v, false, true
}

func (s *Slots) Type(i int) backends.Type {
	n := s.slot[i]
	switch {
	case s.strs[n]:
		return backends.TypeString
	case s.vals[n] == nil || s.vals[n].Len() == 0:
		return backends.TypeNone
	}
	return s.vals[n].Type()
}

// Limits are the encoding thresholds the Slots were made with.
func (s *Slots) Limits() *Limits { return s.limits }

var _ backends.View = (*Slots)(nil)
