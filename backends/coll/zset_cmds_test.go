package coll

import (
	"strconv"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
)

// Differential tests of the sorted set commands against redis-server 7.

func init() {
	for _, name := range []string{"zadd", "zincrby"} {
		parsers[name] = ParseZAdd
	}
	for _, f := range zrangeForms {
		parsers[f.name] = ParseZRange
	}
	for _, name := range []string{"zremrangebyrank", "zremrangebyscore", "zremrangebylex"} {
		parsers[name] = ParseZRemRange
	}
	for _, name := range []string{"zunion", "zinter", "zdiff", "zintercard", "zunionstore", "zinterstore", "zdiffstore"} {
		parsers[name] = ParseZSetOp
	}
	parsers["zrem"] = ParseZRem
	parsers["zcard"] = ParseZCard
	parsers["zscore"] = ParseZScore
	parsers["zmscore"] = ParseZMScore
	parsers["zrank"] = ParseZRank
	parsers["zrevrank"] = ParseZRank
	parsers["zcount"] = ParseZCount
	parsers["zlexcount"] = ParseZLexCount
	parsers["zpopmin"] = ParseZPop
	parsers["zpopmax"] = ParseZPop
	parsers["zmpop"] = ParseZMPop
	parsers["bzmpop"] = ParseBZMPop
	parsers["bzpopmin"] = ParseBZPop
	parsers["bzpopmax"] = ParseBZPop
	parsers["zscan"] = ParseZScan
	parsers["zrandmember"] = ParseZRandMember
	// The sets' own SADD once they are merged; until then a stand-in, so
	// that sets can be inputs of ZUNION and the others.
	if parsers["sadd"] == nil {
		parsers["sadd"] = parseTestSAdd
	}
}

// RESP3 tells the Ops which protocol the test writer speaks (see resp3).

// testSet is a stand-in for the sets' Set: what ZUNION reads of one.
type testSet struct {
	members []string
	idx     map[string]bool
}

func (s *testSet) Type() backends.Type { return backends.TypeSet }
func (s *testSet) Len() int            { return len(s.members) }
func (s *testSet) Weight() int64       { return int64(len(s.members)) }
func (s *testSet) Clone() backends.Value {
	c := &testSet{idx: map[string]bool{}}
	for _, m := range s.members {
		c.members, c.idx[m] = append(c.members, m), true
	}
	return c
}
func (s *testSet) At(i int) string   { return s.members[i] }
func (s *testSet) Has(m string) bool { return s.idx[m] }

type testSAdd struct {
	backends.Passed
	added int64
}

func parseTestSAdd(args [][]byte) (Command, error) {
	op := &testSAdd{}
	op.Args, op.KeyAt = args, at1
	return op, nil
}

func (*testSAdd) Name() string            { return "sadd" }
func (*testSAdd) Writes() backends.Writes { return backends.WritesAll }
func (op *testSAdd) Run(v backends.View) error {
	val, err := v.Get(0, backends.TypeSet)
	if err != nil {
		return err
	}
	s, _ := val.(*testSet)
	if s == nil {
		s = &testSet{idx: map[string]bool{}}
		v.Put(0, s)
	}
	op.added = 0
	for _, m := range op.Args[2:] {
		if !s.idx[string(m)] {
			s.members, s.idx[string(m)] = append(s.members, string(m)), true
			op.added++
		}
	}
	return nil
}
func (op *testSAdd) Reply(w Writer) { w.Int(op.added) }

