// Package load drives one phase of `pgcache bench` against a running
// pgcache: over HTTP with vegeta's attacker (as the published comparison did), or over RESP
// with a pipelining driver of its own. Both measure the same way and return
// the same Result, whose Metrics vegeta's reporters print.
//
// Every phase is bounded in time (Plan.Duration) and, for SET seeding, in
// count (Plan.Requests); a cancelled context stops it early.
package load

import (
	"context"
	"fmt"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Op is the command a phase sends.
type Op uint8

const (
	Set Op = iota // store Plan.Value(i) under Keys[i]; success is 2xx or +OK
	Get           // read Keys[i]; success is a value (HTTP 200, a RESP bulk string), a miss fails
)

func (o Op) String() string {
	if o == Set {
		return "set"
	}
	return "get"
}

// Plan is one phase: request i goes to Keys[i % len(Keys)].
type Plan struct {
	// Name labels progress lines and errors, like "memory http set".
	Name string
	Op   Op
	// Keys as the front names them: the HTTP id, or the RESP key with the
	// route's prefix.
	Keys []string
	// Value is the SET value of Keys[i]. It is called from many goroutines.
	Value func(i int) []byte
	// Requests stops the phase after this many requests; 0: no count bound.
	Requests uint64
	// Duration stops the phase after this long. Required: it is the time
	// bound of every phase, and the ceiling of a count-bound one.
	Duration time.Duration
}

func (p *Plan) validate() error {
	switch {
	case len(p.Keys) == 0:
		return fmt.Errorf("%s: no keys", p.Name)
	case p.Duration <= 0:
		return fmt.Errorf("%s: duration %v must be positive", p.Name, p.Duration)
	case p.Op == Set && p.Value == nil:
		return fmt.Errorf("%s: a set phase needs values", p.Name)
	}
	return nil
}

// Driver runs phases against one pgcache front.
type Driver interface {
	// Run runs p, reporting progress to prog (which may be nil), until p's
	// count or time bound, or until ctx ends (Result.Interrupted).
	Run(ctx context.Context, p Plan, prog *Progress) (*Result, error)
	// Proto is "http" or "resp".
	Proto() string
	// Shape describes the load for the report, like "250 workers".
	Shape() string
}

// Result is what a phase measured.
type Result struct {
	// Metrics are the totals and latency percentiles, closed: vegeta's own
	// for HTTP, built from an HDR histogram for RESP.
	Metrics vegeta.Metrics
	// Timeline has one entry per second of the phase, by send time.
	Timeline []Second
	// Interrupted is set when ctx ended the phase before its bounds did.
	Interrupted bool
}

// Second is one second of a phase.
type Second struct {
	Requests, Errors uint64
	Mean, P50, P99   time.Duration
	Max              time.Duration
}

// interrupted reports whether parent, not the phase's own deadline, ended
// the phase.
func interrupted(parent context.Context) bool { return parent.Err() != nil }
