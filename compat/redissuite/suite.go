// Package redissuite runs Redis's own Tcl test suite, from Debian's `redis`
// source package, against a server that is already running (the suite's
// external mode: `runtest --host H --port P`), one unit at a time, and
// counts what passed.
//
// The suite is never vendored: install.sh unpacks it into a cache directory
// (/var/cache/pgcache-test/redis-src) and Run copies its tests/ tree into a
// temporary directory for each run, so concurrent runs and non-root users do
// not write into the cache.
//
// Each unit runs in its own runtest process with a hard time bound: an
// exception in the Tcl harness (an unknown command outside a test, a server
// that closed the connection) ends that unit only, and a server that stops
// answering costs one unit's bound, not the whole run.
package redissuite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// InstallHint says how to get the suite and its interpreter.
const InstallHint = "run compat/redissuite/install.sh (make test-deps does): it adds a deb-src entry, " +
	"`apt-get source redis` into " + DefaultCache + " and `apt-get install tcl dpkg-dev`"

// DefaultCache is where install.sh unpacks the source package; the
// environment variable REDIS_SUITE_CACHE moves it (for both).
const DefaultCache = "/var/cache/pgcache-test/redis-src"

// Units17 are the units issue 17 names: the string, key, transaction,
// scripting and introspection commands.
var Units17 = []string{
	"unit/type/string", "unit/type/incr", "unit/expire", "unit/keyspace", "unit/multi",
	"unit/scripting", "unit/scan", "unit/info-command", "unit/introspection",
	"unit/protocol", "unit/quit",
}

// Units28 are the units issue 28 names that Redis 7.0's suite has: the
// collection types, the blocking commands (in the list units) and pub/sub.
// 7.0 has no unit/keyspace-events: its keyspace notification tests are in
// unit/pubsub. unit/pubsubshard is tagged external:skip as a whole, so in
// external mode it reports nothing; it is listed for the version that
// runs it.
var Units28 = []string{
	"unit/type/hash", "unit/type/set", "unit/type/zset", "unit/type/list",
	"unit/type/list-2", "unit/type/list-3", "unit/pubsub", "unit/pubsubshard",
}

// DefaultArgs are the runtest options of a run against pgcache, and of the
// baseline it is compared with:
//
//   - --singledb: pgcache has routes, not numbered databases; SELECT 9,
//     which the suite sends on every connection otherwise, is refused.
//   - --durable: an error outside an assertion (an unknown command, in
//     practice) fails that test and the unit goes on; without it the
//     whole unit stops at the first one.
//   - --clients 1: one test client, in order, as external mode needs.
//   - --timeout 60: the suite gives up after 60 s without progress (its
//     default is 20 minutes).
//   - --tags: what external servers are told to skip (tests/README.md):
//     replication, DEBUG, SAVE, RESET, CONFIG RESETSTAT and maxmemory.
//     external:skip is skipped by the suite itself in external mode.
var DefaultArgs = []string{
	"--singledb", "--durable", "--clients", "1", "--timeout", "60",
	"--tags", "-needs:repl -needs:debug -needs:pfdebug -needs:save -needs:reset -needs:config-maxmemory -needs:config-resetstat",
}

// DefaultUnitTimeout bounds one unit's runtest process. The slowest unit
// against redis-server (unit/scripting) takes about 15 s on the 2-core
// machine.
const DefaultUnitTimeout = 4 * time.Minute

// Options of Run.
type Options struct {
	Dir         string        // the suite: a directory with tests/test_helper.tcl (Locate finds it)
	Addr        string        // the server, host:port
	Units       []string      // default Units17
	Args        []string      // runtest options; default DefaultArgs
	UnitTimeout time.Duration // default DefaultUnitTimeout
	Output      io.Writer     // runtest's raw output, when not nil
}