func TestZAdd(t *testing.T) {
	same(t,
		"ZADD z 1 a 2 b 3 c",
		"ZADD z 1 a",
		"ZADD z 5 a 6 d",
		"ZADD z CH 5 a 7 b 8 e",
		"ZADD z NX 100 a 9 f",
		"ZADD z XX 100 a 9 g",
		"ZADD z XX CH 101 a",
		"ZADD z GT 50 a",
		"ZADD z GT CH 500 a",
		"ZADD z LT CH 500 a 1 b",
		"ZADD z XX GT CH 0 a 1000 a",
		"ZADD z LT 10 newlt",
		"ZADD z INCR 5 a",
		"ZADD z INCR -inf h",
		"ZADD z INCR +inf h",
		"ZADD z INCR 1 newincr",
		"ZADD z NX INCR 1 a",
		"ZADD z XX INCR 1 nothere",
		"ZADD z GT INCR -1 a",
		"ZADD z LT INCR -1 a",
		"ZADD z nx xx 1 a",
		"ZADD z gt nx 1 a",
		"ZADD z lt nx 1 a",
		"ZADD z gt lt 1 a",
		"ZADD z INCR 1 a 2 b",
		"ZADD z 1 a 2",
		"ZADD z 1 a NX",
		"ZADD z abc a",
		"ZADD z nan a",
		"ZADD z 1 a x b",
		"ZADD z ' 1' a",
		"ZADD z '1 ' a",
		"ZADD z '' a",
		"ZADD z 1e400 a",
		"ZADD z 1e-400 a",
		"ZADD z 1e-310 sub",
		"ZADD z 0x10 hex 0x1p-2 hexp 1e3 e3 .5 dot 5. dot2 -0 mzero +7 plus inf i1 -Infinity i2",
		"ZADD z 1_0 under",
		"ZADD z 0x a",
		"ZADD z inFinity i3",
		"ZADD z 3 ''",
		"ZRANGE z 0 -1 WITHSCORES",
		"ZINCRBY z 10 a",
		"ZINCRBY z 1.5 new",
		"ZINCRBY z abc a",
		"ZINCRBY z -inf h",
		"ZINCRBY z nx a",
		"ZINCRBY z incr a",
		"ZADD xx XX 1 a",
		"ZADD xx XX INCR 1 a",
		"ZCARD xx",
		"ZINCRBY fresh 2 a",
		"ZADD big 1 a",
		"ZADD big 1.0000000000000002 b 0.1 c 1e17 d 123456789.123456789 e -1e-17 f",
		"ZRANGE big 0 -1 WITHSCORES",
		"SET s v",
		"ZADD s 1 a",
		"ZINCRBY s 1 a",
		"ZADD s XX 1 a",
		"ZADD s nx xx 1 a",
		"HSET h f v",
		"ZADD h 1 a",
		"ZINCRBY h 1 a",
	)
}

func TestZAddNegativeZero(t *testing.T) {
	// A listpack keeps no -0: what a set answers depends on its encoding.
	long := strings.Repeat("x", 70)
	same(t,
		"ZADD z -0 a",
		"ZSCORE z a",
		"ZADD z 5 b",
		"ZADD z -0 b",
		"ZSCORE z b",
		"ZINCRBY z -0 c",
		"ZSCORE z c",
		"ZADD z INCR -0 c",
		"ZADD big 1 "+long,
		"ZADD big -0 a",
		"ZSCORE big a",
		"ZADD big 3 b",
		"ZADD big -0 b",
		"ZSCORE big b",
		"ZRANGE big 0 -1 WITHSCORES",
		"ZRANGESTORE d1 big 0 -1",
		"ZRANGE d1 0 -1 WITHSCORES",
		"ZRANGESTORE d2 big -inf +inf BYSCORE",
		"ZRANGE d2 0 -1 WITHSCORES",
		"ZUNIONSTORE d3 1 big",
		"ZRANGE d3 0 -1 WITHSCORES",
		"ZREM big "+long,
		"ZUNIONSTORE d4 1 big",
		"ZRANGE d4 0 -1 WITHSCORES",
		"ZSCAN big 0 MATCH a",
		"ZSCAN z 0",
	)
}

func TestZRemCardScore(t *testing.T) {
	same(t,
		"ZADD z 1 a 2 b 3 c -inf d +inf e",
		"ZCARD z",
		"ZCARD none",
		"ZSCORE z a",
		"ZSCORE z d",
		"ZSCORE z e",
		"ZSCORE z none",
		"ZSCORE none a",
		"ZMSCORE z a none e",
		"ZMSCORE none a b",
		"ZREM z a none",
		"ZREM z none",
		"ZREM none a",
		"ZREM z b c d e",
		"ZCARD z",
		"ZSCORE z a",
		"SET s v",
		"ZCARD s",
		"ZSCORE s a",
		"ZMSCORE s a",
		"ZREM s a",
		"HSET h f v",
		"ZCARD h",
		"ZSCORE h a",
		"ZMSCORE h a",
		"ZREM h a",
	)
}

func TestZRank(t *testing.T) {
	same(t,
		"ZADD z 1 a 2 b 2 c 3 d 0 e",
		"ZRANK z a",
		"ZRANK z c",
		"ZRANK z e",
		"ZRANK z none",
		"ZREVRANK z a",
		"ZREVRANK z e",
		"ZREVRANK z d",
		"ZREVRANK z none",
		"ZRANK none a",
		"ZREVRANK none a",
		"SET s v",
		"ZRANK s a",
		"ZREVRANK s a",
		"HSET h f v",
		"ZRANK h a",
	)
}

