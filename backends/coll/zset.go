package coll

import (
	"iter"
	"math/rand/v2"
	"strings"

	"github.com/pgcache/pgcache/backends"
)

// ZSet is a Redis sorted set: members, each with a score, ordered by
// (score, member bytes). A map finds a member's node in O(1); the nodes
// are linked in a skip list with spans (skiplist.go), so inserting,
// removing, ranking and finding a range by score or by member are
// O(log N); and they sit in a dense slice too, so a member is picked at
// random uniformly in O(1) (ZRANDMEMBER) and ZSCAN pages over positions
// (a removal moves the last node into the hole).
type ZSet struct {
	nodes  map[string]*znode
	sl     skiplist
	dense  []*znode
	weight int64
	// The largest the set ever was, for OBJECT ENCODING (Limits).
	maxLen, maxElem int
	j               *Journal
}

// zsetEntryCost is what a member costs beyond its bytes: its node and
// levels, its map entry and its slot in the dense slice.
const zsetEntryCost = 128

// ZEntry is a member and its score, as range commands answer them.
type ZEntry struct {
	Member string
	Score  float64
}

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet { return &ZSet{nodes: make(map[string]*znode)} }

func (z *ZSet) Type() backends.Type { return backends.TypeZSet }
func (z *ZSet) Len() int            { return len(z.dense) }
func (z *ZSet) Weight() int64       { return z.weight }

// Clone copies the set: new nodes, in the same order and the same dense
// positions (a ZSCAN goes on over the copy); member strings are shared
// (they never change).
func (z *ZSet) Clone() backends.Value {
	c := &ZSet{nodes: make(map[string]*znode, len(z.dense)), dense: make([]*znode, len(z.dense)),
		weight: z.weight, maxLen: z.maxLen, maxElem: z.maxElem}
	a := newAppender(&c.sl)
	for x := z.sl.first(); x != nil; x = x.next() {
		y := newNode(int(x.height), x.member, x.score)
		y.pos = x.pos
		c.dense[y.pos] = y
		c.nodes[y.member] = y
		a.add(y)
	}
	a.done()
	return c
}

// Journal makes the set record the members each change touches in j (nil:
// stop recording).
func (z *ZSet) Journal(j *Journal) { z.j = j }

// Score returns member m's score.
func (z *ZSet) Score(m string) (float64, bool) {
	x, ok := z.nodes[m]
	if !ok {
		return 0, false
	}
	return x.score, true
}

// Add gives member m the score s, adding m if it is new (m is kept: the
// caller must not change it), and reports whether it was. s must not be
// NaN.
func (z *ZSet) Add(m string, s float64) (added bool) {
	if x, ok := z.nodes[m]; ok {
		z.rescore(x, s)
		return false
	}
	z.insert(m, s)
	return true
}

// Del removes member m and reports whether it was there.
func (z *ZSet) Del(m string) bool {
	x, ok := z.nodes[m]
	if !ok {
		return false
	}
	z.sl.remove(x)
	z.drop(x)
	return true
}

// Rank returns member m's 0-based rank by ascending score.
func (z *ZSet) Rank(m string) (int, bool) {
	x, ok := z.nodes[m]
	if !ok {
		return 0, false
	}
	return z.sl.rank(x) - 1, true
}

// ByRank returns the member of 0-based rank r by ascending score, 0 <= r <
// Len().
func (z *ZSet) ByRank(r int) (string, float64) {
	x := z.sl.byRank(r + 1)
	return x.member, x.score
}

// At returns the i-th member and its score, 0 <= i < Len(), in the set's
// dense order (which a removal changes): not the order of scores.
func (z *ZSet) At(i int) (string, float64) { return z.dense[i].member, z.dense[i].score }

// Random returns a member picked uniformly at random; the set must not be
// empty.
func (z *ZSet) Random() (string, float64) {
	x := z.dense[rand.IntN(len(z.dense))]
	return x.member, x.score
}

// All yields the members and their scores by ascending score; the set
// must not change meanwhile.
func (z *ZSet) All() iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		for x := z.sl.first(); x != nil; x = x.next() {
			if !yield(x.member, x.score) {
				return
			}
		}
	}
}

// Encoding is what OBJECT ENCODING reports: listpack while the set has
// never had more members, or a longer member, than l allows; skiplist
// after.
func (z *ZSet) Encoding(l *Limits) string { return either(z.listpack(l), "listpack", "skiplist") }

