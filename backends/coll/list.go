package coll

import (
	"bytes"
	"math/bits"

	"github.com/pgcache/pgcache/backends"
)

// List is a Redis list: elements in a ring, so a push or a pop at either
// end is O(1) and so is reaching the element at any index (LINDEX, LSET,
// LRANGE's start).
//
// A small list's ring is one slice: a power of two of slots, at least
// listMinCap, doubled when full and halved when the list falls to a
// quarter of it. A list longer than a block (listBlock slots) keeps its
// ring in blocks found through a directory: growing doubles the directory
// and moves the pointers of the blocks in use, never an element, so a
// list of millions grows without copying millions of slots; a block is
// made as the list first reaches it, and one block's worth of the ring is
// always free, so the list never wraps into the block its head is in. The
// directory halves when the list falls to a quarter of the ring, keeping
// only the blocks in use, and a list that falls to a quarter of a block is
// one slice again: a list popped down from millions holds memory for what
// it has, and the factor between the grow and the shrink thresholds keeps
// a push/pop seesaw at a boundary from copying each time.
type List struct {
	dir    [][][]byte // the ring's blocks: one for a small list, nil when empty
	shift  uint       // log2 of a block's slots
	head   int        // ring index of element 0
	n      int
	weight int64
	j      *Journal
	one    [1][][]byte // dir of a small list, without an allocation
}

const (
	// listPerEntry is what an element costs beyond its bytes: its slot in
	// the ring (a slice header, with the ring's slack) and its allocation.
	listPerEntry = 48
	listMinCap   = 8
	listShift    = 7
	listBlock    = 1 << listShift // slots of a block of a long list
)

// NewList returns an empty list.
func NewList() *List { return &List{} }

func (l *List) Type() backends.Type { return backends.TypeList }
func (l *List) Len() int            { return l.n }
func (l *List) Weight() int64       { return l.weight }

// Clone copies the list; the element bytes are shared (they never change).
func (l *List) Clone() backends.Value {
	c := &List{weight: l.weight}
	switch {
	case l.n == 0:
	case len(l.dir) == 1:
		c.small(l.slots(), l)
	default:
		c.blocks(len(l.dir), l)
	}
	return c
}

// Journal makes the list record its changes in j (nil: stop recording). A
// list's changes are recorded as All: its elements have no identity a
// store could write back one by one.
func (l *List) Journal(j *Journal) { l.j = j }

// Encoding is what OBJECT ENCODING reports: Redis 7.0 keeps every list in
// a quicklist.
func (l *List) Encoding(*Limits) string { return "quicklist" }

// ringCap is the capacity for n elements: the least power of two at least
// n and listMinCap.
func ringCap(n int) int {
	c := listMinCap
	for c < n {
		c <<= 1
	}
	return c
}

// slots is the ring's size.
func (l *List) slots() int { return len(l.dir) << l.shift }

// room is how many elements the ring holds before it must grow: all its
// slots for a small list, all but a block's for a long one.
func (l *List) room() int {
	if len(l.dir) > 1 {
		return l.slots() - listBlock
	}
	return l.slots()
}

// slot is the ring index of element i.
func (l *List) slot(i int) int { return (l.head + i) & (l.slots() - 1) }

// get is the element in ring slot s.
func (l *List) get(s int) []byte { return l.dir[s>>l.shift][s&(1<<l.shift-1)] }

// put sets ring slot s to e, making its block if the list had not reached
// it.
func (l *List) put(s int, e []byte) {
	b := l.dir[s>>l.shift]
	if b == nil {
		b = make([][]byte, listBlock)
		l.dir[s>>l.shift] = b
	}
	b[s&(1<<l.shift-1)] = e
}

// At returns element i, 0 <= i < Len().
func (l *List) At(i int) []byte { return l.get(l.slot(i)) }

// Index returns the element at index i as LINDEX counts (negative from
// the tail), and whether there is one.
func (l *List) Index(i int64) ([]byte, bool) {
	if i < 0 {
		i += int64(l.n)
	}
	if i < 0 || i >= int64(l.n) {
		return nil, false
	}
	return l.At(int(i)), true
}

