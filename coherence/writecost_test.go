package coherence

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// BenchmarkFenceWriteCost measures what the fence triggers cost writers:
// pgbench UPDATEs by primary key on a plain table and on an attached one,
// with 1 and 16 clients, in the same run. Run it alone:
//
//	go test -run '^$' -bench FenceWriteCost -benchtime 1x ./coherence/
//
// It reports updates/s for each and the attached table's ratio to plain.
func BenchmarkFenceWriteCost(b *testing.B) {
	ctx := context.Background()
	p := poolB(b)
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
	dir := b.TempDir()
	os.Chmod(dir, 0o755)
	for _, clients := range []int{1, 16} {
		tps := map[string]float64{}
		for _, tbl := range []string{"wc_plain", "wc_fenced"} {
			script := filepath.Join(dir, tbl+".sql")
			os.WriteFile(script, []byte(fmt.Sprintf("\\set id random(1, 60000)\nUPDATE %s SET v = v + 1 WHERE id = :id;\n", tbl)), 0o644)
			for range b.N {
				out, err := pg.ClientCommand(ctx, "pgbench", "-n", "-M", "prepared", "-c", strconv.Itoa(clients),
					"-j", "2", "-T", "10", "-f", script, pg.Database).CombinedOutput()
				if err != nil {
					b.Fatalf("pgbench: %v\n%s", err, out)
				}
				m := regexp.MustCompile(`tps = ([0-9.]+)`).FindSubmatch(out)
				if m == nil {
					b.Fatalf("no tps in pgbench output:\n%s", out)
				}
				tps[tbl], _ = strconv.ParseFloat(string(m[1]), 64)
			}
		}
		b.ReportMetric(tps["wc_plain"], fmt.Sprintf("plain-upd/s-c%d", clients))
		b.ReportMetric(tps["wc_fenced"], fmt.Sprintf("fenced-upd/s-c%d", clients))
		b.ReportMetric(tps["wc_fenced"]/tps["wc_plain"], fmt.Sprintf("fenced/plain-c%d", clients))
	}
}