// listpack reports whether Redis would hold the set as a listpack.
func (z *ZSet) listpack(l *Limits) bool { return fitsListpack(l, z.maxLen, z.maxElem) }

// listpackWith reports whether it would still be one once a member of
// mlen bytes is added.
func (z *ZSet) listpackWith(l *Limits, mlen int) bool {
	return fitsListpack(l, max(z.maxLen, len(z.dense)+1), max(z.maxElem, mlen))
}

func fitsListpack(l *Limits, n, elem int) bool {
	return int64(n) <= l.ZSetMaxListpackEntries && int64(elem) <= l.ZSetMaxListpackValue
}

// lpScore is the score a listpack keeps of s: a listpack stores an
// integral score as an integer, so -0 becomes 0 (Redis's zzlInsertAt).
func lpScore(listpack bool, s float64) float64 {
	if listpack && s == 0 {
		return 0
	}
	return s
}

// insert adds member m, which is not in the set, with score s.
func (z *ZSet) insert(m string, s float64) *znode {
	z.j.touch(m)
	x := newNode(randomLevel(), m, s)
	x.pos = len(z.dense)
	z.dense = append(z.dense, x)
	z.nodes[m] = x
	z.sl.insert(x)
	z.weight += int64(len(m)) + zsetEntryCost
	z.maxLen = max(z.maxLen, len(z.dense))
	z.maxElem = max(z.maxElem, len(m))
	return x
}

// rescore gives node x the score s.
func (z *ZSet) rescore(x *znode, s float64) {
	z.j.touch(x.member)
	z.sl.rescore(x, s)
}

// drop forgets node x, already unlinked from the skip list: the last node
// of the dense slice takes its place there.
func (z *ZSet) drop(x *znode) {
	z.j.touch(x.member)
	last := len(z.dense) - 1
	if x.pos != last {
		y := z.dense[last]
		z.dense[x.pos], y.pos = y, x.pos
	}
	z.dense[last] = nil
	z.dense = z.dense[:last]
	if cap(z.dense) > 64 && len(z.dense) < cap(z.dense)/4 {
		// Give back what a set that shrank no longer needs (positions
		// stay as they are).
		z.dense = append(make([]*znode, 0, 2*len(z.dense)), z.dense...)
	}
	delete(z.nodes, x.member)
	z.weight -= int64(len(x.member)) + zsetEntryCost
}

// removeRange removes the nodes from the first for which below is false
// while within is true (the two describe a range of the order); it returns
// how many it removed.
func (z *ZSet) removeRange(below, within func(*znode) bool) int {
	var update [maxLevel]*znode
	return z.removeRun(z.sl.firstWhere(below, &update), &update, z.Len(), within)
}

// removeRanks removes the nodes of 1-based ranks start to end, inclusive,
// 1 <= start <= end <= Len().
func (z *ZSet) removeRanks(start, end int) int {
	var update [maxLevel]*znode
	return z.removeRun(z.sl.atRank(start, &update), &update, end-start+1, nil)
}

// removeRun removes at most n nodes from x on, while within (nil: any) is
// true of them; update holds the last node before x at each level. It
// returns how many it removed.
func (z *ZSet) removeRun(x *znode, update *[maxLevel]*znode, n int, within func(*znode) bool) int {
	removed := 0
	for x != nil && removed < n && (within == nil || within(x)) {
		next := x.next()
		z.sl.unlink(x, update)
		z.drop(x)
		removed++
		x = next
	}
	return removed
}

// newZSetSorted builds a set of the entries, which are in order (by score
// then member) and distinct.
func newZSetSorted(es []ZEntry) *ZSet {
	z := &ZSet{nodes: make(map[string]*znode, len(es)), dense: make([]*znode, len(es))}
	a := newAppender(&z.sl)
	for i, e := range es {
		x := newNode(randomLevel(), e.Member, e.Score)
		x.pos = i
		z.dense[i] = x
		z.nodes[e.Member] = x
		a.add(x)
		z.weight += int64(len(e.Member)) + zsetEntryCost
		z.maxElem = max(z.maxElem, len(e.Member))
	}
	a.done()
	z.maxLen = len(es)
	return z
}

