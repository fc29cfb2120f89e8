package proxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// callCounter counts the calls that reach a route's backend, and refuses
// keys that start with "bad", as a PostgreSQL uuid route refuses a key that
// is no uuid: a grouped call naming one fails as a whole.
type callCounter struct {
	backends.Backend
	get, mget, set, mset atomic.Int64
	do, seq, seqOps      atomic.Int64
}

func (b *callCounter) Do(ctx context.Context, keys []string, op backends.Op) error {
	b.do.Add(1)
	return b.Backend.Do(ctx, keys, op)
}

func (b *callCounter) DoSeq(ctx context.Context, key string, ops []backends.Op, errs []error) error {
	b.seq.Add(1)
	b.seqOps.Add(int64(len(ops)))
	sq, _ := backends.As[backends.Sequencer](b.Backend)
	return sq.DoSeq(ctx, key, ops, errs)
}

// Unwrap lets the tracker find the store's Notifier behind the counter.
func (b *callCounter) Unwrap() backends.Backend { return b.Backend }

func badKeys(keys ...string) error {
	for _, k := range keys {
		if strings.HasPrefix(k, "bad") {
			return fmt.Errorf("%w: %q", backends.ErrBadKey, k)
		}
	}
	return nil
}

func (b *callCounter) Get(ctx context.Context, key string) ([]byte, bool, error) {
	b.get.Add(1)
	if err := badKeys(key); err != nil {
		return nil, false, err
	}
	return b.Backend.Get(ctx, key)
}

func (b *callCounter) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	b.mget.Add(1)
	if err := badKeys(keys...); err != nil {
		return dst, err
	}
	return b.Backend.MGet(ctx, keys, dst)
}

func (b *callCounter) Set(ctx context.Context, key string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	b.set.Add(1)
	if err := badKeys(key); err != nil {
		return backends.SetResult{}, err
	}
	return b.Backend.Set(ctx, key, val, opts)
}

func (b *callCounter) MSet(ctx context.Context, pairs []backends.KV) error {
	b.mset.Add(1)
	for _, p := range pairs {
		if err := badKeys(p.Key); err != nil {
			return err
		}
	}
	return b.Backend.MSet(ctx, pairs)
}

func startCounted(t *testing.T) (*testServer, map[string]*callCounter) {
	counters := map[string]*callCounter{}
	ts := startServerWith(t, Config{}, func(r *route.Route) {
		cc := &callCounter{Backend: r.Backend}
		counters[r.Name] = cc
		r.Backend = cc
	})
	return ts, counters
}

