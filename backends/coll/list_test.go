package coll

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

func TestListPush(t *testing.T) {
	same(t,
		"LPUSHX l a",
		"RPUSHX l a",
		"LPUSH l a",
		"LPUSH l b c d",
		"RPUSH l e f ''",
		"LPUSHX l x y",
		"RPUSHX l z",
		"LRANGE l 0 -1",
		"RPUSH l 'with space' 01 -0 +1 18446744073709551616",
		"LRANGE l 0 -1",
		"LLEN l",
		"LLEN missing",
		"LPUSH l",
		"LPUSHX l",
		"SET s v",
		"LPUSH s a",
		"RPUSH s a",
		"LPUSHX s a",
		"RPUSHX s a",
		"LLEN s",
		"HSET h f v",
		"LPUSH h a",
		"RPUSHX h a",
		"LLEN h",
	)
}

func TestListPop(t *testing.T) {
	same(t,
		"LPOP l",
		"RPOP l",
		"LPOP l 0",
		"RPOP l 1",
		"LPOP l -1",
		"LPOP l x",
		"RPUSH l a b c d e f g",
		"LPOP l",
		"RPOP l",
		"LPOP l 0",
		"LPOP l 2",
		"RPOP l 2",
		"RPOP l 01",
		"LPOP l -1",
		"LPOP l 1.5",
		"LPOP l 9223372036854775807",
		"LPOP l 9223372036854775808",
		"LPOP l 1 2",
		"RPUSH l a b",
		"RPOP l 2147483648",
		"LLEN l",
		"RPUSH l a",
		"LPOP l",
		"RPUSH l a b c",
		"RPOP l 4294967296",
		"SET s v",
		"LPOP s",
		"RPOP s 1",
		"LPOP s 0",
		"LPOP s -1",
		"HSET h f v",
		"RPOP h",
		"LPOP h 2",
	)
}

func TestListRange(t *testing.T) {
	same(t,
		"LRANGE l 0 -1",
		"LRANGE l x 0",
		"RPUSH l a b c d e f g h i j",
		"LRANGE l 0 -1",
		"LRANGE l 2 4",
		"LRANGE l -3 -1",
		"LRANGE l -100 2",
		"LRANGE l 5 2",
		"LRANGE l 9 100",
		"LRANGE l 10 100",
		"LRANGE l -1 -2",
		"LRANGE l 0 9223372036854775807",
		"LRANGE l -9223372036854775808 9223372036854775807",
		"LRANGE l 9223372036854775807 -9223372036854775808",
		"LRANGE l 0 9223372036854775808",
		"LRANGE l 0 1e3",
		"LRANGE l ' 1' 2",
		"LRANGE l 0 x",
		"LRANGE missing x 0",
		"SET s v",
		"LRANGE s 0 -1",
		"LRANGE s x 0",
		"HSET h f v",
		"LRANGE h 0 -1",
	)
}

func TestListIndexSet(t *testing.T) {
	same(t,
		"LINDEX l 0",
		"LINDEX l x",
		"LSET l 0 a",
		"LSET l x a",
		"RPUSH l a b c",
		"LINDEX l 0",
		"LINDEX l -1",
		"LINDEX l 2",
		"LINDEX l 3",
		"LINDEX l -4",
		"LINDEX l 9223372036854775807",
		"LINDEX l -9223372036854775808",
		"LINDEX l 9223372036854775808",
		"LINDEX l x",
		"LSET l 0 A",
		"LSET l -1 C",
		"LSET l 1 ''",
		"LRANGE l 0 -1",
		"LSET l 3 x",
		"LSET l -4 x",
		"LSET l 9223372036854775807 x",
		"LSET l x y",
		"LSET l 1.0 y",
		"SET s v",
		"LINDEX s 0",
		"LINDEX s x",
		"LSET s 0 a",
		"LSET s x a",
		"HSET h f v",
		"LINDEX h 0",
		"LSET h 0 a",
	)
}

