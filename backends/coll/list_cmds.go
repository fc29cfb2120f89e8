package coll

import "github.com/pgcache/pgcache/backends"

// List commands. Each is an Op: Parse… reads the request, Run does it on
// the list, Reply answers as Redis 7.0 does. The fields a store needs to
// run the common ones itself (PostgreSQL: the pushes and pops, LRANGE,
// LINDEX, LSET, LTRIM) are exported, results included: a store that runs
// the command natively fills the results, and Reply writes them. The
// others keep theirs unexported: a store runs them with Run. LLEN is in
// colls.go, with the other types' counts.

// Push is LPUSH, RPUSH, LPUSHX and RPUSHX key element [element ...].
type Push struct {
	backends.Passed
	End   End      // where the elements go, each in turn
	X     bool     // LPUSHX/RPUSHX: only onto a list that exists
	Elems [][]byte // borrowed from the request; Run keeps copies
	Len   int64    // result: the list's length after (0: X and no list)
}

func parsePush(args [][]byte, end End, x bool) (Command, error) {
	return fresh(&Push{End: end, X: x}, args)
}

func (op *Push) reset() { *op = Push{End: op.End, X: op.X} }

func (op *Push) parse(args [][]byte) error {
	op.reset()
	op.Elems = args[2:]
	op.Args, op.KeyAt = args, at1
	return nil
}

// ParseLPush reads LPUSH key element [element ...].
func ParseLPush(args [][]byte) (Command, error) { return parsePush(args, Left, false) }

// ParseRPush reads RPUSH key element [element ...].
func ParseRPush(args [][]byte) (Command, error) { return parsePush(args, Right, false) }

// ParseLPushX reads LPUSHX key element [element ...].
func ParseLPushX(args [][]byte) (Command, error) { return parsePush(args, Left, true) }

// ParseRPushX reads RPUSHX key element [element ...].
func ParseRPushX(args [][]byte) (Command, error) { return parsePush(args, Right, true) }

func (op *Push) Name() string {
	switch {
	case op.End == Left && op.X:
		return "lpushx"
	case op.X:
		return "rpushx"
	case op.End == Left:
		return "lpush"
	}
	return "rpush"
}
func (*Push) Writes() backends.Writes { return backends.WritesAll }

func (op *Push) Run(v backends.View) error {
	op.Len = 0
	l, err := collOf[*List](v, 0)
	if err != nil || (l == nil && op.X) {
		return err
	}
	if l == nil {
		l = NewList()
		v.Put(0, l)
	}
	for _, e := range op.Elems {
		l.Push(op.End, clone(e))
	}
	op.Len = int64(l.Len())
	return nil
}

func (op *Push) Reply(w Writer) { w.Int(op.Len) }

// Pop is LPOP and RPOP key [count].
type Pop struct {
	backends.Passed
	End   End
	Count int64     // how many; -1 when not given (a bulk reply, not an array)
	Found bool      // result: the key held a list
	Elems [][]byte  // result: what was popped, in the order popped
	one   [1][]byte // Elems' room for one element, without an allocation
}

func parsePop(args [][]byte, end End) (Command, error) { return fresh(&Pop{End: end}, args) }

func (op *Pop) reset() { *op = Pop{End: op.End} }

func (op *Pop) parse(args [][]byte) error {
	op.reset()
	if len(args) > 3 {
		return arityError(args[0])
	}
	op.Count, op.Elems = -1, op.one[:0]
	if len(args) == 3 {
		n, err := countArg(args[2])
		if err != nil {
			return err
		}
		op.Count = n
	}
	op.Args, op.KeyAt = args, at1
	op.NullArray = op.Count >= 0 // a count on a missing key: RESP2's nil array
	return nil
}

// maxLong is C's LONG_MAX on the 64-bit machines Redis runs on.
const maxLong = 1<<63 - 1

// ParseLPop reads LPOP key [count].
func ParseLPop(args [][]byte) (Command, error) { return parsePop(args, Left) }

// ParseRPop reads RPOP key [count].
func ParseRPop(args [][]byte) (Command, error) { return parsePop(args, Right) }

func (op *Pop) Name() string         { return popName(op.End) }
func (*Pop) Writes() backends.Writes { return backends.WritesAll }

func (op *Pop) Run(v backends.View) error {
	op.Found, op.Elems = false, op.Elems[:0]
	l, err := collOf[*List](v, 0)
	if l == nil || err != nil {
		return err
	}
	op.Found = true
	if op.Count < 0 {
		op.Elems = append(op.Elems, l.Pop(op.End))
		return nil
	}
	op.Elems = l.PopN(op.Elems, op.End, op.Count)
	return nil
}

func (op *Pop) Reply(w Writer) {
	switch {
	case !op.Found && op.Count < 0:
		w.Null()
	case !op.Found:
		w.NullArray()
	case op.Count < 0:
		w.Bulk(op.Elems[0])
	default:
		bulks(w, op.Elems)
	}
}

// LRange is LRANGE key start stop.
type LRange struct {
	backends.Passed
	IndexRange
	Elems [][]byte // result
}

// ParseLRange reads LRANGE key start stop.
func ParseLRange(args [][]byte) (Command, error) {
	op := &LRange{}
	op.Args, op.KeyAt = args, at1
	return parsed(op, op.IndexRange.parse(args[2], args[3]))
}

func (*LRange) Name() string            { return "lrange" }
func (*LRange) Writes() backends.Writes { return backends.ReadOnly }

