package postgres

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends/coll"
)

// The sorted set benchmark: ZADD then ZRANGEBYSCORE … LIMIT 0 100
// on a 1,000,000-member sorted set of an unlogged kv table, through the
// backend, and the same SQL by hand with pgbench (testdata/zset.pgbench).

// zbenchMembers is the size of the benchmark's sorted set.
const zbenchMembers = 1000000

// loadZSet fills key of s with members m1…mN, member mi scored i, by SQL
// (a million ZADDs would take minutes), and analyzes the items table.
func loadZSet(t testing.TB, s *KV, key string, n int) {
	t.Helper()
	if _, err := doErr(t, s, coll.ParseZCard, "zcard", key); err != nil { // sets the table up
		t.Fatal(err)
	}
	items := itemsTable(s.table).ident()
	sql(t, fmt.Sprintf(`INSERT INTO %s (key, value, expires_at, kind) VALUES ($1, '', 'infinity', 'z')
		ON CONFLICT (key) DO NOTHING`, s.table.ident()), key)
	sql(t, fmt.Sprintf(`INSERT INTO %s (key, member, score)
		SELECT $1, convert_to('m' || g, 'UTF8'), g FROM generate_series(1, %d) AS g
		ON CONFLICT DO NOTHING`, items, n), key)
	sql(t, "VACUUM ANALYZE "+items)
}

// doErr is do for a testing.TB, with the benchmark's context (one for
// all calls, as the RESP front's connection has).
func doErr(t testing.TB, s *KV, p coll.Parser, args ...string) (coll.Command, error) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	op, err := p(b)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, at := range op.Request().KeyAt {
		keys = append(keys, args[at])
	}
	return op, s.Do(benchCtx, keys, op)
}

var benchCtx = context.Background()

// zbenchPair is one ZADD of a random member (of twice as many as loaded,
// so about half are new) with a random score, then a ZRANGEBYSCORE of 100
// from a random score: the pgbench script's transaction. It returns how
// long each took.
func zbenchPair(t testing.TB, s *KV, key string) (zadd, zrange time.Duration) {
	start := time.Now()
	zbenchZAdd(t, s, key)
	mid := time.Now()
	zbenchZRange(t, s, key)
	return mid.Sub(start), time.Since(mid)
}

func zbenchZAdd(t testing.TB, s *KV, key string) {
	if _, err := doErr(t, s, coll.ParseZAdd, "zadd", key, strconv.Itoa(rand.IntN(zbenchMembers+1)),
		"m"+strconv.Itoa(rand.IntN(2*zbenchMembers)+1)); err != nil {
		t.Fatal(err)
	}
}

