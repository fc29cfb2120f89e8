package coll

import (
	"errors"
	"slices"
	"time"

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
	if len(args) > 3 {
		return nil, errSyntax
	}
	op := &ZPop{Max: is(args[0], "zpopmax"), Count: -1}
	op.Args, op.KeyAt = args, at1
	if len(args) == 3 {
		n, ok := backends.ParseInt(args[2])
		if !ok || n < 0 {
			return nil, errNotPositive
		}
		op.Count = n
	}
	return op, nil
}

func (op *ZPop) Name() string {
	if op.Max {
		return "zpopmax"
	}
	return "zpopmin"
}
func (*ZPop) Writes() backends.Writes { return backends.WritesAll }

func (op *ZPop) Run(v backends.View) error {
	op.Found, op.Popped = false, op.Popped[:0]
	z, err := zsetOf(v, 0)
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
	max    bool
	count  int64
	key    []byte // the key popped from
	popped []ZEntry
	woken  bool // BZMPOP woken (Waker): keys of another type are passed over
}

// parseZMPop reads ZMPOP's arguments from args[at] on (numkeys first).
func parseZMPop(args [][]byte, at int) (*ZMPop, error) {
	numkeys, ok := backends.ParseInt(args[at])
	if !ok || numkeys < 1 {
		return nil, errNumkeys
	}
	if numkeys >= int64(len(args)-at-1) { // no room for MIN|MAX
		return nil, errSyntax
	}
	where := at + 1 + int(numkeys)
	op := &ZMPop{count: -1}
	switch {
	case is(args[where], "min"):
	case is(args[where], "max"):
		op.max = true
	default:
		return nil, errSyntax
	}
	for j := where + 1; j < len(args); j++ {
		if op.count == -1 && is(args[j], "count") && j+1 < len(args) {
			j++
			n, ok := backends.ParseInt(args[j])
			if !ok || n < 1 {
				return nil, errCountZero
			}
			op.count = n
			continue
		}
		return nil, errSyntax
	}
	if op.count == -1 {
		op.count = 1
	}
	op.Args, op.KeyAt, op.NullArray = args, keysAt(at+1, int(numkeys)), true
	return op, nil
}

// ParseZMPop reads ZMPOP.
func ParseZMPop(args [][]byte) (Command, error) {
	op, err := parseZMPop(args, 1)
	if err != nil {
		return nil, err
	}
	return op, nil
}

func (*ZMPop) Name() string            { return "zmpop" }
func (*ZMPop) Writes() backends.Writes { return backends.WritesAll }

func (op *ZMPop) Run(v backends.View) error {
	op.key, op.popped = nil, op.popped[:0]
	for i := range op.KeyAt {
		z, err := zsetOf(v, i)
		if op.woken && errors.Is(err, backends.ErrWrongType) {
			continue
		}
		if err != nil {
			return err
		}
		if z == nil {
			continue
		}
		op.key = clone(op.Args[op.KeyAt[i]])
		op.popped = z.popN(op.popped, int(min(op.count, int64(z.Len()))), op.max)
		return nil
	}
	return nil
}

func (op *ZMPop) Reply(w Writer) {
	if op.key == nil {
		w.NullArray()
		return
	}
	w.Array(2)
	w.Bulk(op.key)
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
	timeout time.Duration
}

// ParseBZMPop reads BZMPOP.
func ParseBZMPop(args [][]byte) (Command, error) {
	op, err := parseZMPop(args, 2)
	if err != nil {
		return nil, err
	}
	t, err := parseTimeout(args[1])
	if err != nil {
		return nil, err
	}
	return &BZMPop{ZMPop: *op, timeout: t}, nil
}

func (*BZMPop) Name() string              { return "bzmpop" }
func (op *BZMPop) Ready() bool            { return op.key != nil }
func (op *BZMPop) Timeout() time.Duration { return op.timeout }
func (*BZMPop) TimedOut(w Writer)         { w.NullArray() }
func (op *BZMPop) Wake()                  { op.woken = true }

// BZPop is BZPOPMIN key [key ...] timeout and BZPOPMAX key [key ...]
// timeout: it pops one member from the first of its keys that holds a
// sorted set, or waits.
type BZPop struct {
	backends.Passed
	max     bool
	timeout time.Duration
	key     []byte
	popped  ZEntry
	woken   bool // woken (Waker): keys of another type are passed over, as for BLPOP
}

// ParseBZPop reads BZPOPMIN and BZPOPMAX.
func ParseBZPop(args [][]byte) (Command, error) {
	t, err := parseTimeout(args[len(args)-1])
	if err != nil {
		return nil, err
	}
	op := &BZPop{max: is(args[0], "bzpopmax"), timeout: t}
	op.Args, op.KeyAt, op.NullArray = args, keysAt(1, len(args)-2), true
	return op, nil
}

func (op *BZPop) Name() string {
	if op.max {
		return "bzpopmax"
	}
	return "bzpopmin"
}
func (*BZPop) Writes() backends.Writes { return backends.WritesAll }

func (op *BZPop) Run(v backends.View) error {
	op.key, op.popped = nil, ZEntry{}
	for i := range op.KeyAt {
		z, err := zsetOf(v, i)
		if op.woken && errors.Is(err, backends.ErrWrongType) {
			continue
		}
		if err != nil {
			return err
		}
		if z == nil {
			continue
		}
		var one [1]ZEntry
		op.key, op.popped = clone(op.Args[op.KeyAt[i]]), z.popN(one[:0], 1, op.max)[0]
		return nil
	}
	return nil
}

func (op *BZPop) Ready() bool            { return op.key != nil }
func (op *BZPop) Timeout() time.Duration { return op.timeout }
func (*BZPop) TimedOut(w Writer)         { w.NullArray() }
func (op *BZPop) Wake()                  { op.woken = true }

// Reply answers the key, the member and its score; when nothing was
// popped (a BZPOPMIN in MULTI or a script, which never waits), what a
// timeout answers.
func (op *BZPop) Reply(w Writer) {
	if op.key == nil {
		w.NullArray()
		return
	}
	w.Array(3)
	w.Bulk(op.key)
	w.Bulk(bytesOf(op.popped.Member))
	w.Double(op.popped.Score)
}

var (
	_ Command = (*ZPop)(nil)
	_ Command = (*ZMPop)(nil)
	_ Blocker = (*BZMPop)(nil)
	_ Blocker = (*BZPop)(nil)
	_ Waker   = (*BZMPop)(nil)
	_ Waker   = (*BZPop)(nil)
)
