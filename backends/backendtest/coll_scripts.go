package backendtest

import (
	"fmt"
	"strings"
)

// The scripts: every command of coll.Commands at least once, with its
// options and the errors a store answers (the key's type, a value out of
// range); parse errors never reach a store. Keys are short names here,
// run under a prefix of the subtest's own. "str" is a string, "missing"
// never exists; a "big" value is one Redis keeps in a hash table or skip
// list, made so by one long member or value (longer than 64 bytes) or
// many members.
type script struct {
	name     string
	lines    []string
	note     string // said when the script fails: what the store gets wrong
	fromSize bool   // not run on a store whose encodings follow the size (EncodingFromSize)
}

var scripts = []script{
	{name: "Hash", lines: hashScript()},
	{name: "Set", lines: setScript()},
	{name: "ZSet", lines: zsetScript()},
	{name: "List", lines: listScript()},
	{name: "Types", lines: typesScript()},
	{name: "Sort", lines: sortScript()},
	{name: "EncodingKept", lines: encodingScript(), fromSize: true, note: "EncodingKept: Redis 7 never converts a " +
		"value back to a small encoding, so OBJECT ENCODING of a value that shrank (or its copy) still reports " +
		"hashtable or skiplist; a store that rebuilds a value from its members alone reports the encoding of " +
		"its current size, and runs the suite with EncodingFromSize."},
}

// long is a member or value longer than any small encoding allows.
var long = strings.Repeat("L", 70)

// words are n words "p0 p1 …"; with values, "p0 v0 p1 v1 …".
func words(p string, n int, values bool) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s%d", p, i)
		if values {
			fmt.Fprintf(&b, " v%d", i)
		}
	}
	return b.String()
}

// scored are n members "1 p0 2 p1 …" of a ZADD, with scores from 1.
func scored(p string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d %s%d", i+1, p, i)
	}
	return b.String()
}

func hashScript() []string {
	return []string{
		"HSET h a 1 b 2 c 3",
		"HSET h a 10 d 4",
		"HGETALL h", // a changed in place keeps its place
		"HMSET h e 5 f 6",
		"HSETNX h a 100",
		"HSETNX h g 7",
		"HSETNX h2 x 1",
		"HGET h a", "HGET h nope", "HGET missing a",
		"HMGET h a nope b", "HMGET missing a b",
		"HDEL h nope", "HDEL h a b nope", "HDEL missing a",
		"HGETALL h",
		"HEXISTS h c", "HEXISTS h a", "HEXISTS missing a",
		"HLEN h", "HLEN missing",
		"HSTRLEN h c", "HSTRLEN h nope", "HSTRLEN missing c",
		"HKEYS h", "HVALS h", "HGETALL h",
		"HKEYS missing", "HVALS missing", "HGETALL missing",
		"HSET h '' ''", "HGET h ''", "HSTRLEN h ''", "HEXISTS h ''",
		"HSET h sp 'a b' nul ''",
		"HINCRBY h n 5", "HINCRBY h n -7", "HINCRBY h c 1", "HINCRBY h3 n 1",
		"HSET h txt abc", "HINCRBY h txt 1", "HINCRBY h sp 1",
		"HSET h max 9223372036854775807", "HINCRBY h max 1", "HINCRBY h max -1",
		"HSET h min -9223372036854775808", "HINCRBY h min -1",
		"HSET h sp1 ' 1'", "HINCRBY h sp1 1",
		"HINCRBYFLOAT h fl 1.5", "HINCRBYFLOAT h fl 2.0e3", "HINCRBYFLOAT h fl -0.5",
		"HINCRBYFLOAT h n 0.25", "HINCRBYFLOAT h txt 1", "HINCRBYFLOAT h4 f 3",
		"HSET h huge 1.7e308", "HINCRBYFLOAT h huge 1.7e308", "HGET h huge",
		"HINCRBYFLOAT h fl 1e-20", "HGET h fl",
		"HGETALL h",
		"HRANDFIELD h", "HRANDFIELD h 3", "HRANDFIELD h -20", "HRANDFIELD h 0",
		"HRANDFIELD h 2 WITHVALUES", "HRANDFIELD h -3 WITHVALUES", "HRANDFIELD h 100",
		"HRANDFIELD h 100 WITHVALUES",
		"HRANDFIELD missing", "HRANDFIELD missing 3", "HRANDFIELD missing -3 WITHVALUES",
		"HSCAN h 0", "HSCAN h 0 MATCH 'f*'", "HSCAN h 0 COUNT 2", "HSCAN missing 0",
		"OBJECT ENCODING h", "TYPE h",
		// A key emptied disappears.
		"HDEL h2 x", "EXISTS h2", "TYPE h2", "HLEN h2", "HGETALL h2",
		"HSETNX h2 y 2", "HGETALL h2",
		// A hash table: one long value, then many fields.
		"HSET big a 1 b " + long + " c 3",
		"OBJECT ENCODING big", "HGETALL big", "HKEYS big", "HVALS big",
		"HSET big " + words("f", 40, true),
		"HDEL big a c f3 f17",
		"HLEN big", "HGETALL big", "HGET big b", "HMGET big f0 f39 nope",
		"HSCAN big 0", "HSCAN big 0 COUNT 7", "HSCAN big 0 MATCH 'f1*' COUNT 3",
		"HRANDFIELD big 5 WITHVALUES", "HRANDFIELD big -50",
		"HINCRBY big f5 1", "OBJECT ENCODING big",
		// Many fields: past 512 entries.
		"HSET many " + words("f", 600, true),
		"OBJECT ENCODING many", "HLEN many", "HSCAN many 0 COUNT 100",
		"HDEL many " + words("f", 595, false),
		"HGETALL many", "HSCAN many 0",
		// WRONGTYPE, against a string and against a set.
		"SET str v", "SADD s m",
		"HSET str a 1", "HSETNX str a 1", "HMSET str a 1", "HGET str a", "HMGET str a",
		"HDEL str a", "HEXISTS str a", "HLEN str", "HSTRLEN str a", "HKEYS str",
		"HVALS str", "HGETALL str", "HINCRBY str a 1", "HINCRBYFLOAT str a 1",
		"HRANDFIELD str", "HRANDFIELD str 2", "HSCAN str 0",
		"HSET s a 1", "HSETNX s a 1", "HGET s a", "HMGET s a", "HDEL s a", "HEXISTS s a",
		"HLEN s", "HSTRLEN s a", "HKEYS s", "HVALS s", "HGETALL s", "HINCRBY s a 1",
		"HINCRBYFLOAT s a 1", "HRANDFIELD s 2 WITHVALUES", "HSCAN s 0",
		"GET str", "GET h", "TYPE str", "TYPE s",
	}
}

