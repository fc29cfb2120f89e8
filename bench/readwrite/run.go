package readwrite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/coherence"
)

// Result is one line of results.jsonl: a stack's reads while writing
// (kind "stack"), or one write-overhead measurement (kind "write_overhead").
type Result struct {
	Kind  string `json:"kind"`
	Stack string `json:"stack,omitempty"`

	ReadsPerS   float64  `json:"reads_per_s,omitempty"`
	HitRatio    *float64 `json:"hit_ratio,omitempty"` // absent: no cache
	P50ms       float64  `json:"p50_ms,omitempty"`
	P99ms       float64  `json:"p99_ms,omitempty"`
	UpdatesPerS float64  `json:"updates_per_s"`
	Stale       int      `json:"stale"`
	Entries     int      `json:"cached_entries"`
	Reads       int64    `json:"reads,omitempty"`
	Updates     int64    `json:"updates"`
	ReadErrors  int64    `json:"read_errors"`
	WriteErrors int64    `json:"write_errors"`
	FirstError  string   `json:"first_error,omitempty"`
	// LoadSched is the load generator's scheduling latency during the
	// run: high, and the stack was partly measuring the bench.
	LoadSched *SchedLatency `json:"load_sched,omitempty"`

	Variant     string  `json:"variant,omitempty"` // write overhead: plain, fenced, update+del
	Trigger     string  `json:"trigger,omitempty"` // write overhead, fenced: the trigger function (c, plpgsql)
	Writers     int     `json:"writers"`
	Readers     int     `json:"readers,omitempty"`
	Rows        int     `json:"rows"`
	UpdateRate  int     `json:"update_rate"`
	AsyncCommit bool    `json:"async_commit,omitempty"` // writers ran with synchronous_commit = off
	Instances   int     `json:"instances,omitempty"`
	Server      string  `json:"server,omitempty"`       // pgcache: child or inproc
	ServerProcs int     `json:"server_procs,omitempty"` // GOMAXPROCS of each child
	FillDelay   float64 `json:"fill_delay_ms,omitempty"`
	DurationS   float64 `json:"duration_s"`

	// pgcache-csc: HitRatio is the app caches'; Entries and Stale add up
	// the L1s' and the app caches'.
	AppClients   int     `json:"app_clients,omitempty"`
	AppTTL       float64 `json:"app_ttl_s,omitempty"`
	AppStaticTTL bool    `json:"app_static_ttl,omitempty"` // DoCache sent GET alone
	Note         string  `json:"note,omitempty"`

	StaleNotes   []string   `json:"stale_notes,omitempty"` // the first stale entries found
	Apps         []AppAudit `json:"apps,omitempty"`
	L1Entries    int        `json:"l1_cached,omitempty"`
	L1Stale      int        `json:"l1_stale,omitempty"`
	CommitToPush *PushLag   `json:"commit_to_push,omitempty"` // pgcache's histogram, the run's share
	ClientLag    *ClientLag `json:"commit_to_invalidation,omitempty"`
}

// AppCached and AppStale add up the app caches' audit.
func (r *Result) AppCached() (cached, stale int) {
	for _, a := range r.Apps {
		cached += a.Cached
		stale += a.Stale
	}
	return cached, stale
}

// run is one `pgcache bench coherence`.
type run struct {
	o   *Options
	env *env
	// rowPrefix is the table route's key prefix: CRUD:<db>.public.<table>:.
	rowPrefix string
	// keys are the rows' keys by id, spelled once: the readers of every
	// stack read them.
	keys []string
	// staleNotes name the first stale entries the current stack's audit
	// found.
	staleNotes []string
}

