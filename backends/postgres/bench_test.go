package postgres

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/decode"
)

var durabilities = []string{DurabilityStandard, DurabilityAsync, DurabilityUnlogged}

func BenchmarkGet(b *testing.B) {
	d := newDriver(b, Options{})
	for _, durability := range durabilities {
		b.Run(durability, func(b *testing.B) {
			s := openKV(b, d, uniqueTable(b), durability, "")
			ctx := testCtx(b)
			if _, err := s.Set(ctx, "k", bytes.Repeat([]byte("x"), 256), backends.SetOptions{}); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, ok, err := s.Get(ctx, "k"); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

func BenchmarkSet(b *testing.B) {
	d := newDriver(b, Options{})
	val := bytes.Repeat([]byte("x"), 256)
	for _, durability := range durabilities {
		b.Run(durability, func(b *testing.B) {
			s := openKV(b, d, uniqueTable(b), durability, "")
			ctx := testCtx(b)
			i := 0
			for b.Loop() {
				i++
				if _, err := s.Set(ctx, "user:"+strconv.Itoa(i%1000), val, backends.SetOptions{TTL: rel(5 * time.Minute)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMGet compares one MGET of 100 keys with 100 GETs.
func BenchmarkMGet(b *testing.B) {
	d := newDriver(b, Options{})
	s := openKV(b, d, uniqueTable(b), DurabilityUnlogged, "")
	ctx := testCtx(b)
	keys := make([]string, 100)
	pairs := make([]backends.KV, 100)
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i)
		pairs[i] = backends.KV{Key: keys[i], Val: bytes.Repeat([]byte("x"), 256)}
	}
	if err := s.MSet(ctx, pairs); err != nil {
		b.Fatal(err)
	}
	b.Run("mget-100", func(b *testing.B) {
		dst := make([][]byte, 0, 100)
		for b.Loop() {
			vals, err := s.MGet(ctx, keys, dst[:0])
			if err != nil || len(vals) != 100 || vals[99] == nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get-100", func(b *testing.B) {
		for b.Loop() {
			for _, k := range keys {
				if _, ok, err := s.Get(ctx, k); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		}
	})
}

var (
	pgbenchFlag     = flag.Bool("pgbench", false, "run TestPgbenchComparison: pgbench and the backend, upsert TPS per durability")
	pgbenchDuration = flag.Duration("pgbench.duration", 10*time.Second, "length of each TestPgbenchComparison run")
	pgbenchClients  = flag.Int("pgbench.clients", 8, "pgbench clients, and backend goroutines, of TestPgbenchComparison")
)

// pgbenchScript is the write of the benchmark of "Postgres as a Key-Value Store": an upsert of a
// random key among 100k, a 256-byte value, a 300s TTL.
const pgbenchScript = `\set k random(1, 100000)
INSERT INTO %s (key, value, expires_at)
VALUES ('user:' || :k, convert_to(repeat('x', 256), 'UTF8'),
        now() + make_interval(secs => 300))
ON CONFLICT (key) DO UPDATE
SET value      = EXCLUDED.value,
    expires_at = EXCLUDED.expires_at;
`

// TestPgbenchComparison measures upsert throughput per durability twice,
// in one run: with pgbench (-M prepared, the seed's method) and through the
// backend with as many goroutines as pgbench has clients. It prints the
// ratios unlogged/standard and async/standard for both. Off by default:
//
//	go test -run TestPgbenchComparison -pgbench ./backends/postgres/
func TestPgbenchComparison(t *testing.T) {
	if !*pgbenchFlag {
		t.Skip("a measurement, not a test: run with -pgbench")
	}
	d := newDriver(t, Options{MaxConns: int32(*pgbenchClients), SweepInterval: decode.Duration(-1)})
	tables := map[string]*KV{}
	for _, durability := range durabilities {
		tables[durability] = openKV(t, d, "bench_"+durability, durability, "")
	}
	dir := t.TempDir()
	tps := map[string]float64{}
	for _, run := range []struct {
		name, table, pgoptions string
	}{
		{DurabilityStandard, "bench_standard", ""},
		{DurabilityAsync, "bench_standard", "-c synchronous_commit=off"}, // the seed's way: a session setting on a logged table
		{DurabilityUnlogged, "bench_unlogged", ""},
	} {
		script := filepath.Join(dir, run.name+".sql")
		if err := os.WriteFile(script, []byte(fmt.Sprintf(pgbenchScript, run.table)), 0o644); err != nil {
			t.Fatal(err)
		}
		clients := strconv.Itoa(*pgbenchClients)
		cmd := pg.ClientCommand(testCtx(t), "pgbench", "-n", "-M", "prepared", "-c", clients, "-j", "2",
			"-T", strconv.Itoa(int(pgbenchDuration.Seconds())), "-f", script)
		if run.pgoptions != "" {
			cmd.Env = append(cmd.Env, "PGOPTIONS="+run.pgoptions)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no tps in pgbench's output:\n%s", out)
		}
		tps["pgbench/"+run.name], _ = strconv.ParseFloat(string(m[1]), 64)
	}
	for _, durability := range durabilities {
		tps["backend/"+durability] = backendUpserts(t, tables[durability], *pgbenchClients, *pgbenchDuration)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "upsert TPS, %d clients, %v each\n", *pgbenchClients, *pgbenchDuration)
	for _, tool := range []string{"pgbench", "backend"} {
		std := tps[tool+"/standard"]
		fmt.Fprintf(&report, "%-8s standard %8.0f  async %8.0f  unlogged %8.0f  async/standard %.2f  unlogged/standard %.2f\n",
			tool, std, tps[tool+"/async"], tps[tool+"/unlogged"], tps[tool+"/async"]/std, tps[tool+"/unlogged"]/std)
	}
	t.Log("\n" + report.String())
	fmt.Print(report.String())
}

// backendUpserts runs Set with the pgbench workload from workers
// goroutines for d and returns the rate of successful sets.
func backendUpserts(t *testing.T, s *KV, workers int, d time.Duration) float64 {
	ctx, cancel := context.WithTimeout(testCtx(t), d)
	defer cancel()
	val := bytes.Repeat([]byte("x"), 256)
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			opts := backends.SetOptions{TTL: rel(300 * time.Second)}
			for ctx.Err() == nil {
				k := "user:" + strconv.Itoa(rand.IntN(100000)+1)
				if _, err := s.Set(ctx, k, val, opts); err == nil {
					done.Add(1)
				} else if ctx.Err() == nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}