func setScript() []string {
	return []string{
		"SADD s a b c", "SADD s a d", "SADD s ''",
		"SADD i 3 1 2 -5 1000", "SADD i 1",
		"SREM s nope", "SREM s a nope", "SREM missing a",
		"SMEMBERS s", "SMEMBERS i", "SMEMBERS missing",
		"SISMEMBER s b", "SISMEMBER s nope", "SISMEMBER s ''", "SISMEMBER missing a",
		"SMISMEMBER s b nope c", "SMISMEMBER missing a b",
		"SCARD s", "SCARD i", "SCARD missing",
		"OBJECT ENCODING i", "OBJECT ENCODING s", "TYPE s",
		"SRANDMEMBER i", "SRANDMEMBER i 2", "SRANDMEMBER i -10", "SRANDMEMBER i 0",
		"SRANDMEMBER i 100", "SRANDMEMBER s 2", "SRANDMEMBER missing", "SRANDMEMBER missing 3",
		"SPOP missing", "SPOP missing 2", "SPOP s 0",
		"SADD p " + words("m", 30, false),
		"SPOP p", "SPOP p 3", "SCARD p", "SPOP p 100", "EXISTS p", "TYPE p",
		"SADD p2 1 2 3 4 5 6 7 8 9 10", "SPOP p2 8", "SMEMBERS p2",
		// SMOVE, with a key named twice and over other types.
		"SADD a 1 2 3 x", "SADD b 3 4 y",
		"SMOVE a b 1", "SMOVE a b nope", "SMOVE a b 3", "SMOVE a a 2", "SMOVE a a nope",
		"SMOVE missing b 1", "SMOVE a new x", "SMEMBERS a", "SMEMBERS b", "SMEMBERS new",
		"SMOVE new b x", "EXISTS new",
		"SET str v",
		"SMOVE a str 2", "SMOVE str a v", "SMOVE missing str x", "SMEMBERS a",
		// Algebra, and the stores over every kind of destination.
		"SADD c 2 3 4 z",
		"SINTER a b", "SINTER a b c", "SINTER a missing", "SINTER a a", "SINTER missing a",
		"SINTERCARD 2 a b", "SINTERCARD 3 a b c LIMIT 1", "SINTERCARD 2 a b LIMIT 0",
		"SINTERCARD 1 missing",
		"SUNION a b", "SUNION a missing c", "SUNION missing",
		"SDIFF a b", "SDIFF b a c", "SDIFF missing a", "SDIFF a missing",
		"SINTERSTORE d a b", "SMEMBERS d", "SINTERSTORE d a missing", "EXISTS d",
		"SUNIONSTORE d a b c", "SMEMBERS d", "SDIFFSTORE d a b", "SMEMBERS d",
		"SDIFFSTORE d a a", "EXISTS d",
		"SINTERSTORE str a b", "TYPE str", "SMEMBERS str",
		"SET str v", "SUNIONSTORE str a", "TYPE str",
		"SET str v", "SDIFFSTORE str a c", "TYPE str",
		"SET str v", "SINTERSTORE str missing", "EXISTS str",
		"SUNIONSTORE a a b", "SMEMBERS a", "SDIFFSTORE b b c", "SMEMBERS b",
		"SINTERSTORE c c a", "SMEMBERS c",
		"SADD i2 1 2 3 4", "SADD i3 3 4 5", "SINTER i2 i3", "SUNION i2 i3", "SDIFF i2 i3",
		"SINTERSTORE i4 i2 i3", "OBJECT ENCODING i4", "SMEMBERS i4",
		// Large sets: a hash table by its members, and by their number.
		"SADD big " + words("m", 40, false),
		"SREM big m3 m17 m29",
		"SMEMBERS big", "SSCAN big 0", "SSCAN big 0 COUNT 5", "SSCAN big 0 MATCH 'm1*' COUNT 4",
		"SRANDMEMBER big 5", "SRANDMEMBER big -60",
		"SINTER big a", "SUNION big b", "SDIFF big b",
		"SADD ints " + words("", 600, false),
		"OBJECT ENCODING ints", "SCARD ints", "SSCAN ints 0 COUNT 50",
		"SREM ints " + words("", 590, false),
		"SMEMBERS ints", "SSCAN ints 0",
		"SSCAN i 0", "SSCAN i 0 MATCH '1*'", "SSCAN missing 0",
		// WRONGTYPE, against a string and against a hash.
		"SET str v", "HSET h f v",
		"SADD str a", "SREM str a", "SMEMBERS str", "SISMEMBER str a", "SMISMEMBER str a",
		"SCARD str", "SPOP str", "SPOP str 2", "SRANDMEMBER str", "SRANDMEMBER str 2",
		"SINTER a str", "SINTERCARD 2 a str", "SUNION str a", "SDIFF a str",
		"SINTERSTORE d a str", "SUNIONSTORE d str", "SDIFFSTORE d str a", "SSCAN str 0",
		"SADD h a", "SREM h a", "SMEMBERS h", "SISMEMBER h a", "SMISMEMBER h a b",
		"SCARD h", "SPOP h", "SRANDMEMBER h -2", "SMOVE h a f", "SMOVE a h 4",
		"SINTER a h", "SINTERCARD 2 h a", "SUNION a h", "SDIFF h a",
		"SINTERSTORE d h", "SUNIONSTORE d a h", "SDIFFSTORE d a h", "SSCAN h 0",
		"EXISTS d",
	}
}

