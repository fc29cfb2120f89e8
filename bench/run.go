package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/pgcache/pgcache/bench/keys"
	"github.com/pgcache/pgcache/bench/load"
	"github.com/pgcache/pgcache/bench/report"
	"github.com/pgcache/pgcache/server"
)

// Result files in the output directory.
const (
	ResultsFile = "results.jsonl"
	ReportFile  = "report.html"
)

// runner is one run: its options and what it set up.
type runner struct {
	o       *Options
	keys    *keys.Set
	pg      *pgServer     // nil when no engine needs PostgreSQL
	valkey  *valkeyServer // nil when no engine needs Valkey
	applied report.Applied
	results *report.Writer
	records []report.Record
	prog    *load.Progress
	// tableErr is why a table engine's table could not be prepared.
	tableErr map[*rowTable]error
}

// Run runs the bench as o says and returns the records it wrote. Its
// error is a setup error (nothing ran), ErrInterrupted (ctx ended: what
// ran was written and the servers it started are stopped) or
// ErrEnginesFailed (the other engines ran). An engine this pgcache cannot
// run yet is reported as unavailable and is not an error.
func Run(ctx context.Context, o Options) ([]report.Record, error) {
	started := time.Now()
	o.fill(started)
	if err := o.validate(); err != nil {
		return nil, err
	}
	for _, l := range []struct{ flag, addr string }{{"--http-addr", o.HTTPAddr}, {"--resp-addr", o.RESPAddr}} {
		if err := checkFree(l.flag, l.addr); err != nil {
			return nil, err
		}
	}
	r := &runner{o: &o, prog: &load.Progress{W: o.Stderr, TTY: o.TTY}, tableErr: map[*rowTable]error{}}
	defer r.teardown()
	if err := r.setup(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w during setup: %v", ErrInterrupted, err)
		}
		return nil, err
	}

	var failed []string
engines:
	for _, name := range o.Engines {
		e := engineByName(name)
		for _, proto := range o.Protos {
			if ctx.Err() != nil {
				break engines
			}
			for _, rec := range r.runEngine(ctx, e, proto) {
				if rec.Status == report.StatusFailed {
					failed = append(failed, e.Name+"/"+proto)
				}
				if err := r.write(rec); err != nil {
					return r.records, err
				}
			}
		}
	}
	if err := r.finish(started); err != nil {
		return r.records, err
	}
	switch {
	case ctx.Err() != nil:
		return r.records, ErrInterrupted
	case len(failed) > 0:
		return r.records, fmt.Errorf("%w: %s", ErrEnginesFailed, strings.Join(slicesCompact(failed), ", "))
	}
	return r.records, nil
}

// setup loads the keys, starts or reaches the servers the chosen engines
// need, opens results.jsonl and prepares the table engines' tables.
func (r *runner) setup(ctx context.Context) error {
	o := r.o
	set, generated, err := keys.Load(o.KeysFile, o.Keys)
	if err != nil {
		return err
	}
	r.keys = set
	if generated {
		fmt.Fprintf(o.Stderr, "generated %s keys (uuidv7, ulid, tsid) in %s\n", humanize.Comma(int64(o.Keys)), o.KeysFile)
	} else {
		fmt.Fprintf(o.Stderr, "using %s keys from %s\n", humanize.Comma(int64(o.Keys)), o.KeysFile)
	}

	needs := map[service]bool{}
	for _, name := range o.Engines {
		needs[engineByName(name).service] = true
	}
	r.applied = report.Applied{
		HostCPUs:   runtime.NumCPU(),
		HostMemory: humanize.IBytes(uint64(hostMemory())),
		Version:    server.Version(),
	}
	if o.Server == ServerChild {
		r.applied.Server = "child process (pgcache run), separate from the load generator"
		r.applied.ServerGOMAXPROCS = o.ServerProcs
		r.applied.ServerGOMEMLIMIT = humanize.IBytes(uint64(o.ServerMemLimit))
	} else {
		r.applied.Server = "in-process: pgcache shares the bench process, its scheduler and GC, with the load generator"
		r.applied.ServerGOMAXPROCS = runtime.GOMAXPROCS(0)
		r.applied.ServerGOMEMLIMIT = "not set (shared process)"
	}
	if needs[svcPostgres] {
		if r.pg, err = startPostgres(ctx, o, o.Stderr); err != nil {
			return err
		}
		r.applied.Postgres, r.applied.PostgresCaps, r.applied.PostgresTuning = r.pg.desc, r.pg.caps, r.pg.tuning
	}
	if needs[svcValkey] {
		if r.valkey, err = startValkey(ctx, o, o.Stderr); err != nil {
			return err
		}
		r.applied.Valkey, r.applied.ValkeyCaps, r.applied.ValkeyTuning = r.valkey.desc, r.valkey.caps, r.valkey.tuning
	}

	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if r.results, err = report.Create(filepath.Join(o.Out, ResultsFile)); err != nil {
		return err
	}

	for _, name := range o.Engines {
		t := engineByName(name).table
		if t == nil {
			continue
		}
		if _, done := r.tableErr[t]; done {
			continue
		}
		fmt.Fprintf(o.Stderr, "preparing %s with %s background rows …\n", t.name, humanize.Comma(o.Rows))
		r.tableErr[t] = t.prepare(ctx, r.pg.pool, o.Rows, o.Stderr)
		if ctx.Err() != nil {
			return r.tableErr[t]
		}
	}
	return nil
}

