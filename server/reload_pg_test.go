package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/testenv"
)

// reloadPG is a config with a postgres backend: kv has a coherent L1 (ttl
// varies), kv2 appears with the second variant, and pool sizes vary.
func reloadPG(maxConns int, ttl string, withKV2 bool) string {
	cfg := fmt.Sprintf(`
backends:
  pg:  {type: postgres, dsn: %q, max_conns: %d}
  mem: {type: memory}
routes:
  - {name: kv, prefix: "pg:", backend: pg, table: rl_kv, durability: unlogged, l1: {max_bytes: 8MiB, ttl: %s}}
  - {name: memory, prefix: "", backend: mem}
`, pg.DSN(), maxConns, ttl)
	if withKV2 {
		cfg += `  - {name: kv2, prefix: "pg2:", backend: pg, table: rl_kv2, durability: unlogged, l1: {max_bytes: 8MiB}}
`
	}
	return cfg
}

// infoInt reads one INFO field as a number.
func infoInt(t *testing.T, rc *redis.Client, field string) int64 {
	t.Helper()
	info, err := rc.Info(context.Background(), "all").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("INFO has no %s:\n%s", field, info)
	return 0
}

// Reloads on PostgreSQL: an unchanged L1 route keeps its tier and entries;
// a route added to a running coordinator gets its triggers before it
// serves, so plain-SQL writes fence it; a changed route starts with an
// empty tier; a changed driver is replaced with its coordinator and
// metrics; a removed one takes its metrics with it.
func TestReloadPostgres(t *testing.T) {
	ctx := context.Background()
	s := startPgcache(t, reloadPG(6, "1m", false))
	rc := redisClient(t, s)
	admin := "http://" + s.Addr("admin")
	load := func(cfg string) {
		t.Helper()
		if status, body := httpDo(t, "POST", admin+"/load", []byte(cfg)); status != 200 {
			t.Fatalf("POST /load = %d %s", status, body)
		}
	}
	get := func(k string) string {
		t.Helper()
		v, err := rc.Get(ctx, k).Result()
		if err != nil {
			t.Fatalf("GET %s: %v", k, err)
		}
		return v
	}
	// hit reads k and reports whether L1 served it.
	hit := func(k, field string) bool {
		before := infoInt(t, rc, field)
		get(k)
		return infoInt(t, rc, field) == before+1
	}
	ready(t, s)
	if err := rc.Set(ctx, "pg:a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The write fences pg:a twice: locally at once, then by its trigger's
	// notification. Once both are in, an entry filled stays valid.
	eventually(t, "both fences of the write", func() bool { return infoInt(t, rc, "l1_pg_fences_key") >= 2 })
	eventually(t, "pg:a served from L1", func() bool { return hit("pg:a", "l1_kv_hits") })

	// kv2 is added to the running coordinator; kv is unchanged.
	load(reloadPG(6, "1m", true))
	if !hit("pg:a", "l1_kv_hits") {
		t.Fatal("kv lost its L1 entry in a reload that did not change it")
	}
	if err := rc.Set(ctx, "pg2:b", "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	get("pg2:b")
	get("pg2:b") // served from L1 now
	// A write by plain SQL reaches kv2's L1 through the triggers the
	// reload installed before kv2 served.
	testenv.Exec(t, pg.Pool(t), `UPDATE rl_kv2 SET value = 'new' WHERE key = 'b'`)
	eventually(t, "kv2's L1 fenced by a plain-SQL write", func() bool { return get("pg2:b") == "new" })

	// kv's ttl changes: a fresh tier, whose first read is a miss.
	misses := infoInt(t, rc, "l1_kv_misses")
	load(reloadPG(6, "2m", true))
	if got := get("pg:a"); got != "1" {
		t.Fatalf("GET pg:a = %q", got)
	}
	if got := infoInt(t, rc, "l1_kv_misses"); got != 1 {
		t.Fatalf("l1_kv_misses = %d (was %d), want 1: a changed route starts with an empty L1", got, misses)
	}

	// The driver changes: replaced with its coordinator and metrics.
	load(reloadPG(5, "2m", true))
	ready(t, s)
	if got := get("pg:a"); got != "1" {
		t.Fatalf("GET pg:a after replacing the driver = %q", got)
	}
	if got := metric(t, s, `pgcache_postgres_pool_max_conns{backend="pg",pool="standard"}`); got != "5" {
		t.Errorf(`pool_max_conns{backend="pg",pool="standard"} = %q, want 5 (the new driver's)`, got)
	}
	if got := metric(t, s, `pgcache_l1_listener_online{backend="pg"}`); got != "1" {
		t.Errorf(`l1_listener_online{backend="pg"} = %q, want 1`, got)
	}

	// Without the backend, its series go.
	load("backends: {mem: {type: memory}}\nroutes: [{name: memory, prefix: '', backend: mem}]\n")
	_, body := httpDo(t, "GET", admin+"/metrics", nil)
	for _, gone := range []string{"pgcache_postgres_", "pgcache_l1_"} {
		if strings.Contains(string(body), gone) {
			t.Errorf("/metrics still has %s* after the backend was removed", gone)
		}
	}
}
