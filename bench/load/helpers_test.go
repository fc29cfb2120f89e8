package load

import (
	"strconv"
	"testing"

	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/server"
)

// startPgcache runs a real pgcache in-process on free loopback ports with
// one memory route, "memory", prefix "mem:".
func startPgcache(t *testing.T) *server.Server {
	t.Helper()
	return pgcachetest.Start(t, server.New, pgcachetest.Config{YAML: `
backends:
  mem: {type: memory, max_bytes: 64MiB}
routes:
  - {name: memory, prefix: "mem:", backend: mem}
`}).Server
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