func zsetScript() []string {
	return []string{
		"ZADD z 1 a 2 b 3 c",
		"ZADD z NX 10 a 4 d", "ZADD z XX 10 a 5 e", "ZADD z XX CH 20 a",
		"ZADD z GT 5 a", "ZADD z GT CH 30 a", "ZADD z LT CH 1 a", "ZADD z LT 100 b",
		"ZADD z GT CH 7 new",
		"ZADD z INCR 5 b", "ZADD z NX INCR 1 b", "ZADD z XX INCR 1 nosuch",
		"ZADD z GT INCR -1 b", "ZADD z LT INCR -1 b", "ZADD z CH 1.5 x 1.5 y 1.5 xx",
		"ZADD z -inf ninf +inf pinf", "ZADD z 0 ''",
		"ZINCRBY z 2.5 a", "ZINCRBY z -inf pinf", "ZINCRBY z 1 ninf", "ZINCRBY nz 1 m",
		"ZADD z INCR -inf pinf",
		"ZRANGE z 0 -1 WITHSCORES",
		"ZREM z nope", "ZREM z d e nope", "ZREM missing a",
		"ZCARD z", "ZCARD missing",
		"ZCOUNT z -inf +inf", "ZCOUNT z (1 3", "ZCOUNT z 2 (2", "ZCOUNT z 5 1", "ZCOUNT missing 0 1",
		"ZSCORE z c", "ZSCORE z nope", "ZSCORE z pinf", "ZSCORE missing a",
		"ZMSCORE z c nope a", "ZMSCORE missing a b",
		"ZRANK z c", "ZRANK z nope", "ZREVRANK z c", "ZREVRANK z ninf", "ZRANK missing a",
		"ZRANGE z 0 -1", "ZRANGE z 1 2", "ZRANGE z -2 -1 WITHSCORES", "ZRANGE z 5 1",
		"ZRANGE z 0 100", "ZRANGE z -100 -50", "ZRANGE missing 0 -1",
		"ZRANGE z (1 3 BYSCORE", "ZRANGE z 3 (1 BYSCORE REV WITHSCORES",
		"ZRANGE z -inf +inf BYSCORE LIMIT 1 2", "ZRANGE z -inf +inf BYSCORE LIMIT 2 -1 WITHSCORES",
		"ZRANGE z 0 -1 REV", "ZRANGE z 0 0 REV WITHSCORES",
		"ZADD lex 0 a 0 b 0 c 0 d 0 e 0 ''",
		"ZLEXCOUNT lex - +", "ZLEXCOUNT lex [b (d", "ZLEXCOUNT lex (a [c", "ZLEXCOUNT missing - +",
		"ZRANGE lex [b (e BYLEX", "ZRANGE lex + - BYLEX REV LIMIT 0 2", "ZRANGE lex - + BYLEX LIMIT 1 -1",
		"ZRANGE lex [c [a BYLEX",
		"ZRANGEBYLEX lex - [c", "ZRANGEBYLEX lex (a + LIMIT 1 2", "ZREVRANGEBYLEX lex [c - LIMIT 1 1",
		"ZREVRANGEBYLEX lex + (b",
		"ZREVRANGE z 0 -1 WITHSCORES", "ZREVRANGE z 1 1",
		"ZRANGEBYSCORE z -inf +inf WITHSCORES LIMIT 1 2", "ZRANGEBYSCORE z (1.5 5",
		"ZREVRANGEBYSCORE z +inf -inf LIMIT 0 1", "ZREVRANGEBYSCORE z 5 (1 WITHSCORES",
		// The stores, over every kind of destination.
		"ZRANGESTORE dst z 0 1", "ZRANGE dst 0 -1 WITHSCORES",
		"ZRANGESTORE dst z 10 20", "EXISTS dst",
		"ZRANGESTORE dst z 1 (5 BYSCORE LIMIT 0 2", "ZRANGE dst 0 -1 WITHSCORES",
		"ZRANGESTORE dst lex [e - BYLEX REV", "ZRANGE dst 0 -1",
		"SET str v", "ZRANGESTORE str z 0 -1", "TYPE str", "ZRANGE str 0 -1 WITHSCORES",
		"ZRANGESTORE dst missing 0 -1", "EXISTS dst",
		"SET str v", "ZRANGESTORE dst str 0 -1", "ZRANGESTORE z z 0 2", "ZRANGE z 0 -1 WITHSCORES",
		// Removals by range; emptied keys disappear.
		"ZADD r 1 a 2 b 3 c 4 d 5 e",
		"ZREMRANGEBYRANK r 0 0", "ZREMRANGEBYRANK r -1 -1", "ZREMRANGEBYRANK r 5 10",
		"ZREMRANGEBYSCORE r (2 3", "ZREMRANGEBYSCORE r -inf 0", "ZRANGE r 0 -1 WITHSCORES",
		"ZREMRANGEBYLEX lex [a [b", "ZREMRANGEBYLEX lex (e +", "ZRANGE lex 0 -1",
		"ZREMRANGEBYRANK missing 0 -1", "ZREMRANGEBYSCORE missing 0 1", "ZREMRANGEBYLEX missing - +",
		"ZREMRANGEBYRANK r 0 -1", "EXISTS r", "TYPE r",
		// Pops.
		"ZADD p 1 a 2 b 3 c 4 d 5 e 6 f",
		"ZPOPMIN p", "ZPOPMIN p 2", "ZPOPMAX p", "ZPOPMAX p 1", "ZPOPMIN p 0",
		"ZPOPMIN missing", "ZPOPMAX missing 2",
		"ZMPOP 2 missing p MIN", "ZMPOP 1 missing MAX", "ZMPOP 2 missing missing2 MIN COUNT 2",
		"ZADD p 7 g 8 h 9 i", "ZMPOP 1 p MAX COUNT 2", "ZMPOP 1 p MIN COUNT 100", "EXISTS p",
		"ZADD p 1 a 2 b 3 c 4 d",
		"BZPOPMIN missing p 0.01", "BZPOPMAX p 0.01", "BZPOPMIN missing 0.01", "BZPOPMAX missing missing2 0.01",
		"BZMPOP 0.01 2 missing p MIN COUNT 5", "BZMPOP 0.01 1 missing MAX", "EXISTS p",
		// Random picks.
		"ZADD q 1 a 2 b 3 c 4.5 d -1 e",
		"ZRANDMEMBER q", "ZRANDMEMBER q 2", "ZRANDMEMBER q -7", "ZRANDMEMBER q 0",
		"ZRANDMEMBER q 2 WITHSCORES", "ZRANDMEMBER q -7 WITHSCORES", "ZRANDMEMBER q 100 WITHSCORES",
		"ZRANDMEMBER missing", "ZRANDMEMBER missing 3", "ZRANDMEMBER missing -3 WITHSCORES",
		"ZSCAN q 0", "ZSCAN q 0 MATCH '[a-c]'", "ZSCAN q 0 COUNT 1", "ZSCAN missing 0",
		"OBJECT ENCODING q", "TYPE q",
		// Algebra; a set is a sorted set of scores 1 to these.
		"ZADD z1 1 a 2 b 3 c", "ZADD z2 10 b 20 c 30 d", "SADD s1 a d x",
		"ZUNION 2 z1 z2", "ZUNION 2 z1 z2 WITHSCORES", "ZUNION 2 z1 z2 WEIGHTS 2 3 WITHSCORES",
		"ZUNION 2 z1 z2 AGGREGATE MAX WITHSCORES", "ZUNION 3 z1 s1 missing WITHSCORES",
		"ZINTER 2 z1 z2 WITHSCORES", "ZINTER 2 z1 z2 AGGREGATE MIN WITHSCORES", "ZINTER 2 z1 s1",
		"ZINTER 2 z1 missing",
		"ZDIFF 2 z1 z2 WITHSCORES", "ZDIFF 2 z2 s1", "ZDIFF 1 missing", "ZDIFF 2 z1 z1",
		"ZINTERCARD 2 z1 z2", "ZINTERCARD 2 z1 z2 LIMIT 1", "ZINTERCARD 2 z1 missing",
		"ZUNIONSTORE dst 2 z1 z2", "ZRANGE dst 0 -1 WITHSCORES",
		"ZINTERSTORE dst 2 z1 z2 WEIGHTS 1 -1", "ZRANGE dst 0 -1 WITHSCORES",
		"ZDIFFSTORE dst 2 z1 z1", "EXISTS dst",
		"ZUNIONSTORE dst 2 z1 s1 AGGREGATE SUM", "ZRANGE dst 0 -1 WITHSCORES",
		"SET str v", "ZUNIONSTORE str 2 z1 z2", "TYPE str",
		"SET str v", "ZINTERSTORE str 1 z1", "TYPE str",
		"SET str v", "ZDIFFSTORE str 1 z2", "TYPE str",
		"SET str v", "ZINTERSTORE str 2 z1 missing", "EXISTS str",
		"ZUNIONSTORE z1 2 z1 z2", "ZRANGE z1 0 -1 WITHSCORES",
		"ZINTERSTORE z2 2 z2 z2", "ZRANGE z2 0 -1 WITHSCORES",
		// A skip list: one long member, then many.
		"ZADD big 1 a 2 " + long + " 3 c",
		"OBJECT ENCODING big", "ZRANGE big 0 -1 WITHSCORES", "ZRANK big c",
		"ZADD big " + scored("m", 40),
		"ZREM big m3 m17",
		"ZRANGE big 0 -1 WITHSCORES", "ZRANGEBYSCORE big 1 1 LIMIT 5 5", "ZREVRANK big a",
		"ZSCAN big 0", "ZSCAN big 0 COUNT 6", "ZSCAN big 0 MATCH 'm1*' COUNT 3",
		"ZRANDMEMBER big 5 WITHSCORES", "ZRANDMEMBER big -50",
		"ZPOPMIN big 3", "ZREMRANGEBYRANK big 0 30", "ZRANGE big 0 -1", "ZSCAN big 0",
		// WRONGTYPE, against a string and against a list.
		"SET str v", "RPUSH l x",
		"ZADD str 1 a", "ZINCRBY str 1 a", "ZREM str a", "ZCARD str", "ZCOUNT str 0 1",
		"ZLEXCOUNT str - +", "ZSCORE str a", "ZMSCORE str a", "ZRANK str a", "ZREVRANK str a",
		"ZRANGE str 0 -1", "ZRANGESTORE dst str 0 -1", "ZREVRANGE str 0 -1",
		"ZRANGEBYSCORE str 0 1", "ZREVRANGEBYSCORE str 1 0", "ZRANGEBYLEX str - +",
		"ZREVRANGEBYLEX str + -", "ZREMRANGEBYRANK str 0 -1", "ZREMRANGEBYSCORE str 0 1",
		"ZREMRANGEBYLEX str - +", "ZPOPMIN str", "ZPOPMAX str 2", "ZMPOP 1 str MIN",
		"BZMPOP 0.01 1 str MIN", "BZPOPMIN str 0.01", "BZPOPMAX str 0.01",
		"ZRANDMEMBER str", "ZRANDMEMBER str 2", "ZSCAN str 0",
		"ZUNION 2 z1 str", "ZINTER 2 str z1", "ZDIFF 2 z1 str", "ZINTERCARD 2 z1 str",
		"ZUNIONSTORE dst 2 z1 str", "ZINTERSTORE dst 1 str", "ZDIFFSTORE dst 2 str z1",
		"ZADD l 1 a", "ZINCRBY l 1 a", "ZREM l a", "ZCARD l", "ZSCORE l x", "ZRANK l x",
		"ZRANGE l 0 -1", "ZRANGEBYSCORE l 0 1", "ZPOPMIN l", "ZMPOP 2 missing l MAX",
		"BZPOPMIN missing l 0.01", "ZRANDMEMBER l -2 WITHSCORES", "ZSCAN l 0",
		"ZUNION 2 z1 l", "ZINTERSTORE dst 2 l z1", "ZRANGESTORE dst l 0 -1",
		"EXISTS dst",
	}
}

