package postgres

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/coherence"
)

// The layout's rules under the native commands: expired rows, deadlines,
// concurrent writers, and a list used as a queue.

// An expired row is absent to every read, and a write takes it over, of
// its type or another (the old items gone, no deadline), as the memory
// store's key is gone.
func TestNativeExpired(t *testing.T) {
	eachDurability(t, func(w *twin) {
		w.same("hset h old 1", "sadd s old", "zadd z 1 old", "rpush l old old2", "set str v",
			"hset h2 old 1", "zadd z2 1 old", "set str2 v", "rpush l2 old")
		for _, k := range []string{"h", "s", "z", "l", "str", "h2", "z2", "str2", "l2"} {
			w.same("expired " + k)
		}
		w.same(
			"hget h old", "hlen h", "hexists h old", "sismember s old", "scard s", "zscore z old", "zcard z",
			"zrange z 0 -1", "zrangebyscore z -inf +inf", "llen l", "lrange l 0 -1", "lindex l 0",
			"hget s old", "sismember h old", "llen z", "zcard l", "hget str old", "lpop l", "zpopmin z", "srem s old",
			"hdel h old", "lset l 0 x", "ltrim l 0 0", "blpop l2 0", "lmove l2 l left left",
			"hset h new 1", "hgetall h", "ttl h", "sadd s new", "scard s", "sismember s old", "ttl s",
			"zadd z 2 new", "zrange z 0 -1 WITHSCORES", "ttl z", "rpush l new", "lrange l 0 -1", "ttl l",
			"hset str f v", "hgetall str", "sadd h2 m", "scard h2", "lpush z2 e", "lrange z2 0 -1",
			"zincrby str2 1 m", "zrange str2 0 -1 WITHSCORES", "hincrby l2 f 1", "hgetall l2",
		)
	})
}

// A write keeps its key's deadline, as the memory store does; a write that
// empties the key deletes it.
func TestNativeKeepsTTL(t *testing.T) {
	eachDurability(t, func(w *twin) {
		w.same(
			"hset h a 1 b 2", "sadd s a b", "zadd z 1 a 2 b", "rpush l a b c",
			"expire h 100", "expire s 100", "expire z 100", "expire l 100",
			"hset h c 3", "hdel h a", "hincrby h n 1", "hincrbyfloat h f 1.5", "hsetnx h g 1", "ttl h",
			"sadd s c", "srem s a", "ttl s", "zadd z 3 c", "zincrby z 1 a", "zrem z b", "zpopmin z", "ttl z",
			"zremrangebyscore z 100 200", "ttl z",
			"lpush l x", "rpop l", "lset l 0 y", "ltrim l 0 1", "lmove l l left right", "ttl l",
			"hdel h b c n f g", "ttl h", "srem s b c", "ttl s", "zremrangebyrank z 0 -1", "ttl z", "ltrim l 1 0", "ttl l",
		)
	})
}

// Concurrent writers of one collection queue on its row: none loses a
// member, and the counts they answer are exact.
func TestNativeConcurrentWriters(t *testing.T) {
	for _, dur := range durabilities {
		t.Run(dur, func(t *testing.T) {
			d := newDriver(t, Options{})
			s := openKV(t, d, uniqueTable(t), dur, "")
			const workers, each = 8, 40
			var added, zadded, pops atomic.Int64
			lengths := make(chan int64, workers*each)
			popped := make(chan string, workers*each)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						own, shared := fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("shared-%d", i)
						r, err := do(t, s, coll.ParseSAdd, "sadd", "s", own, shared)
						if err != nil {
							t.Error(err)
							return
						}
						added.Add(r.n)
						r, _ = do(t, s, coll.ParseZAdd, "zadd", "z", strconv.Itoa(w), shared)
						zadded.Add(r.n)
						r, _ = do(t, s, coll.ParseLPush, "lpush", "l", own)
						lengths <- r.n
						// A queue with producers and consumers, and a set that
						// keeps emptying.
						do(t, s, coll.ParseLPush, "lpush", "q", own)
						if r, _ := do(t, s, coll.ParseRPop, "rpop", "q"); !r.null {
							popped <- r.bulk
							pops.Add(1)
						}
						do(t, s, coll.ParseSAdd, "sadd", "flap", own)
						do(t, s, coll.ParseSRem, "srem", "flap", own)
					}
				}()
			}
			wg.Wait()
			close(lengths)
			if card, _ := do(t, s, coll.ParseSCard, "scard", "s"); card.n != added.Load() || card.n != workers*each+each {
				t.Errorf("SCARD = %d, SADDs counted %d added, want %d", card.n, added.Load(), workers*each+each)
			}
			if card, _ := do(t, s, coll.ParseZCard, "zcard", "z"); card.n != zadded.Load() || card.n != each {
				t.Errorf("ZCARD = %d, ZADDs counted %d added, want %d", card.n, zadded.Load(), each)
			}
			var got []int64
			for n := range lengths {
				got = append(got, n)
			}
			slices.Sort(got)
			for i, n := range got {
				if n != int64(i+1) {
					t.Fatalf("LPUSH answered lengths %v, want 1 to %d once each", got, workers*each)
				}
			}
			for {
				r, _ := do(t, s, coll.ParseRPop, "rpop", "q")
				if r.null {
					break
				}
				popped <- r.bulk
			}
			close(popped)
			seen := map[string]bool{}
			for e := range popped {
				if seen[e] {
					t.Fatalf("%s popped twice", e)
				}
				seen[e] = true
			}
			if len(seen) != workers*each {
				t.Errorf("%d elements popped, want %d", len(seen), workers*each)
			}
			if card, _ := do(t, s, coll.ParseSCard, "scard", "flap"); card.n != 0 {
				t.Errorf("SCARD flap = %d", card.n)
			}
			checkLayout(t, s)
		})
	}
}

