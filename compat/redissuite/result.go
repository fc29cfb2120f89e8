package redissuite

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Status is what the suite reported for one test.
type Status string

const (
	Passed    Status = "ok"        // [ok]
	Failed    Status = "err"       // [err]: an assertion, or with --durable an error in the test
	Exception Status = "exception" // [exception]: the harness stopped the unit
	Skipped   Status = "skip"      // [skip]: by --skiptest/--only
	Ignored   Status = "ignore"    // [ignore]: by a tag (external:skip, needs:…, singledb:skip)
)

// Test is one line of the suite's report.
type Test struct {
	Unit   string
	Name   string // the test's name; for an exception, its first line
	Status Status
	Detail string // for err and exception: the message and the Tcl stack
}

// UnitResult is one unit's run.
type UnitResult struct {
	Unit     string
	Tests    []Test
	Aborted  string // why the unit ended early: an exception, a timeout; "" when it finished
	Duration time.Duration
}

// Count is how many tests of u have status s.
func (u *UnitResult) Count(s Status) int {
	n := 0
	for _, t := range u.Tests {
		if t.Status == s {
			n++
		}
	}
	return n
}

// Result is a whole run.
type Result struct {
	Addr  string
	Units []UnitResult
}

// Count is how many tests of the run have status s.
func (r *Result) Count(s Status) int {
	n := 0
	for i := range r.Units {
		n += r.Units[i].Count(s)
	}
	return n
}

// Failures are the failed tests and the exceptions, in order.
func (r *Result) Failures() []Test {
	var out []Test
	for _, u := range r.Units {
		for _, t := range u.Tests {
			if t.Status == Failed || t.Status == Exception {
				out = append(out, t)
			}
		}
	}
	return out
}

// Passed are the names of the passed tests as "unit: name", in order; a
// name the unit repeats (scripting runs its tests for EVAL and for
// FUNCTION) appears as often.
func (r *Result) Passed() []string {
	var out []string
	for _, u := range r.Units {
		for _, t := range u.Tests {
			if t.Status == Passed {
				out = append(out, u.Unit+": "+t.Name)
			}
		}
	}
	return out
}

// The lines the suite's test server prints per test (test_helper.tcl,
// read_from_test_client), with TERM=dumb so without colour codes.
var (
	statusLine = regexp.MustCompile(`^\[(ok|err|skip|ignore|exception|TIMEOUT)\]: (.*)$`)
	otherLine  = regexp.MustCompile(`^\[(ready|\d+/\d+ done)\]`) // ends an err's detail too
	okElapsed  = regexp.MustCompile(` \(\d+ ms\)$`)
	errInFile  = regexp.MustCompile(` in tests/[^ ]+\.tcl$`)
)

// parseUnit reads one runtest process's output. An [err] or [exception]
// line is followed by its detail up to the next status line; the summary
// the suite repeats at the end ("*** [err]: …") is not a status line.
func parseUnit(unit, out string) UnitResult {
	u := UnitResult{Unit: unit}
	var detail *[]string
	flush := func() {
		if detail != nil && len(u.Tests) > 0 {
			u.Tests[len(u.Tests)-1].Detail = strings.TrimSpace(strings.Join(*detail, "\n"))
		}
		detail = nil
	}
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		m := statusLine.FindStringSubmatch(line)
		if m == nil {
			if otherLine.MatchString(line) || strings.HasPrefix(line, "*** ") || strings.HasPrefix(line, "Execution time of different units") {
				flush()
			} else if detail != nil {
				*detail = append(*detail, line)
			}
			continue
		}
		flush()
		name := m[2]
		switch Status(m[1]) {
		case Passed:
			u.Tests = append(u.Tests, Test{Unit: unit, Name: okElapsed.ReplaceAllString(name, ""), Status: Passed})
		case Failed:
			u.Tests = append(u.Tests, Test{Unit: unit, Name: errInFile.ReplaceAllString(name, ""), Status: Failed})
			detail = new([]string)
		case Skipped, Ignored:
			u.Tests = append(u.Tests, Test{Unit: unit, Name: name, Status: Status(m[1])})
		case Exception:
			u.Tests = append(u.Tests, Test{Unit: unit, Name: name, Status: Exception})
			u.Aborted = "exception: " + name
			detail = new([]string)
		default: // TIMEOUT: no progress for --timeout seconds
			u.Aborted = "runtest timeout: " + name
		}
	}
	flush()
	return u
}