func listScript() []string {
	return []string{
		"LPUSH l a b c", "RPUSH l d e", "LPUSHX missing x", "RPUSHX missing x",
		"RPUSHX l f g", "LPUSHX l z", "RPUSH l ''", "EXISTS missing",
		"LLEN l", "LLEN missing",
		"LRANGE l 0 -1", "LRANGE l 1 2", "LRANGE l -3 -1", "LRANGE l 5 1", "LRANGE l 0 100",
		"LRANGE l -100 0", "LRANGE missing 0 -1",
		"LINDEX l 0", "LINDEX l -1", "LINDEX l 100", "LINDEX l -100", "LINDEX missing 0",
		"LSET l 0 A", "LSET l -1 last", "LSET l 100 x", "LSET missing 0 x",
		"LINSERT l BEFORE A before", "LINSERT l AFTER e after", "LINSERT l BEFORE nope x",
		"LINSERT missing BEFORE a x", "LRANGE l 0 -1",
		"LPUSH l x x y x", "RPUSH l x",
		"LREM l 2 x", "LREM l -1 x", "LREM l 0 x", "LREM l 0 nope", "LREM missing 0 a",
		"LRANGE l 0 -1",
		"RPUSH pos a b c a b c a",
		"LPOS pos b", "LPOS pos b RANK 2", "LPOS pos a RANK -1", "LPOS pos a RANK -2 MAXLEN 3",
		"LPOS pos a COUNT 0", "LPOS pos a COUNT 2", "LPOS pos a COUNT 2 RANK -1",
		"LPOS pos c COUNT 2 MAXLEN 3", "LPOS pos nope", "LPOS pos nope COUNT 1",
		"LPOS missing a", "LPOS missing a COUNT 1",
		"LTRIM pos 1 -2", "LRANGE pos 0 -1", "LTRIM pos 1 100", "LRANGE pos 0 -1",
		"LTRIM pos 5 1", "EXISTS pos", "LTRIM missing 0 1",
		// Pops, with counts; the emptied key disappears.
		"RPUSH p a b c d e f",
		"LPOP p", "RPOP p", "LPOP p 2", "RPOP p 1", "LPOP p 0", "RPOP p 0",
		"LPOP missing", "RPOP missing", "LPOP missing 2", "RPOP missing 0",
		"LPOP p 100", "EXISTS p", "TYPE p",
		// Moves, with a key named twice.
		"RPUSH m1 a b c", "RPUSH m2 x",
		"LMOVE m1 m2 LEFT RIGHT", "LMOVE m1 m2 RIGHT LEFT", "LRANGE m2 0 -1",
		"LMOVE m2 m2 LEFT RIGHT", "LMOVE m2 m2 RIGHT LEFT", "LMOVE m2 m2 LEFT LEFT", "LRANGE m2 0 -1",
		"LMOVE missing m2 LEFT LEFT", "LMOVE m1 new LEFT LEFT", "EXISTS m1", "LRANGE new 0 -1",
		"RPOPLPUSH m2 m1", "RPOPLPUSH m2 m2", "RPOPLPUSH missing m1", "LRANGE m1 0 -1", "LRANGE m2 0 -1",
		"SET str v",
		"LMOVE m2 str LEFT LEFT", "LMOVE str m2 LEFT LEFT", "RPOPLPUSH m2 str", "LMOVE missing str LEFT LEFT",
		"LRANGE m2 0 -1",
		"LMPOP 2 missing m2 LEFT", "LMPOP 1 m2 RIGHT COUNT 10", "LMPOP 2 missing missing2 LEFT",
		"EXISTS m2",
		// The blocking commands, as they answer when they need not wait,
		// and when they would.
		"RPUSH b1 a b c d e",
		"BLPOP missing b1 0.01", "BRPOP b1 0.01", "BLPOP missing 0.01", "BRPOP missing missing2 0.01",
		"BLMOVE b1 b2 LEFT RIGHT 0.01", "BLMOVE missing b2 LEFT RIGHT 0.01", "BLMOVE b2 b2 RIGHT LEFT 0.01",
		"BRPOPLPUSH b1 b2 0.01", "BRPOPLPUSH missing b2 0.01",
		"BLMPOP 0.01 2 missing b1 LEFT COUNT 5", "BLMPOP 0.01 1 missing RIGHT", "EXISTS b1",
		"LRANGE b2 0 -1",
		// Many elements.
		"RPUSH big " + words("e", 300, false), "LLEN big", "LINDEX big 150", "LRANGE big 290 -1",
		"LREM big 0 e7", "LTRIM big 10 -10", "LRANGE big 0 5", "OBJECT ENCODING big", "LPOS big e200",
		// WRONGTYPE, against a string and against a sorted set.
		"SET str v", "ZADD z 1 a",
		"LPUSH str a", "RPUSH str a", "LPUSHX str a", "RPUSHX str a", "LPOP str", "RPOP str 2",
		"LLEN str", "LRANGE str 0 -1", "LINDEX str 0", "LSET str 0 a", "LINSERT str BEFORE a b",
		"LREM str 0 a", "LTRIM str 0 1", "LPOS str a", "LMOVE str b2 LEFT LEFT",
		"RPOPLPUSH str b2", "LMPOP 1 str LEFT", "BLPOP str 0.01", "BRPOP missing str 0.01",
		"BLMOVE str b2 LEFT LEFT 0.01", "BRPOPLPUSH b2 str 0.01", "BLMPOP 0.01 1 str LEFT",
		"LPUSH z a", "LPUSHX z a", "LPOP z", "LLEN z", "LRANGE z 0 -1", "LINDEX z 0",
		"LSET z 0 a", "LINSERT z AFTER a b", "LREM z 1 a", "LTRIM z 0 0", "LPOS z a COUNT 0",
		"LMOVE b2 z LEFT LEFT", "LMPOP 2 missing z RIGHT", "BLPOP missing z 0.01",
		"OBJECT ENCODING z", "OBJECT ENCODING missing",
	}
}

