package coll

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// Property tests: Hash and Set under random changes, against naive models.

// hashModel is what a hash should hold: its fields in the order they were
// added (a listpack's order), their values, and its history.
type hashModel struct {
	order   []string
	vals    map[string]string
	maxLen  int
	maxElem int
}

func (m *hashModel) set(f, v string) {
	if _, ok := m.vals[f]; !ok {
		m.order = append(m.order, f)
	}
	m.vals[f] = v
	m.maxLen = max(m.maxLen, len(m.order))
	m.maxElem = max(m.maxElem, len(f), len(v))
}

func (m *hashModel) del(f string) {
	if _, ok := m.vals[f]; ok {
		delete(m.vals, f)
		m.order = slices.DeleteFunc(m.order, func(g string) bool { return g == f })
	}
}

func checkHash(t *testing.T, step int, h *Hash, m *hashModel, l *Limits) {
	t.Helper()
	if h.Len() != len(m.order) {
		t.Fatalf("step %d: Len %d, want %d", step, h.Len(), len(m.order))
	}
	var w int64
	for i := range h.Len() {
		f, v := h.At(i)
		if string(v) != m.vals[f] {
			t.Fatalf("step %d: field %q = %q, want %q", step, f, v, m.vals[f])
		}
		if h.idx[f] != int32(i) {
			t.Fatalf("step %d: idx[%q] = %d, want %d", step, f, h.idx[f], i)
		}
		w += int64(len(f)+len(v)) + perEntry
	}
	if len(h.idx) != h.Len() || h.Weight() != w {
		t.Fatalf("step %d: %d in the map, weight %d; want %d, %d", step, len(h.idx), h.Weight(), h.Len(), w)
	}
	small := int64(m.maxLen) <= l.HashMaxListpackEntries && int64(m.maxElem) <= l.HashMaxListpackValue
	if small != (h.Encoding(l) == "listpack") {
		t.Fatalf("step %d: encoding %s, want listpack %v", step, h.Encoding(l), small)
	}
	if small {
		for i, f := range m.order {
			if g, _ := h.At(i); g != f {
				t.Fatalf("step %d: field %d is %q, want %q (insertion order)", step, i, g, f)
			}
		}
	}
}

func TestHashProperties(t *testing.T) {
	l := DefaultLimits
	l.HashMaxListpackEntries, l.HashMaxListpackValue = 12, 6
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 20 {
		h, m := NewHash(), &hashModel{vals: map[string]string{}}
		var clone *Hash
		var cloned map[string]string
		for step := range 400 {
			f := "f" + strconv.Itoa(r.IntN(20+round))
			j := &Journal{}
			h.Journal(j)
			want := map[string]struct{}{}
			switch r.IntN(3) {
			case 0, 1:
				v := string(bytes.Repeat([]byte{'v'}, r.IntN(6+round/10)))
				h.Set(h.Key([]byte(f)), []byte(v))
				m.set(f, v)
				want[f] = struct{}{}
			case 2:
				_, had := m.vals[f]
				if got := h.Del(f, &l); got != had {
					t.Fatalf("Del(%q) = %v, want %v", f, got, had)
				}
				m.del(f)
				if had {
					want[f] = struct{}{}
				}
			}
			h.Journal(nil)
			if !maps.Equal(j.Members, want) && len(want)+len(j.Members) > 0 {
				t.Fatalf("step %d: journal %v, want %v", step, j.Members, want)
			}
			checkHash(t, step, h, m, &l)
			if step == 100 {
				clone, cloned = h.Clone().(*Hash), maps.Clone(m.vals)
			}
		}
		if clone != nil {
			if clone.Len() != len(cloned) {
				t.Fatalf("clone changed: %d fields, want %d", clone.Len(), len(cloned))
			}
			for f, v := range cloned {
				if got, _ := clone.Get(f); string(got) != v {
					t.Fatalf("clone changed: %q = %q, want %q", f, got, v)
				}
			}
		}
	}
}

