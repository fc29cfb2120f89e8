package redissuite

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/internal/testenv"
)

// minPassed is the least pgcache must pass of Units17's tests: issue 17's
// bar. It passed 401 on the 2-core machine (2026-12-01); the rest are
// commands pgcache does not have (lists, sets, hashes, MONITOR, SAVE …) and
// deliberate differences (-BUSY only for clients that need a busy
// script's keys; scripts touch only the keys they declare; CONFIG SET of
// settings that come from the config file), which the compare target
// lists against the baseline.
const minPassed = 396

// baselineMinPassed bounds the ACL-limited redis-server's count from
// below: it passed 416 on the 2-core machine (the issue measured 417);
// fewer means the harness broke, not the server.
const baselineMinPassed = 410

// Issue 18's bar in unit/tracking: pgcache passed 47 of it (2026-12-01);
// the ACL-limited redis-server passes 40. The four pgcache fails are
// hashes, lists and blocking commands it does not have, a script reading
// a key it did not declare, and an eviction test that needs
// lazyfree_pending_objects and pushes inside a batch's replies.
const (
	trackingMinPassed         = 38
	trackingBaselineMinPassed = 38
)

// TestRedisSuite runs Redis's own tests of issue 17's commands against
// pgcache (the embedded default config: one memory route), started in this
// process on free ports, and fails below minPassed. It prints every
// failing test, grouped by cause; -v prints every test.
//
// PGCACHE_REDIS_SUITE_TARGET=redis runs the same units against the
// baseline instead: redis-server limited by ACL to the commands pgcache
// has or issue 17 adds (baselineACL; with unit/tracking, issue 18's too).
// PGCACHE_REDIS_SUITE_UNITS="unit/multi unit/scan" runs only those units
// (then no minimum applies; "units28" names issue 28's); unit/tracking is
// issue 18's. PGCACHE_REDIS_SUITE_ROUTE=postgres runs pgcache on a
// PostgreSQL route (startPgcacheOn).
// PGCACHE_REDIS_SUITE_OUTPUT=FILE keeps runtest's raw output.
func TestRedisSuite(t *testing.T) {
	runSuite(t, Units17, minPassed, baselineMinPassed)
}

// TestRedisSuiteTracking is TestRedisSuite for unit/tracking, issue 18's.
func TestRedisSuiteTracking(t *testing.T) {
	if os.Getenv("PGCACHE_REDIS_SUITE_UNITS") != "" {
		t.Skip("PGCACHE_REDIS_SUITE_UNITS names the units: TestRedisSuite runs them")
	}
	runSuite(t, []string{"unit/tracking"}, trackingMinPassed, trackingBaselineMinPassed)
}

// runSuite runs units against the target PGCACHE_REDIS_SUITE_TARGET names
// and fails below min (pgcache) or baselineMin (redis).
func runSuite(t *testing.T, units []string, min, baselineMin int) {
	dir, tclsh, err := Locate()
	if err != nil {
		t.Fatal(err)
	}
	units, subset := envUnits(units)
	var addr, what, route string
	switch target := os.Getenv("PGCACHE_REDIS_SUITE_TARGET"); target {
	case "compare":
		t.Skip("TestRedisSuiteCompare runs the comparison")
	case "", "pgcache":
		addr, what, route = startPgcache(t), "pgcache", os.Getenv("PGCACHE_REDIS_SUITE_ROUTE")
		if route != "" {
			what += " (" + route + " route)"
		}
	case "redis":
		r := startBaseline(t, baselineFor(units))
		addr, what, min = r.Addr(), "ACL-limited "+redisVersion(t, r), baselineMin
	default:
		t.Fatalf("PGCACHE_REDIS_SUITE_TARGET=%q: want pgcache or redis", target)
	}
	res := runUnits(t, tclsh, what, routeOptions(route, Options{Dir: dir, Addr: addr, Units: units}))
	if got := res.Count(Passed); !subset && got < min {
		t.Errorf("%s passed %d of the suite's tests, want at least %d", what, got, min)
	}
}

