package readwrite

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
)

// The published figures the bench compares with ("Cache-aside without the
// race", pg_local_cache 3.1.0: 64 readers, 60k rows, 30,000 UPDATE/s;
// docs/bench.md).
var seedReads = map[string]float64{StackPgcache: 161919, StackCacheAside: 42294, StackSQL: 106949}

func printTables(w io.Writer, results []Result) {
	stacks := byKind(results, "stack")
	if len(stacks) > 0 {
		fmt.Fprintln(w, "\nReads while writing")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "stack\treads/s\thit ratio\tp50 ms\tp99 ms\tUPDATE/s\tcached\tstale\tseed reads/s\t")
		for _, r := range stacks {
			hit := "—"
			if r.HitRatio != nil {
				hit = fmt.Sprintf("%.3f", *r.HitRatio)
			}
			seed := "—"
			if v, ok := seedReads[r.Stack]; ok {
				seed = fmt.Sprintf("%.0f", v)
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.3f\t%.3f\t%.0f\t%d\t%d\t%s\t\n",
				r.Stack, r.ReadsPerS, hit, r.P50ms, r.P99ms, r.UpdatesPerS, r.Entries, r.Stale, seed)
		}
		tw.Flush()
		fmt.Fprintln(w, "seed: the figures of \"Cache-aside without the race\" (pg_local_cache 3.1.0, two 16-vCPU VMs; docs/bench.md)")
		pg, ca, sql := find(stacks, StackPgcache), find(stacks, StackCacheAside), find(stacks, StackSQL)
		if pg != nil && sql != nil {
			fmt.Fprintf(w, "pgcache / prepared-sql reads: %.2f (seed 1.51)\n", pg.ReadsPerS/sql.ReadsPerS)
		}
		if pg != nil && ca != nil {
			fmt.Fprintf(w, "pgcache / valkey-cache-aside reads: %.2f (seed 3.83)\n", pg.ReadsPerS/ca.ReadsPerS)
		}
		if note := unevenWrites(stacks); note != "" {
			fmt.Fprintln(w, note)
		}
		if line := schedLine(stacks); line != "" {
			fmt.Fprintln(w, line)
		}
		for _, r := range stacks {
			for _, n := range r.StaleNotes {
				fmt.Fprintf(w, "stale in %s: %s\n", r.Stack, n)
			}
		}
		if lines := cscReport(stacks); len(lines) > 0 {
			fmt.Fprintln(w)
			for _, l := range lines {
				fmt.Fprintln(w, l)
			}
		}
	}
	oh := byKind(results, "write_overhead")
	if len(oh) > 0 {
		fmt.Fprintln(w, "\nWrite overhead (UPDATE/s)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "writers\tvariant\tUPDATE/s\tvs plain\t")
		for _, r := range oh {
			variant := r.Variant
			if r.Trigger != "" {
				variant += " (" + r.Trigger + " trigger)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t\n", r.Writers, variant, r.UpdatesPerS, vsPlain(oh, r))
		}
		tw.Flush()
		fmt.Fprintln(w, "seed (\"Cache-aside without the race\"): 3.6–8.2% lower through pg_local_cache; 28.9–63.7% lower for UPDATE followed by Valkey DEL")
	}
}

// The targets of the pgcache-csc stack (issue 18), in the same run.
const (
	targetCSCvsSQL     = 10.0
	targetCSCvsPgcache = 3.0
	targetPushP99ms    = 50.0
)