// Locate finds the suite: $PGCACHE_REDIS_SUITE_DIR, else the newest
// redis-*/ under $REDIS_SUITE_CACHE or DefaultCache. It also checks that
// tclsh is installed. The error says how to install what is missing.
func Locate() (dir, tclsh string, err error) {
	if tclsh, err = testenv.LookPath("tclsh", "apt-get install tcl"); err != nil {
		return "", "", err
	}
	if d := os.Getenv("PGCACHE_REDIS_SUITE_DIR"); d != "" {
		if !isSuite(d) {
			return "", "", fmt.Errorf("redissuite: PGCACHE_REDIS_SUITE_DIR=%s has no tests/test_helper.tcl", d)
		}
		return d, tclsh, nil
	}
	cache := os.Getenv("REDIS_SUITE_CACHE")
	if cache == "" {
		cache = DefaultCache
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "redis-*"))
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // the newest version first, as install.sh picks
	for _, d := range dirs {
		if isSuite(d) {
			return d, tclsh, nil
		}
	}
	return "", "", fmt.Errorf("redissuite: no Redis test suite under %s: %s", cache, InstallHint)
}

func isSuite(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "tests", "test_helper.tcl"))
	return err == nil
}

// Run runs each unit against opts.Addr and returns what each reported. An
// error is returned only when nothing could run (no suite, no tclsh, a
// temporary directory); a unit that crashed or timed out is in the result.
// Cancelling ctx stops the unit that runs and skips the rest.
func Run(ctx context.Context, tclsh string, opts Options) (*Result, error) {
	host, port, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("redissuite: address %q: %w", opts.Addr, err)
	}
	if opts.Units == nil {
		opts.Units = Units17
	}
	if opts.Args == nil {
		opts.Args = DefaultArgs
	}
	if opts.UnitTimeout == 0 {
		opts.UnitTimeout = DefaultUnitTimeout
	}
	work, err := os.MkdirTemp("", "pgcache-redissuite-")
	if err != nil {
		return nil, fmt.Errorf("redissuite: %w", err)
	}
	defer os.RemoveAll(work)
	if err := os.CopyFS(filepath.Join(work, "tests"), os.DirFS(filepath.Join(opts.Dir, "tests"))); err != nil {
		return nil, fmt.Errorf("redissuite: copy the suite: %w", err)
	}
	res := &Result{Addr: opts.Addr}
	if !slices.Contains(opts.Args, "--baseport") {
		opts.Args = append(slices.Clone(opts.Args), "--baseport", strconv.Itoa(basePort()))
	}
	for _, unit := range opts.Units {
		if ctx.Err() != nil {
			res.Units = append(res.Units, UnitResult{Unit: unit, Aborted: "not run: " + ctx.Err().Error()})
			continue
		}
		args := append([]string{"tests/test_helper.tcl", "--host", host, "--port", port, "--single", unit}, opts.Args...)
		res.Units = append(res.Units, runUnit(ctx, tclsh, work, unit, args, opts))
	}
	return res, nil
}

// basePort is a --baseport for runtest whose test server (it listens on
// one of the 32 ports below the base port, and checks that port + 10000 is
// free too) does not meet another run's: runtest's default is one fixed
// port, which two runs on one machine both want.
func basePort() int {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			break
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p >= 1024+32 && p+10000 < 65536 {
			return p + 32
		}
	}
	return 21111 // runtest's own
}

// runUnit runs one runtest process in its own process group, killed as a
// group at the unit's bound: the suite's test server starts its test
// clients as children, which must not outlive it.
func runUnit(ctx context.Context, tclsh, work, unit string, args []string, opts Options) UnitResult {
	ctx, cancel := context.WithTimeout(ctx, opts.UnitTimeout)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, tclsh, args...)
	cmd.Dir = work
	// TERM=dumb: no colour codes around the status words.
	cmd.Env = append(testenv.Env(nil, "TERM"), "TERM=dumb")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	var w io.Writer = &out
	if opts.Output != nil {
		w = io.MultiWriter(&out, opts.Output)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	if cmd.Process != nil {
		// A test client left behind by a test server that died.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	u := parseUnit(unit, out.String())
	u.Duration = time.Since(start)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		u.Aborted = fmt.Sprintf("killed after %v", opts.UnitTimeout)
	case ctx.Err() != nil:
		u.Aborted = "killed: " + ctx.Err().Error()
	case u.Aborted == "" && err != nil && len(u.Tests) == 0:
		// runtest exits 1 when a test failed, which the tests say; with
		// no test at all the output is the only clue.
		u.Aborted = fmt.Sprintf("runtest: %v: %s", err, lastLines(out.String(), 5))
	}
	return u
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
