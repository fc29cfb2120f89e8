package readwrite

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
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
			fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.3f\t%.3f\t%.0f\t%d\t%d\t%.0f\t\n",
				r.Stack, r.ReadsPerS, hit, r.P50ms, r.P99ms, r.UpdatesPerS, r.Entries, r.Stale, seedReads[r.Stack])
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
