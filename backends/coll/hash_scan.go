package coll

import (
	"strconv"

	"github.com/pgcache/pgcache/backends"
)

// HSCAN, and what the SCAN family shares: the cursor, the options, and the
// reply.
//
// A value Redis keeps small (a listpack, an intset) is returned whole with
// cursor 0, as Redis does. A larger one is paged over its dense slice of
// members, from the highest index downward: cursor c > 0 means the members
// below index c are still to visit, and cursor 0 starts at the top (Len).
// A removal moves only the last member into the hole it leaves, so a member
// can move down, from the part visited into the part not visited yet (it
// is returned twice), but never up, out of the part not visited: a member
// present for the whole scan is returned at least once, as Redis promises.
// A member added during the scan is appended at the top and may be missed,
// as Redis allows.

// scanArgs are a SCAN family command's cursor and options: key cursor
// [MATCH pattern] [COUNT count].
type scanArgs struct {
	cursor   uint64
	count    int
	match    string
	useMatch bool
	// err is an option's error: Redis answers it only once the key is
	// found and of the right type (an absent key answers an empty scan).
	err error
}

// parseScan reads the cursor (args[2], refused at once, as Redis does) and
// the options that follow it.
func parseScan(args [][]byte) (scanArgs, error) {
	a := scanArgs{count: 10}
	c, err := parseCursor(args[2])
	if err != nil {
		return a, err
	}
	a.cursor = c
	for i := 3; i < len(args); i += 2 {
		more := i+1 < len(args)
		switch {
		case more && is(args[i], "count"):
			n, ok := backends.ParseInt(args[i+1])
			switch {
			case !ok:
				a.err = errNotInteger
			case n < 1:
				a.err = errSyntax
			}
			if a.err != nil {
				return a, nil
			}
			a.count = int(min(n, 1<<31))
		case more && is(args[i], "match"):
			a.match = string(args[i+1])
			a.useMatch = a.match != "*"
		default:
			a.err = errSyntax
			return a, nil
		}
	}
	return a, nil
}

// keep reports whether member m passes MATCH. An empty pattern matches
// only an empty member, as Redis's stringmatchlen does (backends.Match
// takes it for "*").
func (a *scanArgs) keep(m string) bool {
	switch {
	case !a.useMatch:
		return true
	case a.match == "":
		return m == ""
	}
	return backends.Match(a.match, m)
}

// page is the part of a dense slice of n members one call visits: indexes
// from down to to-1, and the cursor that follows.
func (a *scanArgs) page(n int) (from, to int, next uint64) {
	to = n
	if a.cursor != 0 && a.cursor < uint64(n) {
		to = int(a.cursor)
	}
	from = max(to-a.count, 0)
	return from, to, uint64(from)
}

// writeScan writes a scan's reply: the cursor, then the elements.
func writeScan(w Writer, cursor uint64, elems [][]byte) {
	w.Array(2)
	w.Bulk(strconv.AppendUint(nil, cursor, 10))
	w.Array(len(elems))
	for _, e := range elems {
		w.Bulk(e)
	}
}

// HScan is HSCAN key cursor [MATCH pattern] [COUNT count].
type HScan struct {
	backends.Passed
	scanArgs
	next  uint64
	elems [][]byte // field, value, …
}

// ParseHScan reads HSCAN.
func ParseHScan(args [][]byte) (Command, error) {
	a, err := parseScan(args)
	if err != nil {
		return nil, err
	}
	op := &HScan{scanArgs: a}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*HScan) Name() string            { return "hscan" }
func (*HScan) Writes() backends.Writes { return backends.ReadOnly }

// Run needs the View's Limits: a small hash is returned whole.
func (op *HScan) Run(v backends.View) error {
	op.next, op.elems = 0, op.elems[:0]
	h, err := hashOf(v, 0)
	if h == nil || err != nil {
		return err
	}
	if op.err != nil {
		return op.err
	}
	add := func(i int) {
		if f, val := h.At(i); op.keep(f) {
			op.elems = append(op.elems, bytesOf(f), val)
		}
	}
	if h.small(LimitsOf(v)) {
		for i := range h.Len() {
			add(i)
		}
		return nil
	}
	from, to, next := op.page(h.Len())
	for i := to - 1; i >= from; i-- {
		add(i)
	}
	op.next = next
	return nil
}

func (op *HScan) Reply(w Writer) { writeScan(w, op.next, op.elems) }
