package coherence

import (
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/route"
)

// TestConformance runs the Backend contract through an L1 tier over a kv
// table, and through a route's instrumented wrapper over that tier, as
// server builds a route with an l1: reads served from L1 and writes
// through it answer as the table alone does.
func TestConformance(t *testing.T) {
	a := newInstance(t, "conformance_kv")
	t.Run("tier", func(t *testing.T) {
		backendtest.Run(t, func(t *testing.T) backends.Backend { return unclosed{a.tier} })
	})
	t.Run("route", func(t *testing.T) {
		tab, err := route.NewTable([]*route.Route{{Name: "kv", Backend: unclosed{a.tier}, BackendName: "pg"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		backendtest.Run(t, func(t *testing.T) backends.Backend { return tab.ByName("kv").Backend })
		backendtest.RunAtomic(t, func(t *testing.T) backends.Backend { return tab.ByName("kv").Backend })
	})
	t.Run("tier-atomic", func(t *testing.T) {
		backendtest.RunAtomic(t, func(t *testing.T) backends.Backend { return unclosed{a.tier} })
	})
}

// unclosed leaves closing the tier to its instance.
type unclosed struct{ backends.Backend }

func (unclosed) Close() error { return nil }

// Unwrap lets backends.As find the tier's capabilities.
func (u unclosed) Unwrap() backends.Backend { return u.Backend }
