package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/backends/memory"
)

// The native commands, differentially: each script runs through the
// memory store and through a PostgreSQL kv route, and every reply, in RESP2
// and RESP3, must be the same bytes. The commands of the native list must
// run natively (a line starting with ~ may take the generic path).

// nativeParsers are the commands the scripts use, by lowercase name.
var nativeParsers = map[string]coll.Parser{
	"hset": coll.ParseHSet, "hmset": coll.ParseHSet, "hsetnx": coll.ParseHSetNX, "hget": coll.ParseHGet,
	"hmget": coll.ParseHMGet, "hdel": coll.ParseHDel, "hexists": coll.ParseHExists, "hstrlen": coll.ParseHGet,
	"hlen": coll.ParseHLen, "hincrby": coll.ParseHIncrBy, "hincrbyfloat": coll.ParseHIncrByFloat, "hgetall": coll.ParseHGetAll,

	"sadd": coll.ParseSAdd, "srem": coll.ParseSRem, "sismember": coll.ParseSIsMember, "smismember": coll.ParseSIsMember,
	"scard": coll.ParseSCard, "smembers": coll.ParseSMembers,

	"zadd": coll.ParseZAdd, "zincrby": coll.ParseZAdd, "zrem": coll.ParseZRem, "zscore": coll.ParseZScore,
	"zmscore": coll.ParseZMScore, "zcard": coll.ParseZCard, "zcount": coll.ParseZCount, "zrank": coll.ParseZRank,
	"zrevrank": coll.ParseZRank, "zrange": coll.ParseZRange, "zrangestore": coll.ParseZRange,
	"zrevrange": coll.ParseZRange, "zrangebyscore": coll.ParseZRange, "zrevrangebyscore": coll.ParseZRange,
	"zrangebylex": coll.ParseZRange, "zrevrangebylex": coll.ParseZRange, "zremrangebyscore": coll.ParseZRemRange,
	"zremrangebyrank": coll.ParseZRemRange, "zremrangebylex": coll.ParseZRemRange,
	"zpopmin": coll.ParseZPop, "zpopmax": coll.ParseZPop,

	"lpush": coll.ParseLPush, "rpush": coll.ParseRPush, "lpushx": coll.ParseLPushX, "rpushx": coll.ParseRPushX,
	"lpop": coll.ParseLPop, "rpop": coll.ParseRPop, "llen": coll.ParseLLen, "lindex": coll.ParseLIndex,
	"lrange": coll.ParseLRange, "lset": coll.ParseLSet, "ltrim": coll.ParseLTrim, "lmove": coll.ParseLMove,
	"rpoplpush": coll.ParseRPopLPush, "blpop": coll.ParseBLPop, "brpop": coll.ParseBRPop,
	"linsert": coll.ParseLInsert, "lrem": coll.ParseLRem,
}

// generic are the script's commands that are not native.
var generic = map[string]bool{"hgetall": true, "smembers": true, "linsert": true, "lrem": true, "zrangestore": true}

// twin is a memory store and a PostgreSQL route that a script runs on.
type twin struct {
	t   *testing.T
	mem backends.Backend
	pg  *KV
}

func newTwin(t *testing.T, durability string) *twin { return newTwinKeyed(t, durability, "") }