// ScoreRange is a range of scores, ZRANGEBYSCORE's min and max: each end
// is inclusive unless Ex ("(" in the request). Min and Max may be
// infinities, never NaN.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

// Empty reports whether no score can be in the range.
func (r ScoreRange) Empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

// AboveMin reports whether s is not below the range.
func (r ScoreRange) AboveMin(s float64) bool {
	if r.MinEx {
		return s > r.Min
	}
	return s >= r.Min
}

// BelowMax reports whether s is not above the range.
func (r ScoreRange) BelowMax(s float64) bool {
	if r.MaxEx {
		return s < r.Max
	}
	return s <= r.Max
}

// Contains reports whether s is in the range.
func (r ScoreRange) Contains(s float64) bool { return r.AboveMin(s) && r.BelowMax(s) }

// LexBound is one end of a range of members (ZRANGEBYLEX): Member,
// inclusive or exclusive ("[" or "(" in the request), or, when Inf is -1
// or +1, "-" or "+": before or after every member.
type LexBound struct {
	Member string
	Excl   bool
	Inf    int8
}

// LexRange is a range of members by their bytes, as ZRANGEBYLEX reads it;
// it is meant for members that all have the same score.
type LexRange struct {
	Min, Max LexBound
}

// cmpLex compares member m to bound b: -1, 0 or 1.
func cmpLex(m string, b LexBound) int {
	if b.Inf != 0 {
		return -int(b.Inf)
	}
	return strings.Compare(m, b.Member)
}

// Empty reports whether no member can be in the range.
func (r LexRange) Empty() bool {
	var c int
	switch {
	case r.Min.Inf != 0 && r.Min.Inf == r.Max.Inf:
		c = 0
	case r.Min.Inf < 0 || r.Max.Inf > 0:
		c = -1
	case r.Min.Inf > 0 || r.Max.Inf < 0:
		c = 1
	default:
		c = strings.Compare(r.Min.Member, r.Max.Member)
	}
	return c > 0 || (c == 0 && (r.Min.Excl || r.Max.Excl))
}

// AboveMin reports whether m is not below the range.
func (r LexRange) AboveMin(m string) bool {
	c := cmpLex(m, r.Min)
	return c > 0 || (c == 0 && !r.Min.Excl)
}

// BelowMax reports whether m is not above the range.
func (r LexRange) BelowMax(m string) bool {
	c := cmpLex(m, r.Max)
	return c < 0 || (c == 0 && !r.Max.Excl)
}

// Contains reports whether m is in the range.
func (r LexRange) Contains(m string) bool { return r.AboveMin(m) && r.BelowMax(m) }

// A range of scores or of members is, to the skip list, a stretch of its
// order: the nodes before it, then those within it (up to the first after
// it), then the rest; before and within are each true of a prefix of the
// list.

func (r ScoreRange) before(x *znode) bool { return !r.AboveMin(x.score) }
func (r ScoreRange) within(x *znode) bool { return r.BelowMax(x.score) }
func (r LexRange) before(x *znode) bool   { return !r.AboveMin(x.member) }
func (r LexRange) within(x *znode) bool   { return r.BelowMax(x.member) }

// nodes returns the first and last nodes of z in r, nil and nil when none
// is.
func (r *ScoreRange) nodes(z *ZSet) (first, last *znode) {
	if first = z.first(r.Empty(), r.before, r.within); first != nil {
		// A literal, not the method value: lastWhere, inlined here, then
		// calls it directly.
		last = z.sl.lastWhere(func(x *znode) bool { return r.within(x) })
	}
	return first, last
}

// nodes returns the first and last nodes of z in r, nil and nil when none
// is.
func (r *LexRange) nodes(z *ZSet) (first, last *znode) {
	if first = z.first(r.Empty(), r.before, r.within); first != nil {
		last = z.sl.lastWhere(func(x *znode) bool { return r.within(x) })
	}
	return first, last
}

// first returns the first node of a stretch of the order, nil when it
// holds none (empty: the range can hold none).
func (z *ZSet) first(empty bool, before, within func(*znode) bool) *znode {
	if empty || z.sl.tail == nil || before(z.sl.tail) || !within(z.sl.first()) {
		return nil
	}
	if x := z.sl.firstWhere(before, nil); x != nil && within(x) {
		return x
	}
	return nil
}

var _ backends.Value = (*ZSet)(nil)