func zbenchZRange(t testing.TB, s *KV, key string) {
	op, err := doErr(t, s, coll.ParseZRange, "zrangebyscore", key, strconv.Itoa(rand.IntN(zbenchMembers+1)), "+inf",
		"LIMIT", "0", "100")
	if err != nil {
		t.Fatal(err)
	}
	if len(op.(*coll.ZRange).Result) == 0 {
		t.Fatal("ZRANGEBYSCORE found nothing")
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkZSetMillion is ZADD then ZRANGEBYSCORE … LIMIT 0 100 on a
// 1,000,000-member sorted set of an unlogged table; it reports the median
// latency of the pair and of each command.
//
//	go test -run '^$' -bench ZSetMillion -benchtime 5000x ./backends/postgres/
func BenchmarkZSetMillion(b *testing.B) {
	d := newDriver(b, Options{DSN: pg.DSN() + os.Getenv("ZB_DSN_EXTRA")})
	s := openKV(b, d, uniqueTable(b), DurabilityUnlogged, "")
	loadZSet(b, s, "zb", zbenchMembers)
	var pairs, zadds, zranges []time.Duration
	for b.Loop() {
		zadd, zrange := zbenchPair(b, s, "zb")
		pairs, zadds, zranges = append(pairs, zadd+zrange), append(zadds, zadd), append(zranges, zrange)
	}
	b.ReportMetric(ms(median(pairs)), "ms-median-pair")
	b.ReportMetric(ms(median(zadds)), "ms-median-zadd")
	b.ReportMetric(ms(median(zranges)), "ms-median-zrangebyscore")
}

var (
	pgbenchZSet     = flag.Bool("pgbench.zset", false, "run TestPgbenchZSet: the sorted set benchmark, backend and pgbench")
	pgbenchZSetTime = flag.Duration("pgbench.zset.duration", 20*time.Second, "length of each run of TestPgbenchZSet")
)

// TestPgbenchZSet runs the sorted set benchmark through the backend, and
// with pgbench (-M prepared, one client) as two scripts: testdata/
// zset.pgbench, the SQL an application would write by hand, and the
// backend's own statements (the same SQL, pipelined as the backend sends
// it, zsetSameScript), on one table and its data, alternating three
// times. It prints each run's median latency of a ZADD + ZRANGEBYSCORE
// pair and pairs per second. Off by default:
//
//	go test -run TestPgbenchZSet -pgbench.zset ./backends/postgres/
func TestPgbenchZSet(t *testing.T) {
	if !*pgbenchZSet {
		t.Skip("a measurement, not a test: run with -pgbench.zset")
	}
	d := newDriver(t, Options{})
	s := openKV(t, d, "zbench", DurabilityUnlogged, "")
	loadZSet(t, s, "zb", zbenchMembers)
	hand, err := filepath.Abs("testdata/zset.pgbench")
	if err != nil {
		t.Fatal(err)
	}
	same := filepath.Join(t.TempDir(), "zset-same.pgbench")
	if err := os.WriteFile(same, []byte(zsetSameScript(s)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the backend's statements as a pgbench script: %s", same)
	var report strings.Builder
	fmt.Fprintf(&report, "ZADD + ZRANGEBYSCORE … LIMIT 0 100, %d-member sorted set, unlogged, 1 client, %v a run\n",
		zbenchMembers, *pgbenchZSetTime)
	line := func(name string, lat []time.Duration) {
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		fmt.Fprintf(&report, "%-14s median %.3f ms  %7.0f pairs/s\n", name, ms(median(lat)), float64(len(lat))/sum.Seconds())
	}
	for range 3 {
		var pairs []time.Duration
		for start := time.Now(); time.Since(start) < *pgbenchZSetTime; {
			zadd, zrange := zbenchPair(t, s, "zb")
			pairs = append(pairs, zadd+zrange)
		}
		line("backend", pairs)
		line("pgbench hand", runPgbench(t, hand))
		line("pgbench same", runPgbench(t, same))
	}
	t.Log("\n" + report.String())
	fmt.Print(report.String())
}

// runPgbench runs script for -pgbench.zset.duration and returns the
// latencies of its transactions.
func runPgbench(t *testing.T, script string) []time.Duration {
	dir := t.TempDir()
	cmd := pg.ClientCommand(testCtx(t), "pgbench", "-n", "-M", "prepared", "-c", "1",
		"-T", strconv.Itoa(int(pgbenchZSetTime.Seconds())), "-l", "-f", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	return pgbenchLatencies(t, dir)
}

// zsetSameScript is the backend's ZADD and ZRANGEBYSCORE … LIMIT 0 100 as a
// pgbench script: its statements, with the parameters it binds written in,
// each command's batch a pipeline.
func zsetSameScript(s *KV) string {
	bind := func(sql string, params ...string) string {
		return regexp.MustCompile(`\$(\d+)`).ReplaceAllStringFunc(sql, func(p string) string {
			n, _ := strconv.Atoi(p[1:])
			return params[n-1]
		}) + ";\n"
	}
	return `\set m random(1, 2000000)
\set s random(0, 1000000)
\set lo random(0, 1000000)
\startpipeline
` + bind(s.coll.lockRows, "ARRAY['zb']", "'z'", "ARRAY['zb']") +
		bind(s.coll.zset.add, "'zb'", "ARRAY[convert_to('m' || :m, 'UTF8')]", "ARRAY[:s]", "false", "false", "false") + `\endpipeline
\startpipeline
` + genericPlansSQL + ";\n" +
		bind(s.coll.zset.byScore[0], "'zb'", ":lo", "'Infinity'", "0", "100") + `\endpipeline
`
}

// pgbenchLatencies reads the transaction latencies of pgbench's log (-l)
// in dir: the third field of each line, in microseconds.
func pgbenchLatencies(t *testing.T, dir string) []time.Duration {
	logs, _ := filepath.Glob(filepath.Join(dir, "pgbench_log.*"))
	if len(logs) == 0 {
		t.Fatal("pgbench wrote no log")
	}
	var out []time.Duration
	for _, name := range logs {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 3 {
				continue
			}
			us, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("pgbench log line %q: %v", sc.Text(), err)
			}
			out = append(out, time.Duration(us)*time.Microsecond)
		}
	}
	return out
}