// cscReport is the pgcache-csc stack's own lines: its app caches' audit,
// the commit-to-push lag pgcache measured, the commit-to-invalidation lag
// the apps saw, and the targets.
func cscReport(stacks []Result) []string {
	c := find(stacks, StackCSC)
	if c == nil {
		return nil
	}
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	cached, stale := c.AppCached()
	hit := "—"
	if c.HitRatio != nil {
		hit = fmt.Sprintf("%.3f", *c.HitRatio)
	}
	form := "MULTI/PTTL/GET/EXEC"
	if c.AppStaticTTL {
		form = "GET alone"
	}
	apps := fmt.Sprintf("%d app clients", c.AppClients)
	if c.AppClients == 1 {
		apps = "1 app client"
	}
	add("pgcache-csc: %s (valkey-go DoCache, %s, TTL %gs), app-cache hit ratio %s; audit: app caches %d cached, %d stale; L1 %d cached, %d stale",
		apps, form, c.AppTTL, hit, cached, stale, c.L1Entries, c.L1Stale)
	if c.Note != "" {
		add("  note: %s", c.Note)
	}
	for i, a := range c.Apps {
		if a.Deaf {
			add("  app client %d ignores invalidations (test): %d cached, %d stale", i, a.Cached, a.Stale)
		}
	}
	p := c.CommitToPush
	switch {
	case p == nil || !p.Exported:
		add("commit-to-push lag (%s): not exported", pushLagMetric)
	default:
		add("commit-to-push lag (%s, the run's share): %d pushes, p50 %.3f ms, p99 %.3f ms", pushLagMetric, p.Count, p.P50ms, p.P99ms)
		var b strings.Builder
		var prev uint64
		for _, x := range p.Buckets {
			le := "+Inf"
			if x.LE != math.MaxFloat64 {
				le = strconv.FormatFloat(x.LE*1000, 'g', -1, 64)
			}
			fmt.Fprintf(&b, " ≤%s:%d", le, x.Count-prev)
			prev = x.Count
		}
		add("  per bucket (ms: pushes):%s", b.String())
	}
	if l := c.ClientLag; l != nil {
		add("commit-to-invalidation lag at the app (writer's call returned → valkey-go OnInvalidations): %d samples, p50 %.3f ms, p99 %.3f ms, max %.3f ms; %d unattributed, %d drop-everything",
			l.Samples, l.P50ms, l.P99ms, l.MaxMs, l.Unattributed, l.DropAll)
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	if sql := find(stacks, StackSQL); sql != nil && sql.ReadsPerS > 0 {
		x := c.ReadsPerS / sql.ReadsPerS
		add("target pgcache-csc / prepared-sql reads: %.2f (≥ %g: %s)", x, targetCSCvsSQL, met(x >= targetCSCvsSQL))
	}
	if pg := find(stacks, StackPgcache); pg != nil && pg.ReadsPerS > 0 {
		x := c.ReadsPerS / pg.ReadsPerS
		add("target pgcache-csc / pgcache reads: %.2f (≥ %g: %s)", x, targetCSCvsPgcache, met(x >= targetCSCvsPgcache))
	}
	add("target pgcache-csc stale: %d (0: %s)", c.Stale, met(c.Stale == 0))
	if p == nil || !p.Exported {
		add("target commit-to-push p99 ≤ %g ms: not exported", targetPushP99ms)
	} else if p.Count == 0 {
		add("target commit-to-push p99 ≤ %g ms: no pushes measured", targetPushP99ms)
	} else {
		add("target commit-to-push p99: %.3f ms (≤ %g ms: %s)", p.P99ms, targetPushP99ms, met(p.P99ms <= targetPushP99ms))
	}
	return out
}

// unevenWrites says so when the writers fell short of the asked rate in
// some stack: the stacks then ran under different write loads (on a small
// machine the stack that leaves PostgreSQL more CPU gets more UPDATEs
// done), and the read ratios compare unlike runs.
func unevenWrites(stacks []Result) string {
	lo, hi, rate := 0.0, 0.0, 0
	for i, r := range stacks {
		if i == 0 || r.UpdatesPerS < lo {
			lo = r.UpdatesPerS
		}
		hi = max(hi, r.UpdatesPerS)
		rate = r.UpdateRate
	}
	if rate == 0 || len(stacks) < 2 || lo >= 0.95*float64(rate) {
		return ""
	}
	return fmt.Sprintf("note: the writers reached %.0f–%.0f of the %d UPDATE/s asked for, so the stacks ran under different write loads;\n"+
		"      --update-rate %d (under the lowest) compares them under the same one", lo, hi, rate, int(lo*0.9)/100*100)
}

// vsPlain is r's throughput change against the plain table at the same
// number of writers.
func vsPlain(oh []Result, r Result) string {
	for _, p := range oh {
		if p.Variant == "plain" && p.Writers == r.Writers && p.UpdatesPerS > 0 {
			return fmt.Sprintf("%+.1f%%", 100*(r.UpdatesPerS/p.UpdatesPerS-1))
		}
	}
	return "—"
}

func byKind(results []Result, kind string) []Result {
	var out []Result
	for _, r := range results {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// schedLine is the load generator's scheduling latency, per stack.
func schedLine(stacks []Result) string {
	var parts []string
	for _, r := range stacks {
		if l := r.LoadSched; l != nil {
			parts = append(parts, fmt.Sprintf("%s %.3g/%.3g ms (%.1f%% over 10 ms)", r.Stack, l.P50ms, l.P99ms, 100*l.Over10ms))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "the bench's own scheduling latency (Go runtime, p50/p99): " + strings.Join(parts, ", ")
}

func find(results []Result, stack string) *Result {
	for i := range results {
		if results[i].Stack == stack {
			return &results[i]
		}
	}
	return nil
}

func writeJSONL(path string, results []Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for i := range results {
		if err := enc.Encode(&results[i]); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// writeHTML writes a self-contained page: bar charts as inline SVG, no
// scripts, nothing fetched.
func writeHTML(w io.Writer, results []Result) error {
	var b strings.Builder
	b.WriteString(`<!doctype html><meta charset="utf-8"><title>pgcache bench coherence</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:60em}svg{display:block;margin:1em 0}
table{border-collapse:collapse}td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:right}</style>
<h1>Reads while writing</h1>`)
	stacks := byKind(results, "stack")
	var reads, hits, stale []bar
	for _, r := range stacks {
		reads = append(reads, bar{r.Stack, r.ReadsPerS, fmt.Sprintf("%.0f/s", r.ReadsPerS)})
		if r.HitRatio != nil {
			hits = append(hits, bar{r.Stack, *r.HitRatio, fmt.Sprintf("%.3f", *r.HitRatio)})
		}
		stale = append(stale, bar{r.Stack, float64(r.Stale), fmt.Sprint(r.Stale)})
	}
	b.WriteString(barSVG("Reads per second", reads))
	b.WriteString(barSVG("Hit ratio", hits))
	b.WriteString(barSVG("Stale entries after the writes settled", stale))
	if lines := cscReport(stacks); len(lines) > 0 {
		b.WriteString("<h2>pgcache-csc</h2><pre>")
		for _, l := range lines {
			b.WriteString(html.EscapeString(l) + "\n")
		}
		b.WriteString("</pre>")
	}
	var oh []bar
	for _, r := range byKind(results, "write_overhead") {
		oh = append(oh, bar{fmt.Sprintf("%s, %d writers", r.Variant, r.Writers), r.UpdatesPerS, fmt.Sprintf("%.0f/s", r.UpdatesPerS)})
	}
	if len(oh) > 0 {
		b.WriteString("<h1>Write overhead</h1>")
		b.WriteString(barSVG("UPDATE per second", oh))
	}
	b.WriteString("<h1>Records</h1><pre>")
	for _, r := range results {
		line, _ := json.Marshal(r)
		b.WriteString(html.EscapeString(string(line)) + "\n")
	}
	b.WriteString("</pre>")
	_, err := io.WriteString(w, b.String())
	return err
}

type bar struct {
	label string
	value float64
	text  string
}

// barSVG draws horizontal bars scaled to the largest value.
func barSVG(title string, bars []bar) string {
	if len(bars) == 0 {
		return ""
	}
	const width, rowH, labelW = 640, 26, 190
	top := 0.0
	for _, b := range bars {
		top = max(top, b.value)
	}
	var s strings.Builder
	fmt.Fprintf(&s, `<h2>%s</h2><svg width="%d" height="%d" role="img" aria-label="%s">`,
		html.EscapeString(title), width, rowH*len(bars)+4, html.EscapeString(title))
	for i, b := range bars {
		w := 0.0
		if top > 0 {
			w = (width - labelW - 90) * b.value / top
		}
		y := i * rowH
		fmt.Fprintf(&s, `<text x="0" y="%d" font-size="13">%s</text><rect x="%d" y="%d" width="%.1f" height="18" fill="#4a7fb5"/><text x="%.1f" y="%d" font-size="12">%s</text>`,
			y+15, html.EscapeString(b.label), labelW, y+2, w, float64(labelW)+w+6, y+15, html.EscapeString(b.text))
	}
	s.WriteString(`</svg>`)
	return s.String()
}
