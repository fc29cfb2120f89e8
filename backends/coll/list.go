package coll

import (
	"bytes"

	"github.com/pgcache/pgcache/backends"
)

// List is a Redis list: elements in a ring buffer, so a push or a pop at
// either end is O(1) (amortized: the ring doubles when full) and so is
// reaching the element at any index (LINDEX, LSET, LRANGE's start).
//
// The ring's capacity is a power of two, at least listMinCap, and is
// halved when the list falls to a quarter of it, so a list that grew to
// millions of elements and was popped down holds memory for what it has,
// not for what it had; the factor of two between the grow and the shrink
// thresholds keeps a push/pop seesaw at a boundary from copying each time.
type List struct {
	ring   [][]byte // capacity a power of two; nil when the list is empty
	head   int      // ring index of element 0
	n      int
	weight int64
	j      *Journal
}

const (
	// listPerEntry is what an element costs beyond its bytes: its slot in
	// the ring (a slice header, with the ring's slack) and its allocation.
	listPerEntry = 48
	listMinCap   = 8
)

// NewList returns an empty list.
func NewList() *List { return &List{} }

func (l *List) Type() backends.Type { return backends.TypeList }
func (l *List) Len() int            { return l.n }
func (l *List) Weight() int64       { return l.weight }

// Clone copies the list; the element bytes are shared (they never change).
func (l *List) Clone() backends.Value {
	c := &List{n: l.n, weight: l.weight}
	if l.n > 0 {
		c.ring = make([][]byte, ringCap(l.n))
		l.copyTo(c.ring, 0, l.n)
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

// slot is the ring index of element i.
func (l *List) slot(i int) int { return (l.head + i) & (len(l.ring) - 1) }

// At returns element i, 0 <= i < Len().
func (l *List) At(i int) []byte { return l.ring[l.slot(i)] }

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

// copyTo copies elements [from, from+k) into dst, in order.
func (l *List) copyTo(dst [][]byte, from, k int) {
	if k == 0 {
		return
	}
	s := l.slot(from)
	m := copy(dst[:k], l.ring[s:min(s+k, len(l.ring))])
	copy(dst[m:k], l.ring[:k-m])
}

// resize moves the elements to a ring of capacity c (a power of two, at
// least n), at its start.
func (l *List) resize(c int) {
	r := make([][]byte, c)
	l.copyTo(r, 0, l.n)
	l.ring, l.head = r, 0
}

// shrink halves the ring while the list fills a quarter of it or less.
func (l *List) shrink() {
	if l.n == 0 {
		l.ring, l.head = nil, 0
		return
	}
	c := len(l.ring)
	for c > listMinCap && l.n <= c/4 {
		c /= 2
	}
	if c != len(l.ring) {
		l.resize(c)
	}
}

// Push adds e at end (e is kept: the caller must not change it).
func (l *List) Push(end End, e []byte) {
	l.j.all()
	if l.n == len(l.ring) {
		l.resize(ringCap(l.n + 1))
	}
	if end == Left {
		l.head = (l.head - 1) & (len(l.ring) - 1)
		l.ring[l.head] = e
	} else {
		l.ring[l.slot(l.n)] = e
	}
	l.n++
	l.weight += int64(len(e)) + listPerEntry
}

// Pop removes and returns the element at end; the list must not be empty.
func (l *List) Pop(end End) []byte {
	l.j.all()
	i := l.head
	if end == Right {
		i = l.slot(l.n - 1)
	}
	e := l.ring[i]
	l.ring[i] = nil
	if end == Left {
		l.head = (l.head + 1) & (len(l.ring) - 1)
	}
	l.n--
	l.weight -= int64(len(e)) + listPerEntry
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
		i := l.head
		if end == Right {
			i = l.slot(l.n - 1)
		} else {
			l.head = (l.head + 1) & (len(l.ring) - 1)
		}
		e := l.ring[i]
		l.ring[i] = nil
		l.n--
		l.weight -= int64(len(e)) + listPerEntry
		dst = append(dst, e)
	}
	l.shrink()
	return dst
}

// Set replaces element i, 0 <= i < Len(), with e (kept).
func (l *List) Set(i int, e []byte) {
	l.j.all()
	s := l.slot(i)
	l.weight += int64(len(e) - len(l.ring[s]))
	l.ring[s] = e
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
	if l.n == len(l.ring) {
		l.resize(ringCap(l.n + 1))
	}
	mask := len(l.ring) - 1
	if i < l.n/2 {
		// Move elements 0..i-1 one slot towards the head.
		l.head = (l.head - 1) & mask
		for k := 0; k < i; k++ {
			l.ring[l.slot(k)] = l.ring[l.slot(k+1)]
		}
	} else {
		// Move elements i..n-1 one slot towards the tail.
		for k := l.n; k > i; k-- {
			l.ring[l.slot(k)] = l.ring[l.slot(k-1)]
		}
	}
	l.ring[l.slot(i)] = e
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
		l.weight -= int64(len(l.ring[s])) + listPerEntry
		l.ring[s] = nil
	}
	for i := stop + 1; i < l.n; i++ {
		s := l.slot(i)
		l.weight -= int64(len(l.ring[s])) + listPerEntry
		l.ring[s] = nil
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
				l.ring[l.slot(w)] = x
			}
			w++
		}
		for i := w; i < n; i++ {
			l.ring[l.slot(i)] = nil
		}
	} else {
		w := n - 1
		for r := n - 1; r >= 0; r-- {
			x := l.At(r)
			if drop(x) {
				continue
			}
			if w != r {
				l.ring[l.slot(w)] = x
			}
			w--
		}
		for i := 0; i <= w; i++ {
			l.ring[l.slot(i)] = nil
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
