package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/testenv"
)

// keyspaceConfig has every route kind: a kv table with an L1, the rows of
// a table with an L1 and without one, a Valkey route, and the memory
// catch-all.
func keyspaceConfig(dsn, valkeyAddr string) string {
	return fmt.Sprintf(`
backends:
  pg:  {type: postgres, dsn: %q, max_conns: 8}
  vk:  {type: valkey, addrs: [%q]}
  mem: {type: memory}
routes:
  - {name: postgres, prefix: "pg:", backend: pg, table: ks_kv, durability: unlogged, l1: {max_bytes: 16MiB}}
  - {name: users, prefix: "user:", backend: pg, source_table: public.ks_users, attach: auto, l1: {max_bytes: 16MiB}}
  - {name: rows, prefix: "row:", backend: pg, source_table: public.ks_rows}
  - {name: vk, prefix: "vk:", backend: vk}
  - {name: memory, prefix: "", backend: mem}
`, dsn, valkeyAddr)
}

func scanKeys(t *testing.T, rc *redis.Client, match string, count int64) []string {
	t.Helper()
	ctx := context.Background()
	seen := map[string]bool{}
	iter := rc.Scan(ctx, 0, match, count).Iterator()
	for iter.Next(ctx) {
		seen[iter.Val()] = true
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN MATCH %q: %v", match, err)
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The keyspace commands on every route kind, through go-redis: SCAN and
// KEYS list the keys pgcache owns and never a table's rows nor another
// application's Valkey keys; RENAME and COPY keep deadlines; FLUSHALL
// empties memory, the kv table, the L1s (this instance's and another's)
// and the route's Valkey keys, and leaves the source tables' rows and the
// other application's keys as they were.
func TestKeyspaceAllRouteKinds(t *testing.T) {
	vk := testenv.RedisFor(t)
	p := pg.Pool(t)
	ctx := context.Background()
	testenv.Exec(t, p, `CREATE TABLE IF NOT EXISTS ks_users (id bigint PRIMARY KEY, name text NOT NULL)`)
	testenv.Exec(t, p, `CREATE TABLE IF NOT EXISTS ks_rows (id bigint PRIMARY KEY, name text NOT NULL)`)
	testenv.Exec(t, p, `INSERT INTO ks_users VALUES (1, 'ada'), (2, 'grace') ON CONFLICT DO NOTHING`)
	testenv.Exec(t, p, `INSERT INTO ks_rows VALUES (1, 'x'), (2, 'y'), (3, 'z') ON CONFLICT DO NOTHING`)
	if _, err := vk.Do(ctx, "SET", "otherapp:k", "theirs"); err != nil {
		t.Fatal(err)
	}
	cfg := keyspaceConfig(pg.DSN(), vk.Addr())
	a, b := startPgcache(t, cfg), startPgcache(t, cfg)
	for _, s := range []*Server{a, b} {
		ready(t, s)
	}
	ra, rb := redisClient(t, a), redisClient(t, b)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ra.FlushDB(ctx).Err())

	var want []string
	for i := range 12 {
		for _, prefix := range []string{"pg:", "vk:", "m:"} {
			k := fmt.Sprintf("%sk%02d", prefix, i)
			must(ra.Set(ctx, k, "v", 0).Err())
			want = append(want, k)
		}
	}
	slices.Sort(want)
	for _, count := range []int64{0, 1, 5, 1000} {
		if got := scanKeys(t, ra, "", count); !slices.Equal(got, want) {
			t.Fatalf("SCAN COUNT %d = %q, want %q", count, got, want)
		}
	}
	for _, match := range []string{"pg:*", "vk:k0*", "*k11", "user:*", "row:*", "otherapp*", "*app:k"} {
		var w []string
		for _, k := range want {
			if ok, _ := matchLike(match, k); ok {
				w = append(w, k)
			}
		}
		if got := scanKeys(t, ra, match, 3); !slices.Equal(got, w) {
			t.Errorf("SCAN MATCH %q = %q, want %q", match, got, w)
		}
	}
	keys, err := ra.Keys(ctx, "*").Result()
	must(err)
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		t.Errorf("KEYS * = %q, want %q", keys, want)
	}

	// Table rows are strings with no deadline, and cannot be renamed.
	if typ := ra.Type(ctx, "user:1").Val(); typ != "string" {
		t.Errorf("TYPE user:1 = %q", typ)
	}
	if et := ra.ExpireTime(ctx, "user:1").Val(); et != -1 { // go-redis keeps -1 and -2 as they came
		t.Errorf("EXPIRETIME user:1 = %v", et)
	}
	if err := ra.Rename(ctx, "user:1", "user:3").Err(); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("RENAME of a table row: %v", err)
	}
	if err := ra.Rename(ctx, "pg:k00", "vk:k00").Err(); err == nil || !strings.Contains(err.Error(), "different pgcache routes") {
		t.Errorf("RENAME across routes: %v", err)
	}

	// RENAME and COPY keep the deadline, on each kind of store; the L1 of
	// both instances follows.
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for _, prefix := range []string{"pg:", "vk:", "m:"} {
		src, dst, cp := prefix+"src", prefix+"dst", prefix+"cp"
		must(ra.Set(ctx, src, "one", 0).Err())
		must(ra.PExpireAt(ctx, src, at).Err())
		must(ra.Set(ctx, dst, "old", 0).Err())
		// Memory is each instance's own; the kv table and Valkey are shared.
		shared := prefix != "m:"
		if v := rb.Get(ctx, dst).Val(); shared && v != "old" { // in b's L1 now
			t.Fatalf("GET %s from b = %q", dst, v)
		}
		if v := ra.Get(ctx, dst).Val(); v != "old" { // and in a's
			t.Fatalf("GET %s from a = %q", dst, v)
		}
		must(ra.Rename(ctx, src, dst).Err())
		if v := ra.Get(ctx, dst).Val(); v != "one" {
			t.Errorf("GET %s after RENAME = %q", dst, v)
		}
		if shared {
			eventually(t, "b sees the RENAME of "+dst, func() bool { return rb.Get(ctx, dst).Val() == "one" })
		}
		if n := ra.Exists(ctx, src).Val(); n != 0 {
			t.Errorf("%s exists after RENAME", src)
		}
		if got := ra.PExpireTime(ctx, dst).Val(); got != time.Duration(at.UnixMilli())*time.Millisecond {
			t.Errorf("PEXPIRETIME %s = %v, want %v", dst, got, at.UnixMilli())
		}
		if n := ra.Copy(ctx, dst, cp, 0, false).Val(); n != 1 {
			t.Errorf("COPY %s = %d", dst, n)
		}
		if got := ra.PExpireTime(ctx, cp).Val(); got != time.Duration(at.UnixMilli())*time.Millisecond {
			t.Errorf("PEXPIRETIME %s = %v", cp, got)
		}
		if n := ra.RenameNX(ctx, cp, dst).Val(); n {
			t.Errorf("RENAMENX onto %s succeeded", dst)
		}
	}

	// FLUSHALL through a: everything pgcache owns is gone, b's L1 too.
	if v := rb.Get(ctx, "pg:k01").Val(); v != "v" {
		t.Fatalf("GET pg:k01 from b = %q", v)
	}
	if v := rb.Get(ctx, "user:1").Val(); !strings.Contains(v, "ada") {
		t.Fatalf("GET user:1 from b = %q", v)
	}
	must(ra.FlushAll(ctx).Err())
	if got := scanKeys(t, ra, "", 100); len(got) != 0 {
		t.Errorf("keys left after FLUSHALL: %q", got)
	}
	if n := ra.DBSize(ctx).Val(); n != 0 {
		t.Errorf("DBSIZE after FLUSHALL = %d", n)
	}
	eventually(t, "b's L1 drops the flushed key", func() bool {
		return rb.Get(ctx, "pg:k01").Err() == redis.Nil
	})
	var users, rows int
	must(p.QueryRow(ctx, `SELECT count(*) FROM ks_users`).Scan(&users))
	must(p.QueryRow(ctx, `SELECT count(*) FROM ks_rows`).Scan(&rows))
	if users != 2 || rows != 3 {
		t.Errorf("source tables after FLUSHALL: %d users, %d rows; want 2 and 3", users, rows)
	}
	for _, c := range []*redis.Client{ra, rb} {
		if v := c.Get(ctx, "user:1").Val(); !strings.Contains(v, "ada") {
			t.Errorf("GET user:1 after FLUSHALL = %q", v)
		}
		if v := c.Get(ctx, "row:3").Val(); !strings.Contains(v, "z") {
			t.Errorf("GET row:3 after FLUSHALL = %q", v)
		}
	}
	if v, err := vk.Do(ctx, "GET", "otherapp:k"); err != nil || v != "theirs" {
		t.Errorf("another application's Valkey key after FLUSHALL: %q, %v", v, err)
	}
	if n := ra.Exists(ctx, "vk:k00", "m:k00", "pg:k00").Val(); n != 0 {
		t.Errorf("%d keys left after FLUSHALL", n)
	}
	if k, err := ra.RandomKey(ctx).Result(); err != redis.Nil {
		t.Errorf("RANDOMKEY after FLUSHALL = %q, %v", k, err)
	}
}

// matchLike is the test's own reading of the few patterns it uses: "*"
// anywhere, the rest literal.
func matchLike(pattern, key string) (bool, error) {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(key, parts[0]) {
		return false, nil
	}
	key = key[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(key, p), nil
		}
		j := strings.Index(key, p)
		if j < 0 {
			return false, nil
		}
		key = key[j+len(p):]
	}
	return key == "", nil
}
