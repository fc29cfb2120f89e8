package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
)

// SeedName names the published comparison `pgcache bench` reproduces.
const SeedName = `"PostgreSQL as a High-Performance Cache"`

// SeedGETRatio is each engine's GET throughput over the memory engine's in
// the published comparison (SeedName: 600 s, 250 workers, 4-core server,
// PostgreSQL and Valkey capped at 2 CPUs and 4 GB), for comparison with a
// run's own ratios. docs/bench.md has the figures they come from.
var SeedGETRatio = map[string]float64{
	"memory":               1,
	"valkey":               77122.39 / 106658.98,
	"postgres-tsid":        53991.93 / 106658.98,
	"optimized-postgresql": 53749.43 / 106658.98,
	"standard-postgresql":  53319.26 / 106658.98,
}

// Summary prints the tables of the published comparison: GET endurance, then SET
// seeding, one row per engine and protocol, with each GET throughput as a
// ratio of the memory engine's over the same protocol.
func Summary(w io.Writer, recs []Record) error {
	for _, phase := range []string{PhaseGet, PhaseSet} {
		title := "GET endurance"
		if phase == PhaseSet {
			title = "SET seeding"
		}
		fmt.Fprintf(w, "\n%s\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := "Engine\tProto\tRequests\tRPS\tMean\tp50\tp90\tp95\tp99\tMax\tSuccess\t"
		if phase == PhaseGet {
			head += "vs memory\tseed\t"
		}
		fmt.Fprintln(tw, head)
		memRPS := memoryRPS(recs)
		// Engines that did not run are listed under the table: a reason
		// in a cell would stretch its column.
		var notRun []string
		for _, r := range recs {
			if r.Phase != phase {
				continue
			}
			if r.Status == StatusFailed || r.Status == StatusUnavailable {
				notRun = append(notRun, fmt.Sprintf("  %s %s: %s: %s", r.Engine, r.Proto, r.Status, oneLine(r.Error)))
				continue
			}
			row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f%%\t",
				r.Engine, r.Proto, Count(r.Requests), Rate(r.RPS),
				Millis(r.MeanMS), Millis(r.P50MS), Millis(r.P90MS), Millis(r.P95MS), Millis(r.P99MS), Millis(r.MaxMS),
				r.Success*100)
			if phase == PhaseGet {
				row += ratioCell(r.RPS, memRPS[r.Proto]) + "\t" + seedCell(r.Engine) + "\t"
			}
			if r.Status == StatusInterrupted {
				row += " (interrupted)"
			}
			fmt.Fprintln(tw, row)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if phase == PhaseGet {
			for _, n := range getNotes(recs) {
				fmt.Fprintln(w, "  "+n)
			}
		}
		for _, l := range notRun {
			fmt.Fprintln(w, l)
		}
	}
	return nil
}

// memoryRPS is the memory engine's GET throughput by protocol: the
// baseline of the "vs memory" column.
func memoryRPS(recs []Record) map[string]float64 {
	mem := map[string]float64{}
	for _, r := range recs {
		if r.Engine == "memory" && r.Phase == PhaseGet && r.Status == StatusOK {
			mem[r.Proto] = r.RPS
		}
	}
	return mem
}

// getNotes explain the GET table's columns, and give the share of GETs
// each L1 served: the lines under the terminal's table and report.html's.
func getNotes(recs []Record) []string {
	notes := []string{"vs memory: GET RPS over the memory engine's, same protocol; seed: the same ratio in " +
		SeedName + " (HTTP, 600 s; docs/bench.md has its figures)"}
	for _, r := range recs {
		if r.Phase == PhaseGet && r.L1HitRatio != nil {
			notes = append(notes, fmt.Sprintf("%s %s: the L1 served %.1f%% of the GETs (a SET does not fill it: a key is served from memory from its second read on)",
				r.Engine, r.Proto, *r.L1HitRatio*100))
		}
	}
	return notes
}

func ratioCell(rps, mem float64) string {
	if mem == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", rps/mem)
}

func seedCell(engine string) string {
	if r, ok := SeedGETRatio[engine]; ok {
		return fmt.Sprintf("%.2f", r)
	}
	return "-"
}

// oneLine keeps the first line of a multi-line error for a table cell.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Count writes n with thousands separators.
func Count(n uint64) string { return humanize.Comma(int64(n)) }

// Rate writes a rate like 106,658.98.
func Rate(r float64) string {
	whole, frac, _ := strings.Cut(strconv.FormatFloat(r, 'f', 2, 64), ".")
	n, _ := strconv.ParseInt(whole, 10, 64)
	return humanize.Comma(n) + "." + frac
}

// Millis writes milliseconds as vegeta's reports do: µs under a
// millisecond, ms under a second, then seconds.
func Millis(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%.1fµs", ms*1000)
	case ms < 1000:
		return fmt.Sprintf("%.3fms", ms)
	}
	return fmt.Sprintf("%.3fs", ms/1000)
}
