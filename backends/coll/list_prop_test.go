package coll

import (
	"bytes"
	"fmt"
	"github.com/pgcache/pgcache/backends"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestListModel runs random operations on a List and on a plain slice,
// and checks after each that they hold the same elements, that Weight is
// what the elements add up to, that the ring stays within its bounds
// (full to a quarter at least, once above its least size), that every
// change is journaled, and that a clone taken on the way is untouched.
func TestListModel(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		l, model := NewList(), [][]byte(nil)
		var clone *List
		var cloned [][]byte
		elem := func() []byte { return []byte(fmt.Sprint(r.IntN(5))) }
		for step := range 3000 {
			j := &Journal{}
			l.Journal(j)
			before := slices.Clone(model)
			end := End(r.IntN(2))
			// Phases of mostly pushes, then mostly pops, so the ring
			// grows to hundreds and shrinks back.
			pushy := (step/500)%2 == 0
			op := r.IntN(12)
			switch {
			case op < 4 && pushy, op < 2:
				e := elem()
				l.Push(end, e)
				if end == Left {
					model = append([][]byte{e}, model...)
				} else {
					model = append(model, e)
				}
			case op < 6 && len(model) > 0:
				e := l.Pop(end)
				want := model[0]
				if end == Left {
					model = model[1:]
				} else {
					want = model[len(model)-1]
					model = model[:len(model)-1]
				}
				if !bytes.Equal(e, want) {
					t.Fatalf("seed %d step %d: Pop(%v) = %q, want %q", seed, step, end, e, want)
				}
			case op == 6:
				k := int64(r.IntN(8))
				got := l.PopN(nil, end, k)
				k = min(k, int64(len(model)))
				var want [][]byte
				if end == Left {
					want, model = slices.Clone(model[:k]), model[k:]
				} else {
					want = slices.Clone(model[len(model)-int(k):])
					slices.Reverse(want)
					model = model[:len(model)-int(k)]
				}
				if !equalElems(got, want) {
					t.Fatalf("seed %d step %d: PopN(%v, %d) = %q, want %q", seed, step, end, k, got, want)
				}
			case op == 7 && len(model) > 0:
				i, e := r.IntN(len(model)), elem()
				l.Set(i, e)
				model[i] = e
			case op == 8:
				i, e := r.IntN(len(model)+1), elem()
				l.Insert(i, e)
				model = slices.Insert(model, i, e)
			case op == 9:
				e, count := elem(), int64(r.IntN(7)-3)
				got := l.Remove(e, count)
				var want int64
				model, want = removeModel(model, e, count)
				if got != want {
					t.Fatalf("seed %d step %d: Remove(%q, %d) = %d, want %d", seed, step, e, count, got, want)
				}
			case op == 10:
				start, stop := int64(r.IntN(20)-10), int64(r.IntN(40)-10)
				from, to, ok := IndexRange{start, stop}.span(len(model))
				l.Trim(from, to, ok)
				if ok {
					model = model[from : to+1]
				} else {
					model = nil
				}
			case op == 11 && clone == nil:
				clone, cloned = l.Clone().(*List), slices.Clone(model)
			}
			if !equalElems(l.Range(nil, 0, l.Len()-1, false), model) && len(model) > 0 {
				t.Fatalf("seed %d step %d: list %q, want %q", seed, step, l.Range(nil, 0, l.Len()-1, false), model)
			}
			checkList(t, l, model)
			if changed := !equalElems(before, model); changed && !j.All {
				t.Fatalf("seed %d step %d: a change not journaled", seed, step)
			}
			if clone != nil {
				checkList(t, clone, cloned)
			}
		}
	}
}