func TestZCountLexCount(t *testing.T) {
	same(t,
		"ZADD z 1 a 2 b 3 c 4 d 5 e -inf ninf +inf pinf",
		"ZCOUNT z -inf +inf",
		"ZCOUNT z 2 4",
		"ZCOUNT z (2 4",
		"ZCOUNT z (2 (4",
		"ZCOUNT z 4 2",
		"ZCOUNT z (3 3",
		"ZCOUNT z 3 3",
		"ZCOUNT z -inf -inf",
		"ZCOUNT z inf inf",
		"ZCOUNT z '' ''",
		"ZCOUNT z ( (3",
		"ZCOUNT z ' 1' '( 3'",
		"ZCOUNT z 0x1 0x3",
		"ZCOUNT z 1e-400 1e400",
		"ZCOUNT z a 3",
		"ZCOUNT z 1 nan",
		"ZCOUNT z '1 ' 3",
		"ZCOUNT z - 3",
		"ZCOUNT none 1 2",
		"ZCOUNT none a 2",
		"ZADD l 0 a 0 b 0 c 0 d 0 e 0 ee 0 f",
		"ZLEXCOUNT l - +",
		"ZLEXCOUNT l [b [d",
		"ZLEXCOUNT l (b (d",
		"ZLEXCOUNT l (b [e",
		"ZLEXCOUNT l [e (f",
		"ZLEXCOUNT l [d [b",
		"ZLEXCOUNT l + -",
		"ZLEXCOUNT l - -",
		"ZLEXCOUNT l + +",
		"ZLEXCOUNT l [a (a",
		"ZLEXCOUNT l [a [a",
		"ZLEXCOUNT l ( [c",
		"ZLEXCOUNT l [ +",
		"ZLEXCOUNT l a +",
		"ZLEXCOUNT l - b",
		"ZLEXCOUNT l -x +",
		"ZLEXCOUNT l - +x",
		"ZLEXCOUNT l '' +",
		"ZLEXCOUNT none - +",
		"ZLEXCOUNT none x +",
		"SET s v",
		"ZCOUNT s 1 2",
		"ZCOUNT s x 2",
		"ZLEXCOUNT s - +",
		"ZLEXCOUNT s x +",
		"HSET h f v",
		"ZCOUNT h 1 2",
		"ZLEXCOUNT h - +",
	)
}