// teardown stops the servers the run started. It runs after Ctrl-C too,
// on its own context.
func (r *runner) teardown() {
	if r.results != nil {
		r.results.Close()
	}
	if r.valkey != nil && r.valkey.owned != nil {
		fmt.Fprintln(r.o.Stderr, "stopping the throwaway Valkey/Redis")
	}
	if r.valkey != nil {
		if err := r.valkey.close(); err != nil {
			fmt.Fprintf(r.o.Stderr, "valkey: %v\n", err)
		}
	}
	if r.pg != nil && r.pg.owned != nil {
		fmt.Fprintln(r.o.Stderr, "stopping the throwaway PostgreSQL")
	}
	if r.pg != nil {
		if err := r.pg.close(); err != nil {
			fmt.Fprintf(r.o.Stderr, "postgres: %v\n", err)
		}
	}
}

func (r *runner) write(rec report.Record) error {
	r.records = append(r.records, rec)
	return r.results.Write(&rec)
}

// finish writes report.html and prints the summary tables.
func (r *runner) finish(started time.Time) error {
	page := report.Page{Title: "pgcache bench " + r.o.Preset, Command: r.o.Command, Started: started, Records: r.records}
	return writeReport(r.o.Out, page, r.o.Stdout)
}

// writeReport writes dir/report.html and prints the summary tables.
func writeReport(dir string, page report.Page, stdout io.Writer) error {
	path := filepath.Join(dir, ReportFile)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	err = report.WriteHTML(f, page)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := report.Summary(stdout, page.Records); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nresults: %s\nreport:  %s\n", filepath.Join(dir, ResultsFile), path)
	return nil
}

// Report writes report.html again from the results.jsonl in dir, after a
// change to the report or an edit of the results (records of several
// runs put together), and prints the summary tables.
func Report(dir string, stdout io.Writer) error {
	f, err := os.Open(filepath.Join(dir, ResultsFile))
	if err != nil {
		return err
	}
	recs, err := report.ReadJSONL(f)
	f.Close()
	if err != nil {
		return err
	}
	page := report.Page{Title: "pgcache bench", Command: "pgcache bench report " + dir, Records: recs}
	if len(recs) > 0 {
		page.Started = recs[0].StartedAt
	}
	return writeReport(dir, page, stdout)
}

// checkFree fails early, with the flag's name, when a fixed listen
// address is taken; port 0 always gets a free port.
func checkFree(flag, addr string) error {
	if strings.HasSuffix(addr, ":0") {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s %s: the port is in use by another program: pick another, or leave the flag out for a free port", flag, addr)
		}
		return fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	return ln.Close()
}

// slicesCompact drops repeated names, keeping the first of each.
func slicesCompact(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
