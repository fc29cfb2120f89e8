package coherence

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// Write-cost measurement: pgbench runs of writeCostSeconds, writeCostRounds
// pairs (per b.N) for each number of clients.
const (
	writeCostSeconds = 10
	writeCostRounds  = 3
)

// BenchmarkFenceWriteCost measures what the fence triggers cost writers:
// pgbench UPDATEs by primary key on a plain table and on an attached one,
// with 1 and 16 clients, while a relay drains the fence log as it does in
// production (its work shares the machine with the writers). Run it alone:
//
//	go test -run '^$' -bench FenceWriteCost -benchtime 1x -v ./coherence/
//
// Plain and fenced runs alternate, the order flipped every round, so that a
// noisy machine slows both alike; what counts is the ratio within a round.
// It reports the median updates/s of each table and the median, lowest and
// highest per-round ratio fenced/plain, and logs every round.
func BenchmarkFenceWriteCost(b *testing.B) {
	ctx := context.Background()
	p := pg.Pool(b)
	for _, tbl := range []string{"wc_plain", "wc_fenced"} {
		if _, err := p.Exec(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS %[1]s;
			CREATE TABLE %[1]s (id int PRIMARY KEY, v int NOT NULL, pad text NOT NULL) WITH (fillfactor = 70);
			INSERT INTO %[1]s SELECT g, 0, repeat('x', 100) FROM generate_series(1, 60000) g`, tbl)); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Exec(ctx, "VACUUM ANALYZE "+tbl); err != nil {
			b.Fatal(err)
		}
	}
	if err := Attach(ctx, p, "wc_fenced"); err != nil {
		b.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(pg.DSN())
	if err != nil {
		b.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	relay := NewRelay(cfg, 0, zap.NewNop())
	done := make(chan struct{})
	go func() { relay.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()

	dir := b.TempDir()
	os.Chmod(dir, 0o755)
	scripts := map[string]string{}
	for _, tbl := range []string{"wc_plain", "wc_fenced"} {
		scripts[tbl] = filepath.Join(dir, tbl+".sql")
		os.WriteFile(scripts[tbl], []byte(fmt.Sprintf("\\set id random(1, 60000)\nUPDATE %s SET v = v + 1 WHERE id = :id;\n", tbl)), 0o644)
	}
	tpsRE := regexp.MustCompile(`tps = ([0-9.]+)`)
	run := func(tbl string, clients int) float64 {
		// Start from a drained log, so that a run does not pay for the
		// relay's work on the previous one.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var n int64
			if err := p.QueryRow(ctx, "SELECT count(*) FROM "+Schema+".fence_log").Scan(&n); err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		out, err := pg.ClientCommand(ctx, "pgbench", "-n", "-M", "prepared", "-c", strconv.Itoa(clients),
			"-j", "2", "-T", strconv.Itoa(writeCostSeconds), "-f", scripts[tbl], pg.Database).CombinedOutput()
		if err != nil {
			b.Fatalf("pgbench: %v\n%s", err, out)
		}
		m := tpsRE.FindSubmatch(out)
		if m == nil {
			b.Fatalf("no tps in pgbench output:\n%s", out)
		}
		tps, _ := strconv.ParseFloat(string(m[1]), 64)
		return tps
	}
	for _, clients := range []int{1, 16} {
		var plain, fenced, ratio []float64
		for round := range writeCostRounds * b.N {
			order := []string{"wc_plain", "wc_fenced"}
			if round%2 == 1 {
				slices.Reverse(order)
			}
			tps := map[string]float64{}
			for _, tbl := range order {
				tps[tbl] = run(tbl, clients)
			}
			plain, fenced = append(plain, tps["wc_plain"]), append(fenced, tps["wc_fenced"])
			ratio = append(ratio, tps["wc_fenced"]/tps["wc_plain"])
			b.Logf("c%d round %d: plain %.0f, fenced %.0f updates/s: fenced/plain %.3f",
				clients, round+1, tps["wc_plain"], tps["wc_fenced"], ratio[len(ratio)-1])
		}
		b.ReportMetric(median(plain), fmt.Sprintf("plain-upd/s-c%d", clients))
		b.ReportMetric(median(fenced), fmt.Sprintf("fenced-upd/s-c%d", clients))
		b.ReportMetric(median(ratio), fmt.Sprintf("fenced/plain-c%d", clients))
		b.ReportMetric(slices.Min(ratio), fmt.Sprintf("fenced/plain-min-c%d", clients))
		b.ReportMetric(slices.Max(ratio), fmt.Sprintf("fenced/plain-max-c%d", clients))
	}
	b.Logf("relay: %d rows in %d drains, %d notifications", relay.Stats.Rows.Load(), relay.Stats.Drains.Load(), relay.Stats.Notifications.Load())
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
