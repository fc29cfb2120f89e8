package backendtest

import (
	"slices"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// Reports gathers a Notifier's reports (backends.Notifier): subscribe
// with its Fn, which never blocks, and wait with Next.
type Reports chan backends.Outside

// Fn is the function to subscribe: it keeps a copy of each report.
func (r Reports) Fn(o backends.Outside) {
	o.Keys = slices.Clone(o.Keys)
	select {
	case r <- o:
	default:
		panic("more reports than the test reads")
	}
}

// Next waits for the first report want accepts, logging those it passes
// over, and fails after 20 s without one.
func (r Reports) Next(t *testing.T, what string, want func(backends.Outside) bool) backends.Outside {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case o := <-r:
			if want(o) {
				return o
			}
			t.Logf("%s: passed over %+v", what, o)
		case <-timeout:
			t.Fatalf("%s: no report within 20s", what)
		}
	}
}

// KeysAre accepts a report of exactly keys (in any order) from source.
func KeysAre(source string, keys ...string) func(backends.Outside) bool {
	want := slices.Sorted(slices.Values(keys))
	return func(o backends.Outside) bool {
		got := slices.Sorted(slices.Values(o.Keys))
		return !o.All && o.Source == source && slices.Equal(got, want)
	}
}