func (op *LRange) Run(v backends.View) error {
	op.Elems = nil
	l, err := collOf[*List](v, 0)
	if l == nil || err != nil {
		return err
	}
	if from, to, ok := op.span(l.Len()); ok {
		op.Elems = l.Range(make([][]byte, 0, to-from+1), from, to, false)
	}
	return nil
}

func (op *LRange) Reply(w Writer) { bulks(w, op.Elems) }

// LIndex is LINDEX key index.
type LIndex struct {
	backends.Passed
	Index    int64
	BadIndex error  // the index's parse error: Redis reports it after the key's
	Elem     []byte // result
	Found    bool   // result
}

// ParseLIndex reads LINDEX key index.
func ParseLIndex(args [][]byte) (Command, error) {
	op := &LIndex{}
	op.Index, op.BadIndex = longArg(args[2])
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*LIndex) Name() string            { return "lindex" }
func (*LIndex) Writes() backends.Writes { return backends.ReadOnly }

func (op *LIndex) Run(v backends.View) error {
	op.Elem, op.Found = nil, false
	l, err := collOf[*List](v, 0)
	if l == nil || err != nil {
		return err
	}
	if op.BadIndex != nil {
		return op.BadIndex
	}
	op.Elem, op.Found = l.Index(op.Index)
	return nil
}

func (op *LIndex) Reply(w Writer) { bulkOrNull(w, op.Elem, op.Found) }

// LSet is LSET key index element.
type LSet struct {
	backends.Passed
	Index    int64
	BadIndex error // the index's parse error: Redis reports it after the key's
	Elem     []byte
}

// ParseLSet reads LSET key index element.
func ParseLSet(args [][]byte) (Command, error) {
	op := &LSet{Elem: args[3]}
	op.Index, op.BadIndex = longArg(args[2])
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*LSet) Name() string            { return "lset" }
func (*LSet) Writes() backends.Writes { return backends.WritesAll }

func (op *LSet) Run(v backends.View) error {
	l, err := collOf[*List](v, 0)
	switch {
	case err != nil:
		return err
	case l == nil:
		return ErrNoSuchKey
	case op.BadIndex != nil:
		return op.BadIndex
	}
	i := op.Index
	if i < 0 {
		i += int64(l.Len())
	}
	if i < 0 || i >= int64(l.Len()) {
		return ErrIndexRange
	}
	l.Set(int(i), clone(op.Elem))
	return nil
}

func (*LSet) Reply(w Writer) { w.Status("OK") }

// LInsert is LINSERT key BEFORE|AFTER pivot element.
type LInsert struct {
	backends.Passed
	after       bool
	pivot, elem []byte
	result      int64 // the new length, -1 without the pivot, 0 without the key
}

// ParseLInsert reads LINSERT key BEFORE|AFTER pivot element.
func ParseLInsert(args [][]byte) (Command, error) {
	op := &LInsert{pivot: args[3], elem: args[4]}
	switch {
	case is(args[2], "after"):
		op.after = true
	case !is(args[2], "before"):
		return nil, errSyntax
	}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*LInsert) Name() string            { return "linsert" }
func (*LInsert) Writes() backends.Writes { return backends.WritesAll }

func (op *LInsert) Run(v backends.View) error {
	op.result = 0
	l, err := collOf[*List](v, 0)
	if l == nil || err != nil {
		return err
	}
	op.result = -1
	l.Find(op.pivot, Left, 0, func(i int) bool {
		if op.after {
			i++
		}
		l.Insert(i, clone(op.elem))
		op.result = int64(l.Len())
		return false
	})
	return nil
}

func (op *LInsert) Reply(w Writer) { w.Int(op.result) }

// LRem is LREM key count element.
type LRem struct {
	backends.Passed
	count   int64
	elem    []byte
	removed int64
}

// ParseLRem reads LREM key count element.
func ParseLRem(args [][]byte) (Command, error) {
	n, err := longArg(args[2])
	if err != nil {
		return nil, err
	}
	op := &LRem{count: n, elem: args[3]}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*LRem) Name() string            { return "lrem" }
func (*LRem) Writes() backends.Writes { return backends.WritesAll }

func (op *LRem) Run(v backends.View) error {
	op.removed = 0
	l, err := collOf[*List](v, 0)
	if l == nil || err != nil {
		return err
	}
	op.removed = l.Remove(op.elem, op.count)
	return nil
}

func (op *LRem) Reply(w Writer) { w.Int(op.removed) }

// LTrim is LTRIM key start stop.
type LTrim struct {
	backends.Passed
	IndexRange
}

// ParseLTrim reads LTRIM key start stop.
func ParseLTrim(args [][]byte) (Command, error) {
	op := &LTrim{}
	op.Args, op.KeyAt = args, at1
	return parsed(op, op.IndexRange.parse(args[2], args[3]))
}

func (*LTrim) Name() string            { return "ltrim" }
func (*LTrim) Writes() backends.Writes { return backends.WritesAll }

func (op *LTrim) Run(v backends.View) error {
	l, err := collOf[*List](v, 0)
	if l == nil || err != nil {
		return err
	}
	from, to, ok := op.span(l.Len())
	l.Trim(from, to, ok)
	return nil
}

func (*LTrim) Reply(w Writer) { w.Status("OK") }

var (
	_ Command = (*Push)(nil)
	_ Command = (*Pop)(nil)
	_ Command = (*LRange)(nil)
	_ Command = (*LIndex)(nil)
	_ Command = (*LSet)(nil)
	_ Command = (*LInsert)(nil)
	_ Command = (*LRem)(nil)
	_ Command = (*LTrim)(nil)
	_ Command = (*LMove)(nil)
	_ Command = (*LMPop)(nil)
)
