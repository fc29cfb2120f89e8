package coll

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// Benchmarks of the hot sorted set commands: parse, run and reply, as the
// RESP front does them, on a set of 100,000 members.

type discardWriter struct{}

func (discardWriter) Int(int64)      {}
func (discardWriter) Bulk([]byte)    {}
func (discardWriter) Status(string)  {}
func (discardWriter) Null()          {}
func (discardWriter) NullArray()     {}
func (discardWriter) Array(int)      {}
func (discardWriter) Map(int)        {}
func (discardWriter) Set(int)        {}
func (discardWriter) Double(float64) {}
func (discardWriter) RESP3() bool    { return true }

const benchSize = 100_000

func benchZSet() *ZSet {
	z := NewZSet()
	for i := range benchSize {
		z.Add("member:"+strconv.Itoa(i), float64(i))
	}
	return z
}

// benchCommand runs the requests lines(i) on z, round robin.
func benchCommand(b *testing.B, z *ZSet, lines []string) {
	reqs := make([][][]byte, len(lines))
	for i, l := range lines {
		reqs[i] = Args(l)
	}
	p := parsers[string(reqs[0][0])]
	s := NewSlots([]string{"z"}, &DefaultLimits)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		op, err := p(reqs[i%len(reqs)])
		if err != nil {
			b.Fatal(err)
		}
		s.Load(0, z, false)
		if err := op.Run(s); err != nil {
			b.Fatal(err)
		}
		op.Reply(discardWriter{})
	}
}

func lines(n int, f func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func BenchmarkZAddNew(b *testing.B) {
	z := benchZSet()
	benchCommand(b, z, lines(1<<16, func(i int) string {
		return "zadd z " + strconv.Itoa(i*7%1000) + " new:" + strconv.Itoa(i)
	}))
}

func BenchmarkZAddUpdate(b *testing.B) {
	z := benchZSet()
	benchCommand(b, z, lines(1<<12, func(i int) string {
		return "zadd z " + strconv.Itoa(i%5000) + ".5 member:" + strconv.Itoa(i*37%benchSize)
	}))
}

func BenchmarkZIncrBy(b *testing.B) {
	benchCommand(b, benchZSet(), lines(1<<12, func(i int) string { return "zincrby z 1 member:" + strconv.Itoa(i*37%benchSize) }))
}

func BenchmarkZScore(b *testing.B) {
	benchCommand(b, benchZSet(), lines(1<<12, func(i int) string { return "zscore z member:" + strconv.Itoa(i*37%benchSize) }))
}

func BenchmarkZRank(b *testing.B) {
	benchCommand(b, benchZSet(), lines(1<<12, func(i int) string { return "zrank z member:" + strconv.Itoa(i*37%benchSize) }))
}

func BenchmarkZCard(b *testing.B) {
	benchCommand(b, benchZSet(), []string{"zcard z"})
}

func BenchmarkZRangeByScore100(b *testing.B) {
	benchCommand(b, benchZSet(), lines(1<<10, func(i int) string {
		lo := i * 97 % (benchSize - 200)
		return "zrangebyscore z " + strconv.Itoa(lo) + " +inf withscores limit 0 100"
	}))
}

func BenchmarkZRange100(b *testing.B) {
	benchCommand(b, benchZSet(), lines(1<<10, func(i int) string {
		lo := i * 97 % (benchSize - 200)
		return "zrange z " + strconv.Itoa(lo) + " " + strconv.Itoa(lo+99)
	}))
}

func BenchmarkZCount(b *testing.B) {
	benchCommand(b, benchZSet(), lines(1<<10, func(i int) string {
		lo := i * 97 % (benchSize - 2000)
		return "zcount z " + strconv.Itoa(lo) + " (" + strconv.Itoa(lo+1000)
	}))
}

// The sliding-window rate limiter: drop what is older than the window,
// add this hit, count.
func BenchmarkZSetRateLimiter(b *testing.B) {
	z := NewZSet()
	s := NewSlots([]string{"z"}, &DefaultLimits)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now := strconv.Itoa(i)
		for _, args := range [][][]byte{
			{[]byte("zremrangebyscore"), []byte("z"), []byte("-inf"), []byte("(" + strconv.Itoa(i-100))},
			{[]byte("zadd"), []byte("z"), []byte(now), []byte(now)},
			{[]byte("zcard"), []byte("z")},
		} {
			op, err := parsers[string(args[0])](args)
			if err != nil {
				b.Fatal(err)
			}
			s.Load(0, z, false)
			if err := op.Run(s); err != nil {
				b.Fatal(err)
			}
			if v, _ := s.Value(0); v != nil {
				z = v.(*ZSet) // the first ZADD made it
			}
			op.Reply(discardWriter{})
		}
	}
}

func BenchmarkZPopMinAdd(b *testing.B) {
	z := benchZSet()
	s := NewSlots([]string{"z"}, &DefaultLimits)
	pop, add := Args("zpopmin z"), [][]byte{[]byte("zadd"), []byte("z"), nil, nil}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		op, _ := ParseZPop(pop)
		s.Load(0, z, false)
		op.Run(s)
		op.Reply(discardWriter{})
		e := op.(*ZPop).Popped[0]
		add[2], add[3] = []byte(strconv.Itoa(benchSize+i)), []byte(e.Member)
		op, _ = ParseZAdd(add)
		op.Run(s)
		op.Reply(discardWriter{})
	}
}

// BenchmarkZAddRandom is redis-benchmark's ZADD (-r 100000): a random
// score for a random member of the 100,000, on a set the same requests
// built, so nodes lie wherever the allocator put them and nearly every
// request moves a member far from its place. Each member of the requests
// comes twice, half the lines apart, with two scores: every request
// moves one (a request that gives a member the score it has does
// nothing).
func BenchmarkZAddRandom(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 2))
	z := NewZSet()
	for range 4 * benchSize {
		z.Add("element:"+strconv.Itoa(rnd.IntN(benchSize)), float64(rnd.IntN(benchSize)))
	}
	const half = 1 << 13
	members := make([]int, half)
	for i := range members {
		members[i] = rnd.IntN(benchSize)
	}
	benchCommand(b, z, lines(2*half, func(i int) string {
		return "zadd z " + strconv.Itoa(rnd.IntN(benchSize)) + " element:" + strconv.Itoa(members[i%half])
	}))
}