func TestListInsert(t *testing.T) {
	same(t,
		"LINSERT l BEFORE a x",
		"LINSERT l MIDDLE a x",
		"RPUSH l a b c a",
		"LINSERT l before a x",
		"LINSERT l AFTER a y",
		"LINSERT l after c z",
		"LINSERT l BEFORE missing w",
		"LINSERT l Before c ''",
		"LINSERT l after '' e",
		"LRANGE l 0 -1",
		"LINSERT l MIDDLE a x",
		"LINSERT l BEFOREx a x",
		"SET s v",
		"LINSERT s BEFORE a x",
		"LINSERT s MIDDLE a x",
		"HSET h f v",
		"LINSERT h AFTER a x",
	)
	// The shorter side moves: inserts near the head, the tail and the
	// middle of lists that wrap around the ring.
	var script []string
	for i := range 20 {
		script = append(script, fmt.Sprintf("LPUSH w h%d", i), fmt.Sprintf("RPUSH w t%d", i))
	}
	for _, p := range []string{"h19", "h18", "h3", "h0", "t0", "t5", "t17", "t18", "t19"} {
		script = append(script, "LINSERT w BEFORE "+p+" b"+p, "LINSERT w AFTER "+p+" a"+p)
	}
	same(t, append(script, "LRANGE w 0 -1")...)
}

func TestListRem(t *testing.T) {
	same(t,
		"LREM l 0 a",
		"LREM l x a",
		"RPUSH l a b a c a d a",
		"LREM l 2 a",
		"LRANGE l 0 -1",
		"LREM l -1 a",
		"LRANGE l 0 -1",
		"LREM l 0 a",
		"LRANGE l 0 -1",
		"LREM l 0 nothere",
		"RPUSH l x y x y x",
		"LREM l -2 x",
		"LRANGE l 0 -1",
		"LREM l -9223372036854775808 y",
		"LRANGE l 0 -1",
		"LREM l 9223372036854775807 x",
		"LREM l 1.5 b",
		"LREM l 9223372036854775808 b",
		"LREM l 0 b",
		"LREM l 0 c",
		"LREM l 0 d",
		"LLEN l",
		"LRANGE l 0 -1",
		"SET s v",
		"LREM s 0 a",
		"LREM s x a",
		"HSET h f v",
		"LREM h 1 a",
	)
}

func TestListTrim(t *testing.T) {
	same(t,
		"LTRIM l 0 1",
		"LTRIM l x 1",
		"RPUSH l a b c d e f g h i j",
		"LTRIM l 1 -2",
		"LRANGE l 0 -1",
		"LTRIM l -100 100",
		"LRANGE l 0 -1",
		"LTRIM l 2 2",
		"LRANGE l 0 -1",
		"RPUSH l x y z",
		"LTRIM l -2 -1",
		"LRANGE l 0 -1",
		"LTRIM l 1 0",
		"LLEN l",
		"RPUSH l a b c",
		"LTRIM l 3 5",
		"LLEN l",
		"RPUSH l a b c",
		"LTRIM l 0 9223372036854775807",
		"LTRIM l -9223372036854775808 -1",
		"LTRIM l 0 x",
		"LTRIM l 0 -1",
		"LRANGE l 0 -1",
		"LTRIM l 9223372036854775807 0",
		"LLEN l",
		"SET s v",
		"LTRIM s 0 1",
		"LTRIM s x 1",
		"HSET h f v",
		"LTRIM h 0 1",
	)
}

