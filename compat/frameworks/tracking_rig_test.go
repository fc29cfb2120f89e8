package frameworks

// The rig of TestClientSideCaching (tracking_test.go): two pgcache
// instances with a route of each kind on one PostgreSQL and one Valkey,
// the sources of change, and settle.

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	goredis "github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/internal/testenv"
	"github.com/pgcache/pgcache/server"
)

// cscConfig is one instance of the client-side caching rig: a route of
// each kind, on one PostgreSQL database and one Valkey.
func cscConfig(dsn, vkAddr, appName string) string {
	return fmt.Sprintf(`
backends:
  mem: {type: memory}
  pg:  {type: postgres, dsn: %q, max_conns: 8, application_name: %s}
  vk:  {type: valkey, addrs: [%q], client_cache: {ttl: 1m, max_bytes: 16MiB}}
routes:
  - {name: memory, prefix: "mem:", backend: mem}
  - {name: kv, prefix: "pg:", backend: pg, table: csc_kv, l1: {max_bytes: 16MiB}}
  - {name: users, prefix: "user:", backend: pg, source_table: public.csc_users, attach: auto, l1: {max_bytes: 16MiB}}
  - {name: valkey, prefix: "vk:", backend: vk}
`, dsn, appName, vkAddr)
}

// routeKind is one of the rig's routes.
type routeKind int

const (
	memRoute    routeKind = iota // mem:   memory
	kvRoute                      // pg:    kv table csc_kv, L1
	rowRoute                     // user:  rows of csc_users (id, name) as JSON, L1
	valkeyRoute                  // vk:    Valkey with client_cache, stored as valkey:<key>
)

var routeKinds = []struct {
	kind routeKind
	name string
}{{memRoute, "memory"}, {kvRoute, "pg-kv-l1"}, {rowRoute, "pg-source-table-l1"}, {valkeyRoute, "valkey-client-cache"}}

// cscRig is two pgcache instances, a (the apps') and b (a second
// instance), on one PostgreSQL and one Valkey.
type cscRig struct {
	pool     *pgxpool.Pool
	vk       *testenv.Redis
	a, b     *server.Server
	other    *goredis.Client // another client of a
	viaB     *goredis.Client // a client of b
	observer valkey.Client   // of a, for settle: no client-side cache of its own
	redisCLI string
	next     atomic.Int64 // fresh key numbers
}

func startCSCRig(t *testing.T) *cscRig {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli not found (%v): apt-get install redis-tools (make test-packages installs it)", err)
	}
	pg := testenv.Postgres(t)
	r := &cscRig{pool: pg.Pool(t), vk: testenv.RedisFor(t), redisCLI: cli}
	// attach: auto fences the table when pgcache starts: it must exist.
	testenv.Exec(t, r.pool, `CREATE TABLE csc_users (id bigint PRIMARY KEY, name text NOT NULL)`)
	r.a = pgcachetest.Start(t, server.New, pgcachetest.Config{YAML: cscConfig(pg.DSN(), r.vk.Addr(), cscAppA)}).Server
	r.b = pgcachetest.Start(t, server.New, pgcachetest.Config{YAML: cscConfig(pg.DSN(), r.vk.Addr(), cscAppB)}).Server
	r.other, r.viaB = goredisClient(t, r.a), goredisClient(t, r.b)
	if r.observer, err = valkey.NewClient(valkey.ClientOption{InitAddress: []string{r.a.Addr("resp")}, DisableCache: true}); err != nil {
		t.Fatalf("valkey.NewClient: %v", err)
	}
	t.Cleanup(r.observer.Close)
	for _, c := range []*goredis.Client{r.other, r.viaB} {
		r.waitOnline(t, c)
	}
	return r
}

func goredisClient(t *testing.T, s *server.Server) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr("resp")})
	t.Cleanup(func() { c.Close() })
	return c
}

