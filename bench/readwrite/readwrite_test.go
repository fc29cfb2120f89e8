package readwrite

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The bench end to end at a tiny size, its pgcache instances child
// processes audited through their admin API: pgcache ends with no stale
// entry, and every stack and overhead variant is recorded.
func TestTinyRun(t *testing.T) {
	out := t.TempDir()
	var stdout strings.Builder
	o := Options{
		Rows: 500, Readers: 8, Writers: 4, UpdateRate: 400, Duration: 2 * time.Second, Instances: 2,
		OverheadDuration: 500 * time.Millisecond, Out: out,
	}
	asChildren(t, &o)
	results, err := Run(context.Background(), o, &stdout)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	t.Log(stdout.String())
	recs := readJSONL(t, filepath.Join(out, "results.jsonl"))
	if len(recs) != len(results) {
		t.Fatalf("results.jsonl has %d records, Run returned %d", len(recs), len(results))
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.Kind+"/"+r.Stack+r.Variant] = true
		if r.ReadErrors != 0 || r.WriteErrors != 0 {
			t.Errorf("%s %s%s: %d read and %d write errors (first: %s)", r.Kind, r.Stack, r.Variant, r.ReadErrors, r.WriteErrors, r.FirstError)
		}
		if r.Kind == "stack" && (r.Reads == 0 || r.Updates == 0) {
			t.Errorf("%s: %d reads, %d updates", r.Stack, r.Reads, r.Updates)
		}
		if r.Stack == StackCSC {
			if r.Stale != 0 {
				t.Errorf("pgcache-csc ended with %d stale entries (L1 %d)", r.Stale, r.L1Stale)
			}
			if len(r.Apps) != DefaultCSCClients || r.CommitToPush == nil || r.ClientLag == nil {
				t.Errorf("pgcache-csc: %d app caches audited, want %d; lags %v, %v", len(r.Apps), DefaultCSCClients, r.CommitToPush, r.ClientLag)
			}
		}
		if r.Stack == StackPgcache {
			if r.Stale != 0 {
				t.Errorf("pgcache ended with %d stale entries", r.Stale)
			}
			if r.Entries == 0 || r.HitRatio == nil || *r.HitRatio == 0 {
				t.Errorf("pgcache cached nothing: entries %d, hit ratio %v", r.Entries, r.HitRatio)
			}
			if r.Server != ServerChild || r.Instances != 2 {
				t.Errorf("pgcache ran %d instances as %q, want 2 children", r.Instances, r.Server)
			}
		}
	}
	for _, want := range []string{"stack/pgcache", "stack/pgcache-csc", "stack/valkey-cache-aside", "stack/prepared-sql",
		"write_overhead/plain", "write_overhead/fenced", "write_overhead/update+del"} {
		if !seen[want] {
			t.Errorf("no %s record", want)
		}
	}
	if html, err := os.ReadFile(filepath.Join(out, "report.html")); err != nil || !strings.Contains(string(html), "<svg") {
		t.Errorf("report.html: %v", err)
	}
	for _, f := range []string{"config/pgcache-0.yaml", "config/pgcache-1.yaml", "logs/pgcache-0.log", "logs/pgcache-1.log",
		"config/pgcache-csc-0.yaml", "logs/pgcache-csc-1.log"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("instance file: %v", err)
		}
	}
}

// With unlimited writers and a delay between the cache-aside reader's
// SELECT and its SET, Valkey cache-aside ends with stale entries: the race
// pgcache exists to remove. pgcache, same load, ends with none (here
// in-process, the other way the bench runs it).
//
// Whether a raced fill is the last thing to happen to a key before the
// writers stop is chance: few rows, many readers and a long delay make it
// likely (8 readers on 50 rows with 2 ms once ended with none in CI; this
// shape left 3–5 with three copies of the test running at once under
// -race, and once none in CI). So cache-aside gets up to three runs to show
// the race; pgcache must end every run with none.
func TestCacheAsideRace(t *testing.T) {
	stacks := []string{StackPgcache, StackCacheAside}
	for attempt := 1; ; attempt++ {
		var stdout strings.Builder
		results, err := Run(context.Background(), Options{
			Rows: 25, Readers: 16, Writers: 8, UpdateRate: 0, Duration: 3 * time.Second,
			Stacks: stacks, FillDelay: 5 * time.Millisecond, OverheadDuration: -1,
		}, &stdout)
		if err != nil {
			t.Fatalf("%v\n%s", err, stdout.String())
		}
		t.Log(stdout.String())
		raced := false
		for _, r := range results {
			switch r.Stack {
			case StackPgcache:
				if r.Stale != 0 {
					t.Errorf("pgcache: %d stale entries", r.Stale)
				}
			case StackCacheAside:
				raced = r.Stale > 0
				if !raced {
					t.Logf("attempt %d: valkey-cache-aside ended with no stale entry (%d cached)", attempt, r.Entries)
				}
			}
		}
		if raced {
			return
		}
		if attempt == 3 {
			t.Fatal("valkey-cache-aside ended three runs under the forced race with no stale entry")
		}
		stacks = []string{StackCacheAside}
	}
}

func TestBadInput(t *testing.T) {
	_, err := Run(context.Background(), Options{Stacks: []string{"memcached"}}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), `unknown stack "memcached"`) || !strings.Contains(err.Error(), StackPgcache) {
		t.Fatalf("err = %v", err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Server: "docker"}, `--server "docker": not child or inproc`},
		{Options{Server: ServerChild}, "--server child needs the pgcache binary"},
	} {
		if _, err := Run(context.Background(), tc.o, &strings.Builder{}); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: err = %v, want %s", tc.o, err, tc.want)
		}
	}
	_, err = Run(context.Background(), Options{PGDSN: "postgres://nobody@127.0.0.1:1/none?connect_timeout=2", OverheadDuration: -1,
		Stacks: []string{StackSQL}}, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "connect to PostgreSQL") {
		t.Fatalf("unreachable DSN: err = %v", err)
	}
}

func readJSONL(t *testing.T, path string) []Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []Result
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}