// typesScript: one key taken by each type in turn, TYPE and OBJECT
// ENCODING of each, SET over every type, and the writes of one type
// refused on every other.
// sortScript is SORT and SORT_RO of each type they take: numbers, ALPHA,
// LIMIT windows in and out of range, BY without a pattern (the value's own
// order), STORE (over a key of another type, onto its own source,
// and of nothing, which deletes), and the keys it refuses. Not GET: a
// Redis Cluster refuses it whole (proxy's TestCompareWithRedis has it).
func sortScript() []string {
	return []string{
		"SORT missing", "SORT missing STORE d", "EXISTS d",
		"RPUSH l 3 1 2 10 -1.5 1e2", "SORT l", "SORT l DESC", "SORT l ALPHA", "SORT l ALPHA DESC",
		"SORT l LIMIT 1 2", "SORT l LIMIT -5 2", "SORT l LIMIT 10 2", "SORT l LIMIT 2 -1", "SORT l LIMIT 0 0",
		"SORT l BY nosort", "SORT l BY nosort DESC LIMIT 1 3", "SORT_RO l DESC",
		"SET str v", "SORT l STORE str", "TYPE str", "LRANGE str 0 -1",
		"SORT l DESC STORE l", "LRANGE l 0 -1", "SORT l BY nosort STORE g", "LRANGE g 0 -1",
		"SORT missing STORE g", "EXISTS g",
		"SADD s b c a", "SORT s ALPHA", "SORT s", "SORT s BY nosort STORE d", "LRANGE d 0 -1",
		"SADD n 3 2 1", "SORT n", "SORT n DESC LIMIT 0 2",
		"ZADD z 3 c 1 a 2 b", "SORT z ALPHA DESC", "SORT z BY nosort", "SORT z BY nosort DESC LIMIT 1 5",
		"RPUSH nan nan 1", "SORT nan", "SORT nan ALPHA",
		"HSET h f v", "SORT h", "SORT str",
	}
}