func TestZRange(t *testing.T) {
	same(t,
		"ZADD z 1 a 2 b 3 c 4 d 5 e 5 f",
		"ZRANGE z 0 -1",
		"ZRANGE z 0 -1 WITHSCORES",
		"ZRANGE z 1 3 withscores",
		"ZRANGE z -2 -1",
		"ZRANGE z -100 100",
		"ZRANGE z 3 1",
		"ZRANGE z 10 20",
		"ZRANGE z -1 -2",
		"ZRANGE z 0 -1 REV",
		"ZRANGE z 0 1 REV WITHSCORES",
		"ZRANGE z 0 -1 REV REV",
		"ZRANGE z a 1",
		"ZRANGE z 0 b",
		"ZRANGE z 0 1 LIMIT 0 1",
		"ZRANGE z 0 1 LIMIT 0 -1",
		"ZRANGE z 0 1 LIMIT x 1",
		"ZRANGE z 0 1 LIMIT 0",
		"ZRANGE z 0 1 BOGUS",
		"ZRANGE z 2 4 BYSCORE",
		"ZRANGE z (2 4 BYSCORE WITHSCORES",
		"ZRANGE z 4 2 BYSCORE REV",
		"ZRANGE z 4 (2 BYSCORE REV WITHSCORES",
		"ZRANGE z -inf +inf BYSCORE LIMIT 1 2",
		"ZRANGE z -inf +inf BYSCORE LIMIT 1 -1",
		"ZRANGE z -inf +inf BYSCORE LIMIT -1 2",
		"ZRANGE z -inf +inf BYSCORE LIMIT 5 2",
		"ZRANGE z -inf +inf BYSCORE LIMIT 6 2",
		"ZRANGE z -inf +inf BYSCORE LIMIT 0 0",
		"ZRANGE z +inf -inf BYSCORE REV LIMIT 1 3",
		"ZRANGE z +inf -inf BYSCORE REV LIMIT 1 3 WITHSCORES",
		"ZRANGE z +inf -inf BYSCORE REV LIMIT 10 3",
		"ZRANGE z 2 4 BYSCORE BYSCORE",
		"ZRANGE z 2 4 BYSCORE BYLEX",
		"ZRANGE z x 4 BYSCORE",
		"ZRANGE z 2 4 BYLEX",
		"ZRANGE z [a [c BYLEX WITHSCORES",
		"ZRANGE z - + BYLEX LIMIT 1 1",
		"ZRANGE none 0 -1",
		"ZRANGE none 0 -1 WITHSCORES",
		"ZRANGE none x 1",
		"ZREVRANGE z 0 -1",
		"ZREVRANGE z 0 2 WITHSCORES",
		"ZREVRANGE z 0 2 REV",
		"ZREVRANGE z 0 2 BYSCORE",
		"ZREVRANGE z 0 2 LIMIT 0 1",
		"ZRANGEBYSCORE z 2 4",
		"ZRANGEBYSCORE z -inf +inf WITHSCORES LIMIT 1 2",
		"ZRANGEBYSCORE z -inf +inf LIMIT 1 2 WITHSCORES",
		"ZRANGEBYSCORE z (1 (5",
		"ZRANGEBYSCORE z 5 1",
		"ZRANGEBYSCORE z 2 4 REV",
		"ZRANGEBYSCORE z 2 4 BYSCORE",
		"ZRANGEBYSCORE z x 4",
		"ZRANGEBYSCORE z 1 4 LIMIT 0",
		"ZREVRANGEBYSCORE z 4 2",
		"ZREVRANGEBYSCORE z +inf -inf WITHSCORES",
		"ZREVRANGEBYSCORE z (5 (1 LIMIT 1 2",
		"ZREVRANGEBYSCORE z 2 4",
		"ZRANGEBYSCORE none 1 2",
		"SET s v",
		"ZRANGE s 0 -1",
		"ZRANGE s x 1",
		"ZRANGEBYSCORE s 1 2",
		"ZREVRANGE s 0 1",
		"HSET h f v",
		"ZRANGE h 0 -1",
		"ZRANGEBYSCORE h 1 2",
	)
}

func TestZRangeByLex(t *testing.T) {
	same(t,
		"ZADD l 0 alpha 0 bar 0 cool 0 down 0 elephant 0 foo 0 great 0 hill 0 omega",
		"ZRANGEBYLEX l - +",
		"ZRANGEBYLEX l - [cool",
		"ZRANGEBYLEX l [bar [down",
		"ZRANGEBYLEX l (bar (down",
		"ZRANGEBYLEX l [d +",
		"ZRANGEBYLEX l (great +",
		"ZRANGEBYLEX l [zz +",
		"ZRANGEBYLEX l - (a",
		"ZRANGEBYLEX l + -",
		"ZRANGEBYLEX l - + LIMIT 2 3",
		"ZRANGEBYLEX l - + LIMIT -1 3",
		"ZRANGEBYLEX l - + LIMIT 20 3",
		"ZRANGEBYLEX l - + LIMIT 2 -1",
		"ZRANGEBYLEX l - + WITHSCORES",
		"ZRANGEBYLEX l a +",
		"ZRANGEBYLEX l - z",
		"ZRANGEBYLEX l - + LIMIT 1",
		"ZREVRANGEBYLEX l + -",
		"ZREVRANGEBYLEX l [foo (bar",
		"ZREVRANGEBYLEX l + - LIMIT 1 2",
		"ZREVRANGEBYLEX l - +",
		"ZRANGE l [foo (bar BYLEX REV",
		"ZRANGE l (bar [foo BYLEX LIMIT 1 2",
		"ZRANGEBYLEX none - +",
		"SET s v",
		"ZRANGEBYLEX s - +",
		"ZRANGEBYLEX s x +",
	)
}

