package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func sampleRecords() []Record {
	mk := func(engine, proto, phase string, rps float64) Record {
		return Record{
			Engine: engine, Proto: proto, Phase: phase, Status: StatusOK,
			Requests: uint64(rps * 5), RPS: rps, MeanMS: 1.959, P50MS: 1.482, P90MS: 4.415, P95MS: 5.287, P99MS: 7.687, MaxMS: 26.758,
			Success: 1, Storage: "kv <b>", Keys: 100, Verified: true,
			Applied:  Applied{Server: "child process", ServerGOMAXPROCS: 2, PostgresTuning: map[string]string{"shared_buffers": "1GB"}},
			Timeline: []Point{{T: 0, Requests: uint64(rps), P50MS: 1, P99MS: 7}, {T: 1, Requests: uint64(rps), P50MS: 1.2, P99MS: 8}},
		}
	}
	recs := []Record{
		mk("memory", "http", PhaseSet, 94029.1), mk("memory", "http", PhaseGet, 106658.98),
		mk("valkey", "http", PhaseSet, 68980.18), mk("valkey", "http", PhaseGet, 77122.39),
		mk("memory", "resp", PhaseGet, 200000),
	}
	bad := Record{Engine: "tiered-postgresql", Proto: "http", Phase: PhaseGet, Status: StatusUnavailable,
		Error: "not available yet: routes[0].l1: unknown key\nmore"}
	return append(recs, bad)
}

func TestJSONLRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := sampleRecords()
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	b, _ := os.ReadFile(path)
	if n := bytes.Count(b, []byte("\n")); n != len(recs) {
		t.Fatalf("%d lines for %d records", n, len(recs))
	}
	for _, field := range []string{`"engine":"memory"`, `"proto":"http"`, `"phase":"get"`, `"requests":`, `"rps":`,
		`"mean_ms":`, `"p50_ms":`, `"p90_ms":`, `"p95_ms":`, `"p99_ms":`, `"max_ms":`, `"success":1`, `"applied":`, `"rows":`} {
		if !bytes.Contains(b, []byte(field)) {
			t.Errorf("results.jsonl lacks %s", field)
		}
	}
	got, err := ReadJSONL(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) || got[3].RPS != recs[3].RPS || got[3].Timeline[1].P99MS != 8 || got[5].Status != StatusUnavailable {
		t.Fatalf("round trip: %+v", got)
	}
}

func TestSummary(t *testing.T) {
	var b bytes.Buffer
	if err := Summary(&b, sampleRecords()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	get, set, _ := strings.Cut(out, "SET seeding")
	for _, want := range []string{"GET endurance", "Engine", "RPS", "p99", "Success", "vs memory",
		"106,658.98", "1.959ms", "26.758ms", "100.00%", "0.72", // valkey / memory, this run and the seed
		"tiered-postgresql http: unavailable: not available yet: routes[0].l1: unknown key"} {
		if !strings.Contains(get, want) {
			t.Errorf("GET table lacks %q:\n%s", want, get)
		}
	}
	if strings.Contains(get, "more") {
		t.Errorf("a multi-line error must keep its first line only:\n%s", get)
	}
	if !strings.Contains(set, "94,029.10") || strings.Contains(set, "vs memory") {
		t.Errorf("SET table:\n%s", set)
	}
	// The RESP row's ratio is to memory over RESP.
	if !regexp.MustCompile(`memory\s+resp.*1\.00`).MatchString(get) {
		t.Errorf("memory resp row is not its own baseline:\n%s", get)
	}
}

func TestWriteHTML(t *testing.T) {
	var b bytes.Buffer
	err := WriteHTML(&b, Page{Title: "pgcache bench quick", Command: "pgcache bench quick", Started: time.Now(), Records: sampleRecords()})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"<svg", "GET throughput", "SET throughput", "GET latency percentiles", "over time",
		"106,658.98 req/s", "shared_buffers=1GB", "not available yet", "kv &lt;b&gt;"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Self-contained: no script, stylesheet or image fetched from anywhere.
	for _, banned := range []string{"<script", "<link", "src=", "@import"} {
		if strings.Contains(out, banned) {
			t.Errorf("report has %q", banned)
		}
	}
	if n := strings.Count(out, "http://") - strings.Count(out, `xmlns="http://www.w3.org/2000/svg"`); n != 0 {
		t.Errorf("report names %d URLs besides the SVG namespace", n)
	}
	if strings.Count(out, "<svg") != strings.Count(out, "</svg>") || strings.Count(out, "<svg") != 5 {
		t.Errorf("want 5 complete charts, have %d opened, %d closed", strings.Count(out, "<svg"), strings.Count(out, "</svg>"))
	}
}

// A run where nothing ran still writes a report, without charts.
func TestWriteHTMLEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, Page{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<svg") {
		t.Fatal("charts without data")
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		max  float64
		want string
	}{
		{106658, "0 50k 100k 150k"},
		{7.7, "0 2 4 6 8"},
		{0.3, "0 0.1 0.2 0.3"},
		{0, "0 1"},
	} {
		var got []string
		for _, v := range niceTicks(tc.max) {
			got = append(got, short(v))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("niceTicks(%v) = %v, want %s", tc.max, got, tc.want)
		}
	}
}
