package redissuite

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Lines as runtest prints them with TERM=dumb (taken from runs against
// pgcache and redis-server).
const sampleOutput = `Cleanup: may take some time... OK
Starting test server at port 21079
[ready]: 12213
Testing unit/type/string
[ok]: SET and GET an item (0 ms)
[ok]: Very big payload random access (1755 ms)
[err]: SET 10000 numeric keys and access all them in reverse order in tests/unit/type/string.tcl
n command 'flushdb', with args beginning with:
ERR unknown command 'flushdb', with args beginning with:
    while executing
"[srv $level "client"] {*}$args"
[ignore]: GETDEL propagate as DEL command to replica: Tag: needs:repl denied
[skip]: SETNX against expired volatile key
[err]: Script ACL check in tests/unit/scripting.tcl
Expected 'x' to equal or match 'NOPERM this user has no permissions to run the 'acl|setuser' command'
[ok]: SET and GET an item (1 ms)
[exception]: Executing test client: ERR unknown command 'flushall', with args beginning with:.
ERR unknown command 'flushall', with args beginning with:
    while executing
"r flushall"
[1/1 done]: unit/type/string (3 seconds)

                   The End

!!! WARNING The following tests failed:

*** [err]: SET 10000 numeric keys and access all them in reverse order in tests/unit/type/string.tcl
n command 'flushdb', with args beginning with:
`

func TestParseUnit(t *testing.T) {
	u := parseUnit("unit/type/string", sampleOutput)
	want := []struct {
		status Status
		name   string
		cause  string
	}{
		{Passed, "SET and GET an item", ""},
		{Passed, "Very big payload random access", ""},
		{Failed, "SET 10000 numeric keys and access all them in reverse order", "unknown command FLUSHDB"},
		{Ignored, "GETDEL propagate as DEL command to replica: Tag: needs:repl denied", ""},
		{Skipped, "SETNX against expired volatile key", ""},
		{Failed, "Script ACL check", "ACL refuses ACL|SETUSER"},
		{Passed, "SET and GET an item", ""}, // names repeat: counted twice
		{Exception, "Executing test client: ERR unknown command 'flushall', with args beginning with:.", "unknown command FLUSHALL"},
	}
	if len(u.Tests) != len(want) {
		t.Fatalf("parsed %d tests, want %d: %+v", len(u.Tests), len(want), u.Tests)
	}
	for i, w := range want {
		got := u.Tests[i]
		if got.Status != w.status || got.Name != w.name {
			t.Errorf("test %d = [%s] %q, want [%s] %q", i, got.Status, got.Name, w.status, w.name)
		}
		if w.cause != "" {
			if c := Cause(got); c != w.cause {
				t.Errorf("test %d cause = %q, want %q", i, c, w.cause)
			}
		}
	}
	if d := u.Tests[2].Detail; !strings.HasPrefix(d, "n command 'flushdb'") || strings.Contains(d, "[ignore]") {
		t.Errorf("err detail = %q, want the message up to the next status line", d)
	}
	if !strings.HasPrefix(u.Aborted, "exception: ") {
		t.Errorf("Aborted = %q, want the exception", u.Aborted)
	}
	if n := u.Count(Passed); n != 3 {
		t.Errorf("passed = %d, want 3", n)
	}
}

// The harness against a real server: an ACL-limited redis-server passes
// every test of unit/quit and unit/info-command, and a unit whose harness
// dies on an exception (unit/type/incr without --durable stops at its
// first list command, which the ACL refuses) ends alone: the units after it
// still run.
func TestRunIsolatesUnits(t *testing.T) {
	dir, tclsh, err := Locate()
	if err != nil {
		t.Fatal(err)
	}
	r := startBaseline(t, baselineACL)
	var args []string
	for _, a := range DefaultArgs {
		if a != "--durable" {
			args = append(args, a)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, tclsh, Options{Dir: dir, Addr: r.Addr(), Args: args,
		Units: []string{"unit/type/incr", "unit/quit", "unit/info-command"}})
	if err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	res.WriteReport(&report, true)
	t.Log(report.String())
	incr, quit, info := res.Units[0], res.Units[1], res.Units[2]
	if incr.Count(Exception) != 1 || !strings.Contains(incr.Aborted, "NOPERM") {
		t.Errorf("unit/type/incr aborted %q with %d exceptions, want one exception on a command the ACL refuses", incr.Aborted, incr.Count(Exception))
	}
	if incr.Count(Passed) == 0 {
		t.Error("unit/type/incr passed nothing before its exception")
	}
	for _, u := range []UnitResult{quit, info} {
		if u.Aborted != "" || u.Count(Failed) != 0 || u.Count(Passed) != 3 {
			t.Errorf("%s: %d passed, %d failed, aborted %q; want its 3 tests passed", u.Unit, u.Count(Passed), u.Count(Failed), u.Aborted)
		}
	}
}

// A unit that runs past its bound is killed, with its process group, and
// reported; the next unit runs.
func TestRunBoundsUnits(t *testing.T) {
	dir, tclsh, err := Locate()
	if err != nil {
		t.Fatal(err)
	}
	r := startBaseline(t, baselineACL)
	// Both units sleep for seconds in their tests (expiry).
	res, err := Run(t.Context(), tclsh, Options{Dir: dir, Addr: r.Addr(), UnitTimeout: 500 * time.Millisecond,
		Units: []string{"unit/expire", "unit/type/string"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range res.Units {
		if !strings.HasPrefix(u.Aborted, "killed after") {
			t.Errorf("%s: aborted %q, want killed after its bound", u.Unit, u.Aborted)
		}
	}
}
