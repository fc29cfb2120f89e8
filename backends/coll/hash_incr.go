package coll

import (
	"strconv"

	"github.com/pgcache/pgcache/backends"
)

// The hash commands that count: HINCRBY and HINCRBYFLOAT. A missing field
// counts as 0; the new value is stored as its decimal text, as Redis stores
// it.

var (
	errHashNotInt   = backends.Refusal("ERR hash value is not an integer")
	errHashNotFloat = backends.Refusal("ERR hash value is not a float")
	errOverflow     = backends.Refusal("ERR increment or decrement would overflow")
	errIncrNaN      = backends.Refusal("ERR value is NaN or Infinity")
	errResultNaN    = backends.Refusal("ERR increment would produce NaN or Infinity")
)

// HIncrBy is HINCRBY key field increment.
type HIncrBy struct {
	backends.Passed
	field  []byte
	incr   int64
	result int64
}

// ParseHIncrBy reads HINCRBY.
func ParseHIncrBy(args [][]byte) (Command, error) {
	incr, ok := backends.ParseInt(args[3])
	if !ok {
		return nil, errNotInteger
	}
	op := &HIncrBy{field: args[2], incr: incr}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*HIncrBy) Name() string            { return "hincrby" }
func (*HIncrBy) Writes() backends.Writes { return backends.WritesAll }

func (op *HIncrBy) Run(v backends.View) error {
	h, err := hashOf(v, 0)
	if err != nil {
		return err
	}
	var old int64
	if h != nil {
		if cur, ok := h.Get(stringOf(op.field)); ok {
			if old, ok = backends.ParseInt(cur); !ok {
				return errHashNotInt
			}
		}
	}
	if op.incr < 0 && old < 0 && op.incr < minInt64-old ||
		op.incr > 0 && old > 0 && op.incr > maxInt64-old {
		return errOverflow
	}
	if h == nil {
		h = NewHash()
		v.Put(0, h)
	}
	op.result = old + op.incr
	h.Set(h.Key(op.field), strconv.AppendInt(nil, op.result, 10))
	return nil
}

func (op *HIncrBy) Reply(w Writer) { w.Int(op.result) }

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

// HIncrByFloat is HINCRBYFLOAT key field increment, in long double (see
// ld).
type HIncrByFloat struct {
	backends.Passed
	field  []byte
	incr   ld
	result []byte
}

// ParseHIncrByFloat reads HINCRBYFLOAT.
func ParseHIncrByFloat(args [][]byte) (Command, error) {
	incr, ok := parseLD(args[3])
	switch {
	case !ok:
		return nil, errNotFloat
	case incr.inf:
		return nil, errIncrNaN
	}
	op := &HIncrByFloat{field: args[2], incr: incr}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*HIncrByFloat) Name() string            { return "hincrbyfloat" }
func (*HIncrByFloat) Writes() backends.Writes { return backends.WritesAll }

func (op *HIncrByFloat) Run(v backends.View) error {
	op.result = nil
	h, err := hashOf(v, 0)
	if err != nil {
		return err
	}
	var old ld // a missing field is 0
	if h != nil {
		if cur, ok := h.Get(stringOf(op.field)); ok {
			if old, ok = parseLD(cur); !ok {
				return errHashNotFloat
			}
		}
	}
	sum, ok := addLD(old, op.incr)
	if !ok {
		return errResultNaN
	}
	if h == nil {
		h = NewHash()
		v.Put(0, h)
	}
	op.result = sum.text()
	h.Set(h.Key(op.field), op.result)
	return nil
}

func (op *HIncrByFloat) Reply(w Writer) { w.Bulk(op.result) }
