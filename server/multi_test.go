package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/testenv"
)

// multiConfig: a kv table with an L1, a Valkey route and the memory
// catch-all, on one PostgreSQL and one Valkey that two instances share.
func multiConfig(dsn, valkeyAddr string) string {
	return fmt.Sprintf(`
backends:
  pg:  {type: postgres, dsn: %q, max_conns: 8}
  vk:  {type: valkey, addrs: [%q]}
  mem: {type: memory}
routes:
  - {name: postgres, prefix: "pg:", backend: pg, table: tx_kv, durability: unlogged, l1: {max_bytes: 16MiB}}
  - {name: vk, prefix: "vk:", backend: vk}
  - {name: memory, prefix: "", backend: mem}
`, dsn, valkeyAddr)
}

// TestTransactionsEveryRouteKind: MULTI/EXEC and EVAL on a kv table with
// an L1 and on a Valkey route, keys across routes refused before anything
// runs.
func TestTransactionsEveryRouteKind(t *testing.T) {
	vk := testenv.RedisFor(t)
	a := startPgcache(t, multiConfig(pg.DSN(), vk.Addr()))
	rc := redisClient(t, a)
	ctx := context.Background()
	for _, p := range []string{"pg:", "vk:", "mem:"} {
		cmds, err := rc.TxPipelined(ctx, func(tx redis.Pipeliner) error {
			tx.Set(ctx, p+"t1", "10", 0)
			tx.IncrBy(ctx, p+"t1", 5)
			tx.Append(ctx, p+"t2", "ab")
			tx.Get(ctx, p+"t1")
			return nil
		})
		if err != nil || cmds[3].(*redis.StringCmd).Val() != "15" {
			t.Fatalf("%s MULTI/EXEC: %v, %v", p, cmds, err)
		}
		v, err := rc.Eval(ctx, "redis.call('incr', KEYS[1]); return redis.call('get', KEYS[1])", []string{p + "t1"}).Result()
		if err != nil || v != "16" {
			t.Fatalf("%s EVAL = %v, %v", p, v, err)
		}
		if v := rc.Get(ctx, p+"t1").Val(); v != "16" {
			t.Fatalf("%s GET after EVAL = %q (through the L1 too)", p, v)
		}
	}
	_, err := rc.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.Set(ctx, "pg:x", "1", 0)
		tx.Set(ctx, "vk:x", "1", 0)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("MULTI over two routes: %v, want CROSSSLOT", err)
	}
	if n := rc.Exists(ctx, "pg:x", "vk:x").Val(); n != 0 {
		t.Fatalf("a refused transaction wrote %d keys", n)
	}
}

