package coll

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// The Ops' contract beyond their replies: keys, Writes, names, blocking,
// the journal, clones, runs repeated.

func TestZSetOpsKeys(t *testing.T) {
	for _, tc := range []struct {
		line   string
		name   string
		keyAt  []int
		writes backends.Writes
	}{
		{"ZADD z 1 a", "zadd", []int{1}, backends.WritesAll},
		{"ZINCRBY z 1 a", "zincrby", []int{1}, backends.WritesAll},
		{"ZREM z a", "zrem", []int{1}, backends.WritesAll},
		{"ZCARD z", "zcard", []int{1}, backends.ReadOnly},
		{"ZSCORE z a", "zscore", []int{1}, backends.ReadOnly},
		{"ZMSCORE z a b", "zmscore", []int{1}, backends.ReadOnly},
		{"ZRANK z a", "zrank", []int{1}, backends.ReadOnly},
		{"ZREVRANK z a", "zrevrank", []int{1}, backends.ReadOnly},
		{"ZCOUNT z 1 2", "zcount", []int{1}, backends.ReadOnly},
		{"ZLEXCOUNT z - +", "zlexcount", []int{1}, backends.ReadOnly},
		{"ZRANGE z 0 1", "zrange", []int{1}, backends.ReadOnly},
		{"ZRANGESTORE d z 0 1", "zrangestore", []int{1, 2}, backends.WritesFirst},
		{"ZREVRANGE z 0 1", "zrevrange", []int{1}, backends.ReadOnly},
		{"ZRANGEBYSCORE z 0 1", "zrangebyscore", []int{1}, backends.ReadOnly},
		{"ZREVRANGEBYSCORE z 0 1", "zrevrangebyscore", []int{1}, backends.ReadOnly},
		{"ZRANGEBYLEX z - +", "zrangebylex", []int{1}, backends.ReadOnly},
		{"ZREVRANGEBYLEX z + -", "zrevrangebylex", []int{1}, backends.ReadOnly},
		{"ZREMRANGEBYRANK z 0 1", "zremrangebyrank", []int{1}, backends.WritesAll},
		{"ZREMRANGEBYSCORE z 0 1", "zremrangebyscore", []int{1}, backends.WritesAll},
		{"ZREMRANGEBYLEX z - +", "zremrangebylex", []int{1}, backends.WritesAll},
		{"ZPOPMIN z", "zpopmin", []int{1}, backends.WritesAll},
		{"ZPOPMAX z 2", "zpopmax", []int{1}, backends.WritesAll},
		{"ZMPOP 2 a b MIN", "zmpop", []int{2, 3}, backends.WritesAll},
		{"BZMPOP 0 3 a b c MAX COUNT 2", "bzmpop", []int{3, 4, 5}, backends.WritesAll},
		{"BZPOPMIN a b 0", "bzpopmin", []int{1, 2}, backends.WritesAll},
		{"BZPOPMAX a 0", "bzpopmax", []int{1}, backends.WritesAll},
		{"ZRANDMEMBER z", "zrandmember", []int{1}, backends.ReadOnly},
		{"ZSCAN z 0", "zscan", []int{1}, backends.ReadOnly},
		{"ZUNION 2 a b", "zunion", []int{2, 3}, backends.ReadOnly},
		{"ZINTER 1 a WITHSCORES", "zinter", []int{2}, backends.ReadOnly},
		{"ZDIFF 2 a b", "zdiff", []int{2, 3}, backends.ReadOnly},
		{"ZINTERCARD 2 a b LIMIT 1", "zintercard", []int{2, 3}, backends.ReadOnly},
		{"ZUNIONSTORE d 2 a b", "zunionstore", []int{1, 3, 4}, backends.WritesFirst},
		{"ZINTERSTORE d 1 a", "zinterstore", []int{1, 3}, backends.WritesFirst},
		{"ZDIFFSTORE d 2 a b", "zdiffstore", []int{1, 3, 4}, backends.WritesFirst},
	} {
		args := Args(tc.line)
		op, err := parsers[tc.name](args)
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if op.Name() != tc.name || !slices.Equal(op.Request().KeyAt, tc.keyAt) || op.Writes() != tc.writes {
			t.Errorf("%s: name %q keys %v writes %v, want %q %v %v", tc.line, op.Name(), op.Request().KeyAt,
				op.Writes(), tc.name, tc.keyAt, tc.writes)
		}
		if &op.Request().Args[0][0] != &args[0][0] {
			t.Errorf("%s: Args is not the request", tc.line)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  error
	}{
		{"0", 0, nil},
		{"1", time.Second, nil},
		{"0.5", 500 * time.Millisecond, nil},
		{"0.0001", time.Millisecond, nil}, // rounded up
		{"0.001", time.Millisecond, nil},
		{"1.0005", 1001 * time.Millisecond, nil},
		{"-0.0001", 0, nil}, // rounds up to 0: no timeout, as in Redis
		{"-0", 0, nil},
		{"0x10", 16 * time.Second, nil},
		{"1e3", 1000 * time.Second, nil},
		{"1e-400", time.Millisecond, nil}, // a long double holds it
		{"1e400", 0, errTimeoutNeg},       // a long double holds it; a long long does not
		{"9223372036854775", time.Duration(math.MaxInt64), nil},
		{"9223372036854776", 0, errTimeoutNeg},
		{"inf", 0, errTimeoutNeg},
		{"-inf", 0, errTimeoutNeg},
		{"-1", 0, errTimeoutNeg},
		{"1e5000", 0, errTimeout},
		{"1e-5000", 0, errTimeout},
		{"nan", 0, errTimeout},
		{"", 0, errTimeout},
		{" 1", 0, errTimeout},
		{"1 ", 0, errTimeout},
		{"x", 0, errTimeout},
		{"1\x00", 0, errTimeout},
	} {
		got, err := parseTimeout([]byte(tc.in))
		if got != tc.want || err != tc.err {
			t.Errorf("parseTimeout(%q) = %v %v, want %v %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestBlockers(t *testing.T) {
	for _, tc := range []struct {
		line    string
		timeout time.Duration
		reply   string
	}{
		{"BZPOPMIN a b 1.5", 1500 * time.Millisecond, "*3\r\n$1\r\nb\r\n$1\r\nx\r\n$1\r\n1\r\n"},
		{"BZPOPMAX a b 0", 0, "*3\r\n$1\r\nb\r\n$1\r\ny\r\n$1\r\n2\r\n"},
		{"BZMPOP 2 2 a b MIN COUNT 5", 2 * time.Second, "*2\r\n$1\r\nb\r\n*2\r\n*2\r\n$1\r\nx\r\n$1\r\n1\r\n*2\r\n$1\r\ny\r\n$1\r\n2\r\n"},
	} {
		args := Args(tc.line)
		op, err := parsers[string(bytes.ToLower(args[0]))](args)
		if err != nil {
			t.Fatal(err)
		}
		b := op.(Blocker)
		if b.Timeout() != tc.timeout {
			t.Errorf("%s: timeout %v, want %v", tc.line, b.Timeout(), tc.timeout)
		}
		s := NewSlots([]string{"a", "b"}, &DefaultLimits)
		if err := b.Run(s); err != nil || b.Ready() {
			t.Fatalf("%s on no keys: %v, ready %v", tc.line, err, b.Ready())
		}
		for _, proto := range []int{2, 3} {
			w := &RESPBuffer{Proto: proto}
			b.TimedOut(w)
			w2 := &RESPBuffer{Proto: proto}
			b.Reply(w2)
			want := map[int]string{2: "*-1\r\n", 3: "_\r\n"}[proto]
			if w.String() != want || w2.String() != want {
				t.Errorf("%s RESP%d: timed out %q, unready reply %q, want %q", tc.line, proto, w.String(), w2.String(), want)
			}
		}
		z := NewZSet()
		z.Add("x", 1)
		z.Add("y", 2)
		s.Load(s.Slot(1), z, false)
		if err := b.Run(s); err != nil || !b.Ready() {
			t.Fatalf("%s: %v, ready %v", tc.line, err, b.Ready())
		}
		w := &RESPBuffer{Proto: 2}
		b.Reply(w)
		if w.String() != tc.reply {
			t.Errorf("%s: reply %q, want %q", tc.line, w.String(), tc.reply)
		}
	}
}

func TestZSetJournal(t *testing.T) {
	z := NewZSet()
	for _, m := range []string{"a", "b", "c", "d", "e"} {
		z.Add(m, 1)
	}
	for _, tc := range []struct {
		line    string
		touched []string
	}{
		{"ZADD z 1 a 2 b 3 f", []string{"b", "f"}},
		{"ZINCRBY z 0 a", nil},
		{"ZREM z c x", []string{"c"}},
		{"ZREMRANGEBYSCORE z 3 3", []string{"f"}},
		{"ZPOPMIN z", []string{"a"}},
		{"ZREMRANGEBYRANK z -1 -1", []string{"b"}},
		{"ZRANGE z 0 -1", nil},
	} {
		var j Journal
		z.Journal(&j)
		runOn(t, z, tc.line)
		var got []string
		for m := range j.Members {
			got = append(got, m)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.touched) {
			t.Errorf("%s: touched %v, want %v", tc.line, got, tc.touched)
		}
	}
	z.Journal(nil)
	z.Add("g", 1) // no journal: nothing recorded, no panic
}

func TestZSetClone(t *testing.T) {
	z := NewZSet()
	model := map[string]float64{}
	for i := range 500 {
		m := string(rune('a'+i%26)) + string(rune('a'+i/26))
		z.Add(m, float64(i%10))
		model[m] = float64(i % 10)
	}
	for i := 0; i < 500; i += 3 {
		m, _ := z.ByRank(0)
		z.Del(m)
		delete(model, m)
	}
	c := z.Clone().(*ZSet)
	c.check(t, model)
	for i := range z.Len() {
		m1, _ := z.At(i)
		m2, _ := c.At(i)
		if m1 != m2 {
			t.Fatalf("dense position %d: %q in the clone, %q in the set", i, m2, m1)
		}
	}
	// Changing one leaves the other as it was.
	c.Add("zz", -1)
	c.Add("aa", 100)
	c.Del("ba")
	z.check(t, model)
	z.Add("new", 3)
	model["zz"], model["aa"] = -1, 100
	delete(model, "ba")
	c.check(t, model)
}

// A store may run an Op twice: the second run's results replace the
// first's.
func TestZSetRunTwice(t *testing.T) {
	for _, line := range []string{
		"ZRANGE z 0 -1 WITHSCORES", "ZRANGEBYSCORE z 1 2", "ZRANGEBYLEX z - +", "ZMSCORE z a b x",
		"ZUNION 1 z WITHSCORES", "ZINTER 1 z", "ZDIFF 1 z", "ZINTERCARD 1 z", "ZSCAN z 0",
		"ZRANDMEMBER z 3", "ZCOUNT z 1 2", "ZLEXCOUNT z - +", "ZRANK z b", "ZSCORE z b", "ZCARD z",
	} {
		z := NewZSet()
		z.Add("a", 1)
		z.Add("b", 2)
		z.Add("c", 3)
		args := Args(line)
		op, err := parsers[string(bytes.ToLower(args[0]))](args)
		if err != nil {
			t.Fatal(err)
		}
		s := NewSlots([]string{"z"}, &DefaultLimits)
		s.Load(0, z, false)
		var replies [2]string
		for i := range replies {
			if err := op.Run(s); err != nil {
				t.Fatal(err)
			}
			w := &RESPBuffer{Proto: 3}
			op.Reply(w)
			replies[i] = w.String()
		}
		if replies[0] != replies[1] {
			t.Errorf("%s: first run %q, second %q", line, replies[0], replies[1])
		}
	}
}