// newTwinKeyed is newTwin with a route of keyType.
func newTwinKeyed(t *testing.T, durability, keyType string) *twin {
	t.Helper()
	md := memory.NewDriver("mem", 64<<20)
	t.Cleanup(func() { md.Close() })
	mem, err := md.Open(context.Background(), backends.RouteSpec{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	d := newDriver(t, Options{})
	return &twin{t: t, mem: mem, pg: openKV(t, d, uniqueTable(t), durability, keyType)}
}

// same runs each line on both stores and compares the replies.
func (w *twin) same(script ...string) {
	w.t.Helper()
	for _, line := range script {
		mayGeneric := strings.HasPrefix(line, "~")
		line = strings.TrimPrefix(line, "~")
		want := w.reply(w.mem, line, false)
		got := w.reply(w.pg, line, !mayGeneric)
		for p := range got {
			if !bytes.Equal(got[p], want[p]) {
				w.t.Fatalf("RESP%d %s:\n got %q\nwant %q", p+2, line, got[p], want[p])
			}
		}
	}
}

// reply runs a line on b and renders its reply in RESP2 and RESP3.
// native: a command of the native list must run natively.
func (w *twin) reply(b backends.Backend, line string, native bool) [2][]byte {
	w.t.Helper()
	ctx := testCtx(w.t)
	args := coll.Args(line)
	// A blocking command named with a ! is the run after a wake-up.
	woken := bytes.HasSuffix(args[0], []byte("!"))
	args[0] = bytes.TrimSuffix(args[0], []byte("!"))
	name := strings.ToLower(string(args[0]))
	var err error
	var op coll.Command
	switch name {
	case "set":
		_, err = b.Set(ctx, string(args[1]), args[2], backends.SetOptions{})
	case "del":
		_, err = b.Del(ctx, []string{string(args[1])})
	case "expire": // EXPIRE key seconds
		secs, _ := strconv.Atoi(string(args[2]))
		_, err = backends.DoExpire(ctx, b, string(args[1]),
			backends.TTL{Mode: backends.TTLRelative, D: time.Duration(secs) * time.Second}, backends.ExpireAlways)
	case "ttl": // TTL key, as its sign: -2 missing, -1 no expiry, 1 an expiry
		var d time.Duration
		if d, err = b.TTL(ctx, string(args[1])); err == nil {
			if d > 0 {
				d = 1
			}
			return intReply(int64(d))
		}
	case "expired": // EXPIRED key: past its deadline; the row stays in the table
		if pg, ok := b.(*KV); ok {
			sql(w.t, fmt.Sprintf("UPDATE %s SET expires_at = now() - interval '1 second' WHERE key = $1", pg.table.ident()), string(args[1]))
		} else {
			_, err = b.Del(ctx, []string{string(args[1])})
		}
	default:
		p, ok := nativeParsers[name]
		if !ok {
			w.t.Fatalf("no parser for %s", name)
		}
		if op, err = p(args); err != nil {
			break
		}
		if waker, ok := op.(coll.Waker); ok && woken {
			waker.Wake()
		}
		var keys []string
		for _, at := range op.Request().KeyAt {
			keys = append(keys, string(args[at]))
		}
		if pg, ok := b.(*KV); ok && native && !generic[name] {
			var done bool
			if done, err = pg.native(ctx, keys, op); !done {
				w.t.Fatalf("%s ran on the generic path", line)
			}
			break
		}
		err = b.(interface {
			Do(context.Context, []string, backends.Op) error
		}).Do(ctx, keys, op)
	}
	var out [2][]byte
	for p := range out {
		rw := &coll.RESPBuffer{Proto: p + 2}
		var r backends.Refusal
		switch {
		case errors.As(err, &r):
			rw.WriteString("-" + string(r) + "\r\n")
		case errors.Is(err, backends.ErrWrongType):
			rw.WriteString("-" + backends.ErrWrongType.Error() + "\r\n")
		case err != nil:
			w.t.Fatalf("%s: %v", line, err)
		case op == nil:
			rw.Status("OK")
		default:
			op.Reply(rw)
		}
		out[p] = rw.Bytes()
	}
	return out
}

// intReply is n in RESP2 and RESP3.
func intReply(n int64) [2][]byte {
	r := []byte(":" + strconv.FormatInt(n, 10) + "\r\n")
	return [2][]byte{r, r}
}

// eachDurability runs script-based test fn on a twin of each durability.
func eachDurability(t *testing.T, fn func(w *twin)) {
	for _, dur := range durabilities {
		t.Run(dur, func(t *testing.T) {
			w := newTwin(t, dur)
			fn(w)
			w.layout()
		})
	}
}

// wrongType is every native command of one type against a key of another
// type (a string, and a collection of another type): each answers
// WRONGTYPE and changes nothing.
func wrongTypeLines(cmds []string) []string {
	var out []string
	for _, key := range []string{"str", "other"} {
		for _, c := range cmds {
			out = append(out, strings.ReplaceAll(c, "KEY", key))
		}
	}
	return out
}

func TestNativeHash(t *testing.T) {
	eachDurability(t, func(w *twin) {
		w.same(
			"hset h a 1 b 2", "hset h a 3 c 4", "hset h a 5 a 6 d 7", "hget h a", "hget h zz", "hget nokey a",
			"hmget h a b zz c", "hmget nokey a b", "hmset h e '' f 8", "hget h e", "hmget h e f",
			"hstrlen h a", "hstrlen h e", "hstrlen h zz", "hstrlen nokey a",
			"hexists h a", "hexists h e", "hexists h zz", "hexists nokey a", "hlen h", "hlen nokey",
			"hsetnx h a 9", "hsetnx h g 10", "hsetnx new x y", "hget new x", "hgetall h",
			"hdel h a zz", "hdel h zz", "hdel nokey a", "hdel h a", "hgetall h",
			"hset h a again", "hgetall h",
			"hincrby h n 5", "hincrby h n -10", "hincrby h b 1", "hincrby h e 1", "hincrby h c 9223372036854775807",
			"hincrby hnew n 3", "hset h big 9223372036854775807", "hincrby h big 1", "hincrby h big -1",
			"hset h neg -9223372036854775808", "hincrby h neg -1", "hincrby h neg 0",
			"hset h x 1.5 lead 01 sp ' 1' minus0 -0", "hincrby h x 1", "hincrby h lead 1", "hincrby h sp 1", "hincrby h minus0 1",
			"hincrbyfloat h fl 1.5", "hincrbyfloat h fl 0.1", "hincrbyfloat h x 1", "hincrbyfloat h e 1",
			"hincrbyfloat h lead 1", "hincrbyfloat hf x 10.5", "hincrbyfloat hf x -10.5", "hincrbyfloat hf y 3e300",
			"hincrbyfloat hf y 1e4000", "hgetall h", "hgetall hf",
			"hdel h a b c d e f g n big neg x lead sp minus0 fl", "hlen h", "hgetall h",
			"hset h only 1", "hdel h only", "hexists h only", "hlen h",
		)
		w.same("set str v", "sadd other m")
		w.same(wrongTypeLines([]string{
			"hset KEY a 1", "hmset KEY a 1", "hsetnx KEY a 1", "hget KEY a", "hmget KEY a b", "hdel KEY a",
			"hexists KEY a", "hstrlen KEY a", "hlen KEY", "hincrby KEY a 1", "hincrbyfloat KEY a 1",
			"sismember other m", "scard other",
		})...)
	})
}

func TestNativeSet(t *testing.T) {
	eachDurability(t, func(w *twin) {
		w.same(
			"sadd s a b c a", "sadd s c d", "sadd s ''", "sismember s a", "sismember s ''", "sismember s z",
			"sismember nokey a", "smismember s a z b ''", "smismember nokey a b", "scard s", "scard nokey",
			"srem s a z", "srem s z", "srem nokey a", "srem s a a", "scard s",
			"srem s b c d ''", "scard s", "sismember s b", "sadd s new", "scard s",
		)
		w.same("set str v", "hset other f v")
		w.same(wrongTypeLines([]string{
			"sadd KEY a", "srem KEY a", "sismember KEY a", "smismember KEY a b", "scard KEY",
			"hget other f", "hlen other",
		})...)
	})
}

func TestNativeZSet(t *testing.T) {
	eachDurability(t, func(w *twin) {
		w.same(
			"zadd z 1 a 2 b 3 c", "zadd z 1 a 5 d", "zadd z CH 10 a 2 b", "zadd z NX 100 a 7 e", "zadd z XX 100 a 8 zz",
			"zadd z XX CH 11 a", "zadd z GT 5 a 20 b", "zadd z LT 5 a 30 f", "zadd z GT CH 50 a 1 b",
			"zadd z LT CH 0 a 60 c", "zadd nokey XX 1 a", "zcard nokey",
			"zadd z INCR 5 a", "zadd z NX INCR 1 a", "zadd z XX INCR 1 nomember", "zadd z GT INCR -1 a",
			"zadd z LT INCR -1 a", "zincrby z 2.5 b", "zincrby z 1 new", "zincrby nokey2 3 m", "zscore nokey2 m",
			"zadd z inf pinf -inf ninf", "zincrby z -inf pinf", "zincrby z 1 pinf", "zincrby z 1 ninf",
			"zadd z 1.7976931348623157e308 big", "zincrby z 1.7976931348623157e308 big", "zscore z big",
			"zadd z 1e-320 tiny", "zincrby z 1e-320 tiny",
			"~zadd z 1 dup 2 dup", "~zadd z -0 negzero", "zscore z dup", "zscore z negzero",
			"zscore z a", "zscore z zz", "zscore nokey a", "zmscore z a zz b", "zmscore nokey a",
			"zcard z", "zcount z -inf +inf", "zcount z (1 5", "zcount z 1 (5", "zcount z 5 1", "zcount z (5 (5",
			"zcount nokey 0 1", "zcount z (inf +inf", "zcount z inf +inf", "zcount z -inf (-inf", "zcount z (-inf (inf",
			"zrangebyscore z (-inf +inf WITHSCORES", "zrangebyscore z -inf (inf", "zrevrangebyscore z (inf (-inf",
			"zadd zero 0 z -1 n 1 p", "zrangebyscore zero (0 +inf", "zrangebyscore zero -inf (0", "zcount zero (-1 (1",
			"zremrangebyscore zero (-1 (1", "zrange zero 0 -1 WITHSCORES", "zremrangebyscore z (inf +inf",
			"zrank z a", "zrevrank z a", "zrank z pinf", "zrevrank z ninf", "zrank z zz", "zrank nokey a",
			"zrange z 0 -1 WITHSCORES", "zrange z 0 2", "zrange z -3 -1 WITHSCORES", "zrange z 2 1", "zrange z -100 100",
			"zrange z 1 -2", "zrange z -2 1", "zrange z -1 -3", "zrange z 0 -1 REV WITHSCORES", "zrange z 0 1 REV",
			"zrange z -2 -1 REV", "zrange z 1 -2 REV", "zrevrange z 0 2 WITHSCORES", "zrange z 9223372036854775807 -9223372036854775808",
			"zrange z -9223372036854775808 9223372036854775807", "zrange nokey 0 -1",
			"zrange z 1 10 BYSCORE", "zrange z (1 10 BYSCORE WITHSCORES", "zrange z 10 (1 BYSCORE REV",
			"zrange z -inf +inf BYSCORE LIMIT 1 2", "zrange z -inf +inf BYSCORE LIMIT -1 2",
			"zrange z -inf +inf BYSCORE LIMIT 0 -1 WITHSCORES", "zrange z -inf +inf BYSCORE LIMIT 0 0",
			"zrangebyscore z -inf +inf WITHSCORES LIMIT 2 3", "zrevrangebyscore z +inf -inf LIMIT 0 2 WITHSCORES",
			"zrevrangebyscore z (20 (5", "zrangebyscore nokey 0 1", "zrangebyscore z 5 1",
			"zadd lx 0 a 0 b 0 c 0 d 0 e 0 '' 0 ab", "zrangebylex lx - +", "zrangebylex lx [b (d", "zrangebylex lx (a + LIMIT 1 2",
			"zrevrangebylex lx + - LIMIT 0 3", "zrevrangebylex lx (d [b", "zrangebylex lx + -", "zrangebylex lx - -",
			"zrange lx + [c BYLEX REV", "zrange lx [ [ab BYLEX", "zrangebylex lx [a [a", "zrangebylex lx (a (a",
			"zrangebylex lx - + LIMIT -1 1", "zrangebylex nokey - +",
			"zremrangebylex lx [b [c", "zremrangebylex lx - (b", "zremrangebylex lx + -", "zrangebylex lx - +",
			"zremrangebylex lx - +", "zcard lx",
			"zremrangebyscore z 1 2", "zremrangebyscore z (50 +inf", "zremrangebyscore nokey 0 1", "zrange z 0 -1 WITHSCORES",
			"zremrangebyrank z 0 0", "zremrangebyrank z -1 -1", "zremrangebyrank z 1 -2", "zremrangebyrank z 5 1",
			"zremrangebyrank nokey 0 -1", "zrange z 0 -1 WITHSCORES",
			"zadd p 1 a 2 b 3 c 4 d 5 e 6 f", "zpopmin p", "zpopmax p", "zpopmin p 2", "zpopmax p 1", "zpopmin p 0",
			"zpopmin nokey", "zpopmin nokey 2", "zpopmax p 100", "zcard p", "zpopmin p",
			"zrem z a zz", "zrem z zz", "zrem nokey a", "zrange z 0 -1", "zadd z 1 x", "zremrangebyrank z 0 -1", "zcard z",
			"zadd z 3 a 1 b 2 c", "~zrangestore dst z 0 -1", "zrange dst 0 -1 WITHSCORES",
		)
		w.same("set str v", "hset other f v")
		w.same(wrongTypeLines([]string{
			"zadd KEY 1 a", "zadd KEY XX 1 a", "zincrby KEY 1 a", "zadd KEY INCR 1 a", "zrem KEY a", "zscore KEY a",
			"zmscore KEY a", "zcard KEY", "zcount KEY 0 1", "zrank KEY a", "zrevrank KEY a", "zrange KEY 0 -1",
			"zrange KEY 0 1", "zrange KEY 1 -1", "zrangebyscore KEY 0 1", "zrangebylex KEY - +", "zrangebylex KEY - [b",
			"zremrangebyscore KEY 0 1", "zremrangebyrank KEY 0 1", "zremrangebyrank KEY 0 -1", "zremrangebylex KEY - +",
			"zremrangebylex KEY [a [b", "zpopmin KEY", "zpopmax KEY 2", "hget other f",
		})...)
	})
}

func TestNativeList(t *testing.T) {
	eachDurability(t, func(w *twin) {
		w.same(
			"rpush l a b c", "lpush l x y", "llen l", "lrange l 0 -1", "lrange l 1 2", "lrange l -2 -1", "lrange l -100 100",
			"lrange l 3 1", "lrange l 5 10", "lrange l 1 -2", "lrange l -3 3", "lrange nokey 0 -1",
			"lrange l -9223372036854775808 9223372036854775807", "lrange l 9223372036854775807 -9223372036854775808",
			"lindex l 0", "lindex l -1", "lindex l 4", "lindex l 5", "lindex l -5", "lindex l -6", "lindex nokey 0",
			"lindex l 9223372036854775807", "lindex l -9223372036854775808", "~lindex l x", "~lindex nokey x",
			"lset l 0 X", "lset l -1 Z", "lset l 5 no", "lset l -6 no", "lset nokey 0 v", "~lset l x v", "~lset nokey x v",
			"lrange l 0 -1", "lpushx l p", "rpushx l q r", "lpushx nokey a", "rpushx nokey a", "llen nokey",
			"lpop l", "rpop l", "lpop l 2", "rpop l 2", "lpop l 0", "lpop nokey", "lpop nokey 2", "rpop nokey",
			"rpush e ''", "lindex e 0", "lpop e", "llen e",
			"rpop l 100", "llen l", "lpop l 0", "rpop l",
			"rpush q 1 2 3 4 5 6", "ltrim q 1 -2", "lrange q 0 -1", "ltrim q 0 0", "lrange q 0 -1", "ltrim q 5 10",
			"llen q", "ltrim nokey 0 1", "rpush q a b", "ltrim q -1 -100", "llen q",
			"rpush m a b c", "lmove m m2 left right", "lmove m m2 right left", "rpoplpush m m2", "lrange m2 0 -1",
			"llen m", "lmove m2 m2 left left", "lmove m2 m2 left right", "lrange m2 0 -1", "lmove m2 m2 right left",
			"lrange m2 0 -1", "lmove nokey m2 left left", "rpush one x", "lmove one one right left", "lrange one 0 -1",
			"rpush b1 a b", "blpop b1 0", "brpop nokey b1 0", "blpop nokey b1 0", "blpop nokey 0", "brpop nokey 1",
			"llen b1", "rpush b1 c d", "blpop b1 b1 0",
			"rpush g a b c", "linsert g before b x", "lpush g y", "rpush g z", "lrange g 0 -1", "lrem g 1 x",
			"rpush g w", "lindex g -1", "lindex g 0", "llen g", "lrange g 0 -1", "lset g 2 C", "ltrim g 1 -1", "lrange g 0 -1",
		)
		w.same("set str v", "hset other f v", "rpush src a b")
		w.same(wrongTypeLines([]string{
			"lpush KEY a", "rpush KEY a", "lpushx KEY a", "rpushx KEY a", "lpop KEY", "rpop KEY 2", "llen KEY",
			"lindex KEY 0", "lrange KEY 0 -1", "lset KEY 0 v", "ltrim KEY 0 1", "lmove KEY src left left",
			"lmove src KEY left left", "rpoplpush KEY src", "lmove nokey KEY left right", "blpop KEY 0",
			"blpop nokey KEY src 0", "blpop! nokey KEY src 0", "brpop! KEY 0", "rpush src c", "brpop src KEY 0",
			"lrange src 0 -1", "hget other f",
		})...)
	})
}

// layout checks the rules of the layout on w's table: no items without a
// live collection row, no live collection row without items, and each
// list's positions contiguous.
func (w *twin) layout() {
	w.t.Helper()
	checkLayout(w.t, w.pg)
}

func checkLayout(t testing.TB, s *KV) {
	t.Helper()
	kv, items := s.table.ident(), itemsTable(s.table).ident()
	if n := queryInt(t, fmt.Sprintf(`SELECT count(*) FROM %s AS i WHERE NOT EXISTS (
		SELECT FROM %s AS t WHERE t.key = i.key AND t.kind <> 's' AND t.expires_at > now())`, items, kv)); n != 0 {
		t.Errorf("%d items without a live collection row", n)
	}
	if n := queryInt(t, fmt.Sprintf(`SELECT count(*) FROM %s AS t WHERE t.kind <> 's' AND t.expires_at > now()
		AND NOT EXISTS (SELECT FROM %s AS i WHERE i.key = t.key)`, kv, items)); n != 0 {
		t.Errorf("%d live collection rows without items", n)
	}
	if n := queryInt(t, fmt.Sprintf(`SELECT count(*) FROM (
		SELECT i.key FROM %s AS i JOIN %s AS t ON t.key = i.key AND t.kind = 'l'
		GROUP BY i.key
		HAVING max(('x' || encode(i.member, 'hex'))::bit(64)::int8 # (-9223372036854775808)::int8)
		     - min(('x' || encode(i.member, 'hex'))::bit(64)::int8 # (-9223372036854775808)::int8) + 1 <> count(*)
	) AS gaps`, items, kv)); n != 0 {
		t.Errorf("%d lists with gaps in their positions", n)
	}
}