func TestZRangeStore(t *testing.T) {
	same(t,
		"ZADD z 1 a 2 b 3 c 4 d",
		"ZRANGESTORE d z 0 -1",
		"ZRANGE d 0 -1 WITHSCORES",
		"ZRANGESTORE d z 1 2 REV",
		"ZRANGE d 0 -1 WITHSCORES",
		"ZRANGESTORE d z (1 +inf BYSCORE LIMIT 1 5",
		"ZRANGE d 0 -1 WITHSCORES",
		"ZRANGESTORE d z +inf -inf BYSCORE REV LIMIT 0 2",
		"ZRANGE d 0 -1 WITHSCORES",
		"ZRANGESTORE d z 5 6 BYSCORE",
		"ZCARD d",
		"ZRANGESTORE d z 0 -1",
		"ZRANGESTORE d none 0 -1",
		"ZCARD d",
		"SET str v",
		"ZRANGESTORE str z 0 0",
		"ZRANGE str 0 -1",
		"SET str v",
		"ZRANGESTORE str none 0 0",
		"ZRANGE str 0 -1",
		"ZRANGESTORE d z 0 -1 WITHSCORES",
		"ZRANGESTORE d z 0 -1 LIMIT 0 1",
		"ZRANGESTORE d z - + BYLEX",
		"ZRANGESTORE d z x 1",
		"ZRANGESTORE z z 1 2",
		"ZRANGE z 0 -1 WITHSCORES",
		"SET s v",
		"ZRANGESTORE d s 0 -1",
		"HSET h f v",
		"ZRANGESTORE d h 0 -1",
	)
}

func TestZRemRange(t *testing.T) {
	same(t,
		"ZADD z 1 a 2 b 3 c 4 d 5 e 6 f",
		"ZREMRANGEBYRANK z 0 0",
		"ZREMRANGEBYRANK z -1 -1",
		"ZREMRANGEBYRANK z 10 20",
		"ZREMRANGEBYRANK z 2 1",
		"ZRANGE z 0 -1",
		"ZREMRANGEBYRANK z x 1",
		"ZREMRANGEBYRANK z 1 x",
		"ZREMRANGEBYSCORE z (2 3",
		"ZREMRANGEBYSCORE z 10 1",
		"ZREMRANGEBYSCORE z x 1",
		"ZRANGE z 0 -1",
		"ZREMRANGEBYSCORE z -inf +inf",
		"ZCARD z",
		"ZADD l 0 a 0 b 0 c 0 d 0 e",
		"ZREMRANGEBYLEX l (a [c",
		"ZREMRANGEBYLEX l [z +",
		"ZREMRANGEBYLEX l x +",
		"ZRANGE l 0 -1",
		"ZREMRANGEBYLEX l - +",
		"ZCARD l",
		"ZREMRANGEBYRANK none 0 -1",
		"ZREMRANGEBYSCORE none 0 1",
		"ZREMRANGEBYLEX none - +",
		"ZREMRANGEBYLEX none x +",
		"SET s v",
		"ZREMRANGEBYRANK s 0 -1",
		"ZREMRANGEBYSCORE s 0 1",
		"ZREMRANGEBYLEX s - +",
		"ZREMRANGEBYSCORE s x 1",
		"HSET h f v",
		"ZREMRANGEBYRANK h 0 -1",
	)
}

func TestZPop(t *testing.T) {
	same(t,
		"ZADD z 1 a 2 b 3 c 4 d 5 e 6 f",
		"ZPOPMIN z",
		"ZPOPMAX z",
		"ZPOPMIN z 2",
		"ZPOPMAX z 1",
		"ZPOPMIN z 0",
		"ZPOPMIN z -1",
		"ZPOPMIN z x",
		"ZPOPMIN z 1 2",
		"ZPOPMAX z 10",
		"ZCARD z",
		"ZPOPMIN z",
		"ZPOPMIN z 2",
		"ZPOPMIN z 0",
		"ZPOPMAX none",
		"ZADD z 1 a",
		"ZPOPMIN z 9223372036854775807",
		"SET s v",
		"ZPOPMIN s",
		"ZPOPMAX s 2",
		"ZPOPMIN s x",
		"HSET h f v",
		"ZPOPMIN h",
	)
}

