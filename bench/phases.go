package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/pgcache/pgcache/bench/instance"
	"github.com/pgcache/pgcache/bench/load"
	"github.com/pgcache/pgcache/bench/report"
)

// runEngine measures one engine over one protocol on a pgcache of its own:
// reset the engine's data, start pgcache, SET every key, warm up, GET for
// the run's duration, read a sample back. It returns the SET and GET
// records, or fewer when the run is interrupted.
func (r *runner) runEngine(ctx context.Context, e *Engine, proto string) []report.Record {
	o := r.o
	raw := r.keys.Of(e.KeyKind)
	base := report.Record{
		Engine: e.Name, Proto: proto, Storage: e.Storage, Route: e.Route,
		KeyKind: string(e.KeyKind), Keys: len(raw), Applied: r.applied, StartedAt: time.Now(),
	}
	if e.table != nil {
		base.Rows = o.Rows
	}
	fmt.Fprintf(o.Stdout, "\n%s\nENGINE: %s (%s)\n%s\n%s\n", rule, e.Name, proto, rule, e.Storage)
	notRun := func(err error) []report.Record {
		status := report.StatusFailed
		switch {
		case errors.Is(err, ErrUnavailable):
			status = report.StatusUnavailable
		case ctx.Err() != nil:
			return nil // interrupted before anything was measured
		}
		fmt.Fprintf(o.Stdout, "%s: %v\n", status, err)
		set, get := base, base
		set.Phase, get.Phase = report.PhaseSet, report.PhaseGet
		set.Status, get.Status = status, status
		set.Error, get.Error = err.Error(), err.Error()
		return []report.Record{set, get}
	}

	if err := r.reset(ctx, e); err != nil {
		return notRun(err)
	}
	inst, err := r.startPgcache(ctx, e, e.Name+"-"+proto)
	if err != nil {
		return notRun(err)
	}
	defer func() {
		if err := inst.Stop(); err != nil {
			fmt.Fprintf(o.Stderr, "%s: stopping pgcache: %v\n", e.Name, err)
		}
	}()
	drv, wire := r.driver(e, proto, inst, raw)
	base.Load = drv.Shape()
	fmt.Fprintf(o.Stdout, "%s %s keys; %s\n", humanize.Comma(int64(len(raw))), e.KeyKind, drv.Shape())
	if e.service == svcValkey {
		// Valkey outlives pgcache: the keys of an earlier run would make
		// this SET phase overwrite rather than insert.
		prefixed := make([]string, len(raw))
		for i, k := range raw {
			prefixed[i] = e.Prefix + k
		}
		if err := deleteKeys(ctx, inst.Addr("resp"), prefixed); err != nil && ctx.Err() == nil {
			return notRun(err)
		}
	}

	label := e.Name + " " + proto
	fmt.Fprintf(o.Stdout, "\n--- SET: seeding %s keys ---\n", humanize.Comma(int64(len(raw))))
	setRes, err := drv.Run(ctx, load.Plan{
		Name: label + " set", Op: load.Set, Keys: wire,
		Value:    func(i int) []byte { return e.value(i, raw[i]) },
		Requests: uint64(len(wire)), Duration: o.SetTimeout,
	}, r.prog)
	if err != nil {
		return notRun(err)
	}
	r.print(setRes)
	set := record(base, report.PhaseSet, setRes)
	if setRes.Interrupted {
		return []report.Record{set}
	}
	if setRes.Metrics.Requests < uint64(len(wire)) {
		set.Status = report.StatusFailed
		set.Error = fmt.Sprintf("the SET phase hit its %v ceiling (--set-timeout) after %d of %d keys", o.SetTimeout, setRes.Metrics.Requests, len(wire))
	}

	// failGet is the outcome when the GET phase cannot run.
	failGet := func(err error) []report.Record {
		if rest := notRun(err); len(rest) == 2 {
			return []report.Record{set, rest[1]}
		}
		return []report.Record{set}
	}
	get := load.Plan{Name: label + " get", Op: load.Get, Keys: wire}
	if o.Warmup > 0 {
		fmt.Fprintf(o.Stdout, "\n--- warmup: GET for %v (not measured) ---\n", o.Warmup)
		get.Duration = o.Warmup
		res, err := drv.Run(ctx, get, r.prog)
		if err != nil {
			return failGet(err)
		}
		if res.Interrupted {
			return []report.Record{set}
		}
		fmt.Fprintf(o.Stdout, "%s requests, %s req/s, %.2f%% success\n",
			humanize.Comma(int64(res.Metrics.Requests)), report.Rate(res.Metrics.Rate), res.Metrics.Success*100)
	}
	fmt.Fprintf(o.Stdout, "\n--- GET: %v ---\n", o.Duration)
	get.Duration = o.Duration
	var l1Before instance.L1Reads
	if e.l1 {
		if l1Before, err = readL1(ctx, inst.Addr("resp"), e.Route); err != nil {
			return failGet(err)
		}
	}
	getRes, err := drv.Run(ctx, get, r.prog)
	if err != nil {
		return failGet(err)
	}
	r.print(getRes)
	got := record(base, report.PhaseGet, getRes)
	if getRes.Interrupted {
		return []report.Record{set, got}
	}
	if e.l1 {
		after, err := readL1(ctx, inst.Addr("resp"), e.Route)
		if err != nil {
			return failGet(err)
		}
		ratio := after.Minus(l1Before).HitRatio()
		got.L1HitRatio = &ratio
		fmt.Fprintf(o.Stdout, "L1: %.1f%% of the GETs served from memory\n", ratio*100)
	}

	verr := r.verify(ctx, e, proto, inst, raw)
	for _, rec := range []*report.Record{&set, &got} {
		rec.Verified = verr == nil
		if verr != nil {
			rec.Verify = verr.Error()
		}
	}
	if verr != nil {
		fmt.Fprintf(o.Stdout, "verify: FAILED: %v\n", verr)
	} else {
		fmt.Fprintf(o.Stdout, "verify: %d values read back decode to what was written\n", min(DefaultVerifySample, len(raw)))
	}
	return []report.Record{set, got}
}

