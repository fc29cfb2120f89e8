package coll

import (
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// The skip list of a sorted set, after William Pugh's, with Redis's
// additions: each forward link carries its span (how many nodes it
// jumps), so a node's rank is the sum of the spans walked to reach it, and
// each node links back to the one before it, so a range is walked either
// way. Nodes are ordered by (score, member bytes); a member is in the list
// once.

const (
	maxLevel = 32 // enough for 2^64 nodes at p = 1/4, as Redis's ZSKIPLIST_MAXLEVEL
)

type zlevel struct {
	next *znode
	span int // nodes from this one to next (to the end of the list when next is nil)
}

// znode is a node of the list. Its levels are in the node's own
// allocation, after it, as Redis's zskiplistNode keeps them: level 0 is
// lv, the others follow it (lvl), so a walk reads a node's score and the
// level it goes on from in one cache line, not two. A node of one level
// is 64 bytes, a size class the allocator aligns to a line.
type znode struct {
	score  float64
	member string
	prev   *znode // nil for the first node
	pos    int    // index in ZSet.dense
	height int32  // levels
	lv     zlevel // level 0; levels 1 … height-1 follow in the allocation
}

// lvl is level i of x, 0 <= i < x.height: past lv, in the object newNode
// allocated, which x's height says holds it.
func (x *znode) lvl(i int) *zlevel {
	return (*zlevel)(unsafe.Add(unsafe.Pointer(&x.lv), uintptr(i)*unsafe.Sizeof(zlevel{})))
}

// skiplist is the list; head is a node of no member whose levels lead to
// the first node of each level, with room for at least level levels: it
// is allocated as the list first needs it, and again taller as taller
// nodes come.
type skiplist struct {
	head   *znode
	level  int // levels in use: the tallest node's
	tail   *znode
	length int
}

// randomLevel picks a node's height: 1, then one more with probability
// 1/4 each time (two random bits both zero), as Redis's ZSKIPLIST_P.
func randomLevel() int {
	return min(1+bits.TrailingZeros64(rand.Uint64()|1<<62)/2, maxLevel)
}

// A node's levels past the first are in the same object as the node: an
// object of each of these sizes. Nodes of more than 4 levels are 1 in 256.
type (
	znode2 struct {
		n  znode
		up [1]zlevel
	}
	znode4 struct {
		n  znode
		up [3]zlevel
	}
	znode8 struct {
		n  znode
		up [7]zlevel
	}
	znodeMax struct {
		n  znode
		up [maxLevel - 1]zlevel
	}
)

func newNode(level int, member string, score float64) *znode {
	var x *znode
	switch {
	case level == 1:
		x = &znode{}
	case level == 2:
		x = &(&znode2{}).n
	case level <= 4:
		x = &(&znode4{}).n
	case level <= 8:
		x = &(&znode8{}).n
	default:
		x = &(&znodeMax{}).n
	}
	x.member, x.score, x.height = member, score, int32(level)
	return x
}

// before reports whether node x sorts before (score, member).
func (x *znode) before(score float64, member string) bool {
	return x.score < score || (x.score == score && x.member < member)
}

// raise makes the list's level h, giving it a taller head when its head
// has too few levels; the head's new levels lead to the end.
func (sl *skiplist) raise(h int) {
	if sl.head == nil || int(sl.head.height) < h {
		head := newNode(headHeight(h), "", 0)
		for i := range sl.level {
			*head.lvl(i) = *sl.head.lvl(i)
		}
		sl.head = head
	}
	for ; sl.level < h; sl.level++ {
		*sl.head.lvl(sl.level) = zlevel{span: sl.length}
	}
}

// headHeight is the height of a head for h levels: newNode's next size.
func headHeight(h int) int {
	for _, c := range [...]int{1, 2, 4, 8} {
		if h <= c {
			return c
		}
	}
	return maxLevel
}

// next is the node after x, nil at the end.
func (x *znode) next() *znode { return x.lv.next }

func (sl *skiplist) first() *znode {
	if sl.level == 0 {
		return nil
	}
	return sl.head.lv.next
}

// insert links x, whose member is not in the list, at its place.
func (sl *skiplist) insert(x *znode) {
	var update [maxLevel]*znode
	var rank [maxLevel]int
	h := int(x.height)
	if h > sl.level {
		sl.raise(h)
	}
	n := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		if i < sl.level-1 {
			rank[i] = rank[i+1]
		}
		for l := n.lvl(i); l.next != nil && l.next.before(x.score, x.member); l = n.lvl(i) {
			rank[i] += l.span
			n = l.next
		}
		update[i] = n
	}
	for i := range h {
		xl, ul := x.lvl(i), update[i].lvl(i)
		xl.next = ul.next
		ul.next = x
		// The span of update[i] is split in two by x.
		xl.span = ul.span - (rank[0] - rank[i])
		ul.span = rank[0] - rank[i] + 1
	}
	for i := h; i < sl.level; i++ {
		update[i].lvl(i).span++
	}
	if update[0] != sl.head {
		x.prev = update[0]
	} else {
		x.prev = nil
	}
	if nx := x.lv.next; nx != nil {
		nx.prev = x
	} else {
		sl.tail = x
	}
	sl.length++
}

