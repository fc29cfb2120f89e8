package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// chromiumInstall is how Debian provides the browser the report test
// renders with (`make test-packages` installs it).
const chromiumInstall = "apt-get install chromium"

// runEngines are the engines of a full run, in run order, with a GET rate
// each: what `pgcache bench quick` records.
var runEngines = []struct {
	name string
	rps  float64
}{
	{"memory", 106658.98}, {"valkey", 77122.39}, {"standard-postgresql", 53319.26},
	{"optimized-postgresql", 53749.43}, {"postgres-tsid", 53991.93},
	{"async-postgresql", 41234.56}, {"tiered-postgresql", 98765.43},
}

// tieredL1 is the tiered engine's L1 hit ratio in fullRun.
const tieredL1 = 0.873

func fullRun() []Record {
	var recs []Record
	for i, e := range runEngines {
		for _, phase := range []string{PhaseSet, PhaseGet} {
			r := Record{Engine: e.name, Proto: "http", Phase: phase, Status: StatusOK,
				Requests: uint64(e.rps * 5), RPS: e.rps, MeanMS: 1.9, P50MS: 1.4 + float64(i)/10, P90MS: 4.4, P95MS: 5.2, P99MS: 7.6, MaxMS: 26.7,
				Success: 1, Storage: "storage of " + e.name, Keys: 100000, Verified: true,
				Timeline: []Point{{T: 0, Requests: uint64(e.rps), P99MS: 7}, {T: 1, Requests: uint64(e.rps), P99MS: 8}}}
			if phase == PhaseSet {
				r.RPS /= 2
			}
			if phase == PhaseGet && e.name == "tiered-postgresql" {
				l1 := tieredL1
				r.L1HitRatio = &l1
			}
			recs = append(recs, r)
		}
	}
	return recs
}

// probe measures the rendered results table: one line per row, the row's
// text as shown, and whether its first cell (the engine) takes more than
// one line; and one more line if the page is wider than the window. The test adds it to a copy of report.html; the report itself
// runs no script.
const probe = `<pre id="probe"></pre><script>
const out = [];
for (const tr of document.querySelectorAll("table tr")) {
	const first = tr.cells[0];
	const lines = Math.round(first.getBoundingClientRect().height / parseFloat(getComputedStyle(first).lineHeight));
	const cells = Array.from(tr.cells, c => c.innerText.trim());
	out.push("row\t" + (lines > 1 ? "wrapped" : "one-line") + "\t" + cells.join("\t"));
}
if (document.documentElement.scrollWidth > window.innerWidth) {
	out.push("row\toverflow\tthe page is " + document.documentElement.scrollWidth + " px wide in a " + window.innerWidth + " px window");
}
document.getElementById("probe").textContent = out.join("\n");
</script>`

// report.html as a browser shows it: every engine's figures with the
// "vs memory" and seed columns and the L1 hit ratio, as the terminal's
// summary has them, no engine name wrapped, and p90, p95 and p99 apart on
// the latency chart.
func TestReportInChromium(t *testing.T) {
	browser, err := testenv.LookPath("chromium", chromiumInstall)
	if err != nil {
		t.Fatalf("rendering report.html needs Chromium: %v", err)
	}
	dir := t.TempDir()
	recs := fullRun()
	var page strings.Builder
	if err := WriteHTML(&page, Page{Title: "pgcache bench quick", Command: "pgcache bench quick", Started: time.Now(), Records: recs}); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	probed := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probed, []byte(strings.Replace(html, "</body>", probe+"</body>", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A screenshot of the report itself, kept for a person to look at
	// with PGCACHE_REPORT_SCREENSHOT=file.png.
	if shot := os.Getenv("PGCACHE_REPORT_SCREENSHOT"); shot != "" {
		plain := filepath.Join(dir, "report.html")
		os.WriteFile(plain, []byte(html), 0o644)
		abs, _ := filepath.Abs(shot)
		chromium(t, browser, "--screenshot="+abs, "--window-size=1280,3600", "file://"+plain)
	}

	dom := chromium(t, browser, "--window-size=1280,2000", "--dump-dom", "file://"+probed)
	rows := map[string][]string{} // "engine proto phase" -> cells
	for _, line := range strings.Split(dom, "\n") {
		line, _, _ = strings.Cut(strings.TrimPrefix(line, `<pre id="probe">`), "</pre>")
		f := strings.Split(line, "\t")
		if len(f) < 3 || f[0] != "row" {
			continue
		}
		switch f[1] {
		case "wrapped":
			t.Errorf("the results table wraps the engine cell of %q", f[2:])
		case "overflow":
			t.Errorf("%s: the results table does not fit", f[2])
			continue
		}
		if len(f) < 5 {
			continue
		}
		rows[f[2]+" "+f[3]+" "+f[4]] = f[2:]
	}
	if len(rows) == 0 {
		t.Fatalf("Chromium rendered no results table:\n%s", dom)
	}
	head := rows["Engine Proto Phase"]
	col := func(name string) int {
		for i, h := range head {
			if h == name {
				return i
			}
		}
		t.Fatalf("the results table has no %q column: %q", name, head)
		return -1
	}
	rps, vsMem, seed, l1 := col("RPS"), col("vs memory"), col("seed"), col("L1 hits")
	mem := runEngines[0].rps
	for _, e := range runEngines {
		get := rows[e.name+" http get"]
		if get == nil {
			t.Errorf("no GET row for %s", e.name)
			continue
		}
		want := map[int]string{rps: Rate(e.rps), vsMem: fmt.Sprintf("%.2f", e.rps/mem), seed: seedCell(e.name), l1: "-"}
		if e.name == "tiered-postgresql" {
			want[l1] = "87.3%"
		}
		for i, w := range want {
			if get[i] != w {
				t.Errorf("%s GET, column %s: shows %q, want %q", e.name, head[i], get[i], w)
			}
		}
		if rows[e.name+" http set"] == nil {
			t.Errorf("no SET row for %s", e.name)
		}
	}
	if !strings.Contains(dom, "tiered-postgresql http: the L1 served 87.3% of the GETs") {
		t.Errorf("the page does not say what the L1 served")
	}

	// The percentile chart's points: p90, p95 and p99 at least 60 px apart.
	pts := regexp.MustCompile(`<text x="([0-9.]+)" y="[0-9.]+" class="tick" text-anchor="middle">(p\d\d)</text>`).FindAllStringSubmatch(html, -1)
	x := map[string]float64{}
	for _, p := range pts {
		var v float64
		fmt.Sscan(p[1], &v)
		x[p[2]] = v
	}
	if len(x) != 4 || x["p95"]-x["p90"] < 60 || x["p99"]-x["p95"] < 60 {
		t.Errorf("percentile ticks at %v: p90, p95 and p99 bunch", x)
	}
}

// chromium runs headless Chromium with args and returns what it printed.
func chromium(t *testing.T, browser string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir()}
	if os.Geteuid() == 0 {
		base = append(base, "--no-sandbox") // Chromium refuses root with its sandbox
	}
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}