func TestListPos(t *testing.T) {
	same(t,
		"LPOS l a",
		"LPOS l a COUNT 0",
		"LPOS l a COUNT 2 RANK -1",
		"LPOS l a RANK 0",
		"LPOS l a COUNT -1",
		"RPUSH l a b c 1 2 3 c c a",
		"LPOS l a",
		"LPOS l c",
		"LPOS l z",
		"LPOS l z COUNT 0",
		"LPOS l c RANK 2",
		"LPOS l c RANK -1",
		"LPOS l c RANK -2",
		"LPOS l c RANK 4",
		"LPOS l c RANK -4",
		"LPOS l c COUNT 0",
		"LPOS l c COUNT 2",
		"LPOS l c COUNT 1",
		"LPOS l c COUNT 0 RANK 2",
		"LPOS l c COUNT 2 RANK -1",
		"LPOS l c COUNT 9223372036854775807",
		"LPOS l c COUNT 2147483648 RANK -2",
		"LPOS l c MAXLEN 3",
		"LPOS l c MAXLEN 3 COUNT 0",
		"LPOS l c MAXLEN 7 COUNT 0",
		"LPOS l c RANK -1 MAXLEN 1",
		"LPOS l c RANK -1 MAXLEN 2 COUNT 0",
		"LPOS l c MAXLEN 9223372036854775807 COUNT 0",
		"LPOS l c rank 1 count 1 maxlen 0",
		"LPOS l c RANK 9223372036854775807",
		"LPOS l c RANK -9223372036854775808",
		"LPOS l c RANK -9223372036854775808 COUNT 2",
		"LPOS l c RANK -9223372036854775807 COUNT 2",
		"LPOS l c RANK 2 RANK 1",
		"LPOS l c COUNT 1 COUNT 0",
		"LPOS l c RANK 0",
		"LPOS l c RANK x",
		"LPOS l c RANK 9223372036854775808",
		"LPOS l c COUNT -1",
		"LPOS l c COUNT x",
		"LPOS l c COUNT 9223372036854775808",
		"LPOS l c MAXLEN -1",
		"LPOS l c MAXLEN x",
		"LPOS l c RANK",
		"LPOS l c COUNT",
		"LPOS l c MAXLEN",
		"LPOS l c FOO 1",
		"LPOS l c COUNT 1 FOO",
		"LPOS missing c RANK 0",
		"LPOS missing c COUNT 1",
		"SET s v",
		"LPOS s a",
		"LPOS s a COUNT 0",
		"LPOS s a RANK 0",
		"HSET h f v",
		"LPOS h a",
	)
}

func TestListMove(t *testing.T) {
	same(t,
		"LMOVE src dst LEFT RIGHT",
		"RPOPLPUSH src dst",
		"LMOVE src dst MIDDLE RIGHT",
		"LMOVE src dst LEFT UP",
		"RPUSH src a b c d",
		"LMOVE src dst LEFT RIGHT",
		"LMOVE src dst right left",
		"LMOVE src dst Left Left",
		"LMOVE src dst RIGHT RIGHT",
		"LRANGE src 0 -1",
		"LRANGE dst 0 -1",
		"RPOPLPUSH dst src",
		"LRANGE src 0 -1",
		"LRANGE dst 0 -1",
		"LMOVE dst dst LEFT RIGHT",
		"RPOPLPUSH dst dst",
		"LMOVE dst dst LEFT LEFT",
		"LRANGE dst 0 -1",
		"RPOPLPUSH src src",
		"LLEN src",
		"RPOPLPUSH src other",
		"LLEN src",
		"LRANGE other 0 -1",
		"SET s v",
		"LMOVE s dst LEFT LEFT",
		"LMOVE dst s LEFT LEFT",
		"LMOVE missing s LEFT LEFT",
		"LRANGE dst 0 -1",
		"RPOPLPUSH s dst",
		"RPOPLPUSH dst s",
		"RPOPLPUSH missing s",
		"HSET h f v",
		"LMOVE dst h LEFT LEFT",
		"LMOVE h dst LEFT LEFT",
		"RPOPLPUSH dst h",
		"LRANGE dst 0 -1",
	)
}

func TestListMPop(t *testing.T) {
	same(t,
		"LMPOP 1 a LEFT",
		"LMPOP 2 a b RIGHT COUNT 10",
		"RPUSH b 1 2 3 4 5",
		"LMPOP 2 a b LEFT",
		"LMPOP 2 a b RIGHT COUNT 2",
		"LMPOP 2 b a left count 10",
		"LLEN b",
		"RPUSH a x y",
		"RPUSH b z",
		"LMPOP 3 c b a RIGHT",
		"LMPOP 3 c b a RIGHT COUNT 2147483648",
		"LMPOP 2 a a LEFT",
		"LMPOP 0 a LEFT",
		"LMPOP -1 a LEFT",
		"LMPOP x a LEFT",
		"LMPOP 9223372036854775807 a LEFT",
		"LMPOP 9223372036854775808 a LEFT",
		"LMPOP 2 a LEFT",
		"LMPOP 1 a LEFT LEFT",
		"LMPOP 1 a MIDDLE",
		"LMPOP 1 a LEFT COUNT",
		"LMPOP 1 a LEFT COUNT 0",
		"LMPOP 1 a LEFT COUNT -1",
		"LMPOP 1 a LEFT COUNT x",
		"LMPOP 1 a LEFT COUNT 1 COUNT 1",
		"LMPOP 1 a LEFT COUNT 9223372036854775807",
		"LMPOP 1 a LEFT COUNT 9223372036854775808",
		"SET s v",
		"RPUSH l a b",
		"LMPOP 2 missing s LEFT",
		"LMPOP 2 l s LEFT",
		"LMPOP 2 s l LEFT",
		"HSET h f v",
		"LMPOP 2 h l RIGHT",
		"LMPOP 2 l h RIGHT",
		"LMPOP 1 l RIGHT",
	)
}

