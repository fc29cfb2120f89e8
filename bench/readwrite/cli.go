package readwrite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
)

// Usage is the synopsis of `pgcache bench coherence`.
const Usage = "pgcache bench coherence [--rows 60000 --readers 64 --update-rate 30000 --duration 30s --instances 1 --server child|inproc --out DIR]"

// Main runs `pgcache bench coherence` with args and returns the exit code:
// 0, 1 when the run failed, 2 for a bad command line.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("bench coherence", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	var stacks string
	fs.IntVar(&o.Rows, "rows", DefaultRows, "rows in the table")
	fs.IntVar(&o.Readers, "readers", DefaultReaders, "concurrent readers, one row per read, uniform over the rows")
	fs.IntVar(&o.Writers, "writers", DefaultWriters, "concurrent writers")
	fs.IntVar(&o.UpdateRate, "update-rate", DefaultUpdateRate, "UPDATEs per second across writers; 0: as fast as they can")
	fs.BoolVar(&o.AsyncCommit, "async-commit", false, "writers' SQL UPDATEs commit with synchronous_commit = off (no wait for the WAL flush; visibility and fences are unchanged)")
	fs.DurationVar(&o.Duration, "duration", DefaultDuration, "reads while writing, per stack")
	fs.IntVar(&o.Instances, "instances", 1, "pgcache instances sharing the database (readers and writers spread across them)")
	fs.StringVar(&stacks, "stacks", strings.Join(Stacks, ","), "stacks to run, comma-separated")
	fs.IntVar(&o.CSCClients, "csc-clients", DefaultCSCClients, "pgcache-csc: app clients the readers share, each with its own client-side cache")
	fs.DurationVar(&o.CSCTTL, "csc-ttl", DefaultCSCTTL, "pgcache-csc: the readers' DoCache TTL (the longest an app keeps a row whose invalidation it missed)")
	fs.BoolVar(&o.CSCStaticTTL, "csc-static-ttl", false, "pgcache-csc: DoCache sends GET alone (valkey-go's ToStaticTTL), not its default MULTI/PTTL/GET/EXEC")
	fs.DurationVar(&o.FillDelay, "fill-delay", 0, "hold cache-aside readers this long between SELECT and SET (a demonstration of the late-fill race)")
	fs.DurationVar(&o.OverheadDuration, "overhead-duration", DefaultOverheadDuration, "time each write-overhead variant runs, in 3 turns with the others (the median is reported); negative skips them")
	fs.DurationVar(&o.SettleTimeout, "settle-timeout", DefaultSettleTimeout, "how long to wait for fences after the writers stop")
	fs.StringVar(&o.PGDSN, "pg-dsn", "", "use this PostgreSQL (default: start a throwaway one)")
	fs.StringVar(&o.ValkeyAddr, "valkey-addr", "", "use this Valkey/Redis (default: start a throwaway one)")
	fs.StringVar(&o.Out, "out", "", "write results.jsonl and report.html here")
	fs.BoolVar(&o.NoWarmup, "no-warmup", false, "skip reading every row once before each stack's measured run")
	fs.StringVar(&o.Server, "server", ServerChild, "how the pgcache instances run: child (this binary, own GOMAXPROCS/GOMEMLIMIT) or inproc")
	fs.IntVar(&o.ServerProcs, "server-procs", 0, fmt.Sprintf("GOMAXPROCS of each pgcache child (default min(%d, CPUs))", DefaultServerProcs))
	memlimit := fs.String("server-memlimit", fmt.Sprintf("%dGiB", DefaultServerMemLimit>>30), "GOMEMLIMIT of each pgcache child")
	quiet := fs.Bool("quiet", false, "no progress lines")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\nReads while writing, as \"Cache-aside without the race\" (pg_local_cache) measured\nthem: pgcache's coherent L1, the apps' own caches kept by pgcache's CLIENT TRACKING\n(pgcache-csc), Valkey cache-aside and prepared SQL on one table, stale entries\nafter the writes settle, and what invalidation costs writers.\nThe seed columns are that article's figures (docs/bench.md).\n\nflags:\n", Usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		// pflag returns the error without printing it (ContinueOnError).
		fmt.Fprintf(stderr, "pgcache bench coherence: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	o.Stacks = strings.Split(stacks, ",")
	b, err := humanize.ParseBytes(*memlimit)
	if err != nil {
		fmt.Fprintf(stderr, "--server-memlimit %q: %v\n", *memlimit, err)
		return 2
	}
	o.ServerMemLimit = int64(b)
	if o.Server == ServerChild {
		if o.Executable, err = os.Executable(); err != nil {
			fmt.Fprintf(stderr, "cannot find this binary to run pgcache from (%v); use --server inproc\n", err)
			return 1
		}
	}
	if !*quiet {
		o.Progress = stderr
	}
	// Ctrl-C stops the load and the servers the run started, and writes
	// what it has.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	results, err := Run(ctx, o, stdout)
	if err != nil && o.Out != "" && len(results) > 0 {
		if werr := writeOutputs(o.Out, results); werr == nil {
			fmt.Fprintf(stderr, "wrote the results so far to %s\n", o.Out)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "pgcache bench coherence: %v (after %v)\n", err, time.Since(start).Round(time.Second))
		return 1
	}
	return 0
}
