package coll

import (
	"bytes"

	"github.com/pgcache/pgcache/backends"
)

// Set commands on one set, and SMOVE. Each is an Op: Parse… reads the
// request, Run does it on the set, Reply answers as Redis 7.0 does (the
// arguments and results a store needs to do SADD itself are exported
// fields). The commands of several sets (SINTER, SUNIONSTORE…) are in
// set_algebra.go, the random ones (SPOP, SRANDMEMBER) in set_rand.go;
// SCARD, SREM, SISMEMBER and SMISMEMBER, which other types have too, in
// colls.go, SSCAN in scan.go.

// SAdd is SADD key member [member ...].
type SAdd struct {
	backends.Passed
	Members [][]byte
	Added   int64 // result
}

// ParseSAdd reads SADD.
func ParseSAdd(args [][]byte) (Command, error) { return fresh(new(SAdd), args) }

func (op *SAdd) reset() { *op = SAdd{} }

func (op *SAdd) parse(args [][]byte) error {
	op.reset()
	op.Members = args[2:]
	op.Args, op.KeyAt = args, at1
	return nil
}

func (*SAdd) Name() string            { return "sadd" }
func (*SAdd) Writes() backends.Writes { return backends.WritesAll }

func (op *SAdd) Run(v backends.View) error {
	op.Added = 0
	s, err := collMade(v, 0, NewSet)
	if err != nil {
		return err
	}
	for _, m := range op.Members {
		if !s.Has(stringOf(m)) && s.Add(string(m)) {
			op.Added++
		}
	}
	return nil
}

func (op *SAdd) Reply(w Writer) { w.Int(op.Added) }

// SMembers is SMEMBERS key.
type SMembers struct {
	backends.Passed
	out []string
}

// ParseSMembers reads SMEMBERS.
func ParseSMembers(args [][]byte) (Command, error) {
	op := &SMembers{}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*SMembers) Name() string            { return "smembers" }
func (*SMembers) Writes() backends.Writes { return backends.ReadOnly }

// Run needs the View's Limits: an intset answers in numeric order.
func (op *SMembers) Run(v backends.View) error {
	op.out = nil
	s, err := collOf[*Set](v, 0)
	if s == nil || err != nil {
		return err
	}
	op.out = s.Sorted(LimitsOf(v))
	return nil
}

func (op *SMembers) Reply(w Writer) { writeMembers(w, op.out) }

// SMove is SMOVE source destination member: keys[0] is the source,
// keys[1] the destination.
type SMove struct {
	backends.Passed
	member []byte
	same   bool // source and destination are one key
	moved  bool // the reply: the member was in the source
	// kept has bit i set when Run left keys[i] as it was: both when
	// nothing moved (or source is destination), the destination when it
	// had the member already (Redis signals no change of it either).
	kept uint8
}

// ParseSMove reads SMOVE.
func ParseSMove(args [][]byte) (Command, error) {
	op := &SMove{member: args[3], same: bytes.Equal(args[1], args[2])}
	op.Args, op.KeyAt = args, at12
	return op, nil
}

func (*SMove) Name() string            { return "smove" }
func (*SMove) Writes() backends.Writes { return backends.WritesAll }

func (op *SMove) Run(v backends.View) error {
	op.moved, op.kept = false, 0b11
	// Redis looks at the source first: a missing source answers 0 even
	// when the destination is of another type.
	src, err := collOf[*Set](v, 0)
	if src == nil || err != nil {
		return err
	}
	dst, err := collOf[*Set](v, 1)
	if err != nil {
		return err
	}
	m := stringOf(op.member)
	if op.same {
		op.moved = src.Has(m)
		return nil
	}
	if !src.Rem(m) {
		return nil
	}
	op.moved, op.kept = true, 0b10
	if dst == nil {
		dst = NewSet()
		v.Put(1, dst)
	}
	if dst.Add(string(op.member)) {
		op.kept = 0
	}
	return nil
}

// Unchanged reports whether Run left keys[i] as it was.
func (op *SMove) Unchanged(i int) bool { return i < 2 && op.kept&(1<<i) != 0 }

func (op *SMove) Reply(w Writer) { w.Int(b2i(op.moved)) }