// copyTo copies elements [from, from+k) into dst, in order: a run of
// slots to the end of a block at a time.
func (l *List) copyTo(dst [][]byte, from, k int) {
	for k > 0 {
		s := l.slot(from)
		m := copy(dst[:k], l.dir[s>>l.shift][s&(1<<l.shift-1):])
		dst, from, k = dst[m:], from+m, k-m
	}
}

// small makes l a small list of c slots (a power of two, at least
// src.n) holding src's elements, at its start.
func (l *List) small(c int, src *List) {
	r := make([][]byte, c)
	src.copyTo(r, 0, src.n)
	l.one[0] = r
	l.dir, l.shift, l.head, l.n = l.one[:], uint(bits.TrailingZeros(uint(c))), 0, src.n
}

// blocks makes l a long list of m blocks (a power of two, with room for
// src.n) holding src's elements, from the start of its first block.
func (l *List) blocks(m int, src *List) {
	dir := make([][][]byte, m)
	for i := 0; i < src.n; i += listBlock {
		b := make([][]byte, listBlock)
		src.copyTo(b, i, min(listBlock, src.n-i))
		dir[i>>listShift] = b
	}
	l.one[0] = nil
	l.dir, l.shift, l.head, l.n = dir, listShift, 0, src.n
}

// redirect moves the blocks in use of a long list to a directory of m
// entries (a power of two, with room for the list), in order from its
// first: the blocks the list has left are dropped.
func (l *List) redirect(m int) {
	dir := make([][][]byte, m)
	first, last := l.head>>listShift, l.slot(l.n-1)>>listShift
	for i := 0; ; i++ {
		b := (first + i) & (len(l.dir) - 1)
		dir[i] = l.dir[b]
		if b == last {
			break
		}
	}
	l.dir, l.head = dir, l.head&(listBlock-1)
}

// grow makes room for one more element.
func (l *List) grow() {
	switch c := l.slots(); {
	case c < listBlock:
		l.small(max(listMinCap, 2*c), l)
	case len(l.dir) == 1:
		l.blocks(4, l)
	default:
		l.redirect(2 * len(l.dir))
	}
}

// shrink gives a list that fell to a quarter of its ring a smaller one.
func (l *List) shrink() {
	switch c := l.slots(); {
	case l.n == 0:
		l.dir, l.one[0], l.shift, l.head = nil, nil, 0, 0
	case len(l.dir) == 1 || l.n <= listBlock/4:
		c = min(c, listBlock)
		for c > listMinCap && l.n <= c/4 {
			c /= 2
		}
		if c != l.slots() {
			l.small(c, l)
		}
	case len(l.dir) > 4 && l.n <= c/4:
		m := len(l.dir)
		for m > 4 && l.n <= m*listBlock/4 {
			m /= 2
		}
		l.redirect(m)
	}
}

// Push adds e at end (e is kept: the caller must not change it).
func (l *List) Push(end End, e []byte) {
	l.j.all()
	if l.n == l.room() {
		l.grow()
	}
	if end == Left {
		l.head = (l.head - 1) & (l.slots() - 1)
		l.put(l.head, e)
	} else {
		l.put(l.slot(l.n), e)
	}
	l.n++
	l.weight += int64(len(e)) + listPerEntry
}

// take removes the element at end and returns it, without shrinking.
func (l *List) take(end End) []byte {
	i := l.head
	if end == Right {
		i = l.slot(l.n - 1)
	} else {
		l.head = (l.head + 1) & (l.slots() - 1)
	}
	e := l.get(i)
	l.put(i, nil)
	l.n--
	l.weight -= int64(len(e)) + listPerEntry
	return e
}

// Pop removes and returns the element at end; the list must not be empty.
func (l *List) Pop(end End) []byte {
	l.j.all()
	e := l.take(end)
	l.shrink()
	return e
}

// PopN removes up to k elements at end and appends them to dst in the
// order they were popped (from the tail backwards for Right), as
// LPOP/RPOP with a count answer them.
func (l *List) PopN(dst [][]byte, end End, k int64) [][]byte {
	k = min(k, int64(l.n))
	if k <= 0 {
		return dst
	}
	l.j.all()
	for range k {
		dst = append(dst, l.take(end))
	}
	l.shrink()
	return dst
}

// Set replaces element i, 0 <= i < Len(), with e (kept).
func (l *List) Set(i int, e []byte) {
	l.j.all()
	s := l.slot(i)
	l.weight += int64(len(e) - len(l.get(s)))
	l.put(s, e)
}

