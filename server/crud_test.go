package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/testenv"
)

// crudConfig has a table route with an L1, reached by "user:" and CRUD:
// keys, next to a memory catch-all.
func crudConfig(dsn string) string {
	return fmt.Sprintf(`
backends:
  pg:  {type: postgres, dsn: %q}
  mem: {type: memory}
routes:
  - {name: users, prefix: "user:", backend: pg, source_table: public.crud_users, attach: auto, l1: {max_bytes: 8MiB}}
  - {name: memory, prefix: "", backend: mem}
`, dsn)
}

// A CRUD: key belongs to the table route it names or to none: one for a
// table no route serves, or for another database, is an error over RESP
// and HTTP, never a key of the memory catch-all.
func TestCRUDKeyOfNoRouteIsAnError(t *testing.T) {
	ctx := context.Background()
	p := pg.Pool(t)
	testenv.Exec(t, p, `CREATE TABLE IF NOT EXISTS crud_users (id bigint PRIMARY KEY, name text NOT NULL)`)
	testenv.Exec(t, p, `INSERT INTO crud_users VALUES (42, 'ada') ON CONFLICT (id) DO UPDATE SET name = 'ada'`)
	var db string
	if err := p.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	s := startPgcache(t, crudConfig(pg.DSN()))
	rc := redisClient(t, s)

	// The routed table answers by its CRUD: key.
	if v, err := rc.Get(ctx, "CRUD:"+db+".public.crud_users:42").Result(); err != nil || !strings.Contains(v, "ada") {
		t.Fatalf("GET of the routed table's CRUD: key = %q, %v", v, err)
	}
	for _, key := range []string{
		"CRUD:" + db + `.public.other:"x"`,  // a table no route serves
		"CRUD:wrongdb.public.crud_users:42", // the routed table, in another database
		"CRUD:" + db + ".public.crud_users", // no primary key part: not the route's prefix
	} {
		if err := rc.Set(ctx, key, "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "no route for key") {
			t.Errorf("SET %s = %v, want a no-route error", key, err)
		}
		if v, err := rc.Get(ctx, key).Result(); err == nil || err == redis.Nil || !strings.Contains(err.Error(), "no route for key") {
			t.Errorf("GET %s = %q, %v; want a no-route error, not nil", key, v, err)
		}
		for _, req := range []struct{ method, path string }{
			{"GET", "/memory/get?id="}, {"POST", "/memory/set?id="}, {"GET", "/memory/mget?id=a&id="}, {"DELETE", "/memory/del?id="},
		} {
			status, body := httpDo(t, req.method, "http://"+s.Addr("http")+req.path+url.QueryEscape(key), []byte("v"))
			if status != http.StatusBadRequest || !strings.Contains(string(body), "CRUD: key") {
				t.Errorf("%s %s%s = %d %q, want 400 naming the CRUD: key", req.method, req.path, key, status, body)
			}
		}
	}
	// Nothing reached the catch-all.
	if n, err := rc.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("DBSIZE = %d, %v; want 0: a CRUD: key was stored in the memory route", n, err)
	}
}

// 42, [42] and "42" name one row: reading it by each spelling, over RESP
// (the route's prefix and its CRUD: name) and HTTP, makes one L1 entry.
func TestKeySpellingsMakeOneL1Entry(t *testing.T) {
	ctx := context.Background()
	p := pg.Pool(t)
	testenv.Exec(t, p, `CREATE TABLE IF NOT EXISTS crud_users (id bigint PRIMARY KEY, name text NOT NULL)`)
	testenv.Exec(t, p, `INSERT INTO crud_users VALUES (42, 'ada') ON CONFLICT (id) DO UPDATE SET name = 'ada'`)
	var db string
	if err := p.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	s := startPgcache(t, crudConfig(pg.DSN()))
	ready(t, s)
	rc := redisClient(t, s)
	crud := "CRUD:" + db + ".public.crud_users:"
	for _, key := range []string{crud + "42", crud + "[42]", crud + `"42"`, "user:42", "user:[42]", `user:"42"`} {
		if v, err := rc.Get(ctx, key).Result(); err != nil || !strings.Contains(v, "ada") {
			t.Fatalf("GET %s = %q, %v", key, v, err)
		}
	}
	for _, id := range []string{"42", "[42]", `"42"`} {
		status, body := httpDo(t, "GET", "http://"+s.Addr("http")+"/users/get?id="+url.QueryEscape(id), nil)
		if status != 200 || !strings.Contains(string(body), "ada") {
			t.Fatalf("HTTP get id=%s = %d %q", id, status, body)
		}
	}
	l := listL1(t, s, "?route=users")
	if _, ok := l.entries["users/42"]; !ok || len(l.entries) != 1 {
		t.Errorf("L1 of route users holds %d entries (%v), want one: users/42", len(l.entries), keysOf(l.entries))
	}
	// The one entry is the row's: an SQL update fences it for every spelling.
	testenv.Exec(t, p, `UPDATE crud_users SET name = 'grace' WHERE id = 42`)
	for _, key := range []string{crud + "[42]", `user:"42"`, "user:42"} {
		eventually(t, "GET "+key+" sees the update", func() bool {
			v, err := rc.Get(ctx, key).Result()
			return err == nil && strings.Contains(v, "grace")
		})
	}
}

func keysOf(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