func typesScript() []string {
	lines := []string{
		"TYPE k", "OBJECT ENCODING k",
		"HSET k f v", "TYPE k", "OBJECT ENCODING k",
		"SET k v", "TYPE k", "HGETALL k", "DEL k", "HGETALL k",
		"SADD k 1", "TYPE k", "OBJECT ENCODING k", "SADD k m", "OBJECT ENCODING k",
		"SET k v", "TYPE k", "GET k", "ZADD k 1 m", "DEL k",
		"ZADD k 1 m", "TYPE k", "OBJECT ENCODING k",
		"SET k v", "TYPE k", "DEL k",
		"RPUSH k a", "TYPE k", "OBJECT ENCODING k",
		"SET k v", "TYPE k", "DEL k", "TYPE k", "EXISTS k",
		"HSET h f v", "SADD s m", "ZADD z 1 m", "RPUSH l e", "SET str v",
	}
	// Writes of each type, by the type they are refused on every other.
	writes := map[string][]string{
		"h": {"HSET %s f v", "HINCRBY %s f 1", "HDEL %s f"},
		"s": {"SADD %s m", "SPOP %s", "SREM %s m"},
		"z": {"ZADD %s 1 m", "ZINCRBY %s 1 m", "ZPOPMIN %s", "ZREM %s m"},
		"l": {"RPUSH %s e", "LPUSHX %s e", "LPOP %s", "LREM %s 0 e"},
	}
	for _, k := range []string{"h", "s", "z", "l", "str"} {
		for _, of := range []string{"h", "s", "z", "l"} {
			if of == k {
				continue
			}
			for _, w := range writes[of] {
				lines = append(lines, fmt.Sprintf(w, k))
			}
		}
		lines = append(lines, "TYPE "+k)
	}
	return append(lines,
		// COPY and RENAME: a copy changes apart from its source.
		"COPY h h2", "HGETALL h2", "HSET h2 x y", "HGETALL h", "HGETALL h2", "COPY h h2",
		"COPY s h2 REPLACE", "TYPE h2", "SMEMBERS h2", "SADD h2 n", "SMEMBERS s",
		"RENAME z z2", "EXISTS z", "ZRANGE z2 0 -1 WITHSCORES", "ZADD z 5 q", "ZRANGE z2 0 -1",
		"COPY l str REPLACE", "TYPE str", "LRANGE str 0 -1", "RPUSH str more", "LRANGE l 0 -1",
		"SET str v", "RENAME str l", "TYPE l", "GET l", "RPUSH l x", "RENAME missing l",
		"RENAME z2 z", "ZRANGE z 0 -1 WITHSCORES", "SET str v",
		// A destination of any type is replaced, sources are checked.
		"SUNIONSTORE h s", "TYPE h", "ZUNIONSTORE s 1 z", "TYPE s",
		"ZRANGESTORE l z 0 -1", "TYPE l", "SINTERSTORE z s", "TYPE z",
		"LMOVE l l LEFT LEFT", "SMOVE s s m", "SMOVE z s m",
	)
}

// encodingScript: a value keeps the encoding of the largest size it had,
// as Redis 7 never converts a value back to a small encoding. (A store
// that rebuilds a value from its members forgets that size.)
func encodingScript() []string {
	return []string{
		"HSET h " + words("f", 600, true), "HDEL h " + words("f", 595, false),
		"OBJECT ENCODING h",
		"HSET h2 a " + long, "HSET h2 a short", "OBJECT ENCODING h2",
		"SADD s " + words("", 600, false), "SREM s " + words("", 590, false),
		"OBJECT ENCODING s",
		"SADD s2 1 2 x", "SREM s2 x", "OBJECT ENCODING s2",
		"ZADD z " + scored("m", 200), "ZREMRANGEBYRANK z 0 189", "OBJECT ENCODING z",
		"ZADD z2 1 " + long + " 2 b", "ZREM z2 " + long, "OBJECT ENCODING z2",
		// A copy keeps it.
		"COPY h hc", "OBJECT ENCODING hc", "RENAME s sr", "OBJECT ENCODING sr",
		"COPY z2 zc", "OBJECT ENCODING zc",
	}
}