// Cause is a short reason for a failure, to group failures by what is
// missing: the unknown command or subcommand, a command refused by ACL,
// else the first line of the message.
func Cause(t Test) string {
	text := t.Name + "\n" + t.Detail
	for _, p := range causePatterns {
		if m := p.re.FindStringSubmatch(text); m != nil {
			arg := strings.ToUpper(m[1])
			if sub, cmd, ok := strings.Cut(arg, "'. TRY "); ok {
				arg = cmd + " " + sub // CONFIG RESETSTAT
			}
			return fmt.Sprintf(p.format, arg)
		}
	}
	msg := t.Detail
	if t.Status == Exception {
		msg = t.Name
	}
	msg, _, _ = strings.Cut(msg, "\n")
	msg = strings.TrimPrefix(msg, "Executing test client: ")
	if len(msg) > 120 {
		msg = msg[:120] + "…"
	}
	return "other: " + msg
}

var causePatterns = []struct {
	re     *regexp.Regexp
	format string
}{
	{regexp.MustCompile(`unknown command '([^']*)'`), "unknown command %s"},
	{regexp.MustCompile(`unknown subcommand '([^']*'\. Try [A-Za-z_-]+) HELP`), "unknown subcommand %s"},
	{regexp.MustCompile(`no permissions to run the '([^']*)' command`), "ACL refuses %s"},
	{regexp.MustCompile(`The user executing the script (can't run) this command`), "ACL refuses a command a script calls (%s)"},
}

// WriteReport writes the per-unit counts, then every failure grouped by
// cause, then (verbose) every test with its status.
func (r *Result) WriteReport(w io.Writer, verbose bool) {
	fmt.Fprintf(w, "Redis test suite against %s: %d passed, %d failed, %d exceptions, %d skipped/ignored\n",
		r.Addr, r.Count(Passed), r.Count(Failed), r.Count(Exception), r.Count(Skipped)+r.Count(Ignored))
	for _, u := range r.Units {
		fmt.Fprintf(w, "  %-20s ok %3d  err %3d  exception %d  ignored %3d  %5.1fs", u.Unit,
			u.Count(Passed), u.Count(Failed), u.Count(Exception), u.Count(Skipped)+u.Count(Ignored), u.Duration.Seconds())
		if u.Aborted != "" {
			fmt.Fprintf(w, "  ABORTED: %s", oneLine(u.Aborted, 160))
		}
		fmt.Fprintln(w)
	}
	groups := map[string][]Test{}
	for _, t := range r.Failures() {
		c := Cause(t)
		groups[c] = append(groups[c], t)
	}
	causes := make([]string, 0, len(groups))
	for c := range groups {
		causes = append(causes, c)
	}
	sort.Slice(causes, func(i, j int) bool {
		if len(groups[causes[i]]) != len(groups[causes[j]]) {
			return len(groups[causes[i]]) > len(groups[causes[j]])
		}
		return causes[i] < causes[j]
	})
	if len(causes) > 0 {
		fmt.Fprintln(w, "Failures by cause:")
	}
	for _, c := range causes {
		fmt.Fprintf(w, "  %s (%d)\n", c, len(groups[c]))
		for _, t := range groups[c] {
			fmt.Fprintf(w, "    %s: %s\n", t.Unit, oneLine(t.Name, 160))
		}
	}
	if !verbose {
		return
	}
	fmt.Fprintln(w, "Every test:")
	for _, u := range r.Units {
		for _, t := range u.Tests {
			fmt.Fprintf(w, "  [%s] %s: %s\n", t.Status, u.Unit, oneLine(t.Name, 160))
		}
	}
}

func oneLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
