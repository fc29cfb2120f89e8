// Package readwrite is `pgcache bench coherence`: the "reads while writing"
// table of "Cache-aside without the race" on the user's own machine, with pgcache in place of
// pg_local_cache. Readers read one row per request, uniform over a table,
// while writers UPDATE it at a fixed rate; the stacks run one after another
// on the same data:
//
//   - pgcache: a table route with a coherent L1; readers send RESP MGET of
//     one CRUD: key.
//   - pgcache-csc: the pgcache stack's servers and route, with readers that
//     keep rows in their own memory (valkey-go's DoCache, client-side
//     caching on), invalidated by pgcache's CLIENT TRACKING pushes.
//   - valkey-cache-aside: readers GET from Valkey and, on a miss, SELECT the
//     row and SET it; writers UPDATE, then DEL the key.
//   - prepared-sql: readers SELECT the row with a prepared statement.
//
// The pgcache instances are child processes of the binary by default, so
// the load generator shares neither their scheduler nor their GC. After
// the writers stop and fences settle, every cached entry (every instance's
// L1, read through its admin API's GET /debug/l1; every Valkey key) is
// compared with PostgreSQL: the stale count. A second table measures what
// invalidation costs writers.
//
// The package is named for what it measures, reads while writing; the
// subcommand keeps the name users know.
package readwrite

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Stack names.
const (
	StackPgcache    = "pgcache"
	StackCSC        = "pgcache-csc"
	StackCacheAside = "valkey-cache-aside"
	StackSQL        = "prepared-sql"
)

// Stacks lists the stacks in the order they run.
var Stacks = []string{StackPgcache, StackCSC, StackCacheAside, StackSQL}

// Defaults: the run of "Cache-aside without the race" (60k rows, 64 readers, 30,000 UPDATE/s).
const (
	DefaultRows             = 60000
	DefaultReaders          = 64
	DefaultWriters          = 16
	DefaultUpdateRate       = 30000
	DefaultDuration         = 30 * time.Second
	DefaultOverheadDuration = 10 * time.Second
	DefaultSettleTimeout    = 30 * time.Second

	// DefaultCSCClients is how many app clients, each with its own cache,
	// the pgcache-csc stack's readers share: one, as the other stacks'
	// readers are one application sharing one client or pool.
	DefaultCSCClients = 1
	// DefaultCSCTTL is the client-side TTL of the pgcache-csc stack's
	// DoCache: the longest an app keeps a row whose invalidation it missed.
	DefaultCSCTTL = time.Minute

	// DefaultServerProcs caps a child pgcache's GOMAXPROCS (at the CPUs
	// there are), as the engine bench does.
	DefaultServerProcs = 4
	// DefaultServerMemLimit is a child pgcache's GOMEMLIMIT: room for its
	// L1 (512MiB at most) and its buffers.
	DefaultServerMemLimit = 2 << 30
)

// How the pgcache instances run.
const (
	// ServerChild runs each instance as a child process of the pgcache
	// binary (`pgcache run`), with GOMAXPROCS and GOMEMLIMIT of its own:
	// the load generator shares neither its scheduler nor its GC.
	ServerChild = "child"
	// ServerInProcess runs the instances inside the bench (server.New).
	ServerInProcess = "inproc"
)