// TestListBlockingReady: the blocking commands where a key has elements,
// and their errors, which Redis answers before it would block.
func TestListBlockingReady(t *testing.T) {
	same(t,
		"RPUSH a 1 2 3",
		"RPUSH b 4 5 6",
		"BLPOP missing a b 0",
		"BRPOP missing b a 1",
		"BLPOP a a 0.5",
		"BRPOP a 1e3",
		"BLMOVE b a LEFT RIGHT 0",
		"BLMOVE b b RIGHT LEFT 0.1",
		"BRPOPLPUSH b a 0",
		"LRANGE a 0 -1",
		"LRANGE b 0 -1",
		"BLMPOP 0 2 missing a LEFT",
		"BLMPOP 0.01 2 missing a RIGHT COUNT 2",
		"BLMPOP 0.01 1 a LEFT COUNT 100",
		"RPUSH a 1",
		"BLPOP a 0x10",
		"RPUSH a 1",
		"BLPOP a +.5",
		"RPUSH a 1",
		"BLPOP a 1e-400",
		"RPUSH a 1",
		"BLPOP a -0.0001",
		"RPUSH a 1",
		"BLPOP a 0X1P-2",
		"RPUSH a 1",
		"BLPOP a 9223372036854775",
		"BLPOP a -1",
		"BLPOP a -0.01",
		"BLPOP a x",
		"BLPOP a ''",
		"BLPOP a ' 1'",
		"BLPOP a '1 '",
		"BLPOP a 1_0",
		"BLPOP a nan",
		"BLPOP a -nan",
		"BLPOP a inf",
		"BLPOP a -inf",
		"BLPOP a +Infinity",
		"BLPOP a 1e20",
		"BLPOP a 9223372036854776",
		"BLPOP a 1e5000",
		"BLPOP a 1e-5000",
		"BLPOP a 0x",
		"BLPOP a 0b1",
		"BLPOP a 1e",
		"BLPOP a 0x1p",
		"BLPOP a .",
		"BRPOP a x",
		"BLMOVE a b LEFT RIGHT -1",
		"BLMOVE a b MIDDLE RIGHT -1",
		"BLMOVE a b LEFT UP x",
		"BRPOPLPUSH a b -1",
		"BRPOPLPUSH a b x",
		"BLMPOP -1 1 a LEFT",
		"BLMPOP x 1 a LEFT",
		"BLMPOP -1 0 a LEFT",
		"BLMPOP -1 1 a MIDDLE",
		"BLMPOP -1 1 a LEFT COUNT 0",
		"BLMPOP -1 2 a LEFT",
		"SET s v",
		"RPUSH b x y",
		"BLPOP s 0",
		"BLPOP missing s 0",
		"BRPOP b s 0",
		"BLMOVE s b LEFT LEFT 0",
		"BLMOVE b s LEFT LEFT 0",
		"BRPOPLPUSH b s 0",
		"BLMPOP 0 2 s b LEFT",
		"HSET h f v",
		"BLPOP h 0",
		"BLMOVE b h LEFT LEFT 0",
		"BLMPOP 0 1 h LEFT",
	)
}

