package coll

import (
	"errors"

	"github.com/pgcache/pgcache/backends"
)

// List commands over several keys: LMOVE and RPOPLPUSH (a source and a
// destination), LMPOP (the first of its keys that holds a list).

// LMove is LMOVE source destination LEFT|RIGHT LEFT|RIGHT, and RPOPLPUSH
// source destination (RIGHT LEFT). Keys: 0 the source, 1 the destination;
// one key named twice rotates its list.
type LMove struct {
	backends.Passed
	From, To  End
	Elem      []byte // result: the element moved
	Found     bool   // result: the source held a list
	rpoplpush bool
	woken     bool // BLMOVE woken: a source of another type is waited on
}

// ParseLMove reads LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
func ParseLMove(args [][]byte) (Command, error) {
	op, err := parseLMove(args)
	if err != nil {
		return nil, err
	}
	return op, nil
}

func parseLMove(args [][]byte) (*LMove, error) {
	from, err := endArg(args[3])
	if err != nil {
		return nil, err
	}
	to, err := endArg(args[4])
	if err != nil {
		return nil, err
	}
	op := &LMove{From: from, To: to}
	op.Args, op.KeyAt = args, at12
	return op, nil
}

// ParseRPopLPush reads RPOPLPUSH source destination.
func ParseRPopLPush(args [][]byte) (Command, error) {
	op := &LMove{From: Right, To: Left, rpoplpush: true}
	op.Args, op.KeyAt = args, at12
	return op, nil
}

func (op *LMove) Name() string {
	if op.rpoplpush {
		return "rpoplpush"
	}
	return "lmove"
}
func (*LMove) Writes() backends.Writes { return backends.WritesAll }

// Run checks the source, then the destination's type, before it changes
// anything, as Redis does: a destination of another type leaves the
// source whole.
func (op *LMove) Run(v backends.View) error {
	op.Elem, op.Found = nil, false
	src, err := listOf(v, 0)
	if op.woken && errors.Is(err, backends.ErrWrongType) {
		return nil
	}
	if src == nil || err != nil {
		return err
	}
	dst, err := listOf(v, 1)
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

func (op *LMove) Reply(w Writer) {
	if !op.Found {
		w.Null()
		return
	}
	w.Bulk(op.Elem)
}

// LMPop is LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: pops up to
// count elements from the first key that holds a list.
type LMPop struct {
	backends.Passed
	End   End
	Count int64    // at least 1
	Found bool     // result: one of the keys held a list
	Key   []byte   // result: that key (a copy)
	Elems [][]byte // result: what was popped, in the order popped
	woken bool     // BLMPOP woken: keys of another type are passed over
}

// ParseLMPop reads LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count].
func ParseLMPop(args [][]byte) (Command, error) {
	op, err := parseLMPop(args, 1)
	if err != nil {
		return nil, err
	}
	return op, nil
}

// parseLMPop reads [B]LMPOP's arguments from numkeys, at args[at].
func parseLMPop(args [][]byte, at int) (*LMPop, error) {
	numkeys, err := rangeArg(args[at], 1, maxLong, errNumkeys)
	if err != nil {
		return nil, err
	}
	if numkeys >= int64(len(args)-at-1) {
		return nil, errSyntax // no room for LEFT|RIGHT after the keys
	}
	where := at + int(numkeys) + 1
	end, err := endArg(args[where])
	if err != nil {
		return nil, err
	}
	op := &LMPop{End: end, Count: -1}
	for j := where + 1; j < len(args); j++ {
		if op.Count == -1 && is(args[j], "count") && j+1 < len(args) {
			j++
			if op.Count, err = rangeArg(args[j], 1, maxLong, errCountZero); err != nil {
				return nil, err
			}
			continue
		}
		return nil, errSyntax
	}
	if op.Count == -1 {
		op.Count = 1
	}
	op.Args, op.KeyAt, op.NullArray = args, keysAt(at+1, int(numkeys)), true
	return op, nil
}

func (*LMPop) Name() string            { return "lmpop" }
func (*LMPop) Writes() backends.Writes { return backends.WritesAll }

// Run pops from the first key that holds a list; a key of another type
// before it fails the command, one after it is not looked at.
func (op *LMPop) Run(v backends.View) error {
	op.Found, op.Key, op.Elems = false, nil, op.Elems[:0]
	for i := range op.KeyAt {
		l, err := listOf(v, i)
		if op.woken && errors.Is(err, backends.ErrWrongType) {
			continue
		}
		if err != nil {
			return err
		}
		if l == nil {
			continue
		}
		op.Found, op.Key = true, clone(op.Args[op.KeyAt[i]])
		op.Elems = l.PopN(op.Elems, op.End, op.Count)
		return nil
	}
	return nil
}

func (op *LMPop) Reply(w Writer) {
	if !op.Found {
		w.NullArray()
		return
	}
	w.Array(2)
	w.Bulk(op.Key)
	bulks(w, op.Elems)
}
