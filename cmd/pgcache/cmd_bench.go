package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dustin/go-humanize"
	"github.com/mattn/go-isatty"
	"github.com/spf13/pflag"

	"github.com/pgcache/pgcache/bench"
	"github.com/pgcache/pgcache/bench/keys"
	"github.com/pgcache/pgcache/bench/readwrite"
)

func init() {
	register(command{
		name:  "bench",
		usage: "[quick|medium|long] [flags]\n       pgcache bench gen-targets [--keys N] [--keys-file FILE]\n       pgcache bench report DIR\n       " + readwrite.Usage,
		short: `compare the engines of "PostgreSQL as a High-Performance Cache" (memory, Valkey, PostgreSQL kinds) through a real pgcache`,
		run:   cmdBench,
	})
}

// exitInterrupted is the shell's code for a command ended by SIGINT.
const exitInterrupted = 130

func cmdBench(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "gen-targets" {
		return cmdGenTargets(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "report" {
		return cmdBenchReport(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "coherence" {
		return readwrite.Main(args[1:], stdout, stderr)
	}
	preset := bench.PresetQuick
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		preset, args = args[0], args[1:]
	}
	fs := commands["bench"].flags(stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() {
		defaultUsage()
		fmt.Fprintf(stderr, "\npresets (GET per engine, warmup, background rows):\n"+
			"  quick   5s, no warmup, 100,000 rows\n  medium  300s, 30s warmup, 1,000,000 rows\n  long    600s, 30s warmup, 10,000,000 rows\n"+
			"\nengines, in run order:\n")
		for _, name := range bench.EngineNames() {
			fmt.Fprintf(stderr, "  %s\n", name)
		}
		fmt.Fprintf(stderr, "\nWithout --pg-dsn / --valkey-addr, throwaway PostgreSQL and Valkey/Redis servers are\n"+
			"started (apt-get install postgresql redis-server) and stopped after. Results go to\n"+
			"--out: results.jsonl, report.html, and each engine's pgcache config and log.\n")
	}
	var o bench.Options
	engines := fs.String("engines", strings.Join(bench.EngineNames(), ","), "engines to run, comma-separated")
	proto := fs.String("proto", bench.ProtoHTTP, "protocol: http (vegeta), resp (pipelined driver) or both")
	fs.IntVar(&o.Keys, "keys", bench.DefaultKeys, "keys seeded by the SET phase and read by the GET phase")
	fs.StringVar(&o.KeysFile, "keys-file", keys.DefaultFile, "keys file; generated when absent or short")
	rows := fs.Int64("rows", 0, "background rows of the table engines (default: the preset's)")
	fs.DurationVar(&o.Duration, "duration", 0, "GET phase per engine (default: the preset's)")
	warmup := fs.Duration("warmup", 0, "unmeasured GET before the GET phase (default: the preset's)")
	fs.DurationVar(&o.SetTimeout, "set-timeout", bench.DefaultSetTimeout, "ceiling of a SET phase")
	fs.StringVar(&o.Out, "out", "", "results directory (default bench-out/<preset>-<time>)")
	fs.StringVar(&o.PGDSN, "pg-dsn", "", "use this PostgreSQL instead of a throwaway one")
	fs.StringVar(&o.ValkeyAddr, "valkey-addr", "", "use this Valkey/Redis (host:port) instead of a throwaway one")
	fs.IntVar(&o.PGConns, "pg-conns", bench.DefaultPGConns, "pgcache's PostgreSQL pool size (max_conns)")
	fs.BoolVar(&o.NoCaps, "no-caps", false, "do not put throwaway servers in systemd scopes (CPUQuota=200%, MemoryMax=4G)")
	fs.StringVar(&o.Server, "server", bench.ServerChild, "how pgcache runs: child (this binary, own GOMAXPROCS/GOMEMLIMIT) or inproc")
	fs.IntVar(&o.ServerProcs, "server-procs", 0, "GOMAXPROCS of the pgcache child (default min(4, CPUs))")
	memlimit := fs.String("server-memlimit", "", "GOMEMLIMIT of the pgcache child, like 10GiB (default min(10GiB, half the memory))")
	fs.StringVar(&o.HTTPAddr, "http-addr", bench.DefaultListen, "pgcache's HTTP listen address (loopback)")
	fs.StringVar(&o.RESPAddr, "resp-addr", bench.DefaultListen, "pgcache's RESP listen address (loopback)")
	fs.Uint64Var(&o.Workers, "workers", 250, "HTTP: vegeta workers (rate=0: as fast as they go)")
	fs.IntVar(&o.RESPConns, "resp-conns", 32, "RESP: connections")
	fs.IntVar(&o.RESPPipeline, "resp-pipeline", 8, "RESP: requests in flight per connection")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	o.Preset = preset
	o.Engines = bench.ParseList(*engines)
	o.Protos = bench.ParseList(*proto)
	o.Rows, o.Warmup = -1, -1 // the preset's
	if fs.Changed("rows") {
		o.Rows = *rows
	}
	if fs.Changed("warmup") {
		o.Warmup = *warmup
	}
	if *memlimit != "" {
		b, err := humanize.ParseBytes(*memlimit)
		if err != nil {
			fmt.Fprintf(stderr, "pgcache bench: --server-memlimit %q: %v\n", *memlimit, err)
			return exitUsage
		}
		o.ServerMemLimit = int64(b)
	}
	if o.Server == bench.ServerChild {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "pgcache bench: cannot find this binary to run pgcache from (%v); use --server inproc\n", err)
			return exitError
		}
		o.Executable = exe
	}
	o.Stdout, o.Stderr = stdout, stderr
	if f, ok := stderr.(*os.File); ok {
		o.TTY = isatty.IsTerminal(f.Fd())
	}
	o.Command = "pgcache bench " + preset + " " + strings.Join(args, " ")

	// The first Ctrl-C stops the load, stops the servers the run started
	// and writes what ran; a second one exits at once (the servers die
	// with this process: they get a signal when it does).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	noteStop := context.AfterFunc(ctx, func() {
		stop()
		fmt.Fprintln(stderr, "\nstopping: finishing the current phase's requests, stopping the servers, writing the results (Ctrl-C again exits at once)")
	})
	defer noteStop() // runs before stop: no note when the run simply ends

	_, err := bench.Run(ctx, o)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, bench.ErrInterrupted):
		fmt.Fprintf(stderr, "pgcache bench: %v\n", err)
		return exitInterrupted
	case errors.Is(err, bench.ErrUnknownEngine):
		fmt.Fprintf(stderr, "pgcache bench: %v\n", err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "pgcache bench: %v\n", err)
		return exitError
	}
}