// TestListBlockingTimedOut: where nothing can be popped, redis-server waits
// out a short timeout and answers; here Run is not Ready, and TimedOut is
// the answer.
func TestListBlockingTimedOut(t *testing.T) {
	timedOut(t)
	same(t,
		"BLPOP missing 0.01",
		"BRPOP missing other 0.01",
		"BLMOVE missing dst LEFT RIGHT 0.01",
		"BRPOPLPUSH missing dst 0.01",
		"BLMPOP 0.01 2 missing other LEFT",
		"BLMPOP 0.01 1 missing RIGHT COUNT 5",
		"RPUSH l a",
		"BLMOVE missing l LEFT RIGHT 0.01",
		"LRANGE l 0 -1",
	)
}

// timedOut makes the blocking commands' parsers answer TimedOut when Run
// did not pop, for the rest of the test.
func timedOut(t *testing.T) {
	for _, name := range []string{"blpop", "brpop", "blmove", "brpoplpush", "blmpop"} {
		p := parsers[name]
		parsers[name] = func(args [][]byte) (Command, error) {
			c, err := p(args)
			if err != nil {
				return nil, err
			}
			return waited{c.(Blocker)}, nil
		}
		t.Cleanup(func() { parsers[name] = p })
	}
}

// waited is a Blocker whose wait ran out.
type waited struct{ Blocker }

func (w waited) Reply(wr Writer) {
	if !w.Ready() {
		w.TimedOut(wr)
		return
	}
	w.Blocker.Reply(wr)
}

// TestListInMulti: inside MULTI Redis never blocks, and the blocking
// commands answer at once what their non-blocking miss is (Reply).
func TestListInMulti(t *testing.T) {
	inMulti(t,
		"BLPOP missing 0",
		"BRPOP missing other 0",
		"BLMOVE missing dst LEFT RIGHT 0",
		"BRPOPLPUSH missing dst 0",
		"BLMPOP 0 1 missing LEFT",
		"BLPOP missing -1",
		"RPUSH l a b",
		"BLMOVE l dst LEFT RIGHT 0",
		"BLPOP l 0",
		"BRPOP l 0",
		"LPOP l 1",
		"LPOS l a",
	)
}

// inMulti runs each line inside MULTI/EXEC on redis-server, and compares
// EXEC's one reply with the Op's.
func inMulti(t *testing.T, script ...string) {
	t.Helper()
	for _, proto := range []int{2, 3} {
		rc := dialRedis(t, proto)
		d := newDB()
		for _, line := range script {
			args := Args(line)
			rc.do(t, Args("MULTI"))
			rc.do(t, args)
			want := rc.do(t, Args("EXEC"))
			got := append([]byte("*1\r\n"), d.do(proto, args)...)
			if !bytes.Equal(got, want) {
				t.Fatalf("RESP%d %s:\n got %q\nwant %q", proto, line, got, want)
			}
		}
	}
}

// TestListRandomScript runs random commands on a few keys against
// redis-server: pushes and pops that wrap the ring around, grow and shrink
// it, with inserts, removals and trims in between.
func TestListRandomScript(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 28))
	keys := []string{"a", "b"}
	elem := func() string { return string(rune('p' + r.IntN(4))) }
	idx := func() int { return r.IntN(40) - 20 }
	var script []string
	for range 600 {
		k, k2 := keys[r.IntN(2)], keys[r.IntN(2)]
		var line string
		switch r.IntN(14) {
		case 0, 1:
			es := make([]string, 1+r.IntN(12))
			for i := range es {
				es[i] = elem()
			}
			line = fmt.Sprintf("%s %s %s", []string{"LPUSH", "RPUSH"}[r.IntN(2)], k, strings.Join(es, " "))
		case 2:
			line = fmt.Sprintf("%s %s", []string{"LPOP", "RPOP"}[r.IntN(2)], k)
		case 3:
			line = fmt.Sprintf("%s %s %d", []string{"LPOP", "RPOP"}[r.IntN(2)], k, r.IntN(6))
		case 4:
			line = fmt.Sprintf("LRANGE %s %d %d", k, idx(), idx())
		case 5:
			line = fmt.Sprintf("LINSERT %s %s %s %s", k, []string{"BEFORE", "AFTER"}[r.IntN(2)], elem(), elem())
		case 6:
			line = fmt.Sprintf("LREM %s %d %s", k, r.IntN(7)-3, elem())
		case 7:
			line = fmt.Sprintf("LTRIM %s %d %d", k, idx(), idx()+20)
		case 8:
			line = fmt.Sprintf("LSET %s %d %s", k, idx(), elem())
		case 9:
			line = fmt.Sprintf("LINDEX %s %d", k, idx())
		case 10:
			line = fmt.Sprintf("LPOS %s %s RANK %d COUNT %d MAXLEN %d", k, elem(), []int{1, 2, -1, -3}[r.IntN(4)], r.IntN(4), r.IntN(20))
		case 11:
			line = fmt.Sprintf("LMOVE %s %s %s %s", k, k2, []string{"LEFT", "RIGHT"}[r.IntN(2)], []string{"LEFT", "RIGHT"}[r.IntN(2)])
		case 12:
			line = fmt.Sprintf("LMPOP 2 %s %s %s COUNT %d", k, k2, []string{"LEFT", "RIGHT"}[r.IntN(2)], 1+r.IntN(5))
		case 13:
			line = "LRANGE " + k + " 0 -1"
		}
		script = append(script, line)
	}
	same(t, append(script, "LRANGE a 0 -1", "LRANGE b 0 -1")...)
}

