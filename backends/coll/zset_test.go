package coll

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Property tests of ZSet against a naive model (a map, sorted on demand),
// and statistical tests of its random picks.

// check verifies every invariant of z: the skip list's order, spans, back
// links and tail, the map, the dense slice and the weight; and that z holds
// what model does.
func (z *ZSet) check(t *testing.T, model map[string]float64) {
	t.Helper()
	want := make([]ZEntry, 0, len(model))
	var weight int64
	for m, s := range model {
		want = append(want, ZEntry{m, s})
		weight += int64(len(m)) + zsetEntryCost
	}
	slices.SortFunc(want, func(a, b ZEntry) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.Member, b.Member))
	})
	if z.Len() != len(want) || z.sl.length != len(want) || len(z.nodes) != len(want) {
		t.Fatalf("len %d, list %d, map %d, want %d", z.Len(), z.sl.length, len(z.nodes), len(want))
	}
	if z.Weight() != weight {
		t.Fatalf("weight %d, want %d", z.Weight(), weight)
	}
	rank := map[*znode]int{z.sl.head: 0}
	var prev *znode
	i := 0
	for x := z.sl.first(); x != nil; x = x.next() {
		if x.member != want[i].Member || x.score != want[i].Score {
			t.Fatalf("node %d is (%q %v), want (%q %v)", i, x.member, x.score, want[i].Member, want[i].Score)
		}
		if x.prev != prev {
			t.Fatalf("node %d: wrong back link", i)
		}
		if z.nodes[x.member] != x || z.dense[x.pos] != x {
			t.Fatalf("node %d (%q): map or dense slice does not point to it", i, x.member)
		}
		i++
		rank[x] = i
		prev = x
	}
	if i != len(want) || z.sl.tail != prev {
		t.Fatalf("walked %d nodes, want %d; tail ok: %v", i, len(want), z.sl.tail == prev)
	}
	for lvl := range z.sl.level {
		for x := z.sl.head; ; x = x.lvl(lvl).next {
			if lvl >= int(x.height) {
				t.Fatalf("level %d links a node of %d levels", lvl, x.height)
			}
			next := x.lvl(lvl).next
			want := z.sl.length - rank[x]
			if next != nil {
				want = rank[next] - rank[x]
			}
			if x.lvl(lvl).span != want {
				t.Fatalf("level %d: span from rank %d is %d, want %d", lvl, rank[x], x.lvl(lvl).span, want)
			}
			if next == nil {
				break
			}
		}
	}
	if n := z.sl.level; n > 0 && z.sl.head.lvl(n-1).next == nil {
		t.Fatalf("top level %d is empty", n)
	}
	for j, e := range want {
		if r, ok := z.Rank(e.Member); !ok || r != j {
			t.Fatalf("Rank(%q) = %d %v, want %d", e.Member, r, ok, j)
		}
		if m, s := z.ByRank(j); m != e.Member || s != e.Score {
			t.Fatalf("ByRank(%d) = %q %v, want %q %v", j, m, s, e.Member, e.Score)
		}
	}
}

