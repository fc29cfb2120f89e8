package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"time"
)

// Page is report.html: the records of a run and how it was started.
type Page struct {
	Title   string
	Command string
	Started time.Time
	Records []Record
}

// WriteHTML writes the report: what was applied, charts of throughput, of
// latency percentiles and of both over time, and the tables of the summary.
func WriteHTML(w io.Writer, p Page) error {
	colors := engineColors(p.Records)
	label := func(r *Record) string { return r.Engine + " (" + r.Proto + ")" }
	ran := func(phase string) []*Record {
		var out []*Record
		for i := range p.Records {
			r := &p.Records[i]
			if r.Phase == phase && (r.Status == StatusOK || r.Status == StatusInterrupted) {
				out = append(out, r)
			}
		}
		return out
	}
	gets, sets := ran(PhaseGet), ran(PhaseSet)

	throughput := func(title string, recs []*Record) template.HTML {
		var bars []bar
		for _, r := range recs {
			bars = append(bars, bar{Label: label(r), Value: r.RPS, Text: Rate(r.RPS) + " req/s",
				Color: colors[r.Engine], Dashed: r.Proto == "resp"})
		}
		return template.HTML(barChart(title, bars))
	}
	var pct, rpsTime, p99Time []series
	for _, r := range gets {
		c, dashed := colors[r.Engine], r.Proto == "resp"
		pct = append(pct, series{Name: label(r), Color: c, Dashed: dashed,
			X: []float64{tailX(50), tailX(90), tailX(95), tailX(99)}, Y: []float64{r.P50MS, r.P90MS, r.P95MS, r.P99MS}})
		rt := series{Name: label(r), Color: c, Dashed: dashed}
		pt := rt
		for _, pnt := range r.Timeline {
			// A second that runs past the phase's end is partial: drawn,
			// it would show a drop that did not happen.
			if pnt.Requests == 0 || (pnt.T > 0 && float64(pnt.T+1) > r.DurationS+partialSlack) {
				continue
			}
			rt.X, rt.Y = append(rt.X, float64(pnt.T)), append(rt.Y, float64(pnt.Requests))
			pt.X, pt.Y = append(pt.X, float64(pnt.T)), append(pt.Y, pnt.P99MS)
		}
		rpsTime, p99Time = append(rpsTime, rt), append(p99Time, pt)
	}
	pctTicks := map[float64]string{tailX(50): "p50", tailX(90): "p90", tailX(95): "p95", tailX(99): "p99"}

	var applied Applied
	if len(p.Records) > 0 {
		applied = p.Records[0].Applied
	}
	data := map[string]any{
		"Title":    p.Title,
		"Command":  p.Command,
		"Started":  p.Started.Format(time.RFC1123),
		"Applied":  applied,
		"Rows":     resultRows(p.Records),
		"Notes":    getNotes(p.Records),
		"Engines":  engineList(p.Records),
		"GetRPS":   throughput("GET throughput (requests per second)", gets),
		"SetRPS":   throughput("SET throughput (requests per second)", sets),
		"Pct":      template.HTML(lineChart("GET latency percentiles", "percentile (spaced by the share of requests slower: 50%, 10%, 5%, 1%)", "ms", pct, pctTicks)),
		"RPSTime":  template.HTML(lineChart("GET throughput over time", "seconds", "requests per second", rpsTime, nil)),
		"P99Time":  template.HTML(lineChart("GET p99 latency over time", "seconds", "ms", p99Time, nil)),
		"HaveGets": len(gets) > 0,
		"HaveSets": len(sets) > 0,
	}
	return page.Execute(w, data)
}

// tailX places percentile p on the latency chart's x axis: by
// -log10 of the share of requests slower than it, so p50, p90, p95 and
// p99 stand at 0.3, 1, 1.3 and 2 rather than bunched at the right end.
func tailX(p float64) float64 { return -math.Log10(1 - p/100) }

// resultRow is a line of the results table: a record, and for a GET the
// columns the terminal's summary adds to it.
type resultRow struct {
	Record
	VsMemory, Seed, L1 string // "" where the summary shows none
}

