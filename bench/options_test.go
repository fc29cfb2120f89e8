package bench

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		preset           string
		duration, warmup time.Duration
		rows             int64
	}{
		{PresetQuick, 5 * time.Second, 0, 100_000},
		{PresetMedium, 300 * time.Second, 30 * time.Second, 1_000_000},
		{PresetLong, 600 * time.Second, 30 * time.Second, 10_000_000},
	} {
		o := Options{Preset: tc.preset, Rows: -1, Warmup: -1}
		o.fill(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
		if o.Duration != tc.duration || o.Warmup != tc.warmup || o.Rows != tc.rows {
			t.Errorf("%s: duration %v warmup %v rows %d", tc.preset, o.Duration, o.Warmup, o.Rows)
		}
		if o.Keys != DefaultKeys || o.Out != "bench-out/"+tc.preset+"-20250102-030405" || len(o.Engines) != len(engines) {
			t.Errorf("%s: keys %d out %q engines %v", tc.preset, o.Keys, o.Out, o.Engines)
		}
		if err := o.validate(); err != nil {
			t.Errorf("%s: %v", tc.preset, err)
		}
	}
	// Flags win over the preset.
	o := Options{Preset: PresetLong, Rows: 5, Warmup: 0, Duration: time.Second}
	o.fill(time.Now())
	if o.Rows != 5 || o.Warmup != 0 || o.Duration != time.Second {
		t.Errorf("explicit values replaced: %+v", o)
	}
	// In-process unless there is a binary to run.
	if o.Server != ServerInProcess {
		t.Errorf("server %q without a binary", o.Server)
	}
	o = Options{Executable: "/bin/pgcache"}
	o.fill(time.Now())
	if o.Server != ServerChild || o.ServerProcs < 1 || o.ServerProcs > DefaultServerProcs || o.ServerMemLimit <= 0 || o.ServerMemLimit > DefaultServerMemLimit {
		t.Errorf("child defaults: %+v", o)
	}
}

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"http", []string{"http"}},
		{"both", []string{"http", "resp"}},
		{"resp, both ,http", []string{"resp", "http"}},
		{"memory,,valkey,memory", []string{"memory", "valkey"}},
		{"", nil},
	} {
		if got := ParseList(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("ParseList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Only the l1 engine's refusals of l1 make it unavailable; anything else
// is a failure.
func TestClassify(t *testing.T) {
	tiered, optimized := engineByName("tiered-postgresql"), engineByName("optimized-postgresql")
	refused := errors.New("routes[0].l1: unknown key")
	if err := classify(tiered, refused); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "routes[0].l1: unknown key") {
		t.Errorf("tiered: %v", err)
	}
	if err := classify(optimized, refused); errors.Is(err, ErrUnavailable) {
		t.Errorf("optimized: %v", err)
	}
	if err := classify(tiered, errors.New("connection refused")); errors.Is(err, ErrUnavailable) {
		t.Errorf("tiered, other error: %v", err)
	}
}

func TestEngines(t *testing.T) {
	want := []string{"memory", "valkey", "standard-postgresql", "optimized-postgresql", "postgres-tsid", "async-postgresql", "tiered-postgresql"}
	if got := EngineNames(); !slices.Equal(got, want) {
		t.Fatalf("engines %v", got)
	}
	routes, prefixes := map[string]bool{}, map[string]bool{}
	for _, e := range engines {
		if routes[e.Route] || prefixes[e.Prefix] || e.Prefix == "" {
			t.Errorf("%s: route %q or prefix %q repeated or empty", e.Name, e.Route, e.Prefix)
		}
		routes[e.Route], prefixes[e.Prefix] = true, true
		if (e.table != nil) != (e.route["source_table"] != nil) || (e.kvTable != "") != (e.route["table"] != nil) {
			t.Errorf("%s: table %v, kv table %q, route %v", e.Name, e.table, e.kvTable, e.route)
		}
	}
}

// Without systemd nothing is capped, and the reason is given.
func TestCapsWithoutSystemd(t *testing.T) {
	if systemdRunning() {
		t.Skip("systemd runs here: capping would create a real scope") // the test is about machines without it
	}
	if got := capProcesses(t.Context(), "x.scope", []int{os.Getpid()}); !strings.Contains(got, "systemd is not running") {
		t.Fatalf("caps = %q", got)
	}
}

// The row tables' cutoff keys sort after every background row and before
// every key made now.
func TestCutoffs(t *testing.T) {
	if got := usersStandard.cutoff(); got != "0176bb3e-7000-7000-8000-000000000000" { // 2021-01-01 in ms
		t.Errorf("uuid cutoff %s", got)
	}
	if got := usersTSID.cutoff(); got != "132633958809600000" { // 366 days of ms << 22
		t.Errorf("tsid cutoff %s", got)
	}
	if maxBackgroundRows >= bgCutoff.Sub(bgEpoch).Milliseconds() {
		t.Errorf("%d rows would reach past the cutoff", maxBackgroundRows)
	}
}