func cmdGenTargets(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("bench gen-targets", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: pgcache bench gen-targets [--keys N] [--keys-file FILE]\n\n"+
			"write new keys for the bench: one per line as uuidv7, ulid and tsid, tab-separated\n\nflags:\n")
		fs.PrintDefaults()
	}
	n := fs.Int("keys", bench.DefaultKeys, "how many keys")
	file := fs.String("keys-file", keys.DefaultFile, "where to write them")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *n < 1 {
		fmt.Fprintf(stderr, "pgcache bench gen-targets: --keys %d: at least 1\n", *n)
		return exitUsage
	}
	set, err := keys.Generate(*n)
	if err == nil {
		err = keys.Write(*file, set)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pgcache bench gen-targets: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "wrote %s keys (uuidv7, ulid, tsid) to %s\n", humanize.Comma(int64(*n)), *file)
	return exitOK
}

// cmdBenchReport writes DIR/report.html again from DIR/results.jsonl.
func cmdBenchReport(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "usage: pgcache bench report DIR\n\nwrite DIR/report.html again from DIR/results.jsonl and print the summary\n")
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
			return exitOK
		}
		return exitUsage
	}
	if err := bench.Report(args[0], stdout); err != nil {
		fmt.Fprintf(stderr, "pgcache bench report: %v\n", err)
		return exitError
	}
	return exitOK
}
