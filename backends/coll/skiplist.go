package coll

import (
	"math/bits"
	"math/rand/v2"
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

type znode struct {
	member string
	score  float64
	prev   *znode // nil for the first node
	pos    int    // index in ZSet.dense
	level  []zlevel
}

// skiplist is the list; head is a node of no member whose levels lead to
// the first node of each level. head.level grows as taller nodes come.
type skiplist struct {
	head   znode
	tail   *znode
	length int
}

// randomLevel picks a node's height: 1, then one more with probability
// 1/4 each time (two random bits both zero), as Redis's ZSKIPLIST_P.
func randomLevel() int {
	return min(1+bits.TrailingZeros64(rand.Uint64()|1<<62)/2, maxLevel)
}

// Nodes of the common heights are allocated with their levels in one
// object; taller ones take a second allocation.
type (
	znode1 struct {
		n znode
		l [1]zlevel
	}
	znode2 struct {
		n znode
		l [2]zlevel
	}
	znode4 struct {
		n znode
		l [4]zlevel
	}
)

func newNode(level int, member string, score float64) *znode {
	switch {
	case level == 1:
		o := &znode1{n: znode{member: member, score: score}}
		o.n.level = o.l[:]
		return &o.n
	case level == 2:
		o := &znode2{n: znode{member: member, score: score}}
		o.n.level = o.l[:]
		return &o.n
	case level <= 4:
		o := &znode4{n: znode{member: member, score: score}}
		o.n.level = o.l[:level]
		return &o.n
	}
	return &znode{member: member, score: score, level: make([]zlevel, level)}
}

// before reports whether node x sorts before (score, member).
func (x *znode) before(score float64, member string) bool {
	return x.score < score || (x.score == score && x.member < member)
}

// next is the node after x, nil at the end.
func (x *znode) next() *znode { return x.level[0].next }

func (sl *skiplist) first() *znode {
	if len(sl.head.level) == 0 {
		return nil
	}
	return sl.head.level[0].next
}

// insert links x, whose member is not in the list, at its place.
func (sl *skiplist) insert(x *znode) {
	var update [maxLevel]*znode
	var rank [maxLevel]int
	n := &sl.head
	for i := len(sl.head.level) - 1; i >= 0; i-- {
		if i < len(sl.head.level)-1 {
			rank[i] = rank[i+1]
		}
		for n.level[i].next != nil && n.level[i].next.before(x.score, x.member) {
			rank[i] += n.level[i].span
			n = n.level[i].next
		}
		update[i] = n
	}
	for lvl := len(sl.head.level); lvl < len(x.level); lvl++ {
		sl.head.level = append(sl.head.level, zlevel{span: sl.length})
		update[lvl], rank[lvl] = &sl.head, 0
	}
	for i := range x.level {
		x.level[i].next = update[i].level[i].next
		update[i].level[i].next = x
		// The span of update[i] is split in two by x.
		x.level[i].span = update[i].level[i].span - (rank[0] - rank[i])
		update[i].level[i].span = rank[0] - rank[i] + 1
	}
	for i := len(x.level); i < len(sl.head.level); i++ {
		update[i].level[i].span++
	}
	if update[0] != &sl.head {
		x.prev = update[0]
	} else {
		x.prev = nil
	}
	if nx := x.level[0].next; nx != nil {
		nx.prev = x
	} else {
		sl.tail = x
	}
	sl.length++
}

// find fills update with the last node before x at each level.
func (sl *skiplist) find(x *znode, update *[maxLevel]*znode) {
	n := &sl.head
	for i := len(sl.head.level) - 1; i >= 0; i-- {
		for n.level[i].next != nil && n.level[i].next.before(x.score, x.member) {
			n = n.level[i].next
		}
		update[i] = n
	}
}

// unlink removes x, given the last node before it at each level.
func (sl *skiplist) unlink(x *znode, update *[maxLevel]*znode) {
	for i := range sl.head.level {
		if update[i].level[i].next == x {
			update[i].level[i].span += x.level[i].span - 1
			update[i].level[i].next = x.level[i].next
		} else {
			update[i].level[i].span--
		}
	}
	if nx := x.level[0].next; nx != nil {
		nx.prev = x.prev
	} else {
		sl.tail = x.prev
	}
	for len(sl.head.level) > 0 && sl.head.level[len(sl.head.level)-1].next == nil {
		sl.head.level = sl.head.level[:len(sl.head.level)-1]
	}
	sl.length--
	x.prev = nil
	for i := range x.level {
		x.level[i] = zlevel{}
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
	n := &sl.head
	for i := len(sl.head.level) - 1; i >= 0; i-- {
		for n.level[i].next != nil && (n.level[i].next == x || n.level[i].next.before(x.score, x.member)) {
			r += n.level[i].span
			n = n.level[i].next
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
	n := &sl.head
	for i := len(sl.head.level) - 1; i >= 0; i-- {
		for n.level[i].next != nil && walked+n.level[i].span <= r {
			walked += n.level[i].span
			n = n.level[i].next
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
	walked := 0
	n := &sl.head
	for i := len(sl.head.level) - 1; i >= 0; i-- {
		for n.level[i].next != nil && walked+n.level[i].span < r {
			walked += n.level[i].span
			n = n.level[i].next
		}
		update[i] = n
	}
	if len(sl.head.level) == 0 {
		return nil
	}
	return n.level[0].next
}

// firstWhere returns the first node for which below is false, where below
// is true of a prefix of the list and false of the rest (nil when it is
// true of every node); update, when not nil, gets the last node before it
// at each level.
func (sl *skiplist) firstWhere(below func(*znode) bool, update *[maxLevel]*znode) *znode {
	n := &sl.head
	for i := len(sl.head.level) - 1; i >= 0; i-- {
		for n.level[i].next != nil && below(n.level[i].next) {
			n = n.level[i].next
		}
		if update != nil {
			update[i] = n
		}
	}
	if len(sl.head.level) == 0 {
		return nil
	}
	return n.level[0].next
}

// lastWhere returns the last node for which within is true, where within
// is true of a prefix of the list (nil when it is true of none).
func (sl *skiplist) lastWhere(within func(*znode) bool) *znode {
	n := &sl.head
	for i := len(sl.head.level) - 1; i >= 0; i-- {
		for n.level[i].next != nil && within(n.level[i].next) {
			n = n.level[i].next
		}
	}
	if n == &sl.head {
		return nil
	}
	return n
}

// appender builds a list from nodes given in order, each in O(1): what
// Clone and the commands that store a computed set use.
type appender struct {
	sl   *skiplist
	last [maxLevel]*znode
	rank [maxLevel]int // rank of last[i]
}

func newAppender(sl *skiplist) *appender {
	a := &appender{sl: sl}
	for i := range a.last {
		a.last[i] = &sl.head
	}
	return a
}

// add links x after every node added before; x sorts after them all.
func (a *appender) add(x *znode) {
	sl := a.sl
	r := sl.length + 1
	for len(sl.head.level) < len(x.level) {
		sl.head.level = append(sl.head.level, zlevel{})
	}
	for i := range x.level {
		a.last[i].level[i].next = x
		a.last[i].level[i].span = r - a.rank[i]
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
	for i := range sl.head.level {
		a.last[i].level[i].next = nil
		a.last[i].level[i].span = sl.length - a.rank[i]
	}
}