// TestListLongModel is TestListModel's check through lists long enough
// for blocks: pushed at random ends to thousands (the directory doubling
// over and over, the head wrapping around it), changed in the middle,
// trimmed to a window, popped down to a few (back to one slice) and
// pushed up again, with the same list as a queue between.
func TestListLongModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 11))
	l, model := NewList(), [][]byte(nil)
	var clone *List
	var cloned [][]byte
	step := 0
	check := func() {
		t.Helper()
		step++
		if step%61 == 0 || l.Len() < 2*listBlock {
			checkList(t, l, model)
		}
	}
	push := func(k int) {
		for range k {
			e := []byte(fmt.Sprint(r.IntN(1000)))
			if r.IntN(2) == 0 {
				l.Push(Left, e)
				model = append([][]byte{e}, model...)
			} else {
				l.Push(Right, e)
				model = append(model, e)
			}
			check()
		}
	}
	popTo := func(n int) {
		for len(model) > n {
			if r.IntN(2) == 0 {
				if got := l.Pop(Left); !bytes.Equal(got, model[0]) {
					t.Fatalf("Pop(Left) = %q, want %q", got, model[0])
				}
				model = model[1:]
			} else {
				if got := l.Pop(Right); !bytes.Equal(got, model[len(model)-1]) {
					t.Fatalf("Pop(Right) = %q, want %q", got, model[len(model)-1])
				}
				model = model[:len(model)-1]
			}
			check()
		}
	}
	for round := range 3 {
		push(4000)
		if round == 0 {
			clone, cloned = l.Clone().(*List), slices.Clone(model)
		}
		for range 50 {
			i, e := r.IntN(len(model)+1), []byte("ins")
			l.Insert(i, e)
			model = slices.Insert(model, i, e)
			j := r.IntN(len(model))
			l.Set(j, []byte("set"))
			model[j] = []byte("set")
			check()
		}
		count := int64(r.IntN(61) - 30)
		var removed int64
		model, removed = removeModel(model, []byte("ins"), count)
		if got := l.Remove([]byte("ins"), count); got != removed {
			t.Fatalf("Remove(ins, %d) = %d, want %d", count, got, removed)
		}
		checkList(t, l, model)
		from, to := len(model)/5, len(model)/5+1500
		l.Trim(from, to, true)
		model = model[from : to+1]
		checkList(t, l, model)
		// A queue at a steady length: the head goes round the ring.
		for range 3000 {
			e := []byte(fmt.Sprint(r.IntN(1000)))
			l.Push(Left, e)
			model = append([][]byte{e}, model...)
			if got := l.Pop(Right); !bytes.Equal(got, model[len(model)-1]) {
				t.Fatalf("queue Pop = %q, want %q", got, model[len(model)-1])
			}
			model = model[:len(model)-1]
			check()
		}
		popTo(3)
		checkList(t, l, model)
	}
	got := l.PopN(nil, Left, 1<<40)
	if !equalElems(got, model) || l.Len() != 0 {
		t.Fatalf("PopN of all = %d elements, want %d", len(got), len(model))
	}
	checkList(t, l, nil)
	checkList(t, clone, cloned)
}

// checkList checks l against the elements it should hold.
func checkList(t *testing.T, l *List, model [][]byte) {
	t.Helper()
	if l.Len() != len(model) {
		t.Fatalf("Len %d, want %d", l.Len(), len(model))
	}
	var w int64
	for i, e := range model {
		w += int64(len(e)) + listPerEntry
		if got, _ := l.Index(int64(i)); !bytes.Equal(got, e) {
			t.Fatalf("Index(%d) = %q, want %q", i, got, e)
		}
		if got, _ := l.Index(int64(i - len(model))); !bytes.Equal(got, e) {
			t.Fatalf("Index(%d) = %q, want %q", i-len(model), got, e)
		}
	}
	if l.Weight() != w {
		t.Fatalf("Weight %d, want %d", l.Weight(), w)
	}
	checkRing(t, l)
}

// checkRing checks the shape of l's ring against its length: small or in
// blocks as the list is short or long, neither too small nor more than
// four times too large, and nothing held in a slot past the end.
func checkRing(t *testing.T, l *List) {
	t.Helper()
	c, n := l.slots(), l.Len()
	switch {
	case n == 0 && l.dir != nil:
		t.Fatalf("empty list keeps a ring of %d", c)
	case n == 0:
		return
	case c&(c-1) != 0 || c < n:
		t.Fatalf("ring of %d for %d elements", c, n)
	case len(l.dir) == 1 && (c > listBlock || (c > listMinCap && n <= c/4)):
		t.Fatalf("small ring of %d for %d elements", c, n)
	case len(l.dir) > 1 && (len(l.dir) < 4 || n <= listBlock/4 || (len(l.dir) > 4 && n <= c/4)):
		t.Fatalf("%d blocks for %d elements", len(l.dir), n)
	case len(l.dir) > 1 && n > c-listBlock:
		t.Fatalf("%d elements leave no block free in a ring of %d", n, c)
	}
	// Slots outside the list hold nothing, so popped elements are freed.
	for i := n; i < c; i++ {
		if s := l.slot(i); l.dir[s>>l.shift] != nil && l.get(s) != nil {
			t.Fatalf("slot %d past the end still holds %q", i, l.get(s))
		}
	}
}

