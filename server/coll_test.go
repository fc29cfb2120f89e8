package server

import (
	"context"
	"fmt"
	"slices"
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
func usersTable(t *testing.T) {
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
		eventually(t, "ready", func() bool {
			status, _ := httpDo(t, "GET", "http://"+s.Addr("admin")+"/readyz", nil)
			return status == 200
		})
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

// A read-only MULTI, or one WATCHing a collection, over collections on a
// PostgreSQL route: the strings' snapshot read cannot serve them (it reads
// a collection's type alone, and the run then "wrote" it), so the route's
// own atomic run does.
func TestReadOnlyExecOfCollections(t *testing.T) {
	usersTable(t)
	s := startPgcache(t, l1Config(pg.DSN()))
	ctx := context.Background()
	c := redisClient(t, s)
	c.RPush(ctx, "pg:rol", "a", "b")
	c.Set(ctx, "pg:ros", "v", 0)
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LRange(ctx, "pg:rol", 0, -1)
		p.Get(ctx, "pg:ros")
		return nil
	})
	if err != nil || fmt.Sprint(cmds[0].(*redis.StringSliceCmd).Val()) != "[a b]" {
		t.Fatalf("MULTI LRANGE GET EXEC: %v %v", cmds, err)
	}
	// The fence of the RPUSH may come after WATCH and abort an EXEC (a
	// null reply): that is WATCH's rule; an error is not.
	eventually(t, "WATCH of a list, then a read-only EXEC", func() bool {
		err = c.Watch(ctx, func(tx *redis.Tx) error {
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Get(ctx, "pg:ros")
				return nil
			})
			return err
		}, "pg:rol")
		if err != nil && err != redis.TxFailedErr {
			t.Fatalf("WATCH of a list, then a read-only EXEC: %v", err)
		}
		return err == nil
	})
}
