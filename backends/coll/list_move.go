package coll

import (
	"errors"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// List commands over several keys: LMOVE and RPOPLPUSH (a source and a
// destination), LMPOP (the first of its keys that holds a list).

// LMove is LMOVE source destination LEFT|RIGHT LEFT|RIGHT, and RPOPLPUSH
// source destination (RIGHT LEFT). Keys: 0 the source, 1 the destination;
// one key named twice rotates its list.
type LMove struct {
	backends.Passed
	wait      // BLMOVE's: woken, a source of another type is waited on
	From, To  End
	Elem      []byte // result: the element moved
	Found     bool   // result: the source held a list
	rpoplpush bool
}

// ParseLMove reads LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
func ParseLMove(args [][]byte) (Command, error) {
	op := &LMove{}
	return parsed(op, op.parse(args))
}

// parse reads [B]LMOVE's source, destination and ends.
func (op *LMove) parse(args [][]byte) error {
	var err error
	if op.From, err = endArg(args[3]); err != nil {
		return err
	}
	if op.To, err = endArg(args[4]); err != nil {
		return err
	}
	op.Args, op.KeyAt = args, at12
	return nil
}

// ParseRPopLPush reads RPOPLPUSH source destination.
func ParseRPopLPush(args [][]byte) (Command, error) {
	op := &LMove{From: Right, To: Left, rpoplpush: true}
	op.Args, op.KeyAt = args, at12
	return op, nil
}

func (op *LMove) Name() string         { return either(op.rpoplpush, "rpoplpush", "lmove") }
func (*LMove) Writes() backends.Writes { return backends.WritesAll }

// Run checks the source, then the destination's type, before it changes
// anything, as Redis does: a destination of another type leaves the
// source whole.
func (op *LMove) Run(v backends.View) error {
	op.Elem, op.Found = nil, false
	src, err := collOf[*List](v, 0)
	if op.Woken && errors.Is(err, backends.ErrWrongType) {
		return nil
	}
	if src == nil || err != nil {
		return err
	}
	dst, err := collOf[*List](v, 1)
	if err != nil {
		return err
	}
	e := src.Pop(op.From)
	if dst == nil {
		dst = NewList()
		v.Put(1, dst)
	}
	dst.Push(op.To, e)
	op.Elem, op.Found = e, true
	return nil
}

func (op *LMove) Reply(w Writer) { bulkOrNull(w, op.Elem, op.Found) }

// LMPop is LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: pops up to
// count elements from the first key that holds a list.
type LMPop struct {
	backends.Passed
	wait  // BLMPOP's: woken, keys of another type are passed over
	End   End
	Count int64     // at least 1
	Found bool      // result: one of the keys held a list
	Key   []byte    // result: that key (a copy)
	Elems [][]byte  // result: what was popped, in the order popped
	one   [1][]byte // Elems' room for one element, without an allocation
}

// ParseLMPop reads LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count].
func ParseLMPop(args [][]byte) (Command, error) {
	op := &LMPop{}
	return parsed(op, op.parse(args, false))
}

// parse reads LMPOP's arguments, or BLMPOP's (blocking).
func (op *LMPop) parse(args [][]byte, blocking bool) error {
	a, err := parseMPop(args, blocking, "left", "right")
	if err != nil {
		return err
	}
	op.End, op.Count, op.Elems, op.timeout = End(a.end), a.count, op.one[:0], a.timeout
	op.Args, op.KeyAt, op.NullArray = args, a.keyAt, true
	return nil
}

// mpopArgs are what LMPOP and ZMPOP take, and BLMPOP and BZMPOP, with a
// timeout first: [timeout] numkeys key [key ...] end [COUNT count], where
// end is one of two words (LEFT or RIGHT, MIN or MAX).
type mpopArgs struct {
	keyAt   []int
	end     int   // 0: the first word, 1: the second
	count   int64 // 1 when not given
	timeout time.Duration
}

// parseMPop reads mpopArgs; Redis checks a blocking form's timeout last.
func parseMPop(args [][]byte, blocking bool, first, second string) (mpopArgs, error) {
	a := mpopArgs{count: -1}
	at := 1 // numkeys
	if blocking {
		at = 2
	}
	numkeys, err := rangeArg(args[at], 1, maxLong, errNumkeys)
	if err != nil {
		return a, err
	}
	if numkeys >= int64(len(args)-at-1) {
		return a, errSyntax // no room for the end after the keys
	}
	where := at + int(numkeys) + 1
	switch {
	case is(args[where], first):
	case is(args[where], second):
		a.end = 1
	default:
		return a, errSyntax
	}
	for j := where + 1; j < len(args); j++ {
		if a.count == -1 && is(args[j], "count") && j+1 < len(args) {
			j++
			if a.count, err = rangeArg(args[j], 1, maxLong, errCountZero); err != nil {
				return a, err
			}
			continue
		}
		return a, errSyntax
	}
	if a.count == -1 {
		a.count = 1
	}
	a.keyAt = keysAt(at+1, int(numkeys))
	if blocking {
		a.timeout, err = parseTimeout(args[1])
	}
	return a, err
}

func (*LMPop) Name() string            { return "lmpop" }
func (*LMPop) Writes() backends.Writes { return backends.WritesAll }

// Run pops from the first key that holds a list; a key of another type
// before it fails the command, one after it is not looked at.
func (op *LMPop) Run(v backends.View) error {
	op.Found, op.Key, op.Elems = false, nil, op.Elems[:0]
	val, i, err := op.firstHeld(v, len(op.KeyAt), backends.TypeList)
	if val == nil || err != nil {
		return err
	}
	op.Found, op.Key = true, clone(op.Args[op.KeyAt[i]])
	op.Elems = val.(*List).PopN(op.Elems, op.End, op.Count)
	return nil
}

func (op *LMPop) Reply(w Writer) {
	if poppedFrom(w, op.Key, op.Found, 2) {
		bulks(w, op.Elems)
	}
}