func TestZMPop(t *testing.T) {
	same(t,
		"ZADD z1 1 a 2 b 3 c",
		"ZADD z2 4 d 5 e",
		"ZMPOP 1 z1 MIN",
		"ZMPOP 2 none z1 MAX COUNT 10",
		"ZMPOP 2 z1 z2 min count 1",
		"ZMPOP 2 none1 none2 MIN",
		"ZMPOP 0 z1 MIN",
		"ZMPOP -1 z1 MIN",
		"ZMPOP x z1 MIN",
		"ZMPOP 2 z1 MIN",
		"ZMPOP 1 z1 BOGUS",
		"ZMPOP 1 z2 MIN COUNT 0",
		"ZMPOP 1 z2 MIN COUNT x",
		"ZMPOP 1 z2 MIN COUNT 1 COUNT 1",
		"ZMPOP 1 z2 MIN COUNT",
		"ZMPOP 1 z2 MIN BOGUS",
		"SET s v",
		"ZMPOP 2 none s MIN",
		"ZMPOP 2 z2 s MAX",
		"ZMPOP 2 s z2 MAX",
		"HSET h f v",
		"ZMPOP 1 h MIN",
		"BZMPOP 0.01 1 none MIN",
		"BZMPOP 0.01 2 none z2 MAX COUNT 5",
		"BZMPOP x 1 none MIN",
		"BZMPOP -1 1 none MIN",
		"BZMPOP 0 0 none MIN",
		"BZMPOP x 0 none MIN",
		"BZMPOP 0 1 none BOGUS",
		"BZMPOP x 1 none BOGUS",
		"BZMPOP 0.01 1 s MIN",
	)
}

func TestBZPop(t *testing.T) {
	same(t,
		"ZADD z1 1 a 2 b 3 c",
		"BZPOPMIN z1 0",
		"BZPOPMAX none z1 0",
		"BZPOPMIN none 0.01",
		"BZPOPMAX none1 none2 0.01",
		"BZPOPMIN none x",
		"BZPOPMIN none -1",
		"BZPOPMIN none ''",
		"BZPOPMIN none ' 1'",
		"BZPOPMIN none inf",
		"BZPOPMIN none 1e16",
		"BZPOPMIN none 1e5000",
		"BZPOPMIN none 1e-5000",
		"BZPOPMIN none nan",
		"BZPOPMIN none 1e-400",
		"SET s v",
		"BZPOPMIN s 0",
		"BZPOPMIN none s 0",
		"BZPOPMIN z1 s 0",
		"HSET h f v",
		"BZPOPMAX h 0",
	)
}

func TestZScanSmall(t *testing.T) {
	same(t,
		"ZADD z 1 a 2.5 b 3 c -inf d 1e17 e 5e18 f 4611686018427387904 g 4611686018427387905 h -0.5 i",
		"ZSCAN z 0",
		"ZSCAN z 0 COUNT 1",
		"ZSCAN z 0 MATCH [a-c]",
		"ZSCAN z 0 MATCH ''",
		"ZADD z 0 ''",
		"ZSCAN z 0 MATCH ''",
		"ZSCAN z 0 MATCH *",
		"ZSCAN z 0 MATCH a MATCH b*",
		"ZSCAN z 0 COUNT 5 COUNT 1",
		"ZSCAN z 0 MATCH * COUNT 100",
		"ZSCAN z 123",
		"ZSCAN z x",
		"ZSCAN z -1",
		"ZSCAN z ''",
		"ZSCAN z ' 1'",
		"ZSCAN z 18446744073709551616",
		"ZSCAN z 0 COUNT 0",
		"ZSCAN z 0 COUNT x",
		"ZSCAN z 0 COUNT",
		"ZSCAN z 0 MATCH",
		"ZSCAN z 0 TYPE zset",
		"ZSCAN z 0 BOGUS x",
		"ZSCAN none 0",
		"ZSCAN none 0 COUNT 0",
		"ZSCAN none x",
		"SET s v",
		"ZSCAN s 0",
		"ZSCAN s 0 COUNT 0",
		"ZSCAN s x",
		"HSET h f v",
		"ZSCAN h 0",
	)
}

func TestZRandMemberReplies(t *testing.T) {
	// Only the replies that are not random: errors, empty keys, and a
	// count that takes the whole set (answered in order of scores).
	same(t,
		"ZADD z 1 a 2 b 3 c",
		"ZRANDMEMBER z 3",
		"ZRANDMEMBER z 10 WITHSCORES",
		"ZRANDMEMBER z 0",
		"ZRANDMEMBER z 0 WITHSCORES",
		"ZRANDMEMBER z x",
		"ZRANDMEMBER z 1 BOGUS",
		"ZRANDMEMBER z 1 WITHSCORES x",
		"ZRANDMEMBER z -9223372036854775808",
		"ZRANDMEMBER z 9223372036854775807 WITHSCORES",
		"ZRANDMEMBER z -4611686018427387904 WITHSCORES",
		"ZRANDMEMBER z 4611686018427387903 WITHSCORES",
		"ZRANDMEMBER none",
		"ZRANDMEMBER none 5",
		"ZRANDMEMBER none -5 WITHSCORES",
		"ZRANDMEMBER none x",
		"ZADD one 7 only",
		"ZRANDMEMBER one",
		"ZRANDMEMBER one -3 WITHSCORES",
		"ZRANDMEMBER one 1",
		"SET s v",
		"ZRANDMEMBER s",
		"ZRANDMEMBER s 1",
		"ZRANDMEMBER s x",
		"HSET h f v",
		"ZRANDMEMBER h",
	)
}

