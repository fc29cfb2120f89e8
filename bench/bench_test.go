package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/bench/instance/instancetest"
	"github.com/pgcache/pgcache/bench/report"
)

// readResults reads a run's results.jsonl.
func readResults(t *testing.T, out string) []report.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(out, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := report.ReadJSONL(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// Every engine over both protocols, end to end through a real pgcache on
// the shared servers: each engine x proto x phase has a record with every
// request a success, and values read back as written.
func TestEveryEngineBothProtos(t *testing.T) {
	o, _ := tinyOptions(t)
	o.Protos = []string{ProtoHTTP, ProtoRESP}
	o.PGDSN, o.ValkeyAddr = pg.DSN(), valkeySrv.Addr()
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	recs := readResults(t, o.Out)
	got := map[string]report.Record{}
	for _, r := range recs {
		got[r.Engine+"/"+r.Proto+"/"+r.Phase] = r
	}
	for _, e := range EngineNames() {
		for _, proto := range o.Protos {
			for _, phase := range []string{report.PhaseSet, report.PhaseGet} {
				id := e + "/" + proto + "/" + phase
				r, ok := got[id]
				switch {
				case !ok:
					t.Errorf("%s: no record", id)
				case r.Status != report.StatusOK || r.Success != 1 || r.Requests == 0 || !r.Verified:
					t.Errorf("%s: status %s, success %v, requests %d, verified %v (%s %s)", id, r.Status, r.Success, r.Requests, r.Verified, r.Error, r.Verify)
				case phase == report.PhaseSet && r.Requests != 1000:
					t.Errorf("%s: %d requests, want one per key", id, r.Requests)
				case r.P50MS <= 0 || r.P99MS < r.P50MS || r.MaxMS < r.P99MS || len(r.Timeline) == 0:
					t.Errorf("%s: latencies p50 %v p99 %v max %v, %d seconds of timeline", id, r.P50MS, r.P99MS, r.MaxMS, len(r.Timeline))
				}
			}
		}
	}
	// The tiered engine's GET record has the share its L1 served. A key is
	// served from the L1 from its second read on, so a phase that read
	// every key twice over (a loaded machine may not) had hits.
	for id, r := range got {
		tiered := strings.HasPrefix(id, "tiered-postgresql/") && r.Phase == report.PhaseGet
		switch {
		case tiered && r.L1HitRatio == nil:
			t.Errorf("%s: no L1 hit ratio", id)
		case tiered && (*r.L1HitRatio < 0 || *r.L1HitRatio > 1):
			t.Errorf("%s: L1 hit ratio %v, want one in [0, 1]", id, *r.L1HitRatio)
		case tiered && r.Requests >= 2*uint64(r.Keys) && *r.L1HitRatio == 0:
			t.Errorf("%s: %d GETs of %d keys and no L1 hit", id, r.Requests, r.Keys)
		case !tiered && r.L1HitRatio != nil:
			t.Errorf("%s: an L1 hit ratio (%v) on an engine or phase without one", id, *r.L1HitRatio)
		}
	}
	if len(recs) != len(EngineNames())*2*2 {
		t.Errorf("%d records, want %d", len(recs), len(EngineNames())*4)
	}
	if rows := got["standard-postgresql/http/get"].Rows; rows != 1000 {
		t.Errorf("standard-postgresql rows = %d", rows)
	}
	if a := recs[0].Applied; !strings.Contains(a.Postgres, "existing server") || !strings.Contains(a.PostgresCaps, "existing server") {
		t.Errorf("applied: %+v", a)
	}
	if b, err := os.ReadFile(filepath.Join(o.Out, ReportFile)); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("report.html: %v", err)
	}
	// The report can be made again from results.jsonl alone.
	os.Remove(filepath.Join(o.Out, ReportFile))
	var summary strings.Builder
	if err := Report(o.Out, &summary); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary.String(), "GET endurance") || !strings.Contains(summary.String(), "tiered-postgresql http: the L1 served") {
		t.Errorf("summary:\n%s", summary.String())
	}
	if b, err := os.ReadFile(filepath.Join(o.Out, ReportFile)); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("report.html made again: %v", err)
	}
}

