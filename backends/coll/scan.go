package coll

import (
	"strconv"

	"github.com/pgcache/pgcache/backends"
)

// HSCAN, SSCAN and ZSCAN: one command over three kinds of collection.
//
// A value Redis keeps small (a listpack, an intset) is returned whole with
// cursor 0, as Redis does: a hash in its order, a set in numeric order, a
// sorted set in order of scores, with its scores as a listpack holds them.
// A larger one is paged over its dense slice of members, from the highest
// index downward: cursor c > 0 means the members below index c are still
// to visit, and cursor 0 starts at the top (Len). A removal moves only the
// last member into the hole it leaves, so a member can move down, from the
// part visited into the part not visited yet (it is returned twice), but
// never up, out of the part not visited: a member present for the whole
// scan is returned at least once, as Redis promises. A member added during
// the scan is appended at the top and may be missed, as Redis allows.

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
	bulks(w, elems)
}

// Scan is HSCAN, SSCAN and ZSCAN key cursor [MATCH pattern] [COUNT count].
type Scan struct {
	backends.Passed
	scanArgs
	Type   backends.Type // TypeHash, TypeSet or TypeZSet
	next   uint64
	elems  [][]byte // members, or a hash's fields and a sorted set's members each with its value or score
	scores []byte   // the text of the scores in elems
}

var scanNames = collNames{backends.TypeHash: "hscan", backends.TypeSet: "sscan", backends.TypeZSet: "zscan"}

func parseScanOf(args [][]byte, t backends.Type) (Command, error) {
	a, err := parseScan(args)
	if err != nil {
		return nil, err
	}
	op := &Scan{scanArgs: a, Type: t}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

// ParseHScan reads HSCAN.
func ParseHScan(args [][]byte) (Command, error) { return parseScanOf(args, backends.TypeHash) }

// ParseSScan reads SSCAN.
func ParseSScan(args [][]byte) (Command, error) { return parseScanOf(args, backends.TypeSet) }

// ParseZScan reads ZSCAN.
func ParseZScan(args [][]byte) (Command, error) { return parseScanOf(args, backends.TypeZSet) }

func (op *Scan) Name() string         { return scanNames[op.Type] }
func (*Scan) Writes() backends.Writes { return backends.ReadOnly }

// Run needs the View's Limits: a small value is returned whole.
func (op *Scan) Run(v backends.View) error {
	op.next, op.elems, op.scores = 0, op.elems[:0], op.scores[:0]
	val, err := v.Get(0, op.Type)
	if val == nil || err != nil {
		return err
	}
	if op.err != nil {
		return op.err
	}
	l := LimitsOf(v)
	var add func(i int) // adds the i-th member of the value's own order
	switch c := val.(type) {
	case *Hash:
		add = func(i int) {
			if f, val := c.At(i); op.keep(f) {
				op.elems = append(op.elems, bytesOf(f), val)
			}
		}
		if c.small(l) {
			for i := range c.Len() {
				add(i)
			}
			return nil
		}
	case *Set:
		if c.intset(l) {
			for _, m := range c.Sorted(l) {
				if op.keep(m) {
					op.elems = append(op.elems, bytesOf(m))
				}
			}
			return nil
		}
		add = func(i int) {
			if m := c.At(i); op.keep(m) {
				op.elems = append(op.elems, bytesOf(m))
			}
		}
	case *ZSet:
		if c.listpack(l) {
			for x := c.sl.first(); x != nil; x = x.next() {
				op.addScored(x, appendListpackScore)
			}
			return nil
		}
		add = func(i int) { op.addScored(c.dense[i], appendScore) }
	}
	from, to, next := op.page(val.Len())
	for i := to - 1; i >= from; i-- {
		add(i)
	}
	op.next = next
	return nil
}

// addScored adds a sorted set's member and its score, formatted by format,
// when it passes MATCH.
func (op *Scan) addScored(x *znode, format func([]byte, float64) []byte) {
	if !op.keep(x.member) {
		return
	}
	at := len(op.scores)
	op.scores = format(op.scores, x.score)
	op.elems = append(op.elems, bytesOf(x.member), op.scores[at:len(op.scores):len(op.scores)])
}

// appendScore formats s as a reply does (FormatScore).
func appendScore(b []byte, s float64) []byte { return append(b, FormatScore(s)...) }

// appendListpackScore formats s as a listpack holds it: an integer when
// it is one (and within ±2^62), otherwise as a reply formats a score.
func appendListpackScore(b []byte, s float64) []byte {
	const lim = float64(1<<62 - 1)
	if s >= -lim && s <= lim && s == float64(int64(s)) {
		return strconv.AppendInt(b, int64(s), 10)
	}
	return appendScore(b, s)
}

func (op *Scan) Reply(w Writer) { writeScan(w, op.next, op.elems) }

var _ Command = (*Scan)(nil)
