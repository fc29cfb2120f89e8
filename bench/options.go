package bench

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pgcache/pgcache/bench/keys"
	"github.com/pgcache/pgcache/bench/load"
)

// Preset durations and sizes: the published comparison's quick, medium and long runs.
const (
	PresetQuick  = "quick"
	PresetMedium = "medium"
	PresetLong   = "long"
)

// preset is what a preset sets when a flag does not.
type preset struct {
	duration, warmup time.Duration
	rows             int64
}

// presets: GET 5 s / 300 s / 600 s per engine, a 30 s warmup for medium
// and long, and background rows for the table engines scaled from
// the published comparison's 10,000,000 (quick keeps them small enough for a few minutes).
var presets = map[string]preset{
	PresetQuick:  {duration: 5 * time.Second, warmup: 0, rows: 100_000},
	PresetMedium: {duration: 300 * time.Second, warmup: 30 * time.Second, rows: 1_000_000},
	PresetLong:   {duration: 600 * time.Second, warmup: 30 * time.Second, rows: 10_000_000},
}

// Presets lists the preset names in order of length.
var Presets = []string{PresetQuick, PresetMedium, PresetLong}

// Defaults.
const (
	DefaultKeys       = 100_000 // the published comparison's working set
	DefaultSetTimeout = 15 * time.Minute
	DefaultPGConns    = 32
	DefaultOutRoot    = "bench-out"
	DefaultListen     = "127.0.0.1:0" // a free port

	// The seed's caps: pgcache on 4 cores and 10 GiB, PostgreSQL and
	// Valkey each in a cgroup of 2 CPUs and 4 GiB.
	DefaultServerProcs    = 4
	DefaultServerMemLimit = 10 << 30
	DefaultCPUQuota       = "200%"
	DefaultMemoryMax      = "4G"

	// DefaultVerifySample is how many keys are read back and decoded
	// after each GET phase.
	DefaultVerifySample = 100
)

// Server modes.
const (
	// ServerChild runs pgcache as a child process of the pgcache binary
	// (`pgcache run`), with GOMAXPROCS and GOMEMLIMIT of its own: the load
	// generator does not share its scheduler or its garbage collector.
	ServerChild = "child"
	// ServerInProcess runs pgcache inside the bench process (server.New):
	// simpler, and what the tests use, but the load generator and pgcache
	// share GOMAXPROCS and the GC.
	ServerInProcess = "inproc"
)

// Protocols.
const (
	ProtoHTTP = "http"
	ProtoRESP = "resp"
)

// Options configure a run. Zero fields take the preset's or the default.
type Options struct {
	Preset  string   // quick, medium or long; default quick
	Engines []string // default: all, in Engines order
	Protos  []string // http and/or resp; default http

	Keys       int           // keys seeded and read; default DefaultKeys
	KeysFile   string        // default keys.DefaultFile
	Rows       int64         // background rows of the table engines; <0: the preset's
	Duration   time.Duration // GET phase; default the preset's
	Warmup     time.Duration // GET before measuring; <0: the preset's
	SetTimeout time.Duration // ceiling of a SET phase; default DefaultSetTimeout

	Out string // results directory; default bench-out/<preset>-<time>

	PGDSN      string // an existing PostgreSQL; "": a throwaway one
	ValkeyAddr string // an existing Valkey or Redis; "": a throwaway one
	PGConns    int    // pgcache's pool size; default DefaultPGConns
	NoCaps     bool   // do not put the servers in systemd scopes

	Server         string // ServerChild or ServerInProcess; default child when Executable is set
	Executable     string // the pgcache binary for ServerChild
	ServerProcs    int    // GOMAXPROCS of a child pgcache; default min(4, CPUs)
	ServerMemLimit int64  // GOMEMLIMIT of a child pgcache; default min(10GiB, half the memory)
	HTTPAddr       string // pgcache's HTTP listen address; default a free 127.0.0.1 port
	RESPAddr       string // pgcache's RESP listen address; default a free 127.0.0.1 port

	Workers      uint64 // HTTP: vegeta workers; default 250
	RESPConns    int    // RESP: connections; default 32
	RESPPipeline int    // RESP: requests in flight per connection; default 8

	Stdout, Stderr io.Writer // reports and tables; progress and notes
	TTY            bool      // Stderr is a terminal: progress redraws one line
	Command        string    // the command line, for the report
}

