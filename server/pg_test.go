package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/internal/testenv"
)

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ready waits until s answers /readyz with 200 (its L1 tiers in use).
func ready(t *testing.T, s *Server) {
	t.Helper()
	eventually(t, "ready", func() bool {
		status, _ := httpDo(t, "GET", "http://"+s.Addr("admin")+"/readyz", nil)
		return status == 200
	})
}

// l1Config is two routes with a coherent L1 on one database: a kv table and
// the rows of an existing table, plus the catch-all memory route.
func l1Config(dsn string) string {
	return fmt.Sprintf(`
backends:
  pg:  {type: postgres, dsn: %q, max_conns: 8}
  mem: {type: memory}
routes:
  - {name: postgres, prefix: "pg:", backend: pg, table: srv_kv, durability: unlogged, l1: {max_bytes: 16MiB}}
  - {name: users, prefix: "user:", backend: pg, source_table: public.srv_users, attach: auto, l1: {max_bytes: 16MiB, ttl: 1m}}
  - {name: memory, prefix: "", backend: mem}
`, dsn)
}

// Two pgcache instances on one PostgreSQL: a write through either, or by
// plain SQL, is read back from both, over RESP and HTTP.
func TestTwoInstancesCoherent(t *testing.T) {
	p := pg.Pool(t)
	testenv.Exec(t, p, `CREATE TABLE IF NOT EXISTS srv_users (id bigint PRIMARY KEY, name text NOT NULL)`)
	testenv.Exec(t, p, `INSERT INTO srv_users VALUES (1, 'ada') ON CONFLICT (id) DO UPDATE SET name = 'ada'`)
	a, b := startPgcache(t, l1Config(pg.DSN())), startPgcache(t, l1Config(pg.DSN()))
	ctx := context.Background()
	for _, s := range []*Server{a, b} {
		ready(t, s)
	}
	ra, rb := redisClient(t, a), redisClient(t, b)
	get := func(c *redis.Client, k string) string {
		v, err := c.Get(ctx, k).Result()
		if err == redis.Nil {
			return "<absent>"
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := ra.Set(ctx, "pg:42", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*redis.Client{ra, rb} {
		if v := get(c, "pg:42"); v != "v1" { // fills both L1s
			t.Fatalf("read after write = %q", v)
		}
	}
	if err := rb.Set(ctx, "pg:42", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := get(rb, "pg:42"); v != "v2" {
		t.Fatalf("own write not visible at once: %q", v)
	}
	eventually(t, "instance a sees b's write", func() bool { return get(ra, "pg:42") == "v2" })

	testenv.Exec(t, p, `UPDATE srv_kv SET value = 'sql' WHERE key = '42'`)
	for _, c := range []*redis.Client{ra, rb} {
		eventually(t, "an SQL UPDATE is seen", func() bool { return get(c, "pg:42") == "sql" })
	}
	status, body := httpDo(t, "GET", "http://"+a.Addr("http")+"/postgres/get?id=42", nil)
	if status != 200 || string(body) != "sql" {
		t.Fatalf("HTTP get = %d %q", status, body)
	}

	// Rows of an existing table, by primary key, as JSON.
	for _, c := range []*redis.Client{ra, rb} {
		if v := get(c, "user:1"); !strings.Contains(v, `"ada"`) {
			t.Fatalf("row = %q", v)
		}
	}
	testenv.Exec(t, p, `UPDATE srv_users SET name = 'grace' WHERE id = 1`)
	for _, c := range []*redis.Client{ra, rb} {
		eventually(t, "a row UPDATE is seen", func() bool { return strings.Contains(get(c, "user:1"), `"grace"`) })
	}
	status, body = httpDo(t, "GET", "http://"+b.Addr("http")+"/users/get?id=1", nil)
	if status != 200 || !strings.Contains(string(body), "grace") {
		t.Fatalf("HTTP row get = %d %q", status, body)
	}
	var db string
	p.QueryRow(ctx, "SELECT current_database()").Scan(&db)
	if v := get(ra, "CRUD:"+db+".public.srv_users:[1]"); !strings.Contains(v, "grace") {
		t.Fatalf("CRUD key read = %q", v)
	}

	info, err := ra.Info(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"l1_pg_listener:online", "l1_postgres_hits:", "l1_users_fills_stored:"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	_, metrics := httpDo(t, "GET", "http://"+a.Addr("admin")+"/metrics", nil)
	for _, want := range []string{"pgcache_l1_requests_total", "pgcache_l1_listener_online", "pgcache_postgres_"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// PostgreSQL down at start: pgcache starts, /readyz names the backend, its
// route answers `backend pg unavailable` (RESP) and 503 (HTTP), the memory
// route serves, and everything recovers once PostgreSQL is back.
func TestPostgresDownAtStart(t *testing.T) {
	ctx := context.Background()
	if err := pg.Shutdown(0); err != nil { // testenv.ShutdownFast
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			pg.Start()
		}
	})
	core, logs := observer.New(zap.DebugLevel)
	s := pgcachetest.Start(t, New, pgcachetest.Config{Log: zap.New(core), YAML: fmt.Sprintf(`
backends:
  pg:  {type: postgres, dsn: %q, connect_timeout: 1s, command_timeout: 2s}
  mem: {type: memory}
routes:
  - {name: postgres, prefix: "pg:", backend: pg, table: down_kv}
  - {name: memory, prefix: "", backend: mem}
`, pg.DSN())}).Server
	rc := redisClient(t, s)
	status, body := httpDo(t, "GET", "http://"+s.Addr("admin")+"/readyz", nil)
	if status != 503 || !strings.Contains(string(body), "backend pg") {
		t.Fatalf("/readyz = %d %q, want 503 naming backend pg", status, body)
	}
	// Each line names the backend once, on one line: the driver's error
	// keeps no tabs or newlines of its own.
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		if !strings.HasPrefix(line, "backend pg: ") || strings.Count(line, "backend pg") != 1 || strings.ContainsAny(line, "\t\r") {
			t.Errorf("/readyz line %q: want one \"backend pg: \" and no tabs", line)
		}
	}
	// The log names the backend once per line too (a duplicate JSON key
	// is what zap writes for a field given twice).
	if logs.Len() == 0 {
		t.Fatal("nothing logged about the database being down")
	}
	for _, e := range logs.All() {
		seen := map[string]bool{}
		for _, f := range e.Context {
			if seen[f.Key] {
				t.Errorf("log %q has the field %q twice", e.Message, f.Key)
			}
			seen[f.Key] = true
		}
	}
	if err := rc.Set(ctx, "pg:k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "backend pg unavailable") {
		t.Fatalf("SET on the down route = %v, want backend pg unavailable", err)
	}
	if status, _ := httpDo(t, "GET", "http://"+s.Addr("http")+"/postgres/get?id=k", nil); status != 503 {
		t.Fatalf("HTTP get on the down route = %d, want 503", status)
	}
	if err := rc.Set(ctx, "m", "v", 0).Err(); err != nil {
		t.Fatalf("the memory route does not serve while pg is down: %v", err)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	eventually(t, "pg route recovers", func() bool { return rc.Set(ctx, "pg:k", "v", 0).Err() == nil })
	if v, err := rc.Get(ctx, "pg:k").Result(); err != nil || v != "v" {
		t.Fatalf("GET after recovery = %q, %v", v, err)
	}
	eventually(t, "/readyz 200", func() bool {
		status, _ := httpDo(t, "GET", "http://"+s.Addr("admin")+"/readyz", nil)
		return status == 200
	})
}
