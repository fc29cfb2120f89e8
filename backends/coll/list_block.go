package coll

import (
	"errors"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// The blocking list commands, each a Blocker: Run is the non-blocking
// attempt over the keys in order, Ready says whether it popped. When it
// did not, Reply is what Redis answers where it may not block (MULTI, a
// script), and TimedOut what it answers when the timeout passes: a nil
// array for all of them, BLMOVE and BRPOPLPUSH included (Redis 7.0's
// replyToBlockedClientTimedOut), though their non-blocking miss is a nil
// bulk.
//
// BLMOVE and BRPOPLPUSH wait for their source (keys[0]) only; a change of
// the destination wakes them to no effect.
//
// Redis serves a woken client only from a key that holds a list: a key
// that came to hold a string while it waited is passed over, not an
// error. The waiter says so by calling Wake before each Run after the
// first (the Waker interface); a first Run (and a retry of it) still fails
// with WRONGTYPE, as Redis does before it blocks.

// Waker is a Blocker that runs differently once woken.
type Waker interface {
	Wake()
}

// BPop is BLPOP and BRPOP key [key ...] timeout.
type BPop struct {
	backends.Passed
	End     End
	timeout time.Duration
	Found   bool   // result: one of the keys held a list
	Key     []byte // result: that key (a copy)
	Elem    []byte // result: the element popped
	// Woken: Wake was called; a key of another type is passed over.
	Woken bool
}

func parseBPop(args [][]byte, end End) (Command, error) {
	t, err := parseTimeout(args[len(args)-1])
	if err != nil {
		return nil, err
	}
	op := &BPop{End: end, timeout: t}
	op.Args, op.KeyAt, op.NullArray = args, keysAt(1, len(args)-2), true
	return op, nil
}

// ParseBLPop reads BLPOP key [key ...] timeout.
func ParseBLPop(args [][]byte) (Command, error) { return parseBPop(args, Left) }

// ParseBRPop reads BRPOP key [key ...] timeout.
func ParseBRPop(args [][]byte) (Command, error) { return parseBPop(args, Right) }

func (op *BPop) Name() string {
	if op.End == Left {
		return "blpop"
	}
	return "brpop"
}
func (*BPop) Writes() backends.Writes   { return backends.WritesAll }
func (op *BPop) Ready() bool            { return op.Found }
func (op *BPop) Timeout() time.Duration { return op.timeout }
func (*BPop) TimedOut(w Writer)         { w.NullArray() }
func (op *BPop) Wake()                  { op.Woken = true }

// Run pops from the first key that holds a list; a key of another type
// before it fails the command.
func (op *BPop) Run(v backends.View) error {
	op.Found, op.Key, op.Elem = false, nil, nil
	for i := range op.KeyAt {
		l, err := listOf(v, i)
		if op.Woken && errors.Is(err, backends.ErrWrongType) {
			continue
		}
		if err != nil {
			return err
		}
		if l == nil {
			continue
		}
		op.Found, op.Key = true, clone(op.Args[op.KeyAt[i]])
		op.Elem = l.Pop(op.End)
		return nil
	}
	return nil
}

func (op *BPop) Reply(w Writer) {
	if !op.Found {
		w.NullArray()
		return
	}
	w.Array(2)
	w.Bulk(op.Key)
	w.Bulk(op.Elem)
}

// BLMove is BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout, and
// BRPOPLPUSH source destination timeout: LMOVE that waits for its source.
type BLMove struct {
	LMove
	timeout time.Duration
}

// ParseBLMove reads BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
func ParseBLMove(args [][]byte) (Command, error) {
	m, err := parseLMove(args)
	if err != nil {
		return nil, err
	}
	t, err := parseTimeout(args[5])
	if err != nil {
		return nil, err
	}
	op := &BLMove{LMove: *m, timeout: t}
	op.NullArray = true // the timeout's reply
	return op, nil
}

// ParseBRPopLPush reads BRPOPLPUSH source destination timeout.
func ParseBRPopLPush(args [][]byte) (Command, error) {
	t, err := parseTimeout(args[3])
	if err != nil {
		return nil, err
	}
	op := &BLMove{LMove: LMove{From: Right, To: Left, rpoplpush: true}, timeout: t}
	op.Args, op.KeyAt, op.NullArray = args, at12, true
	return op, nil
}

func (op *BLMove) Name() string {
	if op.rpoplpush {
		return "brpoplpush"
	}
	return "blmove"
}
func (op *BLMove) Ready() bool            { return op.Found }
func (op *BLMove) Timeout() time.Duration { return op.timeout }
func (*BLMove) TimedOut(w Writer)         { w.NullArray() }
func (op *BLMove) Wake()                  { op.woken = true }

// BLMPop is BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]:
// LMPOP that waits for one of its keys.
type BLMPop struct {
	LMPop
	timeout time.Duration
}

// ParseBLMPop reads BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT
// count]; Redis checks the timeout last.
func ParseBLMPop(args [][]byte) (Command, error) {
	m, err := parseLMPop(args, 2)
	if err != nil {
		return nil, err
	}
	t, err := parseTimeout(args[1])
	if err != nil {
		return nil, err
	}
	return &BLMPop{LMPop: *m, timeout: t}, nil
}

func (*BLMPop) Name() string              { return "blmpop" }
func (op *BLMPop) Ready() bool            { return op.Found }
func (op *BLMPop) Timeout() time.Duration { return op.timeout }
func (*BLMPop) TimedOut(w Writer)         { w.NullArray() }
func (op *BLMPop) Wake()                  { op.woken = true }

var (
	_ Blocker = (*BPop)(nil)
	_ Blocker = (*BLMove)(nil)
	_ Blocker = (*BLMPop)(nil)
	_ Waker   = (*BPop)(nil)
	_ Waker   = (*BLMove)(nil)
	_ Waker   = (*BLMPop)(nil)
)
