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

// pubsubConfig is l1Config with Publish/Subscribe carried by PostgreSQL.
func pubsubConfig(dsn string) string {
	return l1Config(dsn) + "pubsub: {backend: pg}\n"
}

// usersTable makes the table l1Config's users route serves.
func usersTable(t testing.TB) {
	testenv.Exec(t, pg.Pool(t), `CREATE TABLE IF NOT EXISTS srv_users (id bigint PRIMARY KEY, name text NOT NULL)`)
}

// Two instances with only PostgreSQL between them: every message published
// through one reaches a subscriber of the other, in the order it was
// published, none lost.
func TestPubSubAcrossInstances(t *testing.T) {
	usersTable(t)
	a, b := startPgcache(t, pubsubConfig(pg.DSN())), startPgcache(t, pubsubConfig(pg.DSN()))
	ctx := context.Background()
	ra, rb := redisClient(t, a), redisClient(t, b)
	sub := rb.Subscribe(ctx, "jobs")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil { // the subscription's reply
		t.Fatal(err)
	}
	msgs := sub.Channel(redis.WithChannelSize(4096))
	// b hears a once its LISTEN is up: probe until a message arrives.
	eventually(t, "b hears a", func() bool {
		ra.Publish(ctx, "jobs", "probe")
		select {
		case <-msgs:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
	for len(msgs) > 0 { // the probes that arrived late
		<-msgs
	}
	time.Sleep(200 * time.Millisecond)
	for len(msgs) > 0 {
		<-msgs
	}
	const n = 1000
	for i := range n {
		if err := ra.Publish(ctx, "jobs", fmt.Sprintf("m%04d", i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		select {
		case m := <-msgs:
			if want := fmt.Sprintf("m%04d", i); m.Payload != want {
				t.Fatalf("message %d is %q, want %q", i, m.Payload, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d messages arrived", i, n)
		}
	}
}

// Two instances on one PostgreSQL kv route with an L1: collections written
// through one, or by plain SQL on the tables, are read through the other's
// L1 as they are once the fences have come (none stale).
func TestCollectionsCoherent(t *testing.T) {
	usersTable(t)
	a, b := startPgcache(t, l1Config(pg.DSN())), startPgcache(t, l1Config(pg.DSN()))
	ctx := context.Background()
	for _, s := range []*Server{a, b} {
		ready(t, s)
	}
	ra, rb := redisClient(t, a), redisClient(t, b)
	check := func(what string, read func(c *redis.Client) string, want string) {
		t.Helper()
		eventually(t, what, func() bool { return read(rb) == want })
		if got := read(ra); got != want {
			t.Fatalf("%s through the writer: %q, want %q", what, got, want)
		}
	}
	hget := func(c *redis.Client) string { return c.HGet(ctx, "pg:h", "f").Val() }
	smembers := func(c *redis.Client) string {
		m := c.SMembers(ctx, "pg:s").Val()
		slices.Sort(m)
		return fmt.Sprint(m)
	}
	zrange := func(c *redis.Client) string { return fmt.Sprint(c.ZRangeWithScores(ctx, "pg:z", 0, -1).Val()) }
	lrange := func(c *redis.Client) string { return fmt.Sprint(c.LRange(ctx, "pg:l", 0, -1).Val()) }

	// The keys as a run before this one (-count) left them: gone.
	if err := ra.Del(ctx, "pg:h", "pg:s", "pg:z", "pg:l").Err(); err != nil {
		t.Fatal(err)
	}
	// Fill b's L1 with the old values first, so that staleness would show.
	ra.HSet(ctx, "pg:h", "f", "1")
	ra.SAdd(ctx, "pg:s", "a")
	ra.ZAdd(ctx, "pg:z", redis.Z{Score: 1, Member: "a"})
	ra.LPush(ctx, "pg:l", "x")
	check("HGET", hget, "1")
	check("SMEMBERS", smembers, "[a]")
	check("ZRANGE", zrange, "[{1 a}]")
	check("LRANGE", lrange, "[x]")

	ra.HSet(ctx, "pg:h", "f", "2")
	ra.SAdd(ctx, "pg:s", "b")
	ra.ZAdd(ctx, "pg:z", redis.Z{Score: 2, Member: "b"})
	ra.LPush(ctx, "pg:l", "y")
	check("HGET after HSET through the other", hget, "2")
	check("SMEMBERS after SADD", smembers, "[a b]")
	check("ZRANGE after ZADD", zrange, "[{1 a} {2 b}]")
	check("LRANGE after LPUSH", lrange, "[y x]")

	// Plain SQL on the items table, behind both instances' backs.
	p := pg.Pool(t)
	testenv.Exec(t, p, `UPDATE srv_kv_items SET value = '3' WHERE key = 'h' AND member = 'f'`)
	testenv.Exec(t, p, `UPDATE srv_kv_items SET score = 5 WHERE key = 'z' AND member = 'a'`)
	check("HGET after plain SQL", hget, "3")
	check("ZRANGE after plain SQL", zrange, "[{2 b} {5 a}]")
	// A DEL through b drops a's copy too.
	rb.Del(ctx, "pg:h")
	eventually(t, "HGET after DEL through the other", func() bool { return hget(ra) == "" })
}

// A table route answers the hash reads of a row as its columns, from the
// L1 as GET does; plain SQL on the row reaches them by its fence; HSET is
// refused unless the route is writable, and then updates the columns.
func TestTableRowsAsHashes(t *testing.T) {
	usersTable(t)
	p := pg.Pool(t)
	testenv.Exec(t, p, `INSERT INTO srv_users VALUES (7, 'ada') ON CONFLICT (id) DO UPDATE SET name = 'ada'`)
	s := startPgcache(t, l1Config(pg.DSN()))
	ready(t, s)
	ctx := context.Background()
	r := redisClient(t, s)
	if got := r.HGet(ctx, "user:7", "name").Val(); got != "ada" {
		t.Fatalf("HGET user:7 name = %q", got)
	}
	if got := r.HGetAll(ctx, "user:7").Val(); got["id"] != "7" || got["name"] != "ada" || len(got) != 2 {
		t.Fatalf("HGETALL user:7 = %v", got)
	}
	if got := r.HMGet(ctx, "user:7", "name", "nope").Val(); got[0] != "ada" || got[1] != nil {
		t.Fatalf("HMGET user:7 name nope = %v", got)
	}
	if got := r.HGet(ctx, "user:404", "name").Err(); got != redis.Nil {
		t.Fatalf("HGET of a row that is not there: %v, want nil", got)
	}
	testenv.Exec(t, p, `UPDATE srv_users SET name = 'grace' WHERE id = 7`)
	eventually(t, "HGET after plain SQL", func() bool { return r.HGet(ctx, "user:7", "name").Val() == "grace" })
	if err := r.HSet(ctx, "user:7", "name", "x").Err(); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Fatalf("HSET on a route that is not writable: %v", err)
	}

	w := startPgcache(t, strings.Replace(l1Config(pg.DSN()), "attach: auto,", "attach: auto, writable: true,", 1))
	rw := redisClient(t, w)
	if err := rw.HSet(ctx, "user:7", "name", "hedy").Err(); err != nil {
		t.Fatalf("HSET on a writable route: %v", err)
	}
	var name string
	if err := p.QueryRow(ctx, `SELECT name FROM srv_users WHERE id = 7`).Scan(&name); err != nil || name != "hedy" {
		t.Fatalf("the row's name after HSET = %q, %v", name, err)
	}
	if err := rw.HSet(ctx, "user:7", "nope", "x").Err(); err == nil || !strings.Contains(err.Error(), "no column") {
		t.Fatalf("HSET of a column the table does not have: %v", err)
	}
	if err := rw.HSet(ctx, "user:999", "name", "x").Err(); err == nil || !strings.Contains(err.Error(), "no row") {
		t.Fatalf("HSET of a row that is not there: %v", err)
	}
	eventually(t, "the other instance sees the HSET", func() bool { return r.HGet(ctx, "user:7", "name").Val() == "hedy" })
}

// A read-only MULTI, or one WATCHing a collection, over collections on a
// PostgreSQL route, with an L1 and without: the strings' snapshot read
// cannot serve them (it reads a collection's type alone, and the run then
// "wrote" it), so the route's own atomic run does.
func TestReadOnlyExecOfCollections(t *testing.T) {
	usersTable(t)
	for name, conf := range map[string]string{
		"l1":    l1Config(pg.DSN()),
		"no-l1": strings.Replace(l1Config(pg.DSN()), ", l1: {max_bytes: 16MiB}}", "}", 1),
	} {
		t.Run(name, func(t *testing.T) {
			s := startPgcache(t, conf)
			ctx := context.Background()
			c := redisClient(t, s)
			c.Del(ctx, "pg:rol", "pg:roh", "pg:roset", "pg:roz", "pg:ros")
			c.RPush(ctx, "pg:rol", "a", "b")
			c.HSet(ctx, "pg:roh", "f", "1", "g", "2")
			c.SAdd(ctx, "pg:roset", "x", "y")
			c.ZAdd(ctx, "pg:roz", redis.Z{Score: 2, Member: "two"}, redis.Z{Score: 1, Member: "one"})
			c.Set(ctx, "pg:ros", "v", 0)
			cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.LRange(ctx, "pg:rol", 0, -1)
				p.HGetAll(ctx, "pg:roh")
				p.SMembers(ctx, "pg:roset")
				p.ZRangeWithScores(ctx, "pg:roz", 0, -1)
				p.Get(ctx, "pg:ros")
				p.LLen(ctx, "pg:missing")
				return nil
			})
			if err != nil {
				t.Fatalf("MULTI LRANGE HGETALL SMEMBERS ZRANGE GET LLEN EXEC: %v", err)
			}
			if got := fmt.Sprint(cmds[0].(*redis.StringSliceCmd).Val()); got != "[a b]" {
				t.Errorf("LRANGE in EXEC = %s", got)
			}
			if got := cmds[1].(*redis.MapStringStringCmd).Val(); len(got) != 2 || got["f"] != "1" || got["g"] != "2" {
				t.Errorf("HGETALL in EXEC = %v", got)
			}
			members := cmds[2].(*redis.StringSliceCmd).Val()
			slices.Sort(members)
			if got := fmt.Sprint(members); got != "[x y]" {
				t.Errorf("SMEMBERS in EXEC = %s", got)
			}
			if got := fmt.Sprint(cmds[3].(*redis.ZSliceCmd).Val()); got != "[{1 one} {2 two}]" {
				t.Errorf("ZRANGE WITHSCORES in EXEC = %s", got)
			}
			if got := cmds[4].(*redis.StringCmd).Val(); got != "v" {
				t.Errorf("GET in EXEC = %q", got)
			}
			if got := cmds[5].(*redis.IntCmd).Val(); got != 0 {
				t.Errorf("LLEN of a missing key in EXEC = %d", got)
			}
			// A string command on a collection inside EXEC is that command's
			// WRONGTYPE, the others still answer.
			cmds, _ = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, "pg:roh")
				p.SCard(ctx, "pg:roset")
				return nil
			})
			if err := cmds[0].Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
				t.Errorf("GET of a hash in EXEC: %v, want WRONGTYPE", err)
			}
			if got := cmds[1].(*redis.IntCmd).Val(); got != 2 {
				t.Errorf("SCARD after a WRONGTYPE in EXEC = %d", got)
			}
			// The fence of the RPUSH may come after WATCH and abort an EXEC
			// (a null reply): that is WATCH's rule; an error is not.
			eventually(t, "WATCH of a list, then a read-only EXEC", func() bool {
				err = c.Watch(ctx, func(tx *redis.Tx) error {
					_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Get(ctx, "pg:ros")
						p.HGet(ctx, "pg:roh", "f")
						return nil
					})
					return err
				}, "pg:rol", "pg:roh")
				if err != nil && err != redis.TxFailedErr {
					t.Fatalf("WATCH of a list, then a read-only EXEC: %v", err)
				}
				return err == nil
			})
		})
	}
}