// runUnits runs opts's units against its server, logs the report (what
// names the server) and fails the test for a unit that was killed or not
// run.
func runUnits(t *testing.T, tclsh, what string, opts Options) *Result {
	t.Helper()
	opts.Output = outputFile(t)
	start := time.Now()
	res, err := Run(budget(t), tclsh, opts)
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	res.WriteReport(&report, testing.Verbose())
	t.Logf("%s, suite %s, %v:\n%s", what, opts.Dir, time.Since(start).Round(time.Second), report.String())
	for _, u := range res.Units {
		if strings.HasPrefix(u.Aborted, "killed") || strings.HasPrefix(u.Aborted, "not run") {
			t.Errorf("%s: %s", u.Unit, u.Aborted)
		}
	}
	return res
}

// envUnits are the units PGCACHE_REDIS_SUITE_UNITS names, and true; or
// def and false when it is unset. "units17" and "units28" name Units17 and
// Units28.
func envUnits(def []string) ([]string, bool) {
	switch s := os.Getenv("PGCACHE_REDIS_SUITE_UNITS"); s {
	case "":
		return def, false
	case "units17":
		return Units17, true
	case "units28":
		return Units28, true
	default:
		return strings.Fields(s), true
	}
}

// outputFile is $PGCACHE_REDIS_SUITE_OUTPUT, for runtest's raw output, or
// nil.
func outputFile(t *testing.T) io.Writer {
	f := os.Getenv("PGCACHE_REDIS_SUITE_OUTPUT")
	if f == "" {
		return nil
	}
	out, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	return out
}

// budget is the test's context, ending a minute before `go test
// -timeout` would kill the binary: the units not run by then are
// reported, not lost in a panic.
func budget(t *testing.T) context.Context {
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		t.Cleanup(cancel)
	}
	return ctx
}

// startPgcache runs pgcache on the route PGCACHE_REDIS_SUITE_ROUTE names
// (startPgcacheOn), by default the memory route.
func startPgcache(t *testing.T) string {
	t.Helper()
	return startPgcacheOn(t, os.Getenv("PGCACHE_REDIS_SUITE_ROUTE"))
}

// startPgcacheOn runs pgcache on free loopback ports until the test ends,
// and returns its RESP address. route is "memory" (or ""): the embedded
// default config, one memory route; or "postgres": one catch-all route on
// an unlogged kv table of a PostgreSQL started for the test, with an L1,
// and Pub/Sub carried by the same PostgreSQL (postgresRouteConfig). It is
// a child process built without the race detector: Redis's suite sends
// thousands of commands and scripts, which under -race took minutes.
func startPgcacheOn(t *testing.T, route string) string {
	t.Helper()
	cfg := pgcachetest.Config{Env: []string{"PGCACHE_LOG__LEVEL=warn"}}
	switch route {
	case "", "memory":
	case "postgres":
		cfg.YAML = postgresRouteConfig(testenv.Postgres(t).DSN())
	default:
		t.Fatalf("PGCACHE_REDIS_SUITE_ROUTE=%q: want memory or postgres", route)
	}
	return pgcachetest.StartProcess(t, cfg).RESP
}

// postgresRouteConfig is pgcache with every key on a PostgreSQL kv table
// (unlogged: the suite measures semantics, not durability) behind an L1,
// and PUBLISH carried through the same PostgreSQL, as a deployment with
// only PostgreSQL has it.
func postgresRouteConfig(dsn string) string {
	return fmt.Sprintf(`
backends:
  pg: {type: postgres, dsn: %q, max_conns: 16}
routes:
  - {name: kv, prefix: "", backend: pg, table: suite_kv, durability: unlogged, l1: {max_bytes: 64MiB}}
pubsub: {backend: pg}
`, dsn)
}

