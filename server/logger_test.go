package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgcache/pgcache/conf"
)

// A JSON log line's time is ISO 8601, not a float of epoch seconds.
func TestLogTimesAreISO8601(t *testing.T) {
	zc, err := loggerConfig(conf.Log{Level: "info", Format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "log")
	zc.OutputPaths = []string{out}
	log, err := zc.Build()
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello")
	log.Sync()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(b, &line); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	ts, ok := line["ts"].(string)
	if !ok {
		t.Fatalf("ts = %#v, want a string", line["ts"])
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts); err != nil {
		t.Errorf("ts %q is not ISO 8601: %v", ts, err)
	}
}