// waitOnline waits, bounded, until the L1 fence listener of the instance
// c talks to is online.
func (r *cscRig) waitOnline(t *testing.T, c *goredis.Client) {
	t.Helper()
	poll(t, cscOnlineBound, "the L1 fence listener online", func() bool {
		info, err := c.Info(context.Background(), "all").Result()
		return err == nil && strings.Contains(info, "l1_pg_listener:online")
	})
}

// fresh returns a key of route kind k that no case used before.
func (r *cscRig) fresh(k routeKind) string {
	n := r.next.Add(1)
	switch k {
	case memRoute:
		return "mem:csc-" + strconv.FormatInt(n, 10)
	case kvRoute:
		return "pg:csc-" + strconv.FormatInt(n, 10)
	case rowRoute:
		return "user:" + strconv.FormatInt(n, 10)
	default:
		return "vk:csc-" + strconv.FormatInt(n, 10)
	}
}

// rowKey is key as its route stores it: without the prefix.
func rowKey(key string) string { _, k, _ := strings.Cut(key, ":"); return k }

// encode is value v of key as a client writes it: a row route takes a
// JSON object of columns.
func encode(k routeKind, key, v string) string {
	if k == rowRoute {
		return fmt.Sprintf(`{"id":%s,"name":%q}`, rowKey(key), v)
	}
	return v
}

// matches reports whether a read (val, present) is v (absent: "" with
// present false). A row route answers the row as JSON.
func matches(k routeKind, v string, present bool, val string, ok bool) bool {
	switch {
	case !present || !ok:
		return present == ok
	case k == rowRoute:
		return strings.Contains(val, fmt.Sprintf(`"name":%q`, v))
	default:
		return val == v
	}
}