// Run runs the stacks and the write-overhead measurements and writes the
// tables to stdout (and results.jsonl and report.html to o.Out).
func Run(ctx context.Context, o Options, stdout io.Writer) ([]Result, error) {
	o.fill()
	if err := o.validate(); err != nil {
		return nil, err
	}
	e, err := startEnv(ctx, &o)
	if err != nil {
		return nil, err
	}
	defer e.close()
	if err := e.seed(ctx, o.Rows); err != nil {
		return nil, err
	}
	r := &run{o: &o, env: e, rowPrefix: "CRUD:" + e.database + ".public." + rowsTable + ":"}
	r.keys = make([]string, o.Rows+1)
	for id := range r.keys {
		r.keys[id] = r.rowPrefix + strconv.Itoa(id)
	}
	var results []Result
	for _, stack := range o.Stacks {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(stdout, "== %s: %d readers, %d writers at %s, %d rows, %v\n", stack, o.Readers, o.Writers, rateText(&o), o.Rows, o.Duration)
		var sr *stackResult
		r.staleNotes = nil
		switch stack {
		case StackPgcache:
			sr, err = r.runPgcache(ctx)
		case StackCSC:
			sr, err = r.runCSC(ctx)
		case StackCacheAside:
			sr, err = r.runCacheAside(ctx)
		case StackSQL:
			sr, err = r.runSQL(ctx)
		}
		if err != nil {
			return results, fmt.Errorf("%s: %w", stack, err)
		}
		results = append(results, r.stackRecord(stack, sr))
	}
	if o.OverheadDuration > 0 && ctx.Err() == nil {
		oh, err := r.overhead(ctx, stdout)
		results = append(results, oh...)
		if err != nil {
			return results, err
		}
	}
	printTables(stdout, results)
	if o.Out != "" {
		if err := writeOutputs(o.Out, results); err != nil {
			return results, err
		}
		fmt.Fprintf(stdout, "\nwrote %s and %s\n", filepath.Join(o.Out, "results.jsonl"), filepath.Join(o.Out, "report.html"))
	}
	return results, ctx.Err()
}

func rateText(o *Options) string {
	t := fmt.Sprintf("%d UPDATE/s", o.UpdateRate)
	if o.UpdateRate == 0 {
		t = "unlimited UPDATE/s"
	}
	if o.AsyncCommit {
		t += " (asynchronous commit)"
	}
	return t
}

func (r *run) stackRecord(stack string, sr *stackResult) Result {
	l := sr.load
	res := Result{
		Kind: "stack", Stack: stack,
		ReadsPerS:   float64(l.reads) / l.elapsed.Seconds(),
		P50ms:       float64(l.latency.ValueAtQuantile(50)) / 1000,
		P99ms:       float64(l.latency.ValueAtQuantile(99)) / 1000,
		UpdatesPerS: float64(l.updates) / l.elapsed.Seconds(),
		Stale:       sr.stale, Entries: sr.entries, StaleNotes: r.staleNotes,
		Reads: l.reads, Updates: l.updates, ReadErrors: l.readErrs, WriteErrors: l.writeErrs,
		Writers: r.o.Writers, Readers: r.o.Readers, Rows: r.o.Rows, UpdateRate: r.o.UpdateRate,
		AsyncCommit: r.o.AsyncCommit, DurationS: l.elapsed.Seconds(),
		LoadSched: l.sched,
	}
	if sr.hitRatio >= 0 {
		h := sr.hitRatio
		res.HitRatio = &h
	}
	if stack == StackCSC {
		res.AppClients, res.AppTTL, res.AppStaticTTL, res.Apps = r.o.CSCClients, r.o.CSCTTL.Seconds(), sr.static, sr.apps
		res.Note = sr.note
		res.L1Entries, res.L1Stale = sr.l1Entries, sr.l1Stale
		res.CommitToPush, res.ClientLag = sr.pushLag, sr.clientLag
	}
	if stack == StackPgcache || stack == StackCSC {
		res.Instances, res.Server = r.o.Instances, r.o.Server
		if r.o.Server == ServerChild {
			res.ServerProcs = r.o.ServerProcs
		}
	}
	if stack == StackCacheAside && r.o.FillDelay > 0 {
		res.FillDelay = float64(r.o.FillDelay) / float64(time.Millisecond)
	}
	if l.firstErr != nil {
		res.FirstError = l.firstErr.Error()
	}
	return res
}