// Without --pg-dsn and --valkey-addr the bench starts, tunes and stops
// servers of its own.
func TestThrowawayServers(t *testing.T) {
	o, out := tinyOptions(t, "valkey", "optimized-postgresql")
	o.Keys, o.Duration = 200, 300*time.Millisecond
	recs, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	a := recs[0].Applied
	if !strings.Contains(a.Postgres, "throwaway") || a.PostgresTuning["shared_buffers"] != "1GB" || a.PostgresTuning["work_mem"] != "16MB" {
		t.Errorf("postgres: %q, tuning %v", a.Postgres, a.PostgresTuning)
	}
	if !strings.Contains(a.Valkey, "throwaway") || a.ValkeyTuning["maxmemory-policy"] != "allkeys-lru" {
		t.Errorf("valkey: %q, tuning %v", a.Valkey, a.ValkeyTuning)
	}
	if a.PostgresCaps != "none: --no-caps" {
		t.Errorf("caps: %q", a.PostgresCaps)
	}
	for _, server := range []string{"PostgreSQL", "Valkey/Redis"} {
		if !strings.Contains(out.String(), "stopping the throwaway "+server) {
			t.Errorf("%s not stopped:\n%s", server, out.String())
		}
	}
	for _, r := range recs {
		if r.Status != report.StatusOK || r.Success != 1 {
			t.Errorf("%s/%s: %s %v %s", r.Engine, r.Phase, r.Status, r.Success, r.Error)
		}
	}
}

