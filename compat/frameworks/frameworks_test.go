// Package frameworks runs real framework cache stores against a server: the
// programs beside this file (Django + django-redis, Flask-Caching, redis-py,
// Rails' RedisCacheStore, express-session + connect-redis, keyv +
// cache-manager), each doing its library's documented operations and
// asserting what an app relies on. install.sh installs the libraries
// (`make test-deps` runs it).
//
// Targets, chosen by PGCACHE_COMPAT_TARGET (a comma-separated list, default
// "redis,pgcache": make test runs both):
//
//   - redis: a throwaway redis-server (or valkey-server). The programs must
//     pass there: it checks the programs themselves.
//   - pgcache: pgcache in-process with three routes, each program run once
//     per route: "mem:" (memory), "pg:" (a PostgreSQL kv table with an L1)
//     and "vk:" (Valkey, a throwaway redis-server).
//
// A program prints "FAIL <program> <step>: <what>" for each failed check and
// ends with "<program>: N checks passed, M failed"; each FAIL line is one
// test error here.
//
// tracking_test.go runs client libraries' own client-side caches (valkey-go,
// node-redis, redis-py's RESP2 redirect) against pgcache's CLIENT TRACKING.
//
// collections_test.go runs libraries that keep hashes, sets, sorted sets and
// lists or talk over pub/sub (a sliding-window rate limiter, Celery's Redis
// broker, a hash session store, Socket.IO's Redis adapters, Django Channels'
// layers).
package frameworks

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/internal/testenv"
	"github.com/pgcache/pgcache/server"
)

const (
	// targetEnv selects the servers the programs run against.
	targetEnv = "PGCACHE_COMPAT_TARGET"
	// nodeDirEnv is where install.sh put the Node libraries.
	nodeDirEnv     = "PGCACHE_COMPAT_NODE_DIR"
	defaultNodeDir = "/var/cache/pgcache-test/node"
	// install is what puts every library in place.
	install = "compat/frameworks/install.sh (make test-deps runs it)"
	// programTimeout bounds one program; each takes a few seconds.
	programTimeout = 90 * time.Second
)

// program is one framework's test program and the interpreter it runs
// under. Python is Debian's, whatever python3 comes first on $PATH: the
// libraries are Debian's packages.
type program struct {
	name   string
	interp string
	file   string
}

var programs = []program{
	{"django", "/usr/bin/python3", "django_cache.py"},
	{"flask", "/usr/bin/python3", "flask_cache.py"},
	{"redis-py", "/usr/bin/python3", "redispy.py"},
	{"rails", "ruby", "rails_cache.rb"},
	{"express-session", "node", "express_session.js"},
	{"keyv", "node", "keyv_redis.js"},
}

// route is a key prefix of a target and what it is called in test names.
type route struct{ name, prefix string }

// pgcacheRoutes are the routes of the pgcache target, one per route kind.
var pgcacheRoutes = []route{{"memory", "mem:"}, {"postgres-l1", "pg:"}, {"valkey", "vk:"}}

func TestFrameworks(t *testing.T) {
	targets := strings.Split(os.Getenv(targetEnv), ",")
	if os.Getenv(targetEnv) == "" {
		targets = []string{"redis", "pgcache"}
	}
	env := programEnv(t)
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			var addr string
			var routes []route
			switch target {
			case "redis":
				addr, routes = testenv.RedisFor(t).Addr(), []route{{"prefixed", "app:"}}
			case "pgcache":
				addr, routes = startPgcache(t).Addr("resp"), pgcacheRoutes
			default:
				t.Fatalf("%s=%q: want a comma-separated list of redis and pgcache", targetEnv, os.Getenv(targetEnv))
			}
			for _, r := range routes {
				for _, p := range programs {
					t.Run(r.name+"/"+p.name, func(t *testing.T) {
						run(t, p, append(env, "REDIS_URL=redis://"+addr+"/0", "KEY_PREFIX="+r.prefix))
					})
				}
			}
		})
	}
}

// summary is the last line every program prints when it ran to the end.
var summary = regexp.MustCompile(`(?m)^\S+: \d+ checks passed, (\d+) failed$`)

// run runs one program and turns each of its FAIL lines into a test error.
// A program that ends without its summary line (it crashed, or hung until
// the timeout) fails with all it printed.
func run(t *testing.T, p program, env []string) {
	ctx, cancel := context.WithTimeout(context.Background(), programTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.interp, p.file)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %v", p.interp, p.file, time.Since(start).Round(time.Millisecond))

	var fails, other []string
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "FAIL ") {
			fails = append(fails, line)
		} else if line != "" {
			other = append(other, line)
		}
	}
	for _, f := range fails {
		t.Error(f)
	}
	m := summary.FindSubmatch(out.Bytes())
	switch {
	case ctx.Err() != nil:
		t.Errorf("%s: no end within %v; output:\n%s", p.file, programTimeout, out.Bytes())
	case m == nil:
		t.Errorf("%s: ended without its summary (%v); output:\n%s", p.file, err, out.Bytes())
	case err != nil && len(fails) == 0:
		t.Errorf("%s: %v; output:\n%s", p.file, err, out.Bytes())
	case err == nil && string(m[1]) != "0":
		t.Errorf("%s: exit 0 with failures: %s", p.file, m[0])
	case len(fails) > 0 && len(other) > 1:
		t.Logf("other output:\n%s", strings.Join(other, "\n"))
	}
}

// programEnv is this process's environment for the programs, without what
// would make them load other libraries than the installed ones (pyenv's
// PYTHONPATH, a Ruby or Node search path of the shell), plus the Node
// libraries' directory. It fails the test, saying how to install them,
// when an interpreter or the Node libraries are missing.
func programEnv(t *testing.T) []string {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p.interp); err != nil {
			t.Fatalf("%s needs %s: %v; run %s", p.name, p.interp, err, install)
		}
	}
	nodeDir := os.Getenv(nodeDirEnv)
	if nodeDir == "" {
		nodeDir = defaultNodeDir
	}
	modules := filepath.Join(nodeDir, "node_modules")
	if _, err := os.Stat(modules); err != nil {
		t.Fatalf("the Node libraries are not installed (%v): run %s", err, install)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "PYTHON"), strings.HasPrefix(name, "RUBY"),
			strings.HasPrefix(name, "GEM_"), strings.HasPrefix(name, "BUNDLE_"),
			strings.HasPrefix(name, "NODE_"), name == "REDIS_URL", name == "KEY_PREFIX":
			continue
		}
		env = append(env, kv)
	}
	// No __pycache__ in the source tree.
	return append(env, "NODE_PATH="+modules, "PYTHONDONTWRITEBYTECODE=1")
}

// startPgcache runs pgcache in-process on free loopback ports with a memory
// route, a PostgreSQL kv route with an L1 and a Valkey route, each server
// a throwaway one of this test, and stops it all at the end.
func startPgcache(t *testing.T) *server.Server {
	t.Helper()
	pg := testenv.Postgres(t)
	vk := testenv.RedisFor(t)
	yaml := fmt.Sprintf(`
backends:
  mem: {type: memory}
  pg:  {type: postgres, dsn: %q, max_conns: 8}
  vk:  {type: valkey, addrs: [%q]}
routes:
  - {name: memory, prefix: "mem:", backend: mem}
  - {name: postgres, prefix: "pg:", backend: pg, table: compat_kv, l1: {max_bytes: 16MiB}}
  - {name: valkey, prefix: "vk:", backend: vk}
`, pg.DSN(), vk.Addr())
	return pgcachetest.Start(t, server.New, pgcachetest.Config{YAML: yaml}).Server
}
