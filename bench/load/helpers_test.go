package load

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	_ "github.com/pgcache/pgcache/backends/standard"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/server"
)

// startPgcache runs a real pgcache in-process on free loopback ports with
// one memory route, "memory", prefix "mem:".
func startPgcache(t *testing.T) *server.Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pgcache.yaml")
	yaml := `
listen: {resp: "127.0.0.1:0", http: "127.0.0.1:0", admin: "127.0.0.1:0"}
backends:
  mem: {type: memory, max_bytes: 64MiB}
routes:
  - {name: memory, prefix: "mem:", backend: mem}
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := conf.Load(conf.Source{File: path, Environ: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(context.Background(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

// testKeys returns n keys, each with prefix.
func testKeys(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + "key-" + strconv.Itoa(i)
	}
	return keys
}

func value(i int) []byte { return []byte("value-" + strconv.Itoa(i)) }
