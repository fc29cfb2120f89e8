package coll

import "github.com/pgcache/pgcache/backends"

// Hash commands. Each is an Op: Parse… reads the request, Run does it on
// the hash, Reply answers as Redis 7.0 does.

// hashOf returns keys[i]'s hash, nil when the key does not exist.
func hashOf(v backends.View, i int) (*Hash, error) {
	val, err := v.Get(i, backends.TypeHash)
	if val == nil || err != nil {
		return nil, err
	}
	return val.(*Hash), nil
}

// HSet is HSET key field value [field value ...], and HMSET, which answers OK.
type HSet struct {
	backends.Passed
	pairs [][]byte // field, value, …
	hmset bool
	added int64
}

// ParseHSet reads HSET (and HMSET).
func ParseHSet(args [][]byte) (Command, error) {
	if len(args)%2 != 0 {
		return nil, backends.Refusal("ERR wrong number of arguments for '" + lower(args[0]) + "' command")
	}
	op := &HSet{pairs: args[2:], hmset: is(args[0], "hmset")}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (op *HSet) Name() string {
	if op.hmset {
		return "hmset"
	}
	return "hset"
}
func (*HSet) Writes() backends.Writes { return backends.WritesAll }

func (op *HSet) Run(v backends.View) error {
	h, err := hashOf(v, 0)
	if err != nil {
		return err
	}
	if h == nil {
		h = NewHash()
		v.Put(0, h)
	}
	op.added = 0
	for i := 0; i < len(op.pairs); i += 2 {
		if h.Set(string(op.pairs[i]), clone(op.pairs[i+1])) {
			op.added++
		}
	}
	return nil
}

func (op *HSet) Reply(w Writer) {
	if op.hmset {
		w.Status("OK")
		return
	}
	w.Int(op.added)
}

// HGet is HGET key field.
type HGet struct {
	backends.Passed
	field []byte
	val   []byte
	found bool
}

// ParseHGet reads HGET.
func ParseHGet(args [][]byte) (Command, error) {
	op := &HGet{field: args[2]}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*HGet) Name() string            { return "hget" }
func (*HGet) Writes() backends.Writes { return backends.ReadOnly }

func (op *HGet) Run(v backends.View) error {
	op.val, op.found = nil, false
	h, err := hashOf(v, 0)
	if h == nil || err != nil {
		return err
	}
	op.val, op.found = h.Get(stringOf(op.field))
	return nil
}

func (op *HGet) Reply(w Writer) {
	if !op.found {
		w.Null()
		return
	}
	w.Bulk(op.val)
}