// setModel is what a set should hold, and its history.
type setModel struct {
	has    map[string]bool
	maxLen int
	wide   bool
}

func checkSet(t *testing.T, step int, s *Set, m *setModel, l *Limits) {
	t.Helper()
	if s.Len() != len(m.has) {
		t.Fatalf("step %d: Len %d, want %d", step, s.Len(), len(m.has))
	}
	var w int64
	for i := range s.Len() {
		e := s.At(i)
		if !m.has[e] || s.idx[e] != int32(i) {
			t.Fatalf("step %d: member %d %q: in the model %v, idx %d", step, i, e, m.has[e], s.idx[e])
		}
		w += int64(len(e)) + perEntry
	}
	if len(s.idx) != s.Len() || s.Weight() != w {
		t.Fatalf("step %d: %d in the map, weight %d; want %d, %d", step, len(s.idx), s.Weight(), s.Len(), w)
	}
	intset := !m.wide && int64(m.maxLen) <= l.SetMaxIntsetEntries
	if intset != (s.Encoding(l) == "intset") {
		t.Fatalf("step %d: encoding %s, want intset %v", step, s.Encoding(l), intset)
	}
	sorted := s.Sorted(l)
	if intset && !slices.IsSortedFunc(sorted, func(a, b string) int {
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		return int(min(max(x-y, -1), 1)) // no overflow: |x|, |y| are small here
	}) {
		t.Fatalf("step %d: an intset's members are not in order: %q", step, sorted)
	}
}

func TestSetProperties(t *testing.T) {
	l := DefaultLimits
	l.SetMaxIntsetEntries = 10
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 20 {
		s, m := NewSet(), &setModel{has: map[string]bool{}}
		for step := range 300 {
			e := strconv.Itoa(r.IntN(14) - 7)
			if r.IntN(40) == 0 {
				e = "x" + e
			}
			j := &Journal{}
			s.Journal(j)
			var touched bool
			switch r.IntN(3) {
			case 0, 1:
				added := s.Add(e)
				if added == m.has[e] {
					t.Fatalf("Add(%q) = %v with the member there: %v", e, added, m.has[e])
				}
				touched = added
				m.has[e] = true
				m.maxLen = max(m.maxLen, len(m.has))
				m.wide = m.wide || !isInt(e)
			case 2:
				removed := s.Rem(e)
				if removed != m.has[e] {
					t.Fatalf("Rem(%q) = %v, want %v", e, removed, m.has[e])
				}
				touched = removed
				delete(m.has, e)
			}
			s.Journal(nil)
			if _, ok := j.Members[e]; ok != touched || len(j.Members) > 1 {
				t.Fatalf("step %d: journal %v after a change of %q: %v", step, j.Members, e, touched)
			}
			checkSet(t, step, s, m, &l)
			if step == 150 && s.Len() > 0 {
				c := s.Clone().(*Set)
				before := slices.Sorted(slices.Values(c.members))
				s.Rem(s.At(0))
				s.Add("new" + strconv.Itoa(round))
				if got := slices.Sorted(slices.Values(c.members)); !slices.Equal(got, before) {
					t.Fatalf("clone changed: %q, want %q", got, before)
				}
				m.has = map[string]bool{}
				for _, e := range s.members {
					m.has[e] = true
				}
				m.wide = true
			}
		}
		_ = round
	}
}

// cmpInts orders canonical integers as their values.
func TestCmpInts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var ns []int64
	for range 2000 {
		n := r.Int64() >> r.IntN(64)
		if r.IntN(2) == 0 {
			n = -n
		}
		ns = append(ns, n)
	}
	ns = append(ns, 0, -1, 1, 9, 10, -9, -10, -1<<63, 1<<63-1)
	ss := make([]string, len(ns))
	for i, n := range ns {
		ss[i] = strconv.FormatInt(n, 10)
	}
	sortInts(ss)
	slices.Sort(ns)
	for i, n := range ns {
		if ss[i] != strconv.FormatInt(n, 10) {
			t.Fatalf("at %d: %s, want %d", i, ss[i], n)
		}
	}
}
