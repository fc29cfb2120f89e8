package valkey

import (
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/internal/testenv"
)

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		srv     *testenv.Redis
		options map[string]any
	}{
		{"plain", server, nil},
		{"client_cache", server, cached(nil)},
		{"raw_keys", server, map[string]any{"raw_keys": true}},
		{"cluster", cluster, nil},
		{"cluster_client_cache", cluster, cached(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, tc.srv, tc.options)
			backendtest.Run(t, func(t *testing.T) backends.Backend { return open(t, d) }, backendtest.PassesCommands())
			backendtest.RunAtomic(t, func(t *testing.T) backends.Backend { return open(t, d) })
		})
	}
}

// The cluster variants really run in cluster mode.
func TestClusterMode(t *testing.T) {
	d := newDriver(t, cluster, nil)
	s := open(t, d)
	mustSet(t, s, "k", "v")
	if c := d.client.Load(); c == nil || !c.cluster {
		t.Fatal("the driver on a cluster node is not in cluster mode")
	}
}
