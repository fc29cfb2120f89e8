package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// expiredConfig is two PostgreSQL kv routes on one database, one with an
// L1 and one without.
func expiredConfig(dsn string) string {
	return fmt.Sprintf(`
backends:
  pg: {type: postgres, dsn: %q, max_conns: 8}
routes:
  - {name: cached, prefix: "pg:", backend: pg, table: srv_expired, durability: unlogged, l1: {max_bytes: 16MiB}}
  - {name: plain, prefix: "", backend: pg, table: srv_expired_plain, durability: unlogged}
`, dsn)
}

// events subscribes to pattern through c and returns its messages as
// "channel payload".
func events(t *testing.T, c *redis.Client, pattern string) <-chan string {
	t.Helper()
	ctx := context.Background()
	sub := c.PSubscribe(ctx, pattern)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil { // the subscription's reply
		t.Fatal(err)
	}
	out := make(chan string, 100)
	go func() {
		for m := range sub.Channel() {
			out <- m.Channel + " " + m.Payload
		}
	}()
	return out
}

// expect waits for each of want, in order, and fails at any other message
// or after 20 s.
func expect(t *testing.T, what string, got <-chan string, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case m := <-got:
			if m != w {
				t.Fatalf("%s: got %q, want %q", what, m, w)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: %q did not come within 20s", what, w)
		}
	}
}

// Redis's test of expired events, on PostgreSQL routes: with
// notify-keyspace-events Ex, a key set with PSETEX sends
// __keyevent@0__:expired with the key as the client spells it, once; on a
// route with an L1 and on one without.
func TestExpiredEventsOnPostgres(t *testing.T) {
	s := startPgcache(t, expiredConfig(pg.DSN()))
	ready(t, s)
	ctx := context.Background()
	rc := redisClient(t, s)
	if err := rc.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err(); err != nil {
		t.Fatal(err)
	}
	got := events(t, rc, "*")
	for _, key := range []string{"pg:foo", "foo"} {
		if err := rc.Do(ctx, "PSETEX", key, "100", "1").Err(); err != nil {
			t.Fatal(err)
		}
		expect(t, key, got, "__keyevent@0__:expired "+key)
	}
	// Not for a key whose lifetime a SET took away, nor twice: the marker
	// expires after them and comes next.
	for _, key := range []string{"pg:kept", "kept"} {
		rc.Do(ctx, "PSETEX", key, "100", "1")
		rc.Set(ctx, key, "2", 0)
	}
	rc.Do(ctx, "PSETEX", "pg:marker", "300", "1")
	expect(t, "a key expiring after them", got, "__keyevent@0__:expired pg:marker")
}

// Two instances on one PostgreSQL: a key set through one expires, and
// each instance's subscribers hear of it once, as its own
// notify-keyspace-events say; an instance whose flags leave expired events
// out sends none.
func TestExpiredEventsAcrossInstances(t *testing.T) {
	a, b, c := startPgcache(t, expiredConfig(pg.DSN())), startPgcache(t, expiredConfig(pg.DSN())), startPgcache(t, expiredConfig(pg.DSN()))
	ctx := context.Background()
	ra, rb, rc := redisClient(t, a), redisClient(t, b), redisClient(t, c)
	for _, s := range []*Server{a, b, c} {
		ready(t, s)
	}
	for _, set := range []struct {
		c     *redis.Client
		flags string
	}{{ra, "Ex"}, {rb, "Kx"}, {rc, "E$"}} {
		if err := set.c.ConfigSet(ctx, "notify-keyspace-events", set.flags).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ga, gb, gc := events(t, ra, "*"), events(t, rb, "*"), events(t, rc, "*")
	if err := ra.Do(ctx, "PSETEX", "pg:k", "200", "1").Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, "instance a", ga, "__keyevent@0__:expired pg:k")
	expect(t, "instance b", gb, "__keyspace@0__:pg:k expired")
	if err := rb.Do(ctx, "PSETEX", "pg:marker", "300", "1").Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, "instance a, a key expiring after", ga, "__keyevent@0__:expired pg:marker")
	expect(t, "instance b, a key expiring after", gb, "__keyspace@0__:pg:marker expired")
	rc.Set(ctx, "pg:end", "1", 0)
	expect(t, "instance c, whose flags leave x out", gc, "__keyevent@0__:set pg:end")
}