// removeModel is LREM on a slice.
func removeModel(m [][]byte, e []byte, count int64) ([][]byte, int64) {
	var removed int64
	limit := count
	if limit < 0 {
		limit = -limit
	}
	keep := make([]bool, len(m))
	for k := range m {
		i := k
		if count < 0 {
			i = len(m) - 1 - k
		}
		if bytes.Equal(m[i], e) && (limit == 0 || removed < limit) {
			removed++
			continue
		}
		keep[i] = true
	}
	var out [][]byte
	for i, x := range m {
		if keep[i] {
			out = append(out, x)
		}
	}
	return out, removed
}

func equalElems(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

// TestListMemoryBounded: a list pushed to a million elements and popped
// down to ten holds a ring for about ten, not a million.
func TestListMemoryBounded(t *testing.T) {
	l := NewList()
	e := []byte("x")
	for range 1 << 20 {
		l.Push(Right, e)
	}
	for l.Len() > 10 {
		l.Pop(Left)
	}
	if c := l.slots(); c > 64 {
		t.Errorf("ring of %d slots for %d elements", c, l.Len())
	}
	l.PopN(nil, Right, 10)
	if l.dir != nil {
		t.Errorf("empty list keeps a ring of %d", l.slots())
	}
}

func TestParseLong(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"9223372036854775807", 1<<63 - 1, true},
		{"-9223372036854775808", -1 << 63, true}, {"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false}, {"18446744073709551616", 0, false},
		{"-0", 0, false}, {"+1", 0, false}, {"01", 0, false}, {" 1", 0, false}, {"1 ", 0, false},
		{"", 0, false}, {"-", 0, false}, {"1.0", 0, false}, {"00000000000000000000001", 0, false},
	} {
		got, ok := backends.ParseInt([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseTimeoutCases(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // milliseconds; -1 for "negative", -2 for "not a float"
	}{
		{"0", 0}, {"1", 1000}, {"0.001", 1}, {"0.0001", 1}, {"1.5", 1500}, {"-0", 0},
		{"-0.0001", 0}, {"0x10", 16000}, {"0x.8", 500}, {"1e-400", 1}, {"+1", 1000},
		{".5", 500}, {"5.", 5000}, {"1E3", 1000000},
		{"-1", -1}, {"-0.01", -1}, {"inf", -1}, {"-INF", -1}, {"infinity", -1}, {"1e20", -1},
		{"", -2}, {" 1", -2}, {"1 ", -2}, {"nan", -2}, {"1_0", -2}, {"0b1", -2}, {"1e", -2},
		{"0x", -2}, {"0x1p", -2}, {".", -2}, {"1e5000", -2}, {"1e-5000", -2}, {"x", -2},
		{"1e-99999999999999999999", -2}, {"1e99999999999999999999", -2},
	} {
		d, err := parseTimeout([]byte(tc.in))
		var got int64
		switch err {
		case nil:
			got = d.Milliseconds()
		case errTimeoutNeg:
			got = -1
		case errTimeout:
			got = -2
		default:
			t.Fatalf("parseTimeout(%q): %v", tc.in, err)
		}
		if got != tc.want {
			t.Errorf("parseTimeout(%q) = %d ms (%v), want %d", tc.in, got, err, tc.want)
		}
	}
}

// FuzzListParsers: no request makes a list command's parser fail other
// than with a refusal.
func FuzzListParsers(f *testing.F) {
	for _, s := range []string{"LPOS l a RANK -1 COUNT 0 MAXLEN 3", "LMPOP 2 a b LEFT COUNT 3",
		"BLMPOP 0.5 1 a RIGHT", "BLPOP a b 1e-3", "LRANGE l -1 9", "LINSERT l BEFORE a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := bytes.Fields([]byte(line))
		if len(args) == 0 {
			return
		}
		p, ok := parsers[string(bytes.ToLower(args[0]))]
		if !ok {
			return
		}
		op, err := p(args)
		if err != nil {
			return
		}
		for _, at := range op.Request().KeyAt {
			if at <= 0 || at >= len(args) {
				t.Fatalf("%q: key at %d of %d arguments", line, at, len(args))
			}
		}
	})
}
