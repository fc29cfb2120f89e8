package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/testenv"
)

// l1Listing is one GET /debug/l1: entries by "route/key", the Proven
// header and the trailer's count ("" when the listing was cut).
type l1Listing struct {
	entries map[string][]byte
	proven  time.Time
	count   string
}

func listL1(t *testing.T, s *Server, query string) l1Listing {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr("admin") + "/debug/l1" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /debug/l1%s = %d %q", query, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
	l := l1Listing{entries: map[string][]byte{}}
	if p := resp.Header.Get("Pgcache-L1-Proven"); p != "" {
		if l.proven, err = time.Parse(time.RFC3339Nano, p); err != nil {
			t.Fatalf("Pgcache-L1-Proven %q: %v", p, err)
		}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Route       string
			Key         *string
			KeyBase64   []byte `json:"key_base64"`
			Value       *string
			ValueBase64 []byte `json:"value_base64"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if (e.Key == nil) == (e.KeyBase64 == nil) || (e.Value == nil) == (e.ValueBase64 == nil) {
			t.Fatalf("line %q: want exactly one of key, key_base64 and one of value, value_base64", sc.Text())
		}
		key, val := string(e.KeyBase64), e.ValueBase64
		if e.Key != nil {
			key = *e.Key
		}
		if e.Value != nil {
			val = []byte(*e.Value)
		}
		id := e.Route + "/" + key
		if _, dup := l.entries[id]; dup {
			t.Fatalf("%s listed twice", id)
		}
		l.entries[id] = val
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	l.count = resp.Trailer.Get("Pgcache-L1-Entries")
	if l.count != strconv.Itoa(len(l.entries)) {
		t.Fatalf("trailer Pgcache-L1-Entries %q, %d lines", l.count, len(l.entries))
	}
	return l
}

// GET /debug/l1 lists exactly what the tiers would serve: every key read
// since its last write, byte for byte as PostgreSQL has it; not a key that
// is absent, not one this instance wrote since, not one a SQL write fenced.
func TestDebugL1ListsWhatIsCached(t *testing.T) {
	ctx := context.Background()
	p := pg.Pool(t)
	testenv.Exec(t, p, `DROP TABLE IF EXISTS dbg_users`)
	// A json column keeps its text as written, spaces and newline included:
	// the listing must give it back as it is.
	testenv.Exec(t, p, `CREATE TABLE dbg_users (id bigint PRIMARY KEY, name text NOT NULL, note json)`)
	testenv.Exec(t, p, `INSERT INTO dbg_users VALUES (1, 'ada', '{"a": 1,
  "b": [1, 2]}'), (2, 'grace', NULL), (3, 'Ŝ <&> "q"', '"x"')`)
	s := startPgcache(t, fmt.Sprintf(`
backends:
  pg:  {type: postgres, dsn: %q, max_conns: 8}
  mem: {type: memory}
routes:
  - {name: kv, prefix: "pg:", backend: pg, table: dbg_kv, durability: unlogged, l1: {max_bytes: 16MiB}}
  - {name: users, prefix: "user:", backend: pg, source_table: public.dbg_users, attach: auto, l1: {max_bytes: 16MiB}}
  - {name: memory, prefix: "", backend: mem}
`, pg.DSN()))
	ready(t, s)
	rc := redisClient(t, s)
	bin := "\xff\x00 not UTF-8"
	for k, v := range map[string]string{"pg:a": "va", "pg:bin": bin, "pg:written": "w1", "m": "memory"} {
		if err := rc.Set(ctx, k, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := listL1(t, s, ""); len(got.entries) != 0 {
		t.Fatalf("own writes are not cached, yet listed: %q", slices.Sorted(maps.Keys(got.entries)))
	}
	// The writes' fences also come back through the fence log, and would
	// drop what the reads below fill: wait until they have.
	written := time.Now()
	eventually(t, "the SETs' fences", func() bool { return listL1(t, s, "").proven.After(written) })
	for _, k := range []string{"pg:a", "pg:bin", "pg:written", "pg:absent", "user:1", "user:2", "user:3", "user:99", "m"} {
		if err := rc.Get(ctx, k).Err(); err != nil && err != redis.Nil {
			t.Fatalf("GET %s: %v", k, err)
		}
	}
	row := func(id int) []byte {
		var v string
		if err := p.QueryRow(ctx, `SELECT row_to_json(t)::text FROM dbg_users t WHERE id = $1`, id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return []byte(v)
	}
	want := map[string][]byte{
		"kv/a": []byte("va"), "kv/bin": []byte(bin), "kv/written": []byte("w1"),
		"users/1": row(1), "users/2": row(2), "users/3": row(3),
	}
	check := func(what string, got l1Listing, want map[string][]byte) {
		t.Helper()
		if !maps.EqualFunc(got.entries, want, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("%s: listed\n%q\nwant\n%q", what, got.entries, want)
		}
	}
	all := listL1(t, s, "")
	check("after reads", all, want)
	if all.proven.IsZero() {
		t.Error("no Pgcache-L1-Proven header while online")
	}
	users := map[string][]byte{}
	for k, v := range want {
		if strings.HasPrefix(k, "users/") {
			users[k] = v
		}
	}
	check("?route=users", listL1(t, s, "?route=users"), users)

	// A key read by its CRUD: name is cached under the route's key.
	var db string
	if err := p.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if err := rc.MGet(ctx, "CRUD:"+db+".public.dbg_users:1").Err(); err != nil {
		t.Fatal(err)
	}
	check("after a CRUD: read", listL1(t, s, ""), want)

	// This instance's own write drops its entry at once.
	if err := rc.Set(ctx, "pg:written", "w2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	delete(want, "kv/written")
	check("after an own write", listL1(t, s, ""), want)

	// A SQL write is fenced once its fence arrives; a read fills again.
	testenv.Exec(t, p, `UPDATE dbg_users SET name = 'hopper' WHERE id = 2`)
	eventually(t, "the UPDATE's fence drops users/2", func() bool {
		_, listed := listL1(t, s, "?route=users").entries["users/2"]
		return !listed
	})
	delete(want, "users/2")
	check("after a SQL UPDATE", listL1(t, s, ""), want)
	if v, err := rc.Get(ctx, "user:2").Result(); err != nil || !strings.Contains(v, "hopper") {
		t.Fatalf("GET user:2 = %q, %v", v, err)
	}
	want["users/2"] = row(2)
	check("after reading it again", listL1(t, s, ""), want)

	for _, tc := range []struct {
		name, method, query string
		status              int
		body                string
	}{
		{"no l1 on the route", "GET", "?route=memory", 404, "route \"memory\" has no l1\n"},
		{"unknown route", "GET", "?route=nope", 404, "route \"nope\" has no l1\n"},
		{"HEAD", "HEAD", "", 200, ""},
		{"POST", "POST", "", 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := httpDo(t, tc.method, "http://"+s.Addr("admin")+"/debug/l1"+tc.query, nil)
			if status != tc.status || (tc.body != "" && string(body) != tc.body) || (tc.method == "HEAD" && len(body) != 0) {
				t.Errorf("%s /debug/l1%s = %d %q, want %d %q", tc.method, tc.query, status, body, tc.status, tc.body)
			}
		})
	}
}
