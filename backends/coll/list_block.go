package coll

// The blocking list commands (see blocking.go). BLMOVE and BRPOPLPUSH wait
// for their source (keys[0]) only; a change of the destination wakes them
// to no effect.

// BLMove is BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout, and
// BRPOPLPUSH source destination timeout: LMOVE that waits for its source.
type BLMove struct {
	LMove
}

// ParseBLMove reads BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
func ParseBLMove(args [][]byte) (Command, error) {
	op := &BLMove{}
	if err := op.parse(args); err != nil {
		return nil, err
	}
	var err error
	if op.timeout, err = parseTimeout(args[5]); err != nil {
		return nil, err
	}
	op.NullArray = true // the timeout's reply
	return op, nil
}

// ParseBRPopLPush reads BRPOPLPUSH source destination timeout.
func ParseBRPopLPush(args [][]byte) (Command, error) {
	t, err := parseTimeout(args[3])
	if err != nil {
		return nil, err
	}
	op := &BLMove{LMove: LMove{From: Right, To: Left, rpoplpush: true}}
	op.timeout = t
	op.Args, op.KeyAt, op.NullArray = args, at12, true
	return op, nil
}

func (op *BLMove) Name() string { return either(op.rpoplpush, "brpoplpush", "blmove") }
func (op *BLMove) Ready() bool  { return op.Found }

// BLMPop is BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]:
// LMPOP that waits for one of its keys.
type BLMPop struct {
	LMPop
}

// ParseBLMPop reads BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT
// count]; Redis checks the timeout last.
func ParseBLMPop(args [][]byte) (Command, error) {
	op := &BLMPop{}
	return parsed(op, op.parse(args, true))
}

func (*BLMPop) Name() string   { return "blmpop" }
func (op *BLMPop) Ready() bool { return op.Found }

// BPop is BLPOP and BRPOP key [key ...] timeout: BLMPOP of one element,
// answered as the key and the element.
type BPop struct {
	BLMPop
}

func parseBPop(args [][]byte, end End) (Command, error) {
	t, err := parseTimeout(args[len(args)-1])
	if err != nil {
		return nil, err
	}
	op := &BPop{}
	op.End, op.Count, op.Elems, op.timeout = end, 1, op.one[:0], t
	op.Args, op.KeyAt, op.NullArray = args, keysAt(1, len(args)-2), true
	return op, nil
}

// ParseBLPop reads BLPOP key [key ...] timeout.
func ParseBLPop(args [][]byte) (Command, error) { return parseBPop(args, Left) }

// ParseBRPop reads BRPOP key [key ...] timeout.
func ParseBRPop(args [][]byte) (Command, error) { return parseBPop(args, Right) }

func (op *BPop) Name() string { return either(op.End == Left, "blpop", "brpop") }

func (op *BPop) Reply(w Writer) {
	if poppedFrom(w, op.Key, op.Found, 2) {
		w.Bulk(op.Elems[0])
	}
}

var (
	_ Blocker = (*BPop)(nil)
	_ Blocker = (*BLMove)(nil)
	_ Blocker = (*BLMPop)(nil)
	_ Waker   = (*BPop)(nil)
	_ Waker   = (*BLMove)(nil)
	_ Waker   = (*BLMPop)(nil)
)
