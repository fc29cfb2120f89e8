package coll

import "github.com/pgcache/pgcache/backends"

// The commands that are one command over any kind of collection, each an
// Op that names the kind it serves: the parser of each form fixes it.

// collOf returns keys[i]'s collection of C's type (*Hash, *Set, *ZSet or
// *List), nil when the key does not exist.
func collOf[C backends.Value](v backends.View, i int) (C, error) {
	var c C // nil: its Type needs no value
	val, err := v.Get(i, c.Type())
	c, _ = val.(C) // nil when val is
	return c, err
}

// collMade is collOf for a write that makes its key: one that does not
// exist gets an empty collection, newC's.
func collMade[C backends.Value](v backends.View, i int, newC func() C) (C, error) {
	var c C
	val, err := v.Get(i, c.Type())
	switch {
	case err != nil:
		return c, err
	case val == nil:
		c = newC()
		v.Put(i, c)
		return c, nil
	}
	return val.(C), nil
}

// collNames are the names of one command over each kind of collection, by
// backends.Type.
type collNames [backends.TypeHash + 1]string

// Len is HLEN, SCARD, ZCARD and LLEN key: how many members the collection
// has, 0 when the key does not exist.
type Len struct {
	backends.Passed
	Type backends.Type // what the command counts: TypeHash, TypeSet, TypeZSet or TypeList
	Len  int64         // result
}

var lenNames = collNames{backends.TypeHash: "hlen", backends.TypeSet: "scard", backends.TypeZSet: "zcard", backends.TypeList: "llen"}

func parseLen(args [][]byte, t backends.Type) (Command, error) {
	op := &Len{Type: t}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

// ParseHLen reads HLEN key.
func ParseHLen(args [][]byte) (Command, error) { return parseLen(args, backends.TypeHash) }

// ParseSCard reads SCARD key.
func ParseSCard(args [][]byte) (Command, error) { return parseLen(args, backends.TypeSet) }

// ParseZCard reads ZCARD key.
func ParseZCard(args [][]byte) (Command, error) { return parseLen(args, backends.TypeZSet) }

// ParseLLen reads LLEN key.
func ParseLLen(args [][]byte) (Command, error) { return parseLen(args, backends.TypeList) }

func (op *Len) Name() string         { return lenNames[op.Type] }
func (*Len) Writes() backends.Writes { return backends.ReadOnly }

func (op *Len) Run(v backends.View) error {
	op.Len = 0
	val, err := v.Get(0, op.Type)
	if val == nil || err != nil {
		return err
	}
	op.Len = int64(val.Len())
	return nil
}

func (op *Len) Reply(w Writer) { w.Int(op.Len) }

// Rem is HDEL, SREM and ZREM key member [member ...]: the members (a
// hash's fields) removed, counted.
type Rem struct {
	backends.Passed
	Type    backends.Type // TypeHash, TypeSet or TypeZSet
	Members [][]byte
	Removed int64 // result
}

var remNames = collNames{backends.TypeHash: "hdel", backends.TypeSet: "srem", backends.TypeZSet: "zrem"}

func parseRem(args [][]byte, t backends.Type) (Command, error) {
	op := &Rem{Type: t, Members: args[2:]}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

// ParseHDel reads HDEL key field [field ...].
func ParseHDel(args [][]byte) (Command, error) { return parseRem(args, backends.TypeHash) }

// ParseSRem reads SREM key member [member ...].
func ParseSRem(args [][]byte) (Command, error) { return parseRem(args, backends.TypeSet) }

// ParseZRem reads ZREM key member [member ...].
func ParseZRem(args [][]byte) (Command, error) { return parseRem(args, backends.TypeZSet) }

func (op *Rem) Name() string         { return remNames[op.Type] }
func (*Rem) Writes() backends.Writes { return backends.WritesAll }

// Run needs the View's Limits for a hash: a small one keeps its order
// (Hash.Del).
func (op *Rem) Run(v backends.View) error {
	op.Removed = 0
	val, err := v.Get(0, op.Type)
	if val == nil || err != nil {
		return err
	}
	var l *Limits
	if op.Type == backends.TypeHash {
		l = LimitsOf(v)
	}
	for _, m := range op.Members {
		if remove(val, stringOf(m), l) {
			op.Removed++
		}
	}
	return nil
}

func (op *Rem) Reply(w Writer) { w.Int(op.Removed) }

// Has is SISMEMBER key member and HEXISTS key field, and SMISMEMBER key
// member [member ...], which answers an array: whether each member (a
// hash's field) is there.
type Has struct {
	backends.Passed
	Type    backends.Type // TypeSet or TypeHash
	multi   bool
	one     [1]bool // Found's room for one member, without an allocation
	Members [][]byte
	Found   []bool // result: whether each member is there
}

func parseHas(args [][]byte, t backends.Type, members [][]byte) (Command, error) {
	op := &Has{Type: t, Members: members, multi: is(args[0], "smismember")}
	op.Found = op.one[:0]
	op.Args, op.KeyAt = args, at1
	return op, nil
}

// ParseSIsMember reads SISMEMBER key member and SMISMEMBER key member
// [member ...].
func ParseSIsMember(args [][]byte) (Command, error) {
	return parseHas(args, backends.TypeSet, args[2:])
}

// ParseHExists reads HEXISTS key field.
func ParseHExists(args [][]byte) (Command, error) {
	return parseHas(args, backends.TypeHash, args[2:3])
}

func (op *Has) Name() string {
	switch {
	case op.Type == backends.TypeHash:
		return "hexists"
	case op.multi:
		return "smismember"
	}
	return "sismember"
}
func (*Has) Writes() backends.Writes { return backends.ReadOnly }

func (op *Has) Run(v backends.View) error {
	op.Found = op.Found[:0]
	val, err := v.Get(0, op.Type)
	if err != nil {
		return err
	}
	for _, m := range op.Members {
		_, ok := Lookup(val, stringOf(m))
		op.Found = append(op.Found, ok)
	}
	return nil
}

func (op *Has) Reply(w Writer) {
	if !op.multi {
		w.Int(b2i(len(op.Found) > 0 && op.Found[0]))
		return
	}
	w.Array(len(op.Found))
	for _, f := range op.Found {
		w.Int(b2i(f))
	}
}

var (
	_ Command = (*Len)(nil)
	_ Command = (*Rem)(nil)
	_ Command = (*Has)(nil)
)