// find fills update with the last node before x at each level.
func (sl *skiplist) find(x *znode, update *[maxLevel]*znode) {
	n := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for l := n.lvl(i); l.next != nil && l.next.before(x.score, x.member); l = n.lvl(i) {
			n = l.next
		}
		update[i] = n
	}
}

// unlink removes x, given the last node before it at each level.
func (sl *skiplist) unlink(x *znode, update *[maxLevel]*znode) {
	for i := range sl.level {
		if ul := update[i].lvl(i); ul.next == x {
			xl := x.lvl(i)
			ul.span += xl.span - 1
			ul.next = xl.next
		} else {
			ul.span--
		}
	}
	if nx := x.lv.next; nx != nil {
		nx.prev = x.prev
	} else {
		sl.tail = x.prev
	}
	for sl.level > 0 && sl.head.lvl(sl.level-1).next == nil {
		sl.level--
	}
	sl.length--
	x.prev = nil
	for i := range int(x.height) {
		*x.lvl(i) = zlevel{}
	}
}

// remove unlinks node x, which is in the list.
func (sl *skiplist) remove(x *znode) {
	var update [maxLevel]*znode
	sl.find(x, &update)
	sl.unlink(x, &update)
}

// rescore gives node x the score s, moving it if its place changes. As
// Redis's zslUpdateScore, it stays in place when it still sorts between
// its neighbours.
func (sl *skiplist) rescore(x *znode, s float64) {
	p, nx := x.prev, x.next()
	if (p == nil || p.score < s) && (nx == nil || nx.score > s) {
		x.score = s
		return
	}
	sl.remove(x)
	x.score = s
	sl.insert(x)
}

// rank is the 1-based rank of node x, which is in the list.
func (sl *skiplist) rank(x *znode) int {
	r := 0
	n := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for l := n.lvl(i); l.next != nil && (l.next == x || l.next.before(x.score, x.member)); l = n.lvl(i) {
			r += l.span
			n = l.next
		}
		if n == x {
			return r
		}
	}
	return r
}

// byRank returns the node of 1-based rank r, nil when there is none.
func (sl *skiplist) byRank(r int) *znode {
	if r < 1 || r > sl.length {
		return nil
	}
	walked := 0
	n := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for l := n.lvl(i); l.next != nil && walked+l.span <= r; l = n.lvl(i) {
			walked += l.span
			n = l.next
		}
		if walked == r {
			return n
		}
	}
	return nil
}

// atRank returns the node of 1-based rank r (nil past the end) and fills
// update with the last node before it at each level.
func (sl *skiplist) atRank(r int, update *[maxLevel]*znode) *znode {
	if sl.level == 0 {
		return nil
	}
	walked := 0
	n := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for l := n.lvl(i); l.next != nil && walked+l.span < r; l = n.lvl(i) {
			walked += l.span
			n = l.next
		}
		update[i] = n
	}
	return n.lv.next
}

// firstWhere returns the first node for which below is false, where below
// is true of a prefix of the list and false of the rest (nil when it is
// true of every node); update, when not nil, gets the last node before it
// at each level.
func (sl *skiplist) firstWhere(below func(*znode) bool, update *[maxLevel]*znode) *znode {
	if sl.level == 0 {
		return nil
	}
	n := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for l := n.lvl(i); l.next != nil && below(l.next); l = n.lvl(i) {
			n = l.next
		}
		if update != nil {
			update[i] = n
		}
	}
	return n.lv.next
}

// lastWhere returns the last node for which within is true, where within
// is true of a prefix of the list (nil when it is true of none): the node
// before the first for which it is false.
func (sl *skiplist) lastWhere(within func(*znode) bool) *znode {
	if x := sl.firstWhere(within, nil); x != nil {
		return x.prev
	}
	return sl.tail
}

// appender builds a list from nodes given in order, each in O(1): what
// Clone and the commands that store a computed set use.
type appender struct {
	sl   *skiplist
	last [maxLevel]*znode // nil: the head
	rank [maxLevel]int    // rank of last[i]
}

func newAppender(sl *skiplist) *appender { return &appender{sl: sl} }

// at is the level i of the last node added at that level, or of the head.
func (a *appender) at(i int) *zlevel {
	if a.last[i] == nil {
		return a.sl.head.lvl(i)
	}
	return a.last[i].lvl(i)
}

// add links x after every node added before; x sorts after them all.
func (a *appender) add(x *znode) {
	sl := a.sl
	r := sl.length + 1
	if int(x.height) > sl.level {
		sl.raise(int(x.height))
	}
	for i := range int(x.height) {
		l := a.at(i)
		l.next = x
		l.span = r - a.rank[i]
		a.last[i], a.rank[i] = x, r
	}
	if sl.tail != nil {
		x.prev = sl.tail
	}
	sl.tail = x
	sl.length = r
}

// done sets the spans of the links that lead past the last node.
func (a *appender) done() {
	sl := a.sl
	for i := range sl.level {
		l := a.at(i)
		l.next = nil
		l.span = sl.length - a.rank[i]
	}
}