// resultRows are the records with the summary's columns: GET throughput
// over the memory engine's on the same protocol, the same ratio in the
// published comparison, and the share of GETs the L1 served.
func resultRows(recs []Record) []resultRow {
	mem := memoryRPS(recs)
	rows := make([]resultRow, 0, len(recs))
	for _, r := range recs {
		row := resultRow{Record: r}
		if r.Phase == PhaseGet {
			row.VsMemory, row.Seed = ratioCell(r.RPS, mem[r.Proto]), seedCell(r.Engine)
			row.L1 = "-"
			if r.L1HitRatio != nil {
				row.L1 = fmt.Sprintf("%.1f%%", *r.L1HitRatio*100)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// partialSlack is how far (in seconds) a second may run past the phase's
// measured end and still count as whole: the end is the last reply, a few
// milliseconds after the time bound.
const partialSlack = 0.1

// engineList is each engine once, with what it stores and in how many
// background rows, for the report's legend.
func engineList(recs []Record) []Record {
	seen := map[string]bool{}
	var out []Record
	for _, r := range recs {
		if !seen[r.Engine] && r.Storage != "" {
			seen[r.Engine] = true
			out = append(out, r)
		}
	}
	return out
}

// engineColors gives each engine a color in order of appearance.
func engineColors(recs []Record) map[string]string {
	colors := map[string]string{}
	for _, r := range recs {
		if _, ok := colors[r.Engine]; !ok {
			colors[r.Engine] = palette[len(colors)%len(palette)]
		}
	}
	return colors
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"count": func(v any) string {
		switch n := v.(type) {
		case uint64:
			return Count(n)
		case int64:
			return Count(uint64(max(n, 0)))
		case int:
			return Count(uint64(max(n, 0)))
		}
		return fmt.Sprint(v)
	},
	"rate":   Rate,
	"millis": Millis,
	"pct":    func(f float64) string { return fmt.Sprintf("%.2f%%", f*100) },
	"ok":     func(s string) bool { return s == StatusOK || s == StatusInterrupted },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,sans-serif;margin:24px auto;max-width:1200px;color:#222;padding:0 16px}
h1{font-size:22px}h2{font-size:17px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums;font-size:13px}
th,td{padding:3px 6px;border-bottom:1px solid #ddd;text-align:right;white-space:nowrap}th:first-child,td:first-child{text-align:left}
td.error{white-space:normal;text-align:left}
.notes{font-size:13px;color:#444}
th{background:#f4f4f4}
code{background:#f4f4f4;padding:1px 4px}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px}dt{font-weight:600}dd{margin:0}
.bad{color:#b00}
svg{display:block;margin:12px 0}
svg .title{font-size:14px;font-weight:600}svg .label,svg .value{font-size:12px}
svg .tick,svg .axis{font-size:11px;fill:#555}svg .grid{stroke:#e4e4e4}
</style></head><body>
<h1>{{.Title}}</h1>
<p>Started {{.Started}}. Command: <code>{{.Command}}</code></p>

<h2>What was applied</h2>
<dl>
<dt>pgcache</dt><dd>{{.Applied.Version}}, {{.Applied.Server}}, GOMAXPROCS={{.Applied.ServerGOMAXPROCS}}, GOMEMLIMIT={{.Applied.ServerGOMEMLIMIT}}</dd>
<dt>host</dt><dd>{{.Applied.HostCPUs}} CPUs, {{.Applied.HostMemory}} memory, shared by pgcache, the servers and the load generator</dd>
{{with .Applied.Postgres}}<dt>PostgreSQL</dt><dd>{{.}}</dd>{{end}}
{{with .Applied.PostgresCaps}}<dt>PostgreSQL caps</dt><dd>{{.}}</dd>{{end}}
{{with .Applied.PostgresTuning}}<dt>PostgreSQL tuning</dt><dd>{{range $k, $v := .}}<code>{{$k}}={{$v}}</code> {{end}}</dd>{{end}}
{{with .Applied.Valkey}}<dt>Valkey</dt><dd>{{.}}</dd>{{end}}
{{with .Applied.ValkeyCaps}}<dt>Valkey caps</dt><dd>{{.}}</dd>{{end}}
{{with .Applied.ValkeyTuning}}<dt>Valkey tuning</dt><dd>{{range $k, $v := .}}<code>{{$k}}={{$v}}</code> {{end}}</dd>{{end}}
</dl>

<h2>Engines</h2>
<dl>
{{range .Engines}}<dt>{{.Engine}}</dt><dd>{{.Storage}}; {{count .Keys}} {{.KeyKind}} keys{{if .Rows}}, {{count .Rows}} background rows{{end}}; route <code>{{.Route}}</code>{{with .Load}}; {{.}}{{end}}</dd>
{{end}}</dl>

<h2>Throughput</h2>
<p>Solid bars: HTTP (vegeta); hatched bars: RESP (pipelined driver).</p>
{{if .HaveGets}}{{.GetRPS}}{{end}}
{{if .HaveSets}}{{.SetRPS}}{{end}}

{{if .HaveGets}}
<h2>Latency</h2>
{{.Pct}}
<h2>Over time</h2>
{{.RPSTime}}
{{.P99Time}}
{{end}}

<h2>Results</h2>
<table>
<tr><th>Engine</th><th>Proto</th><th>Phase</th><th>Requests</th><th>RPS</th><th title="GET RPS over the memory engine's, same protocol">vs memory</th><th title="the same ratio in the published comparison">seed</th><th title="share of the GETs the L1 served">L1 hits</th><th>Mean</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>Max</th><th>Success</th><th>Verified</th></tr>
{{range .Rows}}{{if ok .Status}}
<tr><td>{{.Engine}}</td><td>{{.Proto}}</td><td>{{.Phase}}{{if eq .Status "interrupted"}} (interrupted){{end}}</td>
<td>{{count .Requests}}</td><td>{{rate .RPS}}</td><td>{{.VsMemory}}</td><td>{{.Seed}}</td><td>{{.L1}}</td><td>{{millis .MeanMS}}</td><td>{{millis .P50MS}}</td><td>{{millis .P90MS}}</td><td>{{millis .P95MS}}</td><td>{{millis .P99MS}}</td><td>{{millis .MaxMS}}</td>
<td{{if lt .Success 1.0}} class="bad"{{end}}>{{pct .Success}}</td><td>{{if .Verified}}yes{{else}}<span class="bad" title="{{.Verify}}">no</span>{{end}}</td></tr>
{{else}}
<tr><td>{{.Engine}}</td><td>{{.Proto}}</td><td>{{.Phase}}</td><td colspan="13" class="bad error">{{.Status}}: {{.Error}}</td></tr>
{{end}}{{end}}
</table>
{{with .Notes}}<div class="notes">{{range .}}<p>{{.}}</p>{{end}}</div>{{end}}
</body></html>
`))
