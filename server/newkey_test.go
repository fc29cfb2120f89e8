package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// newKeyConfig is a PostgreSQL kv route with an L1, one without, a Valkey
// route and a memory route.
func newKeyConfig(dsn, valkeyAddr string) string {
	return fmt.Sprintf(`
backends:
  pg:  {type: postgres, dsn: %q, max_conns: 8}
  vk:  {type: valkey, addrs: [%q]}
  mem: {type: memory}
routes:
  - {name: cached, prefix: "pg:", backend: pg, table: srv_newkey, durability: unlogged, l1: {max_bytes: 16MiB}}
  - {name: plain, prefix: "pgplain:", backend: pg, table: srv_newkey_plain, durability: unlogged}
  - {name: vk, prefix: "vk:", backend: vk}
  - {name: memory, prefix: "", backend: mem}
`, dsn, valkeyAddr)
}

// Redis's "Keyspace notifications: new key test" and more on each store
// that can say which keys a write made: with notify-keyspace-events En, a
// write that makes a key sends __keyevent@0__:new once, and a write over a
// live key sends none; a key whose deadline passed is made anew (on
// PostgreSQL, before the sweeper deletes its row too). A Valkey route's
// SET says nothing: the next event is the marker's.
func TestNewKeyEvents(t *testing.T) {
	vk := testenv.RedisFor(t)
	s := startPgcache(t, newKeyConfig(pg.DSN(), vk.Addr()))
	ready(t, s)
	ctx := context.Background()
	rc := redisClient(t, s)
	if err := rc.FlushAll(ctx).Err(); err != nil { // the tables outlive a run (-count=2)
		t.Fatal(err)
	}
	if err := rc.ConfigSet(ctx, "notify-keyspace-events", "En").Err(); err != nil {
		t.Fatal(err)
	}
	got := events(t, rc, "*")
	do := func(args ...any) {
		t.Helper()
		if err := rc.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	for _, p := range []string{"pg:", "pgplain:", "m:"} {
		newKey := func(key string) string { return "__keyevent@0__:new " + p + key }
		do("SET", p+"foo", "bar")
		do("SET", p+"foo", "baz") // no new
		do("SET", p+"bar", "bar")
		expect(t, p+" SET", got, newKey("foo"), newKey("bar"))

		do("INCR", p+"i")
		do("INCR", p+"i")
		do("APPEND", p+"a", "x")
		do("APPEND", p+"a", "y")
		do("SETNX", p+"a", "z")
		do("MSET", p+"m1", "1", p+"m2", "2", p+"m1", "3")
		do("MSET", p+"m1", "1", p+"m2", "2")
		expect(t, p+" string writes", got, newKey("i"), newKey("a"), newKey("m1"), newKey("m2"))

		do("HSET", p+"h", "f", "v")
		do("HSET", p+"h", "g", "w")
		do("RPUSH", p+"l", "a")
		do("LPOP", p+"l")
		do("LPUSHX", p+"l", "a")
		do("RPUSH", p+"l", "a")
		do("SADD", p+"s", "a")
		do("SINTERSTORE", p+"d", p+"s")
		do("SINTERSTORE", p+"d", p+"s")
		expect(t, p+" collections", got, newKey("h"), newKey("l"), newKey("l"), newKey("s"), newKey("d"))

		do("PSETEX", p+"e", "1", "v")
		do("PSETEX", p+"c", "1", "5")
		time.Sleep(20 * time.Millisecond)
		do("SET", p+"e", "w")
		do("INCR", p+"c")
		expect(t, p+" expired keys", got, newKey("e"), newKey("c"), newKey("e"), newKey("c"))
	}
	do("SET", "vk:foo", "bar")
	do("SET", "marker", "x")
	expect(t, "a Valkey route", got, "__keyevent@0__:new marker")
}
