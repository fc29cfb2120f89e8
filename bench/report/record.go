// Package report holds what `pgcache bench` writes: one Record per engine,
// protocol and phase, as JSON lines (results.jsonl), as the summary tables
// printed at the end, and as a self-contained HTML page of charts
// (report.html: inline SVG, nothing fetched).
package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// Phases.
const (
	PhaseSet = "set"
	PhaseGet = "get"
)

// Statuses of a record.
const (
	StatusOK          = "ok"          // the phase ran to its bounds
	StatusInterrupted = "interrupted" // stopped early (Ctrl-C): the numbers cover what ran
	StatusFailed      = "failed"      // the engine could not be set up or measured: see Error
	StatusUnavailable = "unavailable" // this pgcache cannot run the engine yet: see Error
)

// Record is one phase of one engine over one protocol. Latencies are in
// milliseconds; Success is the ratio of successful requests, 0 to 1.
type Record struct {
	Engine string `json:"engine"`
	Proto  string `json:"proto"` // http | resp
	Phase  string `json:"phase"` // set | get
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`

	Requests   uint64  `json:"requests"`
	RPS        float64 `json:"rps"`        // requests per second sent
	Throughput float64 `json:"throughput"` // successes per second, until the last reply
	DurationS  float64 `json:"duration_s"`
	MinMS      float64 `json:"min_ms"`
	MeanMS     float64 `json:"mean_ms"`
	P50MS      float64 `json:"p50_ms"`
	P90MS      float64 `json:"p90_ms"`
	P95MS      float64 `json:"p95_ms"`
	P99MS      float64 `json:"p99_ms"`
	MaxMS      float64 `json:"max_ms"`
	Success    float64 `json:"success"`

	StatusCodes map[string]int `json:"status_codes,omitempty"`
	Errors      []string       `json:"errors,omitempty"`
	BytesIn     uint64         `json:"bytes_in"`
	BytesOut    uint64         `json:"bytes_out"`

	// What the engine is and what it ran on.
	Storage string `json:"storage"`  // like "UNLOGGED kv table, uuid key, vtproto bytea"
	Route   string `json:"route"`    // the pgcache route's name
	KeyKind string `json:"key_kind"` // uuidv7 | ulid | tsid
	Keys    int    `json:"keys"`     // keys written by the SET phase and read by the GET phase
	Rows    int64  `json:"rows"`     // background rows of a table engine; 0 for kv engines
	Load    string `json:"load"`     // like "vegeta, rate=0 (max), 250 workers"
	// Verified says whether a sample of values read back after the GET
	// phase decoded to what was written; Verify says what was wrong.
	Verified bool   `json:"verified"`
	Verify   string `json:"verify,omitempty"`
	// Applied is what the run applied to the servers (caps, tuning).
	Applied Applied `json:"applied"`
	// L1HitRatio is, for an engine behind pgcache's L1 (tiered), the share
	// of the GET phase's reads that the L1 served, from pgcache's own
	// counters; absent for other engines and phases.
	L1HitRatio *float64 `json:"l1_hit_ratio,omitempty"`

	StartedAt time.Time `json:"started_at"`
	Timeline  []Point   `json:"timeline,omitempty"`
}

// Applied is what a run set up around the engines, stated in every record
// so one line of results.jsonl stands on its own.
type Applied struct {
	// Server is how pgcache ran: "child process" or "in-process".
	Server           string `json:"server"`
	ServerGOMAXPROCS int    `json:"server_gomaxprocs"`
	ServerGOMEMLIMIT string `json:"server_gomemlimit"`
	// Postgres and Valkey say which servers were used and the cgroup caps
	// put on them, or why none were.
	Postgres       string            `json:"postgres,omitempty"`
	PostgresCaps   string            `json:"postgres_caps,omitempty"`
	PostgresTuning map[string]string `json:"postgres_tuning,omitempty"`
	Valkey         string            `json:"valkey,omitempty"`
	ValkeyCaps     string            `json:"valkey_caps,omitempty"`
	ValkeyTuning   map[string]string `json:"valkey_tuning,omitempty"`
	// Host is the machine: CPUs and memory, shared by the load generator.
	HostCPUs   int    `json:"host_cpus"`
	HostMemory string `json:"host_memory"`
	Version    string `json:"pgcache_version"`
}

// Point is one second of a phase.
type Point struct {
	T        int     `json:"t"` // seconds since the phase started
	Requests uint64  `json:"requests"`
	Errors   uint64  `json:"errors"`
	MeanMS   float64 `json:"mean_ms"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"max_ms"`
}

// MS turns a duration into the milliseconds of a record.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Writer appends records to results.jsonl as they are made, so a run that
// is stopped halfway leaves every record it finished.
type Writer struct {
	f *os.File
	w *bufio.Writer
}

// Create creates (or truncates) the JSON lines file at path.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return &Writer{f: f, w: bufio.NewWriter(f)}, nil
}

// Write appends one record and flushes it to the file.
func (w *Writer) Write(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	w.w.Write(b)
	w.w.WriteByte('\n')
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// ReadJSONL reads the records of a results.jsonl.
func ReadJSONL(r io.Reader) ([]Record, error) {
	var out []Record
	d := json.NewDecoder(r)
	for {
		var rec Record
		if err := d.Decode(&rec); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("results: record %d: %w", len(out)+1, err)
		}
		out = append(out, rec)
	}
}