func TestZSetOps(t *testing.T) {
	same(t,
		"ZADD z1 1 a 2 b 3 c",
		"ZADD z2 10 b 20 c 30 d",
		"ZADD z3 100 c 200 d 300 e 400 f",
		"SADD st a d x",
		"ZUNION 2 z1 z2",
		"ZUNION 2 z1 z2 WITHSCORES",
		"ZUNION 3 z1 z2 z3 WEIGHTS 1 2 3 WITHSCORES",
		"ZUNION 2 z1 z2 AGGREGATE MIN WITHSCORES",
		"ZUNION 2 z1 z2 AGGREGATE max withscores",
		"ZUNION 2 z1 z2 WEIGHTS 1 -1 AGGREGATE SUM WITHSCORES",
		"ZUNION 2 z1 z2 WEIGHTS 0 inf WITHSCORES",
		"ZUNION 2 z1 st WITHSCORES",
		"ZUNION 2 z1 none WITHSCORES",
		"ZUNION 1 none",
		"ZUNION 2 z1 z2 WEIGHTS 1 WITHSCORES",
		"ZUNION 2 z1 z2 WEIGHTS 1 x",
		"ZUNION 2 z1 z2 AGGREGATE avg",
		"ZUNION 2 z1 z2 AGGREGATE",
		"ZUNION 2 z1 z2 LIMIT 1",
		"ZUNION 2 z1 z2 WITHSCORES WITHSCORES AGGREGATE MIN AGGREGATE MAX",
		"ZUNION 0 z1",
		"ZUNION -1 z1",
		"ZUNION x z1",
		"ZUNION 3 z1 z2",
		"ZINTER 2 z1 z2",
		"ZINTER 2 z1 z2 WITHSCORES",
		"ZINTER 3 z1 z2 z3 WITHSCORES",
		"ZINTER 2 z2 z3 WEIGHTS 2 0.5 AGGREGATE MAX WITHSCORES",
		"ZINTER 2 z1 st WITHSCORES",
		"ZINTER 2 z1 z1 WITHSCORES",
		"ZINTER 2 z1 none",
		"ZINTER 2 z1 z2 WEIGHTS a b",
		"ZINTER 0 z1",
		"ZINTERCARD 2 z1 z2",
		"ZINTERCARD 3 z1 z2 z3",
		"ZINTERCARD 2 z2 z3 LIMIT 1",
		"ZINTERCARD 2 z2 z3 LIMIT 0",
		"ZINTERCARD 2 z2 z3 LIMIT -1",
		"ZINTERCARD 2 z2 z3 LIMIT x",
		"ZINTERCARD 2 z2 z3 WITHSCORES",
		"ZINTERCARD 2 z2 z3 WEIGHTS 1 1",
		"ZINTERCARD 0 z1",
		"ZINTERCARD 2 z1",
		"ZDIFF 2 z1 z2",
		"ZDIFF 2 z1 z2 WITHSCORES",
		"ZDIFF 3 z3 z1 z2 WITHSCORES",
		"ZDIFF 2 z1 z1",
		"ZDIFF 2 z1 st WITHSCORES",
		"ZDIFF 2 st z1 WITHSCORES",
		"ZDIFF 1 none",
		"ZDIFF 2 z1 none WITHSCORES",
		"ZDIFF 2 z1 z2 WEIGHTS 1 1",
		"ZDIFF 2 z1 z2 AGGREGATE MIN",
		"ZDIFF 0 z1",
		"ZUNIONSTORE d 2 z1 z2",
		"ZRANGE d 0 -1 WITHSCORES",
		"ZINTERSTORE d 2 z1 z2 WEIGHTS 2 3",
		"ZRANGE d 0 -1 WITHSCORES",
		"ZDIFFSTORE d 2 z3 z2",
		"ZRANGE d 0 -1 WITHSCORES",
		"ZINTERSTORE d 2 z1 none",
		"ZCARD d",
		"ZUNIONSTORE z1 2 z1 z2",
		"ZRANGE z1 0 -1 WITHSCORES",
		"ZUNIONSTORE d 2 z1 z2 WITHSCORES",
		"ZDIFFSTORE d 2 z1 z2 WITHSCORES",
		"ZUNIONSTORE d 0 z1",
		"ZUNIONSTORE d 2 z1",
		"SET str v",
		"ZUNIONSTORE str 1 z2",
		"ZRANGE str 0 -1",
		"ZUNION 2 z1 str",
		"ZUNION 2 str z1 WEIGHTS x",
		"ZINTER 2 z1 str",
		"ZINTERCARD 2 z1 str LIMIT -1",
		"ZDIFF 2 z1 str",
		"ZUNIONSTORE d 2 z1 str",
		"HSET h f v",
		"ZUNION 2 z1 h",
		"ZINTERSTORE d 1 h",
	)
}

