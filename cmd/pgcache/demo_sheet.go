package main

import (
	"fmt"
	"io"
	"net"

	"github.com/pgcache/pgcache/internal/testenv"
)

// The demo's sample data.
const (
	demoUsers  = 1000 // rows of the users table: id, name 'user <id>', email
	demoKVKeys = 100  // pg:1 … pg:100 = "value 1" … "value 100" in the standard kv table
	demoVisits = 41   // counter:visits, which the cheat sheet increments
	// demoNewName is what the cheat sheet's psql UPDATE writes.
	demoNewName = "Grace Hopper"
)

// demoConfig is the demo's pgcache config: a route of every kind.
func demoConfig(resp, httpAddr, admin, level, dsn, valkeyAddr string) string {
	return fmt.Sprintf(`listen: {resp: %q, http: %q, admin: %q}
log: {level: %q, format: console}
backends:
  pg: {type: postgres, dsn: %q}
  vk: {type: valkey, addrs: [%q]}
  mem: {type: memory, max_bytes: 64MiB}
routes:
  # kv tables, one per durability, created by pgcache
  - {name: postgres, prefix: "pg:", backend: pg, table: pgcache_kv, durability: standard}
  - {name: sessions, prefix: "session:", backend: pg, table: pgcache_sessions, durability: unlogged}
  - {name: counters, prefix: "counter:", backend: pg, table: pgcache_counters, durability: async}
  # the rows of an existing table, by primary key, with a coherent L1 in front
  - {name: users, prefix: "user:", backend: pg, source_table: public.users, attach: auto, l1: {max_bytes: 16MiB}}
  - {name: valkey, prefix: "vk:", backend: vk}
  - {name: memory, prefix: "", backend: mem}
# PUBLISH reaches the subscribers of every pgcache on this database
pubsub: {backend: pg}
`, resp, httpAddr, admin, level, dsn, valkeyAddr)
}

// demoSheet is where the demo's servers are, for the cheat sheet.
type demoSheet struct {
	RESP, HTTP, Admin string // pgcache's fronts
	PGDSN, PGDir      string // PostgreSQL and its files
	Psql              string // the psql to run
	Valkey, ValkeyDir string // Valkey/Redis and its files
}

// writeCheatSheet prints where everything is and the commands to try. Each
// command is one line, followed by two spaces and a comment: the demo's
// test runs them as written.
func writeCheatSheet(w io.Writer, s demoSheet) {
	cli := "redis-cli"
	host, port, _ := net.SplitHostPort(s.RESP)
	if host != "127.0.0.1" {
		cli += " -h " + host
	}
	if port != "6379" {
		cli += " -p " + port
	}
	web := "localhost:" + portOf(s.HTTP)
	adm := "localhost:" + portOf(s.Admin)
	crud := "CRUD:" + testenv.PostgresDatabase + ".public.users:42"

	fmt.Fprintf(w, `
pgcache demo is serving RESP on %s, HTTP on %s, the admin API on %s
  PostgreSQL   %s   (files in %s)
  Valkey/Redis %s   (files in %s)

routes (RESP prefix, HTTP path):
  pg:       /postgres/  kv table pgcache_kv, standard durability (WAL flushed at commit); pg:1…pg:%d seeded
  session:  /sessions/  kv table pgcache_sessions, UNLOGGED (no WAL; a crash empties it)
  counter:  /counters/  kv table pgcache_counters, async (synchronous_commit=off: a crash may lose the last commits)
  user:     /users/     rows of table public.users (%d rows) as JSON, with a coherent L1; also %s
  vk:       /valkey/    the Valkey/Redis above, keys stored as valkey:<key>
  (rest)    /memory/    in-process memory

try, from another terminal (redis-cli: apt-get install redis-tools; curl: apt-get install curl):
`, s.RESP, s.HTTP, s.Admin, s.PGDSN, s.PGDir, s.Valkey, s.ValkeyDir, demoKVKeys, demoUsers, crud)
	_, vkPort, _ := net.SplitHostPort(s.Valkey)
	for _, c := range [][2]string{
		{cli + " get pg:42", `"value 42", seeded by the demo`},
		{"curl -s '" + web + "/postgres/get?id=42'", "the same row over HTTP"},
		{cli + " set session:abc token EX 60", "a session in the UNLOGGED table, for 60 s"},
		{cli + " ttl session:abc", "its seconds left, computed by PostgreSQL's clock"},
		{cli + " hset session:cart:7 apples 3 pears 2", "2: a hash in the UNLOGGED table, one row per field"},
		{cli + " hincrby session:cart:7 apples 1", "4: that field's row changed, no other"},
		{cli + " hgetall session:cart:7", "its fields and values, in the order they came"},
		{cli + " incr counter:visits", fmt.Sprintf("%d, committed without waiting for the WAL flush", demoVisits+1)},
		{cli + " get user:42", "row 42 as JSON: read from PostgreSQL, kept in the L1"},
		{cli + " get '" + crud + "'", "the same row by its CRUD: key, from the L1"},
		{cli + " hget user:42 email", "one column of row 42, read as a hash field"},
		{s.Psql + " '" + s.PGDSN + "' -c \"UPDATE users SET name = '" + demoNewName + "' WHERE id = 42\"", "plain SQL, behind pgcache's back"},
		{cli + " get user:42", "the new name, once the UPDATE's fence has dropped the L1 entry (milliseconds: at once after psql it may still be the old one)"},
		{"curl -s " + adm + "/debug/l1", "what the L1 holds now"},
		{"curl -s " + adm + "/metrics | grep -E '^pgcache_l1_(requests_total|fence_lag_seconds)'", "L1 hits and misses, and the fence lag"},
		{cli + " set vk:hello world", "stored in Valkey/Redis …"},
		{"redis-cli -p " + vkPort + " get valkey:hello", "… under the route's name"},
		{cli + " set a b", "anything else: in-process memory"},
		{"curl -s '" + web + "/memory/get?id=a'", "b"},
		{"(timeout 2 " + cli + " subscribe news &) ; sleep 0.5 ; " + cli + " publish news hello ; sleep 0.5",
			"1, and a second redis-cli, subscribed, prints the message (in another terminal: " + cli + " subscribe news)"},
	} {
		fmt.Fprintf(w, "  %s  # %s\n", c[0], c[1])
	}
	fmt.Fprintf(w, "\n%s '%s' opens the database. Ctrl-C stops pgcache, Valkey/Redis and PostgreSQL and removes their files.\n",
		s.Psql, s.PGDSN)
}

// portOf is the port of a host:port.
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}