// TestWatchSeesOutsideWrites: on a kv table with an L1, WATCH is aborted by
// a plain SQL UPDATE and by a write through another pgcache instance, once
// their fences have arrived; on a Valkey route by another instance's write.
func TestWatchSeesOutsideWrites(t *testing.T) {
	vk := testenv.RedisFor(t)
	p := pg.Pool(t)
	a := startPgcache(t, multiConfig(pg.DSN(), vk.Addr()))
	b := startPgcache(t, multiConfig(pg.DSN(), vk.Addr()))
	ra, rb := redisClient(t, a), redisClient(t, b)
	ctx := context.Background()
	for _, s := range []*Server{a, b} {
		ready(t, s)
	}
	// watchThen runs WATCH key, write (the outside write, waited for), and
	// a MULTI/EXEC that sets key: it reports whether EXEC was aborted.
	watchThen := func(key string, write func()) bool {
		err := ra.Watch(ctx, func(tx *redis.Tx) error {
			write()
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key, "mine", 0)
				return nil
			})
			return err
		}, key)
		if err != nil && !errors.Is(err, redis.TxFailedErr) {
			t.Fatal(err)
		}
		return errors.Is(err, redis.TxFailedErr)
	}
	seen := func(key, want string) func() bool {
		return func() bool { return ra.Get(ctx, key).Val() == want }
	}

	ra.Set(ctx, "pg:w", "v0", 0)
	ra.Get(ctx, "pg:w") // in a's L1: a's next read of the new value proves the fence came
	if !watchThen("pg:w", func() {
		testenv.Exec(t, p, `UPDATE tx_kv SET value = 'sql' WHERE key = 'w'`)
		eventually(t, "a sees the SQL write", seen("pg:w", "sql"))
	}) {
		t.Fatal("EXEC ran after a plain SQL UPDATE of a watched key")
	}
	if !watchThen("pg:w", func() {
		rb.Set(ctx, "pg:w", "from-b", 0)
		eventually(t, "a sees b's write", seen("pg:w", "from-b"))
	}) {
		t.Fatal("EXEC ran after another instance wrote a watched key")
	}
	if watchThen("pg:w", func() {}) {
		t.Fatal("EXEC aborted with no write to the watched key")
	}
	if v := ra.Get(ctx, "pg:w").Val(); v != "mine" {
		t.Fatalf("after EXEC pg:w = %q", v)
	}

	// Valkey: another Valkey client writes the route's key directly.
	ra.Set(ctx, "vk:w", "v0", 0)
	if !watchThen("vk:w", func() {
		if _, err := vk.Do(ctx, "SET", "vk:w", "direct"); err != nil {
			t.Fatal(err)
		}
	}) {
		t.Fatal("EXEC ran after another Valkey client wrote a watched key")
	}
	if !watchThen("vk:w", func() { rb.Set(ctx, "vk:w", "from-b", 0) }) {
		t.Fatal("EXEC ran after another instance wrote a watched Valkey key")
	}
	if watchThen("vk:w", func() {}) || ra.Get(ctx, "vk:w").Val() != "mine" {
		t.Fatal("EXEC on a Valkey route aborted with no write to the watched key")
	}
}

// TestExecIsolationOnPostgres moves units between two rows of a kv table
// with an L1 in MULTI/EXEC while readers MGET both: no reader sees the sum
// change.
func TestExecIsolationOnPostgres(t *testing.T) {
	vk := testenv.RedisFor(t)
	a := startPgcache(t, multiConfig(pg.DSN(), vk.Addr()))
	rc := redisClient(t, a)
	ctx := context.Background()
	for _, p := range []string{"pg:", "vk:"} {
		ka, kb := p+"iso:a", p+"iso:b"
		rc.MSet(ctx, ka, "100", kb, "0")
		var stop atomic.Bool
		var bad, reads atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				vals, err := rc.MGet(ctx, ka, kb).Result()
				if err != nil {
					t.Error(err)
					return
				}
				x, _ := strconv.Atoi(vals[0].(string))
				y, _ := strconv.Atoi(vals[1].(string))
				if x+y != 100 {
					bad.Add(1)
				}
				reads.Add(1)
			}
		})
		// A read-only EXEC (a kv table: one statement, or L1 hits checked
		// against the fences; no locks) sees one moment too.
		wg.Go(func() {
			for !stop.Load() {
				var ga, gb *redis.StringCmd
				if _, err := rc.TxPipelined(ctx, func(tx redis.Pipeliner) error {
					ga, gb = tx.Get(ctx, ka), tx.Get(ctx, kb)
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
				x, _ := strconv.Atoi(ga.Val())
				y, _ := strconv.Atoi(gb.Val())
				if x+y != 100 {
					bad.Add(1)
				}
				reads.Add(1)
			}
		})
		var movers sync.WaitGroup
		for w := range 3 {
			movers.Go(func() {
				for i := range 40 {
					from, to := ka, kb
					if (w+i)%2 == 1 {
						from, to = kb, ka
					}
					if _, err := rc.TxPipelined(ctx, func(tx redis.Pipeliner) error {
						tx.DecrBy(ctx, from, 1)
						tx.IncrBy(ctx, to, 1)
						return nil
					}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		movers.Wait()
		stop.Store(true)
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("%s: %d of %d MGETs and read-only EXECs saw half a transaction", p, bad.Load(), reads.Load())
		}
	}
}