// fill sets what was left zero.
func (o *Options) fill(now time.Time) {
	if o.Preset == "" {
		o.Preset = PresetQuick
	}
	p := presets[o.Preset]
	if len(o.Engines) == 0 {
		o.Engines = EngineNames()
	}
	if len(o.Protos) == 0 {
		o.Protos = []string{ProtoHTTP}
	}
	if o.Keys == 0 {
		o.Keys = DefaultKeys
	}
	if o.KeysFile == "" {
		o.KeysFile = keys.DefaultFile
	}
	if o.Rows < 0 {
		o.Rows = p.rows
	}
	if o.Duration == 0 {
		o.Duration = p.duration
	}
	if o.Warmup < 0 {
		o.Warmup = p.warmup
	}
	if o.SetTimeout == 0 {
		o.SetTimeout = DefaultSetTimeout
	}
	if o.Out == "" {
		o.Out = fmt.Sprintf("%s/%s-%s", DefaultOutRoot, o.Preset, now.Format("20060102-150405"))
	}
	if o.PGConns == 0 {
		o.PGConns = DefaultPGConns
	}
	if o.Server == "" {
		o.Server = ServerInProcess
		if o.Executable != "" {
			o.Server = ServerChild
		}
	}
	if o.ServerProcs == 0 {
		o.ServerProcs = min(DefaultServerProcs, runtime.NumCPU())
	}
	if o.ServerMemLimit == 0 {
		o.ServerMemLimit = DefaultServerMemLimit
		if mem := hostMemory(); mem > 0 {
			o.ServerMemLimit = min(o.ServerMemLimit, mem/2)
		}
	}
	if o.HTTPAddr == "" {
		o.HTTPAddr = DefaultListen
	}
	if o.RESPAddr == "" {
		o.RESPAddr = DefaultListen
	}
	if o.Workers == 0 {
		o.Workers = load.DefaultHTTPWorkers
	}
	if o.RESPConns == 0 {
		o.RESPConns = load.DefaultRESPConns
	}
	if o.RESPPipeline == 0 {
		o.RESPPipeline = load.DefaultRESPPipeline
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
}

// validate checks filled options; each error names the flag.
func (o *Options) validate() error {
	if _, ok := presets[o.Preset]; !ok {
		return fmt.Errorf("preset %q: not one of %s", o.Preset, strings.Join(Presets, ", "))
	}
	for _, name := range o.Engines {
		if engineByName(name) == nil {
			return fmt.Errorf("%w %q (known: %s)", ErrUnknownEngine, name, strings.Join(EngineNames(), ", "))
		}
	}
	for _, p := range o.Protos {
		if p != ProtoHTTP && p != ProtoRESP {
			return fmt.Errorf("--proto %q: not http, resp or both", p)
		}
	}
	switch {
	case o.Keys < 1:
		return fmt.Errorf("--keys %d: at least 1", o.Keys)
	case o.Rows > maxBackgroundRows:
		return fmt.Errorf("--rows %d: at most %d", o.Rows, int64(maxBackgroundRows))
	case o.Duration <= 0:
		return fmt.Errorf("--duration %v: must be positive", o.Duration)
	case o.SetTimeout <= 0:
		return fmt.Errorf("--set-timeout %v: must be positive", o.SetTimeout)
	case o.PGConns < 1:
		return fmt.Errorf("--pg-conns %d: at least 1", o.PGConns)
	case o.Server != ServerChild && o.Server != ServerInProcess:
		return fmt.Errorf("--server %q: not %s or %s", o.Server, ServerChild, ServerInProcess)
	case o.Server == ServerChild && o.Executable == "":
		return fmt.Errorf("--server %s needs the pgcache binary", ServerChild)
	}
	for _, l := range []struct{ flag, addr string }{{"--http-addr", o.HTTPAddr}, {"--resp-addr", o.RESPAddr}} {
		host, _, err := net.SplitHostPort(l.addr)
		if err != nil {
			return fmt.Errorf("%s %q: not host:port", l.flag, l.addr)
		}
		// The load goes to pgcache only, and only over loopback.
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("%s %q: the bench listens on loopback only (127.0.0.1)", l.flag, l.addr)
		}
	}
	return nil
}

// ParseList splits a comma-separated flag value, dropping blanks and
// duplicates; "both" stands for http,resp.
func ParseList(s string) []string {
	var out []string
	add := func(f string) {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "both" {
			add(ProtoHTTP)
			add(ProtoRESP)
		} else {
			add(f)
		}
	}
	return out
}

// hostMemory is the machine's memory in bytes, 0 when unknown.
func hostMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
