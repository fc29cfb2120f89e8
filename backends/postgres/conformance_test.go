package postgres

import (
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
)

// TestConformance runs the Backend contract against a kv table of each
// durability. The subtests share a table: their keys are their own.
func TestConformance(t *testing.T) {
	d := newDriver(t, Options{})
	for _, durability := range []string{DurabilityStandard, DurabilityAsync, DurabilityUnlogged} {
		t.Run(durability, func(t *testing.T) {
			table := uniqueTable(t)
			backendtest.Run(t, func(t *testing.T) backends.Backend {
				return openKV(t, d, table, durability, "")
			}, backendtest.EncodingFromSize())
		})
	}
}

// TestAtomicConformance runs the contract of Atomic against a kv table of
// each durability.
func TestAtomicConformance(t *testing.T) {
	d := newDriver(t, Options{})
	for _, durability := range []string{DurabilityStandard, DurabilityAsync, DurabilityUnlogged} {
		t.Run(durability, func(t *testing.T) {
			table := uniqueTable(t)
			backendtest.RunAtomic(t, func(t *testing.T) backends.Backend {
				return openKV(t, d, table, durability, "")
			})
		})
	}
}
