package coll

import "github.com/pgcache/pgcache/backends"

// Hash commands. Each is an Op: Parse… reads the request, Run does it on
// the hash, Reply answers as Redis 7.0 does. The arguments and results of
// those a store may do itself (PostgreSQL) are exported fields: a store
// that did the command sets the results, and Reply answers from them.
// HLEN, HDEL and HEXISTS, which other types have too, are in colls.go,
// HSCAN in scan.go.

// HSet is HSET key field value [field value ...], and HMSET, which answers OK.
type HSet struct {
	backends.Passed
	Pairs [][]byte // field, value, …
	hmset bool
	Added int64 // result: the fields added
}

// ParseHSet reads HSET (and HMSET).
func ParseHSet(args [][]byte) (Command, error) { return fresh(new(HSet), args) }

func (op *HSet) reset() { *op = HSet{} }

func (op *HSet) parse(args [][]byte) error {
	op.reset()
	if len(args)%2 != 0 {
		return arityError(args[0])
	}
	op.Pairs, op.hmset = args[2:], is(args[0], "hmset")
	op.Args, op.KeyAt = args, at1
	return nil
}

func (op *HSet) Name() string         { return either(op.hmset, "hmset", "hset") }
func (*HSet) Writes() backends.Writes { return backends.WritesAll }

func (op *HSet) Run(v backends.View) error {
	h, err := collMade(v, 0, NewHash)
	if err != nil {
		return err
	}
	op.Added = 0
	for i := 0; i < len(op.Pairs); i += 2 {
		if h.Set(h.Key(op.Pairs[i]), clone(op.Pairs[i+1])) {
			op.Added++
		}
	}
	return nil
}

func (op *HSet) Reply(w Writer) {
	if op.hmset {
		w.Status("OK")
		return
	}
	w.Int(op.Added)
}

// HGet is HGET key field, and HSTRLEN key field, which answers the
// value's length.
type HGet struct {
	backends.Passed
	Field  []byte
	StrLen bool   // HSTRLEN
	Value  []byte // result
	Found  bool   // result
	Len    int64  // result: the value's length
}

// ParseHGet reads HGET and HSTRLEN.
func ParseHGet(args [][]byte) (Command, error) { return fresh(new(HGet), args) }

func (op *HGet) reset() { *op = HGet{} }

func (op *HGet) parse(args [][]byte) error {
	op.reset()
	op.Field, op.StrLen = args[2], is(args[0], "hstrlen")
	op.Args, op.KeyAt = args, at1
	return nil
}

func (op *HGet) Name() string         { return either(op.StrLen, "hstrlen", "hget") }
func (*HGet) Writes() backends.Writes { return backends.ReadOnly }

func (op *HGet) Run(v backends.View) error {
	op.Value, op.Found, op.Len = nil, false, 0
	h, err := collOf[*Hash](v, 0)
	if h == nil || err != nil {
		return err
	}
	op.Value, op.Found = h.Get(stringOf(op.Field))
	op.Len = int64(len(op.Value))
	return nil
}

func (op *HGet) Reply(w Writer) {
	if op.StrLen {
		w.Int(op.Len)
		return
	}
	bulkOrNull(w, op.Value, op.Found)
}

// HSetNX is HSETNX key field value.
type HSetNX struct {
	backends.Passed
	Field, Value []byte
	Added        bool // result
}

// ParseHSetNX reads HSETNX.
func ParseHSetNX(args [][]byte) (Command, error) {
	op := &HSetNX{Field: args[2], Value: args[3]}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*HSetNX) Name() string            { return "hsetnx" }
func (*HSetNX) Writes() backends.Writes { return backends.WritesAll }

func (op *HSetNX) Run(v backends.View) error {
	op.Added = false
	h, err := collMade(v, 0, NewHash)
	if err != nil {
		return err
	}
	if _, ok := h.Get(stringOf(op.Field)); ok {
		return nil
	}
	op.Added = h.Set(string(op.Field), clone(op.Value))
	return nil
}

func (op *HSetNX) Reply(w Writer) { w.Int(b2i(op.Added)) }

// HMGet is HMGET key field [field ...].
type HMGet struct {
	backends.Passed
	Fields [][]byte
	Values [][]byte // result: nil where the field is missing
}

// ParseHMGet reads HMGET.
func ParseHMGet(args [][]byte) (Command, error) {
	op := &HMGet{Fields: args[2:]}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*HMGet) Name() string            { return "hmget" }
func (*HMGet) Writes() backends.Writes { return backends.ReadOnly }

func (op *HMGet) Run(v backends.View) error {
	op.Values = op.Values[:0]
	h, err := collOf[*Hash](v, 0)
	if err != nil {
		return err
	}
	for _, f := range op.Fields {
		var val []byte
		if h != nil {
			var ok bool
			if val, ok = h.Get(stringOf(f)); ok && val == nil {
				val = []byte{}
			}
		}
		op.Values = append(op.Values, val)
	}
	return nil
}

func (op *HMGet) Reply(w Writer) { bulksOrNull(w, op.Values) }

// HGetAll is HGETALL key, and HKEYS and HVALS, which answer half of it.
type HGetAll struct {
	backends.Passed
	keys, vals bool     // what the command answers
	out        [][]byte // fields, values or both alternating, in the hash's order
}

// ParseHGetAll reads HGETALL, HKEYS and HVALS.
func ParseHGetAll(args [][]byte) (Command, error) {
	op := &HGetAll{keys: !is(args[0], "hvals"), vals: !is(args[0], "hkeys")}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (op *HGetAll) Name() string {
	switch {
	case !op.vals:
		return "hkeys"
	case !op.keys:
		return "hvals"
	}
	return "hgetall"
}
func (*HGetAll) Writes() backends.Writes { return backends.ReadOnly }

func (op *HGetAll) Run(v backends.View) error {
	op.out = op.out[:0]
	h, err := collOf[*Hash](v, 0)
	if h == nil || err != nil {
		return err
	}
	if n := h.Len() * int(b2i(op.keys)+b2i(op.vals)); cap(op.out) < n {
		op.out = make([][]byte, 0, n)
	}
	for i := range h.Len() {
		f, val := h.At(i)
		if op.keys {
			op.out = append(op.out, bytesOf(f))
		}
		if op.vals {
			op.out = append(op.out, val)
		}
	}
	return nil
}

func (op *HGetAll) Reply(w Writer) {
	if op.keys && op.vals {
		w.Map(len(op.out) / 2)
	} else {
		w.Array(len(op.out))
	}
	for _, b := range op.out {
		w.Bulk(b)
	}
}

// b2i is a boolean as Redis's 1 or 0.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