// TestListHostile: counts and ranges far beyond the list cost only what
// the list holds.
func TestListHostile(t *testing.T) {
	l := NewList()
	for i := range 1000 {
		l.Push(Right, []byte{byte('a' + i%3)})
	}
	run := func(line string) Command {
		t.Helper()
		args := Args(line)
		op, err := parsers[strings.ToLower(string(args[0]))](args)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		s := NewSlots([]string{"l"}, &DefaultLimits)
		s.Load(0, l, false)
		if err := op.Run(s); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return op
	}
	if got := run("LPOS l a COUNT 0 MAXLEN 9223372036854775807").(*LPos).found; len(got) != 334 {
		t.Errorf("LPOS COUNT 0: %d matches, want 334", len(got))
	}
	if got := run("LPOS l a COUNT 9223372036854775807 RANK -9223372036854775808").(*LPos).found; len(got) != 334 {
		t.Errorf("LPOS huge COUNT: %d matches, want 334", len(got))
	}
	if got := run("LRANGE l -9223372036854775808 9223372036854775807").(*LRange).Elems; len(got) != 1000 || cap(got) != 1000 {
		t.Errorf("LRANGE: len %d cap %d, want 1000", len(got), cap(got))
	}
	if got := run("LREM l -9223372036854775808 a").(*LRem).removed; got != 334 || l.Len() != 666 {
		t.Errorf("LREM: removed %d, left %d", got, l.Len())
	}
	if got := run("RPOP l 9223372036854775807").(*Pop).Elems; len(got) != 666 || l.Len() != 0 || l.dir != nil {
		t.Errorf("RPOP huge count: %d popped, %d left, ring %d", len(got), l.Len(), l.slots())
	}
}