func TestZSetOpsInfinities(t *testing.T) {
	same(t,
		"ZADD a 1 x -inf y +inf z 0 w",
		"ZADD b 1 x +inf y +inf z inf w",
		"ZUNION 2 a b WITHSCORES",
		"ZINTER 2 a b WITHSCORES",
		"ZUNION 2 a b WEIGHTS 0 0 WITHSCORES",
		"ZINTER 2 a b WEIGHTS 0 1 WITHSCORES",
		"ZINTER 2 a b WEIGHTS 1 0 AGGREGATE MIN WITHSCORES",
		"ZINTER 2 a b WEIGHTS 1 0 AGGREGATE MAX WITHSCORES",
		"ZINTER 2 a a WEIGHTS 1 -1 WITHSCORES",
		"ZUNION 2 a b AGGREGATE MIN WITHSCORES",
		"ZUNION 2 a b WEIGHTS -1 1 WITHSCORES",
	)
}

// Arguments are C strings to some of Redis's parsers (strtod, strtoul) and
// not to others: what follows a NUL counts or not, as there.
func TestZSetNULArguments(t *testing.T) {
	same(t,
		"ZADD z 1 a 2 b 3 c",
		"ZADD z '1\x00' d",
		"ZADD z '\x001' d",
		"ZCOUNT z '1\x00junk' 3",
		"ZCOUNT z '(1\x00junk' '\x00'",
		"ZCOUNT z '\x00' 3",
		"ZRANGEBYLEX z '+\x00x' -",
		"ZRANGEBYLEX z - '+\x00x'",
		"ZRANGEBYLEX z '[a\x00' +",
		"ZSCAN z '0\x00junk'",
		"ZSCAN z '\x00'",
		"BZPOPMIN z '1\x00'",
		"ZUNION 1 z WEIGHTS '1\x00'",
		"ZRANGE z '0\x00' 1",
	)
}

// Numbers as strtod reads them, through ZADD (string2d) and ZCOUNT
// (zslParseRange).
func TestZSetNumbers(t *testing.T) {
	nums := []string{
		"0x", "0X1P4", "0x1.8", "0x.8", "0x1p", "0x1p+", "0xg", "0x1.fffffffffffffp1023", "0x1p1024", "0x1p-1075", "0x1p-1074",
		"1e", "1e+", "1E-2", "-.5", "+.5", "+.e1", ".", "-", "+", "e5", "1..2", "1.2.3", "--1", "+-1",
		"infinity", "INFINITY", "-InFiNiTy", "infinit", "infx", "+inf", "nan(123)", "-nan", "NaN",
		"1.7976931348623157e308", "1.7976931348623159e308", "1.8e308", "4.9e-324", "2e-324", "2.5e-324", "1e-323",
		"0.0000000000000000000000000000000000001", "1" + strings.Repeat("0", 400), "0." + strings.Repeat("0", 400) + "1",
		"0e999999", "1e-999999", "00012", "1_000", "1,5", "٣", "0b101", "0o17", "12abc", "\t1", "1\t",
	}
	var script []string
	for i, n := range nums {
		m := "m" + strconv.Itoa(i)
		script = append(script,
			"ZADD z '"+n+"' "+m,
			"ZSCORE z "+m,
			"ZCOUNT z '"+n+"' +inf",
			"ZCOUNT z -inf '("+n+"'",
			"ZRANGEBYSCORE z '"+n+"' '"+n+"' WITHSCORES",
		)
	}
	same(t, script...)
}
