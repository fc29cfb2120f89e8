package coll

import (
	"fmt"
	"testing"
)

// The hot list commands (redis-benchmark's lpush, rpop, lpop, lrange_100)
// as Ops on Slots: parse, run and reply, allocations reported.

// benchOp parses line once per iteration and runs it on the list in s.
func benchOp(b *testing.B, s *Slots, line string) {
	args := Args(line)
	p := parsers[string(args[0])]
	var w nopWriter
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		op, err := p(args)
		if err != nil {
			b.Fatal(err)
		}
		if err := op.Run(s); err != nil {
			b.Fatal(err)
		}
		op.Reply(w)
	}
}

// nopWriter takes a reply and writes nothing: the benchmarks measure the
// Ops, not a connection.
type nopWriter struct{}

func (nopWriter) RESP3() bool    { return false }
func (nopWriter) Int(int64)      {}
func (nopWriter) Bulk([]byte)    {}
func (nopWriter) Status(string)  {}
func (nopWriter) Null()          {}
func (nopWriter) NullArray()     {}
func (nopWriter) Array(int)      {}
func (nopWriter) Map(int)        {}
func (nopWriter) Set(int)        {}
func (nopWriter) Double(float64) {}

func listSlots(n int) (*Slots, *List) {
	l := NewList()
	for i := range n {
		l.Push(Right, fmt.Appendf(nil, "%0100d", i))
	}
	s := NewSlots([]string{"l"}, &DefaultLimits)
	s.Load(0, l, false)
	return s, l
}

func BenchmarkListLPush(b *testing.B) {
	s, _ := listSlots(0)
	benchOp(b, s, "lpush l "+fmt.Sprintf("%0100d", 7))
}

// BenchmarkListPushPop pushes on one end and pops the other: a queue at a
// steady length, what a job queue does.
func BenchmarkListPushPop(b *testing.B) {
	s, l := listSlots(1000)
	pop := Args("rpop l")
	var w nopWriter
	e := []byte(fmt.Sprintf("%0100d", 7))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l.Push(Left, e)
		op, _ := ParseRPop(pop)
		op.Run(s)
		op.Reply(w)
	}
}

func BenchmarkListLRange100(b *testing.B) {
	s, _ := listSlots(1000)
	benchOp(b, s, "lrange l 0 99")
}

func BenchmarkListLIndex(b *testing.B) {
	s, _ := listSlots(100000)
	benchOp(b, s, "lindex l 54321")
}

// BenchmarkListLRem removes one element from the middle of 100,000: one
// pass over the list.
func BenchmarkListLRem(b *testing.B) {
	s, l := listSlots(100000)
	mid := l.At(50000)
	args := Args("lrem l 1 x")
	args[3] = mid
	var w nopWriter
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		op, _ := ParseLRem(args)
		op.Run(s)
		op.Reply(w)
		l.Insert(50000, mid)
	}
}

func BenchmarkListLPos(b *testing.B) {
	s, l := listSlots(10000)
	args := Args("lpos l x rank -1")
	args[2] = l.At(100)
	benchOp(b, s, string(bytesJoin(args)))
}

func bytesJoin(args [][]byte) []byte {
	var out []byte
	for i, a := range args {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, a...)
	}
	return out
}