// A second run on the same database finds the table engines' tables as a
// first run left them: the background rows kept, its own rows replaced.
func TestTableEnginesReset(t *testing.T) {
	o, _ := tinyOptions(t, "postgres-tsid")
	o.Keys, o.Rows, o.Duration = 300, 500, 200*time.Millisecond
	o.PGDSN = pg.DSN()
	for run := range 2 {
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatalf("run %d: %v", run+1, err)
		}
	}
	conn, err := pgx.Connect(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var bg, bench int64
	err = conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE id < `+usersTSID.cutoff()+`),
		count(*) FILTER (WHERE id >= `+usersTSID.cutoff()+`) FROM public.users_tsid`).Scan(&bg, &bench)
	if err != nil {
		t.Fatal(err)
	}
	if bg != 500 || bench != 300 {
		t.Fatalf("users_tsid holds %d background and %d bench rows, want 500 and 300", bg, bench)
	}
}

// Bad input gets one clear error, before anything is started.
func TestBadInput(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := closed.Addr().String()
	closed.Close()

	for _, tc := range []struct {
		name  string
		edit  func(*Options)
		is    error
		wants []string
	}{
		{"unknown engine", func(o *Options) { o.Engines = []string{"memory", "mongo"} }, ErrUnknownEngine,
			[]string{`"mongo"`, "known: memory, valkey, standard-postgresql, optimized-postgresql, postgres-tsid, async-postgresql, tiered-postgresql"}},
		{"unreachable dsn", func(o *Options) {
			o.Engines = []string{"optimized-postgresql"}
			o.PGDSN = "postgres://postgres:secret@" + deadAddr + "/pgcache?sslmode=disable&connect_timeout=2"
		}, nil, []string{"postgres " + deadAddr + "/pgcache: cannot connect"}},
		{"unreachable valkey", func(o *Options) { o.Engines = []string{"valkey"}; o.ValkeyAddr = deadAddr }, nil,
			[]string{"valkey " + deadAddr + ": cannot connect"}},
		{"port in use", func(o *Options) { o.Engines = []string{"memory"}; o.HTTPAddr = busy.Addr().String() }, nil,
			[]string{"--http-addr " + busy.Addr().String() + ": the port is in use"}},
		{"not loopback", func(o *Options) { o.RESPAddr = "0.0.0.0:6379" }, nil, []string{"--resp-addr", "loopback only"}},
		{"bad proto", func(o *Options) { o.Protos = []string{"grpc"} }, nil, []string{`--proto "grpc"`}},
		{"bad preset", func(o *Options) { o.Preset = "forever" }, nil, []string{`preset "forever"`, "quick, medium, long"}},
		{"child without binary", func(o *Options) { o.Server = ServerChild }, nil, []string{"--server child needs the pgcache binary"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := tinyOptions(t)
			tc.edit(&o)
			start := time.Now()
			_, err := Run(context.Background(), o)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the password: %v", err)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %v to refuse", took)
			}
		})
	}
}

// useHelperChild runs pgcache in child mode from the test binary itself.
func useHelperChild(t *testing.T, o *Options) {
	o.Server, o.Executable = ServerChild, instancetest.UseChild(t)
}

// Ctrl-C mid-run stops the load, stops pgcache and writes what ran.
func TestInterrupt(t *testing.T) {
	o, out := tinyOptions(t, "memory", "valkey")
	o.Duration = time.Minute
	o.ValkeyAddr = valkeySrv.Addr()
	useHelperChild(t, &o)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt once the GET phase has run a moment.
	go func() {
		for !strings.Contains(out.String(), "--- GET") {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	recs, err := Run(ctx, o)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("stopping took %v", took)
	}
	if len(recs) != 2 || recs[0].Status != report.StatusOK || recs[1].Status != report.StatusInterrupted || recs[1].Requests == 0 {
		t.Fatalf("records: %+v", recs)
	}
	if got := readResults(t, o.Out); len(got) != 2 {
		t.Fatalf("results.jsonl has %d records", len(got))
	}
	if _, err := os.Stat(filepath.Join(o.Out, ReportFile)); err != nil {
		t.Fatal(err)
	}
	// The valkey engine never started; memory's pgcache is gone.
	if _, err := os.Stat(filepath.Join(o.Out, "config", "valkey-http.yaml")); err == nil {
		t.Fatal("the valkey engine ran after the interrupt")
	}
	assertStopped(t, filepath.Join(o.Out, "config", "memory-http.yaml"))
}

// assertStopped checks that the pgcache of a written config no longer
// answers on its admin port.
func assertStopped(t *testing.T, cfgPath string) {
	t.Helper()
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	addr := listenAddr(string(cfg), "admin")
	if addr == "" {
		t.Fatalf("no admin address in:\n%s", cfg)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatalf("the pgcache of %s still answers after the run", cfgPath)
	}
}

// listenAddr finds a front's address in a written config, "" for port 0.
func listenAddr(cfg, front string) string {
	for _, l := range strings.Split(cfg, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), front+": "); ok && !strings.HasSuffix(v, ":0") {
			return v
		}
	}
	return ""
}

// The child-process mode starts pgcache as a process of its own on the
// ports it was given, and stops it after.
func TestChildProcess(t *testing.T) {
	o, _ := tinyOptions(t, "memory")
	o.Protos = []string{ProtoHTTP, ProtoRESP}
	o.Duration = 300 * time.Millisecond
	useHelperChild(t, &o)
	recs, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0].Applied.Server == "" || !strings.Contains(recs[0].Applied.Server, "child") {
		t.Fatalf("records: %+v", recs)
	}
	for _, r := range recs {
		if r.Status != report.StatusOK || r.Success != 1 {
			t.Errorf("%s/%s: %s %v %s", r.Proto, r.Phase, r.Status, r.Success, r.Error)
		}
	}
	if g := recs[0].Applied.ServerGOMAXPROCS; g < 1 {
		t.Errorf("GOMAXPROCS of the child: %d", g)
	}
	for _, proto := range o.Protos {
		assertStopped(t, filepath.Join(o.Out, "config", "memory-"+proto+".yaml"))
	}
}