// Insert puts e (kept) at index i, 0 <= i <= Len(), moving the elements
// on the shorter side of i by one.
func (l *List) Insert(i int, e []byte) {
	if i == 0 {
		l.Push(Left, e)
		return
	}
	if i == l.n {
		l.Push(Right, e)
		return
	}
	l.j.all()
	if l.n == l.room() {
		l.grow()
	}
	if i < l.n/2 {
		// Move elements 0..i-1 one slot towards the head.
		l.head = (l.head - 1) & (l.slots() - 1)
		for k := 0; k < i; k++ {
			l.put(l.slot(k), l.At(k+1))
		}
	} else {
		// Move elements i..n-1 one slot towards the tail.
		for k := l.n; k > i; k-- {
			l.put(l.slot(k), l.At(k-1))
		}
	}
	l.put(l.slot(i), e)
	l.n++
	l.weight += int64(len(e)) + listPerEntry
}

// Range appends elements start..stop (inclusive, 0 <= start <= stop <
// Len()) to dst, reversed when rev.
func (l *List) Range(dst [][]byte, start, stop int, rev bool) [][]byte {
	k := stop - start + 1
	at := len(dst)
	dst = append(dst, make([][]byte, k)...)
	l.copyTo(dst[at:], start, k)
	if rev {
		r := dst[at:]
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
	}
	return dst
}

// Trim keeps elements start..stop (inclusive, 0 <= start <= stop < Len()),
// or none when keep is false.
func (l *List) Trim(start, stop int, keep bool) {
	if !keep {
		start, stop = l.n, l.n-1
	}
	if start == 0 && stop == l.n-1 {
		return
	}
	l.j.all()
	for i := 0; i < start; i++ {
		s := l.slot(i)
		l.weight -= int64(len(l.get(s))) + listPerEntry
		l.put(s, nil)
	}
	for i := stop + 1; i < l.n; i++ {
		s := l.slot(i)
		l.weight -= int64(len(l.get(s))) + listPerEntry
		l.put(s, nil)
	}
	if l.n > 0 {
		l.head = l.slot(start)
	}
	l.n = stop - start + 1
	l.shrink()
}

// Remove removes the elements equal to e, as LREM does: the first count
// of them from the head when count > 0, the last -count from the tail when
// count < 0, all when count == 0. It returns how many it removed. It is
// one pass over the list whatever the count: the kept elements close up
// towards the end the scan starts from.
func (l *List) Remove(e []byte, count int64) int64 {
	limit := count
	if limit < 0 {
		limit = -limit // -MinInt64 stays negative: no limit, as Redis
	}
	var removed int64
	drop := func(x []byte) bool {
		if (limit <= 0 || removed < limit) && bytes.Equal(x, e) {
			removed++
			l.weight -= int64(len(x)) + listPerEntry
			return true
		}
		return false
	}
	n := l.n
	if count >= 0 {
		w := 0
		for r := 0; r < n; r++ {
			x := l.At(r)
			if drop(x) {
				continue
			}
			if w != r {
				l.put(l.slot(w), x)
			}
			w++
		}
		for i := w; i < n; i++ {
			l.put(l.slot(i), nil)
		}
	} else {
		w := n - 1
		for r := n - 1; r >= 0; r-- {
			x := l.At(r)
			if drop(x) {
				continue
			}
			if w != r {
				l.put(l.slot(w), x)
			}
			w--
		}
		for i := 0; i <= w; i++ {
			l.put(l.slot(i), nil)
		}
		if removed > 0 {
			l.head = l.slot(w + 1)
		}
	}
	if removed > 0 {
		l.j.all()
		l.n -= int(removed)
		l.shrink()
	}
	return removed
}

// Find calls match for the elements from the head (from Left) or the
// tail, at most maxlen of them (0: all), with each one's index, until
// match returns false.
func (l *List) Find(e []byte, from End, maxlen int64, match func(i int) bool) {
	n := int64(l.n)
	if maxlen > 0 && maxlen < n {
		n = maxlen
	}
	for k := 0; k < int(n); k++ {
		i := k
		if from == Right {
			i = l.n - 1 - k
		}
		if bytes.Equal(l.At(i), e) && !match(i) {
			return
		}
	}
}

var _ backends.Value = (*List)(nil)