// seed gives key the value v, before an app reads it.
func (r *cscRig) seed(t *testing.T, k routeKind, key, v string) {
	t.Helper()
	if k == rowRoute {
		testenv.Exec(t, r.pool, `INSERT INTO csc_users VALUES ($1, $2)`, rowKey(key), v)
		return
	}
	if err := r.other.Set(context.Background(), key, v, 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
}

// settle returns once the changes made so far to the keys of route kind
// k have reached CLIENT TRACKING, so a notification that trails its
// change (the fence of a write through a, which comes back from
// PostgreSQL after the write's reply; an invalidation from Valkey) does
// not land in the middle of a case. It reads a fresh key of that route on
// a connection of its own with tracking on, writes the key from outside
// (plain SQL, redis-cli) and waits for the invalidation naming it: fences
// and Valkey's invalidations arrive in the order of their changes. On a
// memory route every change is reported before its write returns.
//
// A route that invalidates every read at once passes settle at once; the
// case fails on its own checks.
func (r *cscRig) settle(t *testing.T, k routeKind) {
	t.Helper()
	if k == memRoute {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cscBound)
	defer cancel()
	dc, release := r.observer.Dedicate()
	defer release()
	invalidated := make(chan []valkey.ValkeyMessage, 64)
	dc.SetOnInvalidations(func(keys []valkey.ValkeyMessage) {
		select {
		case invalidated <- keys:
		default: // settle reads one; the others may go
		}
	})
	b := r.fresh(k)
	if err := dc.Do(ctx, dc.B().ClientTracking().On().Build()).Error(); err != nil {
		t.Fatalf("settle: CLIENT TRACKING on: %v", err)
	}
	if err := dc.Do(ctx, dc.B().Get().Key(b).Build()).Error(); err != nil && !valkey.IsValkeyNil(err) {
		t.Fatalf("settle: GET %s: %v", b, err)
	}
	switch k {
	case kvRoute:
		testenv.Exec(t, r.pool, `INSERT INTO csc_kv (key, value, expires_at) VALUES ($1, 'settle', 'infinity')`, rowKey(b))
	case rowRoute:
		testenv.Exec(t, r.pool, `INSERT INTO csc_users VALUES ($1, 'settle')`, rowKey(b))
	case valkeyRoute:
		r.valkeyCLI(t, "SET", "valkey:"+rowKey(b), "settle")
	}
	for {
		select {
		case keys := <-invalidated:
			if keys == nil { // everything: b too
				return
			}
			for _, m := range keys {
				if s, _ := m.ToString(); s == b {
					return
				}
			}
		case <-ctx.Done():
			t.Fatalf("settle: no invalidation of %s within %v of its change", b, cscBound)
		}
	}
}

// source is one way a key changes: change changes key and returns what
// the key holds after (present false: the key is gone).
type source struct {
	name   string
	kinds  []routeKind
	change func(t *testing.T, r *cscRig, k routeKind, key string) (v string, present bool)
}

var allRoutes = []routeKind{memRoute, kvRoute, rowRoute, valkeyRoute}
var pgRoutes = []routeKind{kvRoute, rowRoute}

var sources = []source{
	{"resp-set", allRoutes, func(t *testing.T, r *cscRig, k routeKind, key string) (string, bool) {
		return "by-other-client", r.set(t, r.other, k, key, "by-other-client")
	}},
	{"resp-del", allRoutes, func(t *testing.T, r *cscRig, k routeKind, key string) (string, bool) {
		if err := r.other.Del(context.Background(), key).Err(); err != nil {
			t.Fatalf("DEL %s: %v", key, err)
		}
		return "", false
	}},
	{"sql-update", pgRoutes, func(t *testing.T, r *cscRig, k routeKind, key string) (string, bool) {
		if k == rowRoute {
			testenv.Exec(t, r.pool, `UPDATE csc_users SET name = 'by-sql' WHERE id = $1`, rowKey(key))
		} else {
			testenv.Exec(t, r.pool, `UPDATE csc_kv SET value = 'by-sql' WHERE key = $1`, rowKey(key))
		}
		return "by-sql", true
	}},
	{"sql-delete", pgRoutes, func(t *testing.T, r *cscRig, k routeKind, key string) (string, bool) {
		if k == rowRoute {
			testenv.Exec(t, r.pool, `DELETE FROM csc_users WHERE id = $1`, rowKey(key))
		} else {
			testenv.Exec(t, r.pool, `DELETE FROM csc_kv WHERE key = $1`, rowKey(key))
		}
		return "", false
	}},
	{"sql-truncate", pgRoutes, func(t *testing.T, r *cscRig, k routeKind, key string) (string, bool) {
		if k == rowRoute {
			testenv.Exec(t, r.pool, `TRUNCATE csc_users`)
		} else {
			testenv.Exec(t, r.pool, `TRUNCATE csc_kv`)
		}
		return "", false
	}},
	{"second-pgcache", []routeKind{kvRoute, rowRoute, valkeyRoute}, func(t *testing.T, r *cscRig, k routeKind, key string) (string, bool) {
		return "by-instance-b", r.set(t, r.viaB, k, key, "by-instance-b")
	}},
	{"redis-cli-to-valkey-set", []routeKind{valkeyRoute}, func(t *testing.T, r *cscRig, k routeKind, key string) (string, bool) {
		r.valkeyCLI(t, "SET", "valkey:"+rowKey(key), "by-redis-cli")
		return "by-redis-cli", true
	}},
	{"redis-cli-to-valkey-del", []routeKind{valkeyRoute}, func(t *testing.T, r *cscRig, k routeKind, key string) (string, bool) {
		r.valkeyCLI(t, "DEL", "valkey:"+rowKey(key))
		return "", false
	}},
}

// set writes v to key through c.
func (r *cscRig) set(t *testing.T, c *goredis.Client, k routeKind, key, v string) bool {
	t.Helper()
	if err := c.Set(context.Background(), key, encode(k, key, v), 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	return true
}

// valkeyCLI runs redis-cli against the Valkey server itself.
func (r *cscRig) valkeyCLI(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.redisCLI, append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(r.vk.Port)}, args...)...)
	cmd.Env = testenv.Env(nil, "REDISCLI_")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.HasPrefix(string(out), "(error)") || strings.HasPrefix(string(out), "ERR") {
		t.Fatalf("redis-cli %s: %v: %s", strings.Join(args, " "), err, out)
	}
}