// A list used as a queue: 10,000 LPUSH and RPOP, first in first out, and
// each a constant number of rows whatever the list's length: a push and a
// pop touch the same rows on a 100- and a 100,000-element list.
func TestNativeQueue(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	const n, inFlight = 10000, 100
	for i := range n {
		if r, err := do(t, s, coll.ParseLPush, "lpush", "q", strconv.Itoa(i)); err != nil || r.n != int64(min(i, inFlight)+1) {
			t.Fatalf("LPUSH %d = %+v, %v", i, r, err)
		}
		if i < inFlight {
			continue
		}
		if r, err := do(t, s, coll.ParseRPop, "rpop", "q"); err != nil || r.bulk != strconv.Itoa(i-inFlight) {
			t.Fatalf("RPOP after %d = %+v, %v, want %d", i, r, err, i-inFlight)
		}
	}

	fill := func(key string, size int) {
		for i := 0; i < size; i += 1000 {
			args := []string{"rpush", key}
			for j := i; j < min(i+1000, size); j++ {
				args = append(args, strconv.Itoa(j))
			}
			if _, err := do(t, s, coll.ParseRPush, args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill("small", 100)
	fill("large", 100000)
	sql(t, "ANALYZE "+itemsTable(s.table).ident())
	touched := func(key string) (push, pop int64) {
		k, _ := s.key.param(key)
		push = rowsTouched(t, s, s.coll.list.push, k, [][]byte{[]byte("x")}, true, false)
		pop = rowsTouched(t, s, s.coll.list.pop[1], k, int64(1))
		return push, pop
	}
	smallPush, smallPop := touched("small")
	largePush, largePop := touched("large")
	t.Logf("rows touched: LPUSH %d (100 elements) %d (100,000); RPOP %d, %d", smallPush, largePush, smallPop, largePop)
	if largePush > smallPush || largePop > smallPop || largePush > 64 || largePop > 64 {
		t.Errorf("rows touched by LPUSH: %d (100 elements), %d (100,000); by RPOP: %d, %d: want the same few",
			smallPush, largePush, smallPop, largePop)
	}
}

// rowsTouched runs a write's sql under EXPLAIN ANALYZE with its generic
// plan, as a write runs it (genericPlansSQL), in a transaction it rolls
// back, and counts the rows its plan's nodes returned or filtered out.
func rowsTouched(t testing.TB, s *KV, sql string, args ...any) int64 {
	t.Helper()
	ctx := testCtx(t)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, stmt := range []string{genericPlansSQL, "PREPARE touched AS " + sql} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	defer tx.Exec(ctx, "DEALLOCATE touched")
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = literal(t, a)
	}
	var out []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE touched("+strings.Join(params, ", ")+")").Scan(&out); err != nil {
		t.Fatal(err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out, &plans); err != nil {
		t.Fatal(err)
	}
	return plans[0].Plan.rows()
}

// readRowsTouched is rowsTouched for a read: its plan for its parameters.
func readRowsTouched(t testing.TB, s *KV, sql string, args ...any) int64 {
	t.Helper()
	var out []byte
	if err := s.pool.QueryRow(testCtx(t), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&out); err != nil {
		t.Fatal(err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out, &plans); err != nil {
		t.Fatal(err)
	}
	return plans[0].Plan.rows()
}

// literal is a as an SQL literal (EXPLAIN EXECUTE takes no parameters).
func literal(t testing.TB, a any) string {
	switch a := a.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(a, "'", "''") + "'"
	case []byte:
		return fmt.Sprintf("'\\x%x'::bytea", a)
	case [][]byte:
		elems := make([]string, len(a))
		for i, e := range a {
			elems[i] = literal(t, e)
		}
		return "ARRAY[" + strings.Join(elems, ", ") + "]::bytea[]"
	case bool, int64:
		return fmt.Sprint(a)
	case float64:
		return fmt.Sprintf("'%v'::float8", a)
	case []float64:
		elems := make([]string, len(a))
		for i, e := range a {
			elems[i] = literal(t, e)
		}
		return "ARRAY[" + strings.Join(elems, ", ") + "]::float8[]"
	case []string:
		elems := make([]string, len(a))
		for i, e := range a {
			elems[i] = literal(t, e)
		}
		return "ARRAY[" + strings.Join(elems, ", ") + "]"
	case byte:
		return fmt.Sprintf("'%c'", a)
	}
	t.Fatalf("no literal for %T", a)
	return ""
}

type planNode struct {
	Rows     float64    `json:"Actual Rows"`
	Loops    float64    `json:"Actual Loops"`
	Filtered float64    `json:"Rows Removed by Filter"`
	Rechecks float64    `json:"Rows Removed by Index Recheck"`
	Plans    []planNode `json:"Plans"`
}

func (p planNode) rows() int64 {
	n := int64((p.Rows + p.Filtered + p.Rechecks) * p.Loops)
	for _, c := range p.Plans {
		n += c.rows()
	}
	return n
}

// Every native write of a collection is seen by the fence triggers of an
// L1 tier (package coherence): it writes the collection's row, as the
// generic path does, and a WRONGTYPE writes nothing.
func TestNativeWritesFence(t *testing.T) {
	w := newTwin(t, DurabilityStandard)
	ctx := testCtx(t)
	if err := coherence.Attach(ctx, w.pg.pool, w.pg.table.String()); err != nil {
		t.Fatal(err)
	}
	fences := func(key string) int64 {
		return queryInt(t, `SELECT count(*) FROM pgcache.fence_log WHERE tbl = $1 AND keys @> to_jsonb(ARRAY[$2::text])`,
			w.pg.FenceTable(), key)
	}
	w.same("hset h a 1 b 2", "sadd s a b", "zadd z 1 a 2 b 3 c", "rpush l a b c d", "rpush l2 x", "set str v")
	for _, c := range []struct{ key, cmd string }{
		{"h", "hset h a 3"}, {"h", "hsetnx h c 1"}, {"h", "hdel h c"}, {"h", "hincrby h n 1"}, {"h", "hincrbyfloat h f 1"},
		{"s", "sadd s c"}, {"s", "srem s c"},
		{"z", "zadd z 5 a"}, {"z", "zincrby z 1 a"}, {"z", "zrem z c"}, {"z", "zremrangebyscore z 100 200"},
		{"z", "zremrangebyrank z 0 0"}, {"z", "zremrangebylex z [x [y"}, {"z", "zpopmax z"},
		{"l", "lpush l x"}, {"l", "rpop l"}, {"l", "lset l 0 y"}, {"l", "ltrim l 0 -2"}, {"l", "lmove l l left right"},
		{"l2", "lmove l l2 left right"}, {"l", "blpop l 0"},
	} {
		before := fences(c.key)
		w.same(c.cmd)
		if after := fences(c.key); after == before {
			t.Errorf("%s: no fence of %s", c.cmd, c.key)
		}
	}
	before := fences("str")
	w.same("hset str f v", "sadd str m", "zadd str 1 m", "lpush str e", "lpop str")
	if after := fences("str"); after != before {
		t.Errorf("WRONGTYPE writes logged %d fences of str", after-before)
	}
}

// The native commands on routes whose keys are bigints or uuids.
func TestNativeKeyTypes(t *testing.T) {
	for _, c := range []struct{ keyType, a, b, c string }{
		{KeyBigint, "1", "-2", "9223372036854775807"},
		{KeyUUID, "00000000-0000-0000-0000-000000000001", "ffffffff-ffff-ffff-ffff-ffffffffffff", "12345678-9abc-def0-1234-56789abcdef0"},
	} {
		t.Run(c.keyType, func(t *testing.T) {
			w := newTwinKeyed(t, DurabilityUnlogged, c.keyType)
			r := strings.NewReplacer("{a}", c.a, "{b}", c.b, "{c}", c.c)
			for _, line := range []string{
				"hset {a} f 1 g 2", "hget {a} f", "hmget {a} f x g", "hincrby {a} f 5", "hdel {a} f g", "hlen {a}",
				"sadd {b} m n", "sismember {b} m", "smismember {b} m x", "srem {b} m", "scard {b}",
				"zadd {c} 1 a 2 b", "zrangebyscore {c} -inf +inf WITHSCORES", "zincrby {c} 1 a", "zpopmin {c}", "zcard {c}",
				"rpush {a} x", "rpush {b} x", "lpush {c} x", "set {c} v",
				"rpush {b} y z", "lmove {b} {c} left right", "lmove {b} {a} left right", "lrange {a} 0 -1",
				"blpop {a} {b} 0", "brpop {b} {a} 0", "llen {a}", "llen {b}",
			} {
				w.same(r.Replace(line))
			}
			w.layout()
		})
	}
}
