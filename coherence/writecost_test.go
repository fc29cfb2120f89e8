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
// rounds (per b.N) of one run per table for each number of clients. Short
// runs and many rounds: on a shared machine throughput drifts by a fifth
// within a minute, and only runs side by side compare.
const (
	writeCostSeconds = 4
	writeCostRounds  = 6
)

// The write-cost tables: no triggers, the C trigger, the PL/pgSQL one.
var writeCostTables = []struct {
	name string
	fn   TriggerFunc
}{{"wc_plain", ""}, {"wc_c", TriggerC}, {"wc_plpgsql", TriggerPLpgSQL}}

// BenchmarkFenceWriteCost measures what the fence triggers cost writers:
// pgbench UPDATEs by primary key on a plain table and on tables attached
// with the C and the PL/pgSQL trigger, with 1 and 16 clients, while a
// relay drains the fence log as it does in production (its work shares the
// machine with the writers). Run it alone:
//
//	go test -run '^$' -bench FenceWriteCost -benchtime 1x -v ./coherence/
//
// The tables take turns, the order rotated every round, so that a noisy
// machine slows all alike; what counts is the ratio within a round. It
// reports the median updates/s of each table and the median, lowest and
// highest per-round ratio to plain, and logs every round.
func BenchmarkFenceWriteCost(b *testing.B) {
	ctx := context.Background()
	p := pg.Pool(b)
	for _, wt := range writeCostTables {
		tbl := wt.name
		if _, err := p.Exec(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS %[1]s;
			CREATE TABLE %[1]s (id int PRIMARY KEY, v int NOT NULL, pad text NOT NULL) WITH (fillfactor = 70);
			INSERT INTO %[1]s SELECT g, 0, repeat('x', 100) FROM generate_series(1, 60000) g`, tbl)); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Exec(ctx, "VACUUM ANALYZE "+tbl); err != nil {
			b.Fatal(err)
		}
		if wt.fn != "" {
			if _, err := AttachUsing(ctx, p, tbl, wt.fn); err != nil {
				b.Fatal(err)
			}
		}
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
	for _, wt := range writeCostTables {
		tbl := wt.name
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
		tps := map[string][]float64{}
		ratio := map[string][]float64{}
		for round := range writeCostRounds * b.N {
			line := fmt.Sprintf("c%d round %d:", clients, round+1)
			this := map[string]float64{}
			for i := range writeCostTables {
				tbl := writeCostTables[(i+round)%len(writeCostTables)].name
				this[tbl] = run(tbl, clients)
				tps[tbl] = append(tps[tbl], this[tbl])
				line += fmt.Sprintf(" %s %.0f", tbl, this[tbl])
			}
			for _, wt := range writeCostTables[1:] {
				r := this[wt.name] / this["wc_plain"]
				ratio[wt.name] = append(ratio[wt.name], r)
				line += fmt.Sprintf(", %s/plain %.3f", wt.fn, r)
			}
			b.Log(line)
		}
		for _, wt := range writeCostTables {
			label := string(wt.fn)
			if label == "" {
				label = "plain"
			}
			b.ReportMetric(median(tps[wt.name]), fmt.Sprintf("%s-upd/s-c%d", label, clients))
			if wt.fn != "" {
				b.ReportMetric(median(ratio[wt.name]), fmt.Sprintf("%s/plain-c%d", label, clients))
				b.ReportMetric(slices.Min(ratio[wt.name]), fmt.Sprintf("%s/plain-min-c%d", label, clients))
				b.ReportMetric(slices.Max(ratio[wt.name]), fmt.Sprintf("%s/plain-max-c%d", label, clients))
			}
		}
	}
	b.Logf("relay: %d rows in %d drains, %d notifications, %d vacuums", relay.Stats.Rows.Load(), relay.Stats.Drains.Load(), relay.Stats.Notifications.Load(), relay.Stats.Vacuums.Load())
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