const rule = "========================================================"

// driver returns the load driver of proto for inst, and the keys as that
// front names them: the bare key for HTTP, the route's prefix and the key
// for RESP.
func (r *runner) driver(e *Engine, proto string, inst instance.Instance, raw []string) (load.Driver, []string) {
	if proto == ProtoRESP {
		wire := make([]string, len(raw))
		for i, k := range raw {
			wire[i] = e.Prefix + k
		}
		return &load.RESP{Addr: inst.Addr("resp"), Conns: r.o.RESPConns, Pipeline: r.o.RESPPipeline}, wire
	}
	return &load.HTTP{Addr: inst.Addr("http"), Route: e.Route, Workers: r.o.Workers}, raw
}

// reset gives the engine the store a first run would find: a kv table
// dropped (its route makes it again), a row table without the rows of
// earlier runs. Memory starts empty with its pgcache; Valkey is cleared
// through pgcache once it runs.
func (r *runner) reset(ctx context.Context, e *Engine) error {
	switch {
	case e.kvTable != "":
		return r.pg.dropTable(ctx, e.kvTable)
	case e.table != nil:
		if err := r.tableErr[e.table]; err != nil {
			return err
		}
		return e.table.reset(ctx, r.pg.pool)
	}
	return nil
}

// print writes vegeta's text report of a phase.
func (r *runner) print(res *load.Result) {
	m := res.Metrics
	vegeta.NewTextReporter(&m).Report(r.o.Stdout)
	if res.Interrupted {
		fmt.Fprintln(r.o.Stdout, "(interrupted)")
	}
}

// record turns a phase's result into its record.
func record(base report.Record, phase string, res *load.Result) report.Record {
	m := res.Metrics
	rec := base
	rec.Phase, rec.Status = phase, report.StatusOK
	if res.Interrupted {
		rec.Status = report.StatusInterrupted
	}
	rec.Requests, rec.RPS, rec.Throughput = m.Requests, m.Rate, m.Throughput
	rec.DurationS = (m.Duration + m.Wait).Seconds()
	rec.MinMS, rec.MeanMS, rec.MaxMS = report.MS(m.Latencies.Min), report.MS(m.Latencies.Mean), report.MS(m.Latencies.Max)
	rec.P50MS, rec.P90MS = report.MS(m.Latencies.P50), report.MS(m.Latencies.P90)
	rec.P95MS, rec.P99MS = report.MS(m.Latencies.P95), report.MS(m.Latencies.P99)
	rec.Success = m.Success
	rec.StatusCodes, rec.Errors = m.StatusCodes, m.Errors
	rec.BytesIn, rec.BytesOut = m.BytesIn.Total, m.BytesOut.Total
	for t, s := range res.Timeline {
		rec.Timeline = append(rec.Timeline, report.Point{
			T: t, Requests: s.Requests, Errors: s.Errors,
			MeanMS: report.MS(s.Mean), P50MS: report.MS(s.P50), P99MS: report.MS(s.P99), MaxMS: report.MS(s.Max),
		})
	}
	if len(rec.Errors) > 0 && rec.Success == 0 {
		rec.Error = strings.Join(rec.Errors, "; ")
	}
	return rec
}
