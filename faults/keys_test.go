package faults

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// A table route's key may spell a row otherwise than PostgreSQL prints its
// key ("007", "+7" and ["7"] all name row 7; a uuid in capitals or in
// braces names the same row as in lowercase). Every spelling a client
// uses is an L1 entry of its own, and each must be fenced by an UPDATE of
// the row it names, or it stays stale. FuzzCRUDKey (backends/postgres)
// holds the rule; this is the same over RESP, CRUD: keys and HTTP.
func TestKeySpellingsStayCoherent(t *testing.T) {
	leakCheck(t)
	pool := pg.Pool(t)
	for _, sql := range []string{
		"DROP TABLE IF EXISTS faults_users, faults_items",
		"CREATE TABLE faults_users (id integer PRIMARY KEY, name text NOT NULL)",
		"INSERT INTO faults_users VALUES (7, 'ada')",
		"CREATE TABLE faults_items (id uuid PRIMARY KEY, name text NOT NULL)",
		"INSERT INTO faults_items VALUES ('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 'ada')",
	} {
		testenv.Exec(t, pool, sql)
	}
	p := startPgcache(t, fmt.Sprintf(`
backends:
  pg: {type: postgres, dsn: %q}
routes:
  - {name: users, prefix: "user:", backend: pg, source_table: public.faults_users, attach: auto, l1: {max_bytes: 8MiB}}
  - {name: items, prefix: "item:", backend: pg, source_table: public.faults_items, attach: auto, l1: {max_bytes: 8MiB}}
`, pg.DSN()))
	eventually(t, 30*time.Second, "L1 online", func() bool { return p.listener(t, "pg") == "online" })
	db := pg.Database
	const uuid = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	type spelling struct{ route, key string }
	spellings := []spelling{
		{"users", "7"}, {"users", "007"}, {"users", "+7"}, {"users", `"7"`}, {"users", "[7]"}, {"users", `["007"]`},
		{"items", uuid}, {"items", strings.ToUpper(uuid)}, {"items", "{" + uuid + "}"}, {"items", strings.ReplaceAll(uuid, "-", "")},
	}
	c := dialRESP(t, p.resp)
	client := httpClient(t)
	// read returns the row's name as each front sees it by the spelling:
	// the route's prefix, the CRUD: prefix, and HTTP.
	read := func(s spelling) []string {
		prefix := map[string]string{"users": "user:", "items": "item:"}[s.route]
		table := map[string]string{"users": "faults_users", "items": "faults_items"}[s.route]
		var got []string
		for _, key := range []string{prefix + s.key, "CRUD:" + db + ".public." + table + ":" + s.key} {
			v, err := c.Do("GET", key)
			if err != nil {
				t.Fatalf("GET %s: %v", key, err)
			}
			got = append(got, v)
		}
		resp, err := client.Get("http://" + p.http + "/" + s.route + "/get?id=" + url.QueryEscape(s.key))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return append(got, string(b))
	}
	for range 3 { // fill L1 under every spelling
		for _, s := range spellings {
			for _, v := range read(s) {
				if !strings.Contains(v, `"ada"`) {
					t.Fatalf("%s %q before the update = %q", s.route, s.key, v)
				}
			}
		}
	}
	testenv.Exec(t, pool, "UPDATE faults_users SET name = 'grace' WHERE id = 7")
	testenv.Exec(t, pool, "UPDATE faults_items SET name = 'grace'")
	// Once the canonical spellings show the update, its fences have been
	// applied; every other spelling must show it too.
	for _, canonical := range []spelling{spellings[0], spellings[6]} {
		eventually(t, 30*time.Second, "the update seen by "+canonical.key, func() bool {
			for _, v := range read(canonical) {
				if !strings.Contains(v, `"grace"`) {
					return false
				}
			}
			return true
		})
	}
	var stale []string
	for _, s := range spellings {
		for i, v := range read(s) {
			if !strings.Contains(v, `"grace"`) {
				stale = append(stale, fmt.Sprintf("%s %q via %s: %s", s.route, s.key, []string{"prefix", "CRUD:", "HTTP"}[i], v))
			}
		}
	}
	if len(stale) > 0 {
		t.Errorf("stale after the fences were applied:\n%s", strings.Join(stale, "\n"))
	}
	var hits int64
	for _, r := range []string{"users", "items"} {
		hits += p.tier(t, r).Stats.Hits.Load()
	}
	figure(t, "key spellings: %d spellings of 2 rows read over RESP, CRUD: and HTTP through L1 (%d hits), then updated by SQL: stale %d",
		len(spellings), hits, len(stale))
}
