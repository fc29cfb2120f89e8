package valkey

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/testenv"
)

// server is the package's Valkey or Redis and cluster a one-node cluster,
// shared by the tests; tests that kill or restart a server start their own.
var server, cluster *testenv.Redis

func TestMain(m *testing.M) {
	var err error
	if server, err = testenv.StartRedis(); err == nil {
		cluster, err = testenv.StartRedisCluster()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if server != nil {
			server.Stop()
		}
		os.Exit(1)
	}
	code := m.Run()
	server.Stop()
	cluster.Stop()
	os.Exit(code)
}

// newDriver builds a driver on srv through the registered factory, as the
// config does, and closes it when the test ends.
func newDriver(t testing.TB, srv *testenv.Redis, options map[string]any) *Driver {
	t.Helper()
	opts := map[string]any{"addrs": []string{srv.Addr()}}
	for k, v := range options {
		opts[k] = v
	}
	f, err := backends.Lookup(TypeName)
	if err != nil {
		t.Fatal(err)
	}
	log := zap.NewNop()
	if _, bench := t.(*testing.B); !bench {
		log = zaptest.NewLogger(t)
	}
	d, err := f(context.Background(), "vk", opts, backends.Env{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d.(*Driver)
}

// routes makes route names unique across the package's tests, which share
// one server.
var routes atomic.Int64

func open(t testing.TB, d *Driver) *Store {
	t.Helper()
	b, err := d.Open(context.Background(), backends.RouteSpec{Name: fmt.Sprintf("r%d", routes.Add(1))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.(*Store)
}

// cached is the option map of a client cache.
func cached(extra map[string]any) map[string]any {
	opts := map[string]any{"client_cache": map[string]any{"ttl": "1m"}}
	for k, v := range extra {
		opts[k] = v
	}
	return opts
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustSet(t testing.TB, b backends.Backend, k, v string) {
	t.Helper()
	if _, err := b.Set(ctxT(t), k, []byte(v), backends.SetOptions{}); err != nil {
		t.Fatalf("SET %s: %v", k, err)
	}
}

func mustGet(t testing.TB, b backends.Backend, k string) (string, bool) {
	t.Helper()
	v, ok, err := b.Get(ctxT(t), k)
	if err != nil {
		t.Fatalf("GET %s: %v", k, err)
	}
	return string(v), ok
}

// poll calls cond every 10ms, at most n times, until it holds.
func poll(n int, cond func() bool) bool {
	for range n {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