// baselineACL is what issue 17's baseline redis-server may run: the
// commands pgcache had before it, those issue 17 adds, and CONFIG GET/SET.
// Subcommands are listed where the issue lists them (CLIENT, SCRIPT,
// FUNCTION, CONFIG); COMMAND, which pgcache has, is whole.
var baselineACL = strings.Fields(`
	get set setex psetex setnx getdel getex mget mset msetnx incr incrby decr decrby
	incrbyfloat append strlen getrange substr setrange getset lcs
	del unlink exists expire pexpire expireat pexpireat expiretime pexpiretime ttl pttl persist
	type touch rename renamenx copy randomkey scan keys flushdb flushall dbsize
	multi exec discard watch unwatch
	eval evalsha eval_ro evalsha_ro fcall fcall_ro
	script|load script|exists script|flush script|kill
	function|load function|list function|delete function|flush function|dump function|restore function|stats function|kill
	ping echo hello auth select quit command info time lastsave
	client|id client|setname client|getname client|list client|info client|kill client|no-evict client|reply
	config|get config|set`)

// trackingACL is what issue 18 adds for unit/tracking: client-side
// caching and the SUBSCRIBE of its RESP2 redirect. With baselineACL it is
// issue 18's baseline (40 tests of unit/tracking pass, as the issue says).
var trackingACL = strings.Fields(`
	client|tracking client|caching client|getredir client|trackinginfo subscribe unsubscribe`)

// collectionsACL is what issue 28 adds: hashes, sets, sorted sets, lists,
// the blocking commands, pub/sub, OBJECT and MEMORY USAGE (which
// unit/type/hash calls before its tests), and SETBIT/GETBIT, which
// pgcache had already. With baselineACL and trackingACL it is issue 28's
// baseline: redis-server limited to pgcache's command set.
// TestCollectionsACLIsPgcaches checks that pgcache's COMMAND lists each.
var collectionsACL = strings.Fields(`
	setbit getbit
	hset hsetnx hget hmget hmset hdel hexists hlen hstrlen hkeys hvals hgetall hincrby
	hincrbyfloat hrandfield hscan
	sadd srem smembers sismember smismember scard spop srandmember smove sinter sintercard
	sinterstore sunion sunionstore sdiff sdiffstore sscan
	zadd zincrby zrem zcard zcount zlexcount zscore zmscore zrank zrevrank zrange zrangestore
	zrangebyscore zrevrangebyscore zrangebylex zrevrangebylex zrevrange zremrangebyscore
	zremrangebyrank zremrangebylex zpopmin zpopmax zmpop zrandmember zunion zunionstore zinter
	zinterstore zintercard zdiff zdiffstore zscan
	lpush rpush lpushx rpushx lpop rpop llen lrange lindex lset linsert lrem ltrim lpos lmove
	rpoplpush lmpop sort sort_ro
	blpop brpop blmove brpoplpush blmpop bzpopmin bzpopmax bzmpop client|unblock
	subscribe unsubscribe psubscribe punsubscribe publish ssubscribe sunsubscribe spublish
	pubsub|channels pubsub|numsub pubsub|numpat pubsub|shardchannels pubsub|shardnumsub pubsub|help
	object|encoding object|freq object|idletime object|refcount object|help memory|usage memory|help`)

// baselineFor is the ACL of a baseline run of units: issue 28's when they
// include one of Units28, issue 18's when they include unit/tracking, else
// issue 17's.
func baselineFor(units []string) []string {
	for _, u := range units {
		if slices.Contains(Units28, u) {
			return slices.Concat(baselineACL, trackingACL, collectionsACL)
		}
	}
	for _, u := range units {
		if u == "unit/tracking" {
			return append(slices.Clone(baselineACL), trackingACL...)
		}
	}
	return baselineACL
}

// startBaseline starts redis-server (Valkey if installed: testenv prefers
// it) and limits its default user to the commands of acl.
func startBaseline(t *testing.T, acl []string) *testenv.Redis {
	t.Helper()
	r := testenv.RedisFor(t)
	args := []string{"ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*"}
	for _, c := range acl {
		args = append(args, "+"+c)
	}
	if _, err := r.Do(context.Background(), args...); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	if _, err := r.Do(context.Background(), "ACL", "WHOAMI"); err == nil {
		t.Fatal("ACL WHOAMI ran after ACL SETUSER: the ACL did not apply")
	}
	return r
}

func redisVersion(t *testing.T, r *testenv.Redis) string {
	info, err := r.Do(context.Background(), "INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return fmt.Sprintf("redis-server %s", v)
		}
	}
	return "redis-server"
}
