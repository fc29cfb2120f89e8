package coll

import (
	"slices"

	"github.com/pgcache/pgcache/backends"
)

// The pops: ZPOPMIN, ZPOPMAX, ZMPOP, and the blocking BZPOPMIN, BZPOPMAX
// and BZMPOP.

// popN removes the n members of lowest scores (highest when top) from z,
// n <= Len(), appends them to es in the order they go, and returns es.
func (z *ZSet) popN(es []ZEntry, n int, top bool) []ZEntry {
	if n <= 0 {
		return es
	}
	es = slices.Grow(es, n)
	if top {
		x := z.sl.tail
		for range n {
			es = append(es, ZEntry{x.member, x.score})
			x = x.prev
		}
		z.removeRanks(z.Len()-n+1, z.Len())
		return es
	}
	x := z.sl.first()
	for range n {
		es = append(es, ZEntry{x.member, x.score})
		x = x.next()
	}
	z.removeRanks(1, n)
	return es
}

// ZPop is ZPOPMIN key [count] and ZPOPMAX key [count].
type ZPop struct {
	backends.Passed
	Max    bool     // ZPOPMAX
	Count  int64    // -1: none given
	Found  bool     // result: the key held a sorted set
	Popped []ZEntry // result: in the order popped
}

// ParseZPop reads ZPOPMIN and ZPOPMAX.
func ParseZPop(args [][]byte) (Command, error) {
	n, given, err := optionalCount(args, countArg)
	if err != nil {
		return nil, err
	}
	op := &ZPop{Max: is(args[0], "zpopmax"), Count: -1}
	if given {
		op.Count = n
	}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (op *ZPop) Name() string         { return zpopName(op.Max) }
func (*ZPop) Writes() backends.Writes { return backends.WritesAll }

func (op *ZPop) Run(v backends.View) error {
	op.Found, op.Popped = false, op.Popped[:0]
	z, err := collOf[*ZSet](v, 0)
	if z == nil || err != nil {
		return err
	}
	op.Found = true
	if op.Count == 0 {
		return nil
	}
	op.Popped = z.popN(op.Popped, int(min(max(op.Count, 1), int64(z.Len()))), op.Max)
	return nil
}

func (op *ZPop) Reply(w Writer) {
	if !op.Found || op.Count == 0 {
		w.Array(0)
		return
	}
	// RESP3 nests the pairs only when a count was given.
	nested := op.Count != -1 && w.RESP3()
	if nested {
		w.Array(len(op.Popped))
	} else {
		w.Array(2 * len(op.Popped))
	}
	for _, e := range op.Popped {
		if nested {
			w.Array(2)
		}
		w.Bulk(bytesOf(e.Member))
		w.Double(e.Score)
	}
}

// ZMPop is ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: it pops
// from the first of its keys that holds a sorted set.
type ZMPop struct {
	backends.Passed
	wait   // BZMPOP's: woken, keys of another type are passed over
	max    bool
	count  int64
	key    []byte // the key popped from
	popped []ZEntry
	one    [1]ZEntry // popped's room for one member, without an allocation
}

// ParseZMPop reads ZMPOP.
func ParseZMPop(args [][]byte) (Command, error) {
	op := &ZMPop{}
	return parsed(op, op.parse(args, false))
}

// parse reads ZMPOP's arguments, or BZMPOP's (blocking).
func (op *ZMPop) parse(args [][]byte, blocking bool) error {
	a, err := parseMPop(args, blocking, "min", "max")
	if err != nil {
		return err
	}
	op.max, op.count, op.popped, op.timeout = a.end == 1, a.count, op.one[:0], a.timeout
	op.Args, op.KeyAt, op.NullArray = args, a.keyAt, true
	return nil
}

func (*ZMPop) Name() string            { return "zmpop" }
func (*ZMPop) Writes() backends.Writes { return backends.WritesAll }

func (op *ZMPop) Run(v backends.View) error {
	op.key, op.popped = nil, op.popped[:0]
	val, i, err := op.firstHeld(v, len(op.KeyAt), backends.TypeZSet)
	if val == nil || err != nil {
		return err
	}
	z := val.(*ZSet)
	op.key = clone(op.Args[op.KeyAt[i]])
	op.popped = z.popN(op.popped, int(min(op.count, int64(z.Len()))), op.max)
	return nil
}

func (op *ZMPop) Reply(w Writer) {
	if !poppedFrom(w, op.key, op.key != nil, 2) {
		return
	}
	w.Array(len(op.popped))
	for _, e := range op.popped {
		w.Array(2)
		w.Bulk(bytesOf(e.Member))
		w.Double(e.Score)
	}
}

// BZMPop is BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]:
// ZMPOP that waits.
type BZMPop struct {
	ZMPop
}

// ParseBZMPop reads BZMPOP.
func ParseBZMPop(args [][]byte) (Command, error) {
	op := &BZMPop{}
	return parsed(op, op.parse(args, true))
}

func (*BZMPop) Name() string   { return "bzmpop" }
func (op *BZMPop) Ready() bool { return op.key != nil }

// BZPop is BZPOPMIN key [key ...] timeout and BZPOPMAX key [key ...]
// timeout: BZMPOP of one member, answered as the key, the member and its
// score.
type BZPop struct {
	BZMPop
}

// ParseBZPop reads BZPOPMIN and BZPOPMAX.
func ParseBZPop(args [][]byte) (Command, error) {
	t, err := parseTimeout(args[len(args)-1])
	if err != nil {
		return nil, err
	}
	op := &BZPop{}
	op.max, op.count, op.popped, op.timeout = is(args[0], "bzpopmax"), 1, op.one[:0], t
	op.Args, op.KeyAt, op.NullArray = args, keysAt(1, len(args)-2), true
	return op, nil
}

func (op *BZPop) Name() string { return either(op.max, "bzpopmax", "bzpopmin") }

// Reply answers the key, the member and its score; when nothing was
// popped (a BZPOPMIN in MULTI or a script, which never waits), what a
// timeout answers.
func (op *BZPop) Reply(w Writer) {
	if poppedFrom(w, op.key, op.key != nil, 3) {
		w.Bulk(bytesOf(op.popped[0].Member))
		w.Double(op.popped[0].Score)
	}
}

var (
	_ Command = (*ZPop)(nil)
	_ Command = (*ZMPop)(nil)
	_ Blocker = (*BZMPop)(nil)
	_ Blocker = (*BZPop)(nil)
	_ Waker   = (*BZMPop)(nil)
	_ Waker   = (*BZPop)(nil)
)