// A pipeline is answered in order, one reply per command, whatever runs
// were grouped: runs of GET or of plain SET on one route become one backend
// call, and every other command, a route change or a SET with options ends
// the run before it.
func TestPipelinedRunsGrouped(t *testing.T) {
	ts, n := startCounted(t)
	c := dial(t, ts.addr)
	steps := []step{
		{[]string{"SET", "a", "1"}, "+OK\r\n"},
		{[]string{"SET", "b", "2"}, "+OK\r\n"},
		{[]string{"SET", "pg:c", "3"}, "+OK\r\n"}, // another route: a run of its own
		{[]string{"GET", "a"}, "$1\r\n1\r\n"},
		{[]string{"GET", "b"}, "$1\r\n2\r\n"},
		{[]string{"GET", "nope"}, "$-1\r\n"},
		{[]string{"INCR", "a"}, ":2\r\n"}, // ends the run; sees the SETs before it
		{[]string{"get", "a"}, "$1\r\n2\r\n"},
		{[]string{"GET", "pg:c"}, "$1\r\n3\r\n"},
		{[]string{"SET", "a", "x", "XX"}, "+OK\r\n"}, // options: not grouped
		{[]string{"SET", "b", "y"}, "+OK\r\n"},
		{[]string{"SET", "b", "z"}, "+OK\r\n"}, // the same key twice in a run: the last wins
		{[]string{"GET", "a"}, "$1\r\nx\r\n"},
		{[]string{"GET", "b"}, "$1\r\nz\r\n"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n"},
		{[]string{"GET", "b"}, "$1\r\nz\r\n"},
	}
	pipeline(t, c, steps)
	mem := n["memory"]
	if g, m := mem.get.Load(), mem.mget.Load(); m != 2 || g != 2 {
		t.Errorf("memory route: %d MGet and %d Get calls, want 2 MGets (a b nope; a b) and 2 Gets (a; b)", m, g)
	}
	if s, m := mem.set.Load(), mem.mset.Load(); m != 2 || s != 1 {
		t.Errorf("memory route: %d MSet and %d Set calls, want 2 MSets (a b; b b) and 1 Set (XX)", m, s)
	}
}

// Pipelined commands on the collection of one key are one backend call
// (DoSeq), answered one by one as each alone: an error fails its own
// command only, a command on another key or of another kind ends the run,
// and a blocking command, or one its parser refuses, runs alone.
func TestPipelinedCollectionRunsGrouped(t *testing.T) {
	ts, n := startCounted(t)
	c := dial(t, ts.addr)
	steps := []step{
		{[]string{"RPUSH", "q", "a"}, ":1\r\n"}, // a run of six on q
		{[]string{"RPUSH", "q", "b"}, ":2\r\n"},
		{[]string{"LPOP", "q"}, "$1\r\na\r\n"},
		{[]string{"LLEN", "q"}, ":1\r\n"},
		{[]string{"LSET", "q", "5", "x"}, "-ERR index out of range\r\n"},
		{[]string{"RPUSH", "q", "c"}, ":2\r\n"},
		{[]string{"SADD", "s", "m"}, ":1\r\n"}, // another key: a run of two
		{[]string{"SADD", "s", "m"}, ":0\r\n"},
		{[]string{"LRANGE", "q", "0", "-1"}, "*2\r\n$1\r\nb\r\n$1\r\nc\r\n"}, // alone
		{[]string{"SET", "str", "v"}, "+OK\r\n"},
		{[]string{"LPUSH", "str", "x"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{[]string{"HSET", "h", "f", "v"}, ":1\r\n"}, // a run of three
		{[]string{"HINCRBY", "h", "f", "1"}, "-ERR hash value is not an integer\r\n"},
		{[]string{"HGET", "h", "f"}, "$1\r\nv\r\n"},
		{[]string{"BLPOP", "q", "0"}, "*2\r\n$1\r\nq\r\n$1\r\nb\r\n"}, // blocking: alone
		{[]string{"ZADD", "z", "NX", "XX", "1", "m"}, "-ERR XX and NX options at the same time are not compatible\r\n"},
		{[]string{"ZADD", "z", "1", "m"}, ":1\r\n"}, // a run of two
		{[]string{"ZSCORE", "z", "m"}, "$1\r\n1\r\n"},
		{[]string{"LPUSH", "q"}, "-ERR wrong number of arguments for 'lpush' command\r\n"},
		{[]string{"LRANGE", "q", "0", "-1"}, "*1\r\n$1\r\nc\r\n"},
	}
	pipeline(t, c, steps)
	mem := n["memory"]
	if s, ops := mem.seq.Load(), mem.seqOps.Load(); s != 4 || ops != 6+2+3+2 {
		t.Errorf("%d DoSeq calls of %d commands, want 4 of 13", s, ops)
	}
	// LRANGE, LPUSH str, BLPOP, LRANGE alone (the refused ZADD and LPUSH
	// reach no backend).
	if d := mem.do.Load(); d != 4 {
		t.Errorf("%d Do calls, want 4", d)
	}
	info := c.do("INFO", "commandstats")
	for _, want := range []string{"cmdstat_rpush:calls=3,", "cmdstat_lset:calls=1,", "rejected_calls=0,failed_calls=1",
		"cmdstat_hincrby:calls=1,", "cmdstat_sadd:calls=2,"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO commandstats lacks %q:\n%s", want, info)
		}
	}
}

// A run parses its requests into the Ops of the run before (coll.Reparse):
// each is answered as itself, also after a request its parser refused,
// in runs longer than a group and in runs of other commands.
func TestPipelinedRunsReuseOps(t *testing.T) {
	ts := startServer(t, Config{})
	lists, zsets, hashes, sets := dial(t, ts.addr), dial(t, ts.addr), dial(t, ts.addr), dial(t, ts.addr)
	for i, v := range []string{"a", "b", "c"} { // each pipeline is a batch: its run ends with it
		n := strconv.Itoa(i + 1)
		pipeline(t, lists, []step{{[]string{"RPUSH", "q", v, v}, ":" + strconv.Itoa(i+2) + "\r\n"},
			{[]string{"LPOP", "q"}, "$1\r\n" + "aab"[i:i+1] + "\r\n"}})
		pipeline(t, zsets, []step{{[]string{"ZADD", "z", n, v}, ":1\r\n"},
			{[]string{"ZADD", "z", "XX", "CH", n + "0", v}, ":1\r\n"}})
		pipeline(t, hashes, []step{{[]string{"HSET", "h", v, n}, ":1\r\n"}, {[]string{"HGET", "h", v}, "$1\r\n" + n + "\r\n"}})
		pipeline(t, sets, []step{{[]string{"SADD", "s", v}, ":1\r\n"}, {[]string{"SPOP", "s"}, "$1\r\n" + v + "\r\n"}})
	}
	pipeline(t, zsets, []step{
		{[]string{"ZADD", "z", "nan", "x"}, "-ERR value is not a valid float\r\n"},
		{[]string{"ZADD", "z", "7", "d"}, ":1\r\n"},
		{[]string{"ZSCORE", "z", "d"}, "$1\r\n7\r\n"},
		{[]string{"ZRANGE", "z", "0", "-1", "WITHSCORES"},
			"*8\r\n$1\r\nd\r\n$1\r\n7\r\n$1\r\na\r\n$2\r\n10\r\n$1\r\nb\r\n$2\r\n20\r\n$1\r\nc\r\n$2\r\n30\r\n"},
	})
	pipeline(t, hashes, []step{
		{[]string{"HSET", "h", "f", "v", "g"}, "-ERR wrong number of arguments for 'hset' command\r\n"},
		{[]string{"HSET", "h", "f", "v"}, ":1\r\n"},
		{[]string{"HGET", "h", "f"}, "$1\r\nv\r\n"},
	})
	var push, pop []step
	for i := range 2*maxGroup + 3 {
		e := strconv.Itoa(i)
		push = append(push, step{[]string{"RPUSH", "long", e}, ":" + strconv.Itoa(i+1) + "\r\n"})
		pop = append(pop, step{[]string{"LPOP", "long"}, "$" + strconv.Itoa(len(e)) + "\r\n" + e + "\r\n"})
	}
	for range 2 {
		pipeline(t, lists, push)
		pipeline(t, lists, pop)
	}
	pipeline(t, lists, []step{{[]string{"RPOP", "long"}, "$-1\r\n"}, {[]string{"RPOP", "q"}, "$1\r\nc\r\n"}})
}

// WATCH sees a pipelined run on a collection as the writes it holds: a run
// of reads leaves a transaction alone, a run with a write fails it.
func TestWatchPipelinedCollectionRun(t *testing.T) {
	ts := startServer(t, Config{})
	c, w := dial(t, ts.addr), dial(t, ts.addr)
	c.do("RPUSH", "wq", "a")
	w.do("WATCH", "wq")
	pipeline(t, c, []step{{[]string{"LLEN", "wq"}, ":1\r\n"}, {[]string{"LINDEX", "wq", "0"}, "$1\r\na\r\n"}})
	w.do("MULTI")
	w.do("LLEN", "wq")
	if got := w.do("EXEC"); got != "*1\r\n:1\r\n" {
		t.Errorf("EXEC after a run of reads = %q, want it run", got)
	}
	w.do("WATCH", "wq")
	pipeline(t, c, []step{{[]string{"LLEN", "wq"}, ":1\r\n"}, {[]string{"RPUSH", "wq", "b"}, ":2\r\n"}})
	w.do("MULTI")
	w.do("LLEN", "wq")
	if got := w.do("EXEC"); got != "*-1\r\n" {
		t.Errorf("EXEC after a run with a write = %q, want nil", got)
	}
}

// step is a pipelined command and the reply it must get.
type step struct {
	args []string
	want string
}

// pipeline sends every step's command in one write, then checks the
// replies in order.
func pipeline(t *testing.T, c *rawClient, steps []step) {
	t.Helper()
	var raw strings.Builder
	for _, s := range steps {
		raw.WriteString(encode(s.args...))
	}
	c.send(raw.String())
	for _, s := range steps {
		if got := c.reply(); got != s.want {
			t.Errorf("%q = %q, want %q", s.args, got, s.want)
		}
	}
}

// When a grouped call fails, each command of the run is tried alone and
// gets its own answer: one bad key fails only its own GET or SET.
func TestGroupFailureAnsweredPerCommand(t *testing.T) {
	ts, n := startCounted(t)
	c := dial(t, ts.addr)
	c.do("SET", "k1", "v1")
	c.send(encode("SET", "k2", "v2") + encode("SET", "bad1", "x") + encode("SET", "k3", "v3") +
		encode("GET", "k1") + encode("GET", "bad2") + encode("GET", "k3"))
	want := []string{"+OK\r\n", "-ERR", "+OK\r\n", "$2\r\nv1\r\n", "-ERR", "$2\r\nv3\r\n"}
	for i, w := range want {
		if got := c.reply(); !strings.HasPrefix(got, w) {
			t.Errorf("reply %d = %q, want %q…", i, got, w)
		}
	}
	mem := n["memory"]
	if m, s := mem.mset.Load(), mem.set.Load(); m != 1 || s != 4 {
		t.Errorf("%d MSet and %d Set calls, want 1 MSet, then the 3 SETs alone (and the first SET)", m, s)
	}
	if got := c.do("GET", "k2"); got != "$2\r\nv2\r\n" {
		t.Errorf("k2 after the retried run = %q", got)
	}
}

// A run is bounded: a pipeline of many GETs is answered in full and in
// order, maxGroup keys per backend call.
func TestLongPipelineOfGets(t *testing.T) {
	ts, n := startCounted(t)
	c := dial(t, ts.addr)
	const keys = 3*maxGroup + 5
	var set, get strings.Builder
	for i := range keys {
		set.WriteString(encode("SET", fmt.Sprint("k", i), fmt.Sprint(i)))
		get.WriteString(encode("GET", fmt.Sprint("k", i)))
	}
	c.send(set.String())
	for i := range keys {
		if got := c.reply(); got != "+OK\r\n" {
			t.Fatalf("SET %d = %q", i, got)
		}
	}
	c.send(get.String())
	for i := range keys {
		v := fmt.Sprint(i)
		if got, want := c.reply(), fmt.Sprintf("$%d\r\n%s\r\n", len(v), v); got != want {
			t.Fatalf("GET k%d = %q, want %q", i, got, want)
		}
	}
	if m := n["memory"].mget.Load(); m < 4 {
		t.Errorf("%d MGet calls for %d pipelined GETs, want at least 4 (runs of at most %d)", m, keys, maxGroup)
	}
}

// MGETs whose keys share a route join read runs beside GETs: the run is one
// backend call, and each command is answered as it would be alone, an MGET
// with an array. An MGET across routes, or with a key of no route, runs by
// itself; a failed run answers each command alone.
func TestMGetJoinsReadRuns(t *testing.T) {
	ts, n := startCounted(t)
	c := dial(t, ts.addr)
	c.do("MSET", "a", "1", "b", "2", "pg:c", "3")
	mem := n["memory"]
	mem.mget.Store(0)
	steps := []step{
		{[]string{"MGET", "a"}, "*1\r\n$1\r\n1\r\n"},
		{[]string{"GET", "b"}, "$1\r\n2\r\n"},
		{[]string{"MGET", "b", "nope", "a"}, "*3\r\n$1\r\n2\r\n$-1\r\n$1\r\n1\r\n"},
		{[]string{"mget", "nope"}, "*1\r\n$-1\r\n"},
		{[]string{"MGET", "a", "pg:c"}, "*2\r\n$1\r\n1\r\n$1\r\n3\r\n"}, // two routes: alone
		{[]string{"MGET", "pg:c"}, "*1\r\n$1\r\n3\r\n"},
		{[]string{"GET", "a"}, "$1\r\n1\r\n"},
		{[]string{"MGET"}, "-ERR wrong number of arguments for 'mget' command\r\n"},
		{[]string{"MGET", "b"}, "*1\r\n$1\r\n2\r\n"},
	}
	pipeline(t, c, steps)
	if g, m := mem.get.Load(), mem.mget.Load(); m != 3 || g != 1 {
		t.Errorf("memory route: %d MGet and %d Get calls, want 3 MGets (the first four commands' run, the cross-route MGET's a, MGET b) and 1 Get (a)", m, g)
	}

	c.send(encode("MGET", "a", "b") + encode("MGET", "bad1", "a") + encode("GET", "b") + encode("MGET", "b"))
	want := []string{"*2\r\n$1\r\n1\r\n$1\r\n2\r\n", "-ERR", "$1\r\n2\r\n", "*1\r\n$1\r\n2\r\n"}
	for i, w := range want {
		if got := c.reply(); !strings.HasPrefix(got, w) {
			t.Errorf("after a failed run, reply %d = %q, want %q…", i, got, w)
		}
	}
}

// A tracking client's pipelined GETs are grouped too, and the tracker sees
// each: in default mode every key read is tracked; with OPTIN only the
// read that CLIENT CACHING yes covers.
func TestTrackingPipelinedReadsGrouped(t *testing.T) {
	for _, mode := range []string{"default", "optin"} {
		t.Run(mode, func(t *testing.T) {
			ts, n := startCounted(t)
			reader, writer := dial(t, ts.addr), dial(t, ts.addr)
			writer.do("MSET", "a", "1", "b", "2")
			reader.do("HELLO", "3")
			on := []string{"CLIENT", "TRACKING", "on"}
			steps := []step{{[]string{"GET", "a"}, "$1\r\n1\r\n"}, {[]string{"GET", "b"}, "$1\r\n2\r\n"}}
			if mode == "optin" {
				on = append(on, "OPTIN")
				steps = append([]step{{[]string{"CLIENT", "CACHING", "yes"}, "+OK\r\n"}}, steps...)
			}
			if got := reader.do(on...); got != "+OK\r\n" {
				t.Fatalf("%q: %q", on, got)
			}
			pipeline(t, reader, steps)
			mem := n["memory"]
			if g, m := mem.get.Load(), mem.mget.Load(); m != 1 || g != 0 {
				t.Errorf("%d MGet and %d Get calls, want the two GETs as 1 MGet", m, g)
			}
			writer.do("SET", "b", "3") // tracked in default mode only
			writer.do("SET", "a", "3")
			first := "b"
			if mode == "optin" {
				first = "a"
			}
			want := fmt.Sprintf(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\n%s\r\n", first)
			if got := readPush(t, reader); got != want {
				t.Errorf("first push: %q, want %q", got, want)
			}
		})
	}
}
