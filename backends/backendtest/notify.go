package backendtest

import (
	"maps"
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

// Expired gathers a backends.ExpiryNotifier's keys: subscribe with its
// Fn, which never blocks, and wait with Once.
type Expired chan string

// Fn is the function to subscribe.
func (e Expired) Fn(keys []string) {
	for _, k := range keys {
		select {
		case e <- k:
		default:
			panic("more expired keys than the test reads")
		}
	}
}

// Once waits until each of keys has been reported, and fails at a key
// reported that is not one of them or is reported twice, or after 20 s.
// Reports come in the order of the sweeps, so waiting Once for a key that
// expires later shows that nothing else came before it.
func (e Expired) Once(t *testing.T, what string, keys ...string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	left := map[string]bool{}
	for _, k := range keys {
		left[k] = true
	}
	for len(left) > 0 {
		select {
		case k := <-e:
			if !left[k] {
				t.Fatalf("%s: %q reported, want only %q, each once", what, k, keys)
			}
			delete(left, k)
		case <-timeout:
			t.Fatalf("%s: %v not reported within 20s", what, slices.Sorted(maps.Keys(left)))
		}
	}
}
