package coll

import (
	"strconv"

	"github.com/pgcache/pgcache/backends"
)

// The hash commands that count: HINCRBY and HINCRBYFLOAT. A missing field
// counts as 0; the new value is stored as its decimal text, as Redis stores
// it.

// HIncrBy is HINCRBY key field increment.
type HIncrBy struct {
	backends.Passed
	Field  []byte
	Incr   int64
	Result int64 // result: the new value
}

// ParseHIncrBy reads HINCRBY.
func ParseHIncrBy(args [][]byte) (Command, error) {
	incr, ok := backends.ParseInt(args[3])
	if !ok {
		return nil, errNotInteger
	}
	op := &HIncrBy{Field: args[2], Incr: incr}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*HIncrBy) Name() string            { return "hincrby" }
func (*HIncrBy) Writes() backends.Writes { return backends.WritesAll }

func (op *HIncrBy) Run(v backends.View) error {
	h, err := collOf[*Hash](v, 0)
	if err != nil {
		return err
	}
	var old int64
	if h != nil {
		if cur, ok := h.Get(stringOf(op.Field)); ok {
			if old, ok = backends.ParseInt(cur); !ok {
				return errHashNotInt
			}
		}
	}
	if op.Incr < 0 && old < 0 && op.Incr < minInt64-old ||
		op.Incr > 0 && old > 0 && op.Incr > maxInt64-old {
		return errIncrOverflow
	}
	if h == nil {
		h = NewHash()
		v.Put(0, h)
	}
	op.Result = old + op.Incr
	h.Set(h.Key(op.Field), strconv.AppendInt(nil, op.Result, 10))
	return nil
}

func (op *HIncrBy) Reply(w Writer) { w.Int(op.Result) }

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

// HIncrByFloat is HINCRBYFLOAT key field increment, in long double (see
// ld).
type HIncrByFloat struct {
	backends.Passed
	Field  []byte
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
	op := &HIncrByFloat{Field: args[2], incr: incr}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*HIncrByFloat) Name() string            { return "hincrbyfloat" }
func (*HIncrByFloat) Writes() backends.Writes { return backends.WritesAll }

func (op *HIncrByFloat) Run(v backends.View) error {
	op.result = nil
	h, err := collOf[*Hash](v, 0)
	if err != nil {
		return err
	}
	var old ld // a missing field is 0
	if h != nil {
		if cur, ok := h.Get(stringOf(op.Field)); ok {
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
	h.Set(h.Key(op.Field), op.result)
	return nil
}

func (op *HIncrByFloat) Reply(w Writer) { w.Bulk(op.result) }