// overheadWriters is the larger number of writers the write-overhead
// measurements run ("Cache-aside without the race": 1 and 16).
const overheadWriters = 16

// overheadRounds is how many times each write-overhead variant runs, in
// turns; it reports the median.
const overheadRounds = 3

// overhead measures UPDATE/s with 1 and 16 writers on a plain table, on
// the fenced table (with a relay draining its fence log, as in production)
// and on the plain table followed by a Valkey DEL.
func (r *run) overhead(ctx context.Context, stdout io.Writer) ([]Result, error) {
	c := coherence.NewCoordinator(r.env.db, coherence.CoordinatorOptions{}, zap.NewNop())
	c.Start()
	defer c.Close()
	plain, fenced := fmt.Sprintf(updateSQL, plainTable), fmt.Sprintf(updateSQL, rowsTable)
	variants := []struct {
		name  string
		write writeFunc
	}{
		{"plain", func(ctx context.Context, id int64) error { _, err := r.env.writers.Exec(ctx, plain, id); return err }},
		{"fenced", func(ctx context.Context, id int64) error { _, err := r.env.writers.Exec(ctx, fenced, id); return err }},
	}
	if r.env.valkey != nil {
		variants = append(variants, struct {
			name  string
			write writeFunc
		}{"update+del", func(ctx context.Context, id int64) error {
			if _, err := r.env.writers.Exec(ctx, plain, id); err != nil {
				return err
			}
			v := r.env.valkey
			return v.Do(ctx, v.B().Del().Key(cacheKey(id)).Build()).Error()
		}})
	}
	var out []Result
	for _, writers := range []int{1, overheadWriters} {
		// The variants take turns, overheadRounds times, in an order
		// rotated each round, and each reports its median: a noisy
		// machine slows them alike, where one run after another measured
		// its noise (1 writer "fenced +44%").
		runs := make([][]*loadResult, len(variants))
		for round := range overheadRounds {
			for j := range variants {
				i := (j + round) % len(variants)
				v := variants[i]
				fmt.Fprintf(stdout, "== write overhead: %s, %d writers, %v (round %d of %d)\n",
					v.name, writers, r.o.OverheadDuration/overheadRounds, round+1, overheadRounds)
				o := *r.o
				o.Readers, o.Writers, o.UpdateRate, o.Duration = 0, writers, 0, r.o.OverheadDuration/overheadRounds
				runs[i] = append(runs[i], runLoad(ctx, &o, nil, v.write, r.o.Progress, "overhead "+v.name))
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
			}
		}
		for i, v := range variants {
			res := Result{Kind: "write_overhead", Variant: v.name, Writers: writers, Rows: r.o.Rows, AsyncCommit: r.o.AsyncCommit}
			if v.name == "fenced" {
				res.Trigger = string(r.env.trigger)
			}
			rates := make([]float64, 0, len(runs[i]))
			for _, l := range runs[i] {
				rates = append(rates, float64(l.updates)/l.elapsed.Seconds())
				res.Updates += l.updates
				res.WriteErrors += l.writeErrs
				res.DurationS += l.elapsed.Seconds()
				if l.firstErr != nil && res.FirstError == "" {
					res.FirstError = l.firstErr.Error()
				}
			}
			slices.Sort(rates)
			res.UpdatesPerS = rates[len(rates)/2]
			out = append(out, res)
		}
	}
	return out, nil
}

type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) next() int64 { return c.n.Add(1) }

func writeOutputs(dir string, results []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeJSONL(filepath.Join(dir, "results.jsonl"), results); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return err
	}
	if err := writeHTML(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
