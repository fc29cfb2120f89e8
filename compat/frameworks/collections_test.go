package frameworks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/internal/testenv"
	"github.com/pgcache/pgcache/server"
)

// collectionPrograms drive libraries that keep Redis's data structures and
// pub/sub rather than strings: each keeps its keys under names of its own
// (Celery's "compat" queue, "limit:<id>", "rs:…", "asgi…"), so they run
// against a server, or a catch-all route, of their own.
var collectionPrograms = []program{
	// sorted sets: a sliding-window rate limiter (npm ratelimiter on ioredis)
	{"ratelimiter", "node", "ratelimit.js"},
	// lists (and sets, a hash indexed by a sorted set, pub/sub): Celery's
	// Redis broker and result backend (Debian)
	{"celery", "/usr/bin/python3", "celery_queue.py"},
	// hashes (and sets, sorted sets, PUBLISH in MULTI): a session store
	// (npm redis-sessions on node-redis 4)
	{"redis-sessions", "node", "redis_sessions.js"},
	// pub/sub, classic and sharded: Socket.IO's Redis adapters (npm)
	{"socket.io", "node", "socketio_adapter.js"},
	// sorted sets as message queues (BZPOPMIN, Lua scripts) and pub/sub:
	// Django Channels' Redis layers (Debian)
	{"channels", "/usr/bin/python3", "channels_layer.py"},
}

// collectionNodePackages and collectionPythonModules are what the programs
// load; install.sh installs them.
var (
	collectionNodePackages  = []string{"ioredis", "ratelimiter", "redis-sessions", "socket.io", "socket.io-client", "@socket.io/redis-adapter"}
	collectionPythonModules = []string{"celery", "kombu", "channels_redis", "redis"}
)

// TestCollectionFrameworks runs collectionPrograms against the targets
// PGCACHE_COMPAT_TARGET names (default both):
//
//   - redis: a throwaway redis-server, which checks the programs;
//   - pgcache: pgcache in-process, once with the embedded default (one
//     catch-all memory route) and once with a catch-all PostgreSQL kv route
//     with an L1.
//
// Each program prints a FAIL line per failed check (one test error here)
// and bounds its own waits; programTimeout bounds the whole.
func TestCollectionFrameworks(t *testing.T) {
	targets := strings.Split(os.Getenv(targetEnv), ",")
	if os.Getenv(targetEnv) == "" {
		targets = []string{"redis", "pgcache"}
	}
	env := programEnv(t)
	needCollectionLibraries(t, env)
	// runAll runs every program against addr; pgcache says the target is
	// pgcache (channels_layer.py asserts a documented refusal there).
	runAll := func(t *testing.T, addr string, pgcache bool) {
		for _, p := range collectionPrograms {
			t.Run(p.name, func(t *testing.T) {
				e := append(env, "REDIS_URL=redis://"+addr+"/0", "KEY_PREFIX=")
				if pgcache {
					e = append(e, "PGCACHE=1")
				}
				run(t, p, e)
			})
		}
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			switch target {
			case "redis":
				runAll(t, testenv.RedisFor(t).Addr(), false)
			case "pgcache":
				t.Run("memory", func(t *testing.T) {
					runAll(t, pgcachetest.Start(t, server.New, pgcachetest.Config{}).RESP, true)
				})
				t.Run("postgres-l1", func(t *testing.T) {
					runAll(t, pgcachetest.Start(t, server.New, pgcachetest.Config{YAML: postgresCatchAll(t)}).RESP, true)
				})
			default:
				t.Fatalf("%s=%q: want a comma-separated list of redis and pgcache", targetEnv, os.Getenv(targetEnv))
			}
		})
	}
}

// postgresCatchAll is a config with one catch-all route on a kv table of a
// throwaway PostgreSQL, with an L1 in front.
func postgresCatchAll(t *testing.T) string {
	return fmt.Sprintf(`
backends:
  pg: {type: postgres, dsn: %q, max_conns: 8}
routes:
  - {name: postgres, prefix: "", backend: pg, table: compat_collections, l1: {max_bytes: 16MiB}}
`, testenv.Postgres(t).DSN())
}

// needCollectionLibraries fails the test, saying how to install them, when
// a Node package or Python module of collectionPrograms is missing.
func needCollectionLibraries(t *testing.T, env []string) {
	t.Helper()
	var modules string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NODE_PATH="); ok {
			modules = v
		}
	}
	var missing []string
	for _, pkg := range collectionNodePackages {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			missing = append(missing, "npm "+pkg)
		}
	}
	for _, mod := range collectionPythonModules {
		cmd := exec.Command("/usr/bin/python3", "-c", "import "+mod)
		cmd.Env = env
		if err := cmd.Run(); err != nil {
			missing = append(missing, "python3 module "+mod)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("missing %s: run %s", strings.Join(missing, ", "), install)
	}
}