func TestZSetModel(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		z := NewZSet()
		model := map[string]float64{}
		member := func() string { return fmt.Sprintf("m%d", r.IntN(300)) }
		score := func() float64 {
			switch r.IntN(10) {
			case 0:
				return math.Inf(1 - 2*r.IntN(2))
			case 1, 2, 3:
				return float64(r.IntN(5)) // many ties
			}
			return r.NormFloat64() * 100
		}
		for step := range 3000 {
			switch op := r.IntN(12); {
			case op < 5:
				m, s := member(), score()
				_, had := model[m]
				if added := z.Add(m, s); added == had {
					t.Fatalf("seed %d step %d: Add(%q) added %v, had %v", seed, step, m, added, had)
				}
				model[m] = s
			case op < 8:
				m := member()
				_, had := model[m]
				if z.Del(m) != had {
					t.Fatalf("seed %d step %d: Del(%q) != %v", seed, step, m, had)
				}
				delete(model, m)
			case op < 9:
				rg := ScoreRange{Min: score(), Max: score(), MinEx: r.IntN(2) == 0, MaxEx: r.IntN(2) == 0}
				n := z.removeRange(func(x *znode) bool { return !rg.AboveMin(x.score) },
					func(x *znode) bool { return rg.BelowMax(x.score) })
				want := 0
				for m, s := range model {
					if rg.Contains(s) {
						want++
						delete(model, m)
					}
				}
				if n != want {
					t.Fatalf("seed %d step %d: removed %d in %+v, want %d", seed, step, n, rg, want)
				}
			case op < 10 && z.Len() > 0:
				a, b := 1+r.IntN(z.Len()), 1+r.IntN(z.Len())
				a, b = min(a, b), max(a, b)
				for j := a; j <= b; j++ {
					m, _ := z.ByRank(a - 1)
					delete(model, m)
					z.Del(m)
				}
				// And once more by removeRanks, on a clone.
				c := z.Clone().(*ZSet)
				c.check(t, model)
			case op < 11 && z.Len() > 0:
				a, b := 1+r.IntN(z.Len()), 1+r.IntN(z.Len())
				a, b = min(a, b), max(a, b)
				for j := a; j <= b; j++ {
					m, _ := z.ByRank(a - 1 + (j - a))
					delete(model, m)
				}
				if n := z.removeRanks(a, b); n != b-a+1 {
					t.Fatalf("seed %d step %d: removeRanks(%d, %d) = %d", seed, step, a, b, n)
				}
			default:
				// Ranges found must be the model's.
				rg := ScoreRange{Min: score(), Max: score(), MinEx: r.IntN(2) == 0, MaxEx: r.IntN(2) == 0}
				var in []ZEntry
				for x := z.sl.first(); x != nil; x = x.next() {
					if rg.Contains(x.score) {
						in = append(in, ZEntry{x.member, x.score})
					}
				}
				f, l := (&Bounds{By: ByScore, Score: rg}).nodes(z)
				if len(in) == 0 {
					if f != nil || l != nil {
						t.Fatalf("seed %d step %d: empty range %+v found %v %v", seed, step, rg, f, l)
					}
				} else if f == nil || l == nil || f.member != in[0].Member || l.member != in[len(in)-1].Member {
					t.Fatalf("seed %d step %d: range %+v: first/last wrong", seed, step, rg)
				}
			}
			if step%100 == 0 {
				z.check(t, model)
			}
		}
		z.check(t, model)
	}
}

// TestZSetEveryHeight links nodes of every height, 1 to maxLevel, in a
// random order (the head allocated again taller as they come), rescores
// and removes them, and clones the set on the way: every object size
// newNode has, and levels reached past the node's first.
func TestZSetEveryHeight(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	z, model := NewZSet(), map[string]float64{}
	for _, h := range r.Perm(3 * maxLevel) {
		h = h%maxLevel + 1
		m, s := fmt.Sprint("m", len(model)), float64(r.IntN(50))
		x := newNode(h, m, s)
		x.pos = len(z.dense)
		z.dense = append(z.dense, x)
		z.nodes[m] = x
		z.weight += int64(len(m)) + zsetEntryCost
		z.sl.insert(x)
		model[m] = s
		z.check(t, model)
	}
	c := z.Clone().(*ZSet)
	cmodel := maps.Clone(model)
	for m := range model {
		if r.IntN(2) == 0 {
			s := float64(r.IntN(50))
			z.rescore(z.nodes[m], s)
			model[m] = s
		} else {
			z.Del(m)
			delete(model, m)
		}
		z.check(t, model)
	}
	c.check(t, cmodel)
}

func TestZSetLexModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	bound := func() LexBound {
		switch r.IntN(8) {
		case 0:
			return LexBound{Excl: true, Inf: -1}
		case 1:
			return LexBound{Excl: true, Inf: 1}
		}
		return LexBound{Member: fmt.Sprintf("%x", r.IntN(300)), Excl: r.IntN(2) == 0}
	}
	for range 20 {
		z := NewZSet()
		model := map[string]float64{}
		for range r.IntN(400) {
			m := fmt.Sprintf("%x", r.IntN(300))
			z.Add(m, 0)
			model[m] = 0
		}
		for range 200 {
			rg := LexRange{Min: bound(), Max: bound()}
			var in []string
			for x := z.sl.first(); x != nil; x = x.next() {
				if rg.Contains(x.member) {
					in = append(in, x.member)
				}
			}
			f, l := (&Bounds{By: ByLex, Lex: rg}).nodes(z)
			if len(in) == 0 {
				if f != nil || l != nil {
					t.Fatalf("empty range %+v found a node", rg)
				}
				continue
			}
			if f == nil || l == nil || f.member != in[0] || l.member != in[len(in)-1] {
				t.Fatalf("range %+v: first/last wrong", rg)
			}
			if rg.Empty() {
				t.Fatalf("range %+v is empty, yet %v are in it", rg, in)
			}
		}
		rg := LexRange{Min: bound(), Max: bound()}
		n := z.removeRange(func(x *znode) bool { return !rg.AboveMin(x.member) },
			func(x *znode) bool { return rg.BelowMax(x.member) })
		want := 0
		for m := range model {
			if rg.Contains(m) {
				delete(model, m)
				want++
			}
		}
		if n != want {
			t.Fatalf("removed %d in %+v, want %d", n, rg, want)
		}
		z.check(t, model)
	}
}
