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
// (then no minimum applies); unit/tracking is issue 18's.
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
	subset := false
	if s := os.Getenv("PGCACHE_REDIS_SUITE_UNITS"); s != "" {
		units, subset = strings.Fields(s), true
	}
	var addr, what string
	switch target := os.Getenv("PGCACHE_REDIS_SUITE_TARGET"); target {
	case "", "pgcache":
		addr, what = startPgcache(t), "pgcache"
	case "redis":
		r := startBaseline(t, baselineFor(units))
		addr, what, min = r.Addr(), "ACL-limited "+redisVersion(t, r), baselineMin
	default:
		t.Fatalf("PGCACHE_REDIS_SUITE_TARGET=%q: want pgcache or redis", target)
	}
	opts := Options{Dir: dir, Addr: addr, Units: units, Output: outputFile(t)}
	start := time.Now()
	res, err := Run(budget(t), tclsh, opts)
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	res.WriteReport(&report, testing.Verbose())
	t.Logf("%s, suite %s, %v:\n%s", what, dir, time.Since(start).Round(time.Second), report.String())
	for _, u := range res.Units {
		if strings.HasPrefix(u.Aborted, "killed") || strings.HasPrefix(u.Aborted, "not run") {
			t.Errorf("%s: %s", u.Unit, u.Aborted)
		}
	}
	if got := res.Count(Passed); !subset && got < min {
		t.Errorf("%s passed %d of the suite's tests, want at least %d", what, got, min)
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

// startPgcache runs pgcache with the embedded default config on free
// loopback ports until the test ends, and returns its RESP address. It is a
// child process built without the race detector: Redis's suite sends
// thousands of commands and scripts, which under -race took minutes.
func startPgcache(t *testing.T) string {
	t.Helper()
	return pgcachetest.StartProcess(t, pgcachetest.Config{Env: []string{"PGCACHE_LOG__LEVEL=warn"}}).RESP
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

// baselineFor is the ACL of a baseline run of units: issue 18's when
// they include unit/tracking, else issue 17's.
func baselineFor(units []string) []string {
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
