package coll

import (
	"strconv"
	"testing"

	"github.com/pgcache/pgcache/backends"
)

// Benchmarks of the hot hash and set commands, as a store runs them: Parse,
// Run on a Slots view, Reply to a writer that keeps nothing.

type discard struct{}

func (discard) RESP3() bool    { return false }
func (discard) Int(int64)      {}
func (discard) Bulk([]byte)    {}
func (discard) Status(string)  {}
func (discard) Null()          {}
func (discard) NullArray()     {}
func (discard) Array(int)      {}
func (discard) Map(int)        {}
func (discard) Set(int)        {}
func (discard) Double(float64) {}

// bench runs the request made by req(i) on a value of key k that setup
// filled, b.N times.
func bench(b *testing.B, parse Parser, v backends.Value, req func(i int) [][]byte) {
	b.Helper()
	s := NewSlots([]string{"k"}, &DefaultLimits)
	s.Load(0, v, false)
	reqs := make([][][]byte, 1024)
	for i := range reqs {
		reqs[i] = req(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		op, err := parse(reqs[i&1023])
		if err != nil {
			b.Fatal(err)
		}
		if err := op.Run(s); err != nil {
			b.Fatal(err)
		}
		op.Reply(discard{})
		if got, _ := s.Value(0); got == nil {
			s.Load(0, v, false) // emptied (SPOP): refill
		}
	}
}

func words(ws ...string) [][]byte {
	out := make([][]byte, len(ws))
	for i, w := range ws {
		out[i] = []byte(w)
	}
	return out
}

// elem is the benchmarks' member: redis-benchmark's "element:__rand_int__".
func elem(i int) string { return "element:" + strconv.Itoa(i%100000) }

func bigHash(n int) *Hash {
	h := NewHash()
	for i := range n {
		h.Set(elem(i), []byte("value-"+strconv.Itoa(i)))
	}
	return h
}

func bigSet(n int) *Set {
	s := NewSet()
	for i := range n {
		s.Add(elem(i))
	}
	return s
}

func BenchmarkHSet(b *testing.B) {
	val := string(make([]byte, 100))
	bench(b, ParseHSet, bigHash(10000), func(i int) [][]byte { return words("HSET", "k", elem(i*97), val) })
}

func BenchmarkHGet(b *testing.B) {
	bench(b, ParseHGet, bigHash(10000), func(i int) [][]byte { return words("HGET", "k", elem(i*97)) })
}

func BenchmarkHIncrBy(b *testing.B) {
	bench(b, ParseHIncrBy, NewHash(), func(i int) [][]byte { return words("HINCRBY", "k", elem(i%10), "3") })
}

func BenchmarkHIncrByFloat(b *testing.B) {
	bench(b, ParseHIncrByFloat, NewHash(), func(i int) [][]byte { return words("HINCRBYFLOAT", "k", elem(i%10), "0.25") })
}

func BenchmarkHGetAll100(b *testing.B) {
	bench(b, ParseHGetAll, bigHash(100), func(int) [][]byte { return words("HGETALL", "k") })
}

func BenchmarkHDelSmall(b *testing.B) {
	// A listpack-sized hash: HDEL moves later fields down, then HSET puts it back.
	h := bigHash(100)
	s := NewSlots([]string{"k"}, &DefaultLimits)
	s.Load(0, h, false)
	b.ReportAllocs()
	for i := range b.N {
		f := elem(i % 100)
		op, _ := ParseHDel(words("HDEL", "k", f))
		op.Run(s)
		op2, _ := ParseHSet(words("HSET", "k", f, "v"))
		op2.Run(s)
	}
}

func BenchmarkSAdd(b *testing.B) {
	bench(b, ParseSAdd, bigSet(10000), func(i int) [][]byte { return words("SADD", "k", elem(i*97)) })
}

func BenchmarkSIsMember(b *testing.B) {
	bench(b, ParseSIsMember, bigSet(10000), func(i int) [][]byte { return words("SISMEMBER", "k", elem(i*97)) })
}

func BenchmarkSPop(b *testing.B) {
	bench(b, ParseSPop, bigSet(100000), func(int) [][]byte { return words("SPOP", "k") })
}

func BenchmarkSRandMember10(b *testing.B) {
	bench(b, ParseSRandMember, bigSet(10000), func(int) [][]byte { return words("SRANDMEMBER", "k", "10") })
}

func BenchmarkSMembersIntset(b *testing.B) {
	s := NewSet()
	for i := range 512 {
		s.Add(strconv.Itoa(i * 7919 % 1000))
	}
	bench(b, ParseSMembers, s, func(int) [][]byte { return words("SMEMBERS", "k") })
}

func BenchmarkSMembers1000(b *testing.B) {
	bench(b, ParseSMembers, bigSet(1000), func(int) [][]byte { return words("SMEMBERS", "k") })
}

func BenchmarkSInter(b *testing.B) {
	s := NewSlots([]string{"a", "b"}, &DefaultLimits)
	s.Load(0, bigSet(1000), false)
	s.Load(1, bigSet(10000), false)
	req := words("SINTER", "a", "b")
	b.ReportAllocs()
	for range b.N {
		op, _ := ParseSetOp(req)
		op.Run(s)
		op.Reply(discard{})
	}
}