// TestListWoken: a client blocks on redis-server (BLPOP, BZPOPMIN…),
// another changes the keys and pushes, and the blocked client's answer must be what the Op answers
// when run again after Wake on the same keys.
func TestListWoken(t *testing.T) {
	for _, tc := range []struct {
		block string
		while []string
	}{
		{"BLPOP a b 5", []string{"SET a x", "RPUSH b y"}},
		{"BRPOP a b 5", []string{"HSET a f v", "RPUSH b 1 2"}},
		{"BLMOVE src dst LEFT RIGHT 5", []string{"SET dst x", "RPUSH src y"}},
		{"BRPOPLPUSH src dst 5", []string{"RPUSH src a b"}},
		{"BLMOVE src src RIGHT LEFT 5", []string{"RPUSH src a b"}},
		{"BLMPOP 5 2 a b LEFT COUNT 3", []string{"SET a x", "RPUSH b 1 2 3 4"}},
		{"BLMPOP 5 2 a b RIGHT", []string{"RPUSH b 1 2 3 4"}},
		// The sorted sets' blocking pops pass over other types alike.
		{"BZPOPMIN a b 5", []string{"SET a x", "ZADD b 1 m"}},
		{"BZPOPMAX a b 5", []string{"HSET a f v", "ZADD b 1 m 2 n"}},
		{"BZMPOP 5 2 a b MIN COUNT 3", []string{"SET a x", "ZADD b 1 m 2 n"}},
	} {
		for _, proto := range []int{2, 3} {
			blocked, other := dialRedis(t, proto), dialRedis(t, proto)
			d := newDB()
			args := Args(tc.block)
			op, err := parsers[strings.ToLower(string(args[0]))](args)
			if err != nil {
				t.Fatalf("%s: %v", tc.block, err)
			}
			b := op.(Blocker)
			if err := d.run(b, args); err != nil || b.Ready() {
				t.Fatalf("%s: first run: ready %v, %v", tc.block, b.Ready(), err)
			}
			send(t, blocked, args)
			// The blocked client must be waiting before the others run.
			for range 100 {
				if bytes.Contains(other.do(t, Args("INFO clients")), []byte("blocked_clients:1")) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, line := range tc.while {
				other.do(t, Args(line))
				d.do(proto, Args(line))
			}
			var want bytes.Buffer
			if err := readReply(blocked.br, &want); err != nil {
				t.Fatal(err)
			}
			b.(Waker).Wake()
			var got []byte
			if err := d.run(b, args); err != nil {
				got = errorReply(err)
			} else {
				w := &RESPBuffer{Proto: proto}
				b.Reply(w)
				got = w.Bytes()
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("RESP%d %s after %q:\n got %q\nwant %q", proto, tc.block, tc.while, got, want.Bytes())
			}
			for _, k := range []string{"a", "b", "src", "dst"} {
				line := "LRANGE " + k + " 0 -1"
				if d.strs[k] != nil || d.vals[k] != nil && d.vals[k].Type() != backends.TypeList {
					line = "TYPE " + k
					if got, want := d.typeOf(k), other.do(t, Args(line)); !bytes.Equal(got, want) {
						t.Fatalf("%s: TYPE %s: got %q want %q", tc.block, k, got, want)
					}
					continue
				}
				if got, want := d.do(proto, Args(line)), other.do(t, Args(line)); !bytes.Equal(got, want) {
					t.Fatalf("%s: %s: got %q want %q", tc.block, line, got, want)
				}
			}
		}
	}
}

// send writes a request to redis-server without reading the reply.
func send(t *testing.T, rc *redisConn, args [][]byte) {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
}

// run runs op on d's values as db.do does, and keeps what it leaves.
func (d *db) run(op Command, args [][]byte) error {
	req := op.Request()
	keys := make([]string, len(req.KeyAt))
	for i, at := range req.KeyAt {
		keys[i] = string(args[at])
	}
	s := NewSlots(keys, &DefaultLimits)
	for i, k := range keys {
		_, str := d.strs[k]
		s.Load(s.Slot(i), d.vals[k], str)
	}
	if err := op.Run(s); err != nil {
		return err
	}
	for i, k := range keys {
		v, replaced := s.Value(s.Slot(i))
		switch {
		case v == nil && (replaced || d.vals[k] != nil):
			delete(d.vals, k)
			if replaced {
				delete(d.strs, k)
			}
		case v != nil:
			delete(d.strs, k)
			d.vals[k] = v
		}
	}
	return nil
}

// typeOf is TYPE's reply for a key of d.
func (d *db) typeOf(k string) []byte {
	t := backends.TypeNone
	if _, ok := d.strs[k]; ok {
		t = backends.TypeString
	} else if v := d.vals[k]; v != nil {
		t = v.Type()
	}
	return []byte("+" + t.String() + "\r\n")
}

// TestListEncoding: Redis 7.0 reports every list as a quicklist, small or
// large, and so does List.
func TestListEncoding(t *testing.T) {
	rc := dialRedis(t, 2)
	big := strings.Repeat("x", 10000)
	for _, line := range []string{"RPUSH small a", "RPUSH large " + big + " " + big} {
		rc.do(t, Args(line))
		key := Args(line)[1]
		want := rc.do(t, [][]byte{[]byte("OBJECT"), []byte("ENCODING"), key})
		l := NewList()
		if got := fmt.Sprintf("$%d\r\n%s\r\n", len(l.Encoding(&DefaultLimits)), l.Encoding(&DefaultLimits)); got != string(want) {
			t.Errorf("%s: encoding %q, want %q", key, got, want)
		}
	}
}