// Options configure a run. Zero values take the defaults.
type Options struct {
	Rows       int           // rows in the table
	Readers    int           // concurrent readers
	Writers    int           // concurrent writers
	UpdateRate int           // UPDATEs per second across writers; 0 = as fast as they can
	Duration   time.Duration // reads-while-writing time per stack
	Instances  int           // pgcache instances sharing the database
	Stacks     []string      // which stacks, in Stacks order

	Server         string // ServerChild or ServerInProcess; default child when Executable is set
	Executable     string // the pgcache binary ServerChild runs
	ServerProcs    int    // GOMAXPROCS of each child; default min(DefaultServerProcs, CPUs)
	ServerMemLimit int64  // GOMEMLIMIT of each child in bytes; default DefaultServerMemLimit

	// NoWarmup skips reading every row once before the measured run (a
	// cache then starts cold, and a short run measures mostly misses).
	NoWarmup bool

	// AsyncCommit runs the writers with synchronous_commit = off: a commit
	// returns before its WAL is flushed. Visibility, triggers and fences
	// are unchanged; where the disk's flush, not the cache, bounds the
	// UPDATE rate, it lets the writers come nearer the asked rate.
	AsyncCommit bool

	// CSCClients is how many app clients the pgcache-csc stack's readers
	// share (reader i uses client i mod CSCClients), each with its own
	// client-side cache, spread over the instances; default
	// DefaultCSCClients.
	CSCClients int
	// CSCTTL is the pgcache-csc readers' DoCache TTL; default DefaultCSCTTL.
	CSCTTL time.Duration
	// CSCStaticTTL makes the pgcache-csc readers' DoCache send the GET
	// alone (valkey-go's ToStaticTTL) instead of its default transaction
	// (MULTI, PTTL, GET, EXEC): the entry then lives CSCTTL, whatever the
	// key's own TTL. Without it the stack tries the transaction first, and
	// sends the GET alone, saying so, when pgcache refuses it.
	CSCStaticTTL bool
	// cscDeaf adds app clients whose cache ignores invalidations, beside
	// the CSCClients, reading as they do: the audit must find them stale
	// (tests).
	cscDeaf int

	// FillDelay holds a cache-aside reader between its SELECT and its SET:
	// a demonstration of the late-fill race (valkey-cache-aside only).
	FillDelay time.Duration

	// OverheadDuration is how long each write-overhead variant runs in
	// all, in overheadRounds turns with the others; negative skips them.
	OverheadDuration time.Duration
	// SettleTimeout bounds the wait for fences after the writers stop.
	SettleTimeout time.Duration

	PGDSN      string // existing PostgreSQL; "" starts a throwaway one
	ValkeyAddr string // existing Valkey/Redis; "" starts a throwaway one
	Out        string // directory for results.jsonl and report.html; "" none

	// Progress receives live progress lines; nil is quiet.
	Progress io.Writer
}

func (o *Options) fill() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Rows, DefaultRows)
	def(&o.Readers, DefaultReaders)
	def(&o.Writers, DefaultWriters)
	def(&o.Instances, 1)
	def(&o.CSCClients, DefaultCSCClients)
	if o.CSCTTL <= 0 {
		o.CSCTTL = DefaultCSCTTL
	}
	if o.UpdateRate < 0 {
		o.UpdateRate = 0
	}
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	if o.OverheadDuration == 0 {
		o.OverheadDuration = DefaultOverheadDuration
	}
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = DefaultSettleTimeout
	}
	if len(o.Stacks) == 0 {
		o.Stacks = slices.Clone(Stacks)
	}
	if o.Server == "" {
		o.Server = ServerInProcess
		if o.Executable != "" {
			o.Server = ServerChild
		}
	}
	if o.ServerProcs <= 0 {
		o.ServerProcs = min(DefaultServerProcs, runtime.NumCPU())
	}
	if o.ServerMemLimit <= 0 {
		o.ServerMemLimit = DefaultServerMemLimit
	}
}

func (o *Options) validate() error {
	for _, s := range o.Stacks {
		if !slices.Contains(Stacks, s) {
			return fmt.Errorf("unknown stack %q (known: %s)", s, strings.Join(Stacks, ", "))
		}
	}
	if o.Instances > 16 {
		return fmt.Errorf("--instances %d: at most 16", o.Instances)
	}
	switch {
	case o.Server != ServerChild && o.Server != ServerInProcess:
		return fmt.Errorf("--server %q: not %s or %s", o.Server, ServerChild, ServerInProcess)
	case o.Server == ServerChild && o.Executable == "":
		return fmt.Errorf("--server %s needs the pgcache binary", ServerChild)
	}
	return nil
}

// needsValkey reports whether a stack in the run uses Valkey.
func (o *Options) needsValkey() bool {
	return slices.Contains(o.Stacks, StackCacheAside) || o.OverheadDuration > 0
}
