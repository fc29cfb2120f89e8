package coherence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	_ "github.com/pgcache/pgcache/backends/standard" // the routes pgcache builds
	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/server"
)

// stackResult is what a stack measured, before it becomes a Result.
type stackResult struct {
	load     *loadResult
	hitRatio float64 // -1: the stack has no cache
	entries  int     // cached entries audited
	stale    int
}

// runPgcache runs o.Instances pgcache servers with a coherent L1 on the
// table; readers send RESP MGET of one CRUD: key; writers UPDATE by SQL
// and, with several instances, half of them write rows through pgcache.
func (r *run) runPgcache(ctx context.Context) (*stackResult, error) {
	var srvs []*server.Server
	defer func() {
		for _, s := range srvs {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s.Shutdown(sctx)
			cancel()
		}
	}()
	for i := range r.o.Instances {
		s, err := r.startPgcache(ctx, i)
		if err != nil {
			return nil, err
		}
		srvs = append(srvs, s)
	}
	var tiers []*coherence.Tier
	var clients []*redis.Client
	for _, s := range srvs {
		t, err := tierOf(s)
		if err != nil {
			return nil, err
		}
		tiers = append(tiers, t)
		c := redis.NewClient(&redis.Options{Addr: s.Addr("resp"), PoolSize: r.o.Readers/len(srvs) + r.o.Writers + 2, DisableIdentity: true})
		defer c.Close()
		clients = append(clients, c)
	}
	if err := waitOnline(ctx, tiers, r.o.SettleTimeout); err != nil {
		return nil, err
	}
	crud := "CRUD:" + r.env.database + ".public." + rowsTable + ":"
	read := func(ctx context.Context, id int64) (bool, error) {
		c := clients[int(id)%len(clients)]
		vals, err := c.MGet(ctx, crud+strconv.FormatInt(id, 10)).Result()
		if err == nil && (len(vals) != 1 || vals[0] == nil) {
			err = fmt.Errorf("row %d: MGET answered %v", id, vals)
		}
		return false, err
	}
	update := fmt.Sprintf(updateSQL, rowsTable)
	var writes atomicCounter
	write := func(ctx context.Context, id int64) error {
		n := writes.next()
		if len(clients) > 1 && n%2 == 0 {
			row := fmt.Sprintf(`{"id":%d,"v":%d,"payload":"w%d"}`, id, n, n)
			return clients[int(n/2)%len(clients)].Set(ctx, crud+strconv.FormatInt(id, 10), row, 0).Err()
		}
		_, err := r.env.db.Exec(ctx, update, id)
		return err
	}
	if err := r.warm(ctx, read); err != nil {
		return nil, err
	}
	before := tierTotals(tiers)
	res := &stackResult{load: runLoad(ctx, r.o, read, write, r.o.Progress, StackPgcache)}
	after := tierTotals(tiers)
	res.hitRatio = ratio(after.hits-before.hits, after.reads()-before.reads())

	// Settle: once a canary sent after the last write has come back to
	// every instance, every fence of the run has been received.
	mark := time.Now()
	if err := waitFor(ctx, r.o.SettleTimeout, "fences to settle", func() bool {
		for _, t := range tiers {
			if !t.Proven().After(mark) {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, err
	}
	for _, t := range tiers {
		raw := t.Unwrap()
		entries, stale, err := t.Stale(func(k string) ([]byte, bool, error) { return raw.Get(ctx, k) })
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		res.entries += entries
		res.stale += stale
	}
	return res, nil
}

// startPgcache starts instance i in-process on free loopback ports.
func (r *run) startPgcache(ctx context.Context, i int) (*server.Server, error) {
	dir, err := os.MkdirTemp("", "pgcache-bench-coherence-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "pgcache.yaml")
	yaml := fmt.Sprintf(`
listen: {resp: "127.0.0.1:0", http: "127.0.0.1:0", admin: "127.0.0.1:0"}
backends:
  pg: {type: postgres, dsn: %q, max_conns: %d}
routes:
  - name: rows
    backend: pg
    source_table: public.%s
    attach: auto
    l1: {max_bytes: 512MiB}
`, r.env.dsn, r.o.Readers/r.o.Instances+r.o.Writers+4, rowsTable)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	cfg, err := conf.Load(conf.Source{File: file, Environ: func() []string { return nil }})
	if err != nil {
		return nil, fmt.Errorf("pgcache config: %w", err)
	}
	s, err := server.New(ctx, cfg, zap.NewNop())
	if err != nil {
		return nil, fmt.Errorf("pgcache instance %d: %w", i, err)
	}
	if err := s.Start(); err != nil {
		s.Shutdown(context.Background())
		return nil, fmt.Errorf("pgcache instance %d: %w", i, err)
	}
	return s, nil
}

// tierOf finds the L1 tier of a server's "rows" route.
func tierOf(s *server.Server) (*coherence.Tier, error) {
	r := s.Router().Current().ByName("rows")
	if r == nil {
		return nil, errors.New("pgcache has no rows route")
	}
	b := r.Backend
	for {
		if t, ok := b.(*coherence.Tier); ok {
			return t, nil
		}
		u, ok := b.(interface{ Unwrap() backends.Backend })
		if !ok {
			return nil, errors.New("the rows route has no L1 tier")
		}
		b = u.Unwrap()
	}
}

func waitOnline(ctx context.Context, tiers []*coherence.Tier, limit time.Duration) error {
	return waitFor(ctx, limit, "L1 online on every instance", func() bool {
		for _, t := range tiers {
			if t.Proven().IsZero() {
				return false
			}
		}
		return true
	})
}

type totals struct{ hits, misses, bypassed int64 }

func (t totals) reads() int64 { return t.hits + t.misses + t.bypassed }

func tierTotals(tiers []*coherence.Tier) (t totals) {
	for _, tr := range tiers {
		t.hits += tr.Stats.Hits.Load()
		t.misses += tr.Stats.Misses.Load()
		t.bypassed += tr.Stats.Bypassed.Load()
	}
	return t
}

// runCacheAside is the Valkey cache-aside of seeds/001: readers GET, and
// on a miss SELECT the row and SET it; writers UPDATE, then DEL the key.
func (r *run) runCacheAside(ctx context.Context) (*stackResult, error) {
	v := r.env.valkey
	if err := v.FlushDB(ctx).Err(); err != nil {
		return nil, fmt.Errorf("valkey: %w", err)
	}
	read := func(ctx context.Context, id int64) (bool, error) {
		key := cacheKey(id)
		if _, err := v.Get(ctx, key).Result(); err == nil {
			return true, nil
		} else if err != redis.Nil {
			return false, err
		}
		var row string
		if err := r.env.db.QueryRow(ctx, rowJSON, id).Scan(&row); err != nil {
			return false, err
		}
		if r.o.FillDelay > 0 {
			time.Sleep(r.o.FillDelay) // the late-fill race, made likely
		}
		return false, v.Set(ctx, key, row, 0).Err()
	}
	update := fmt.Sprintf(updateSQL, rowsTable)
	write := func(ctx context.Context, id int64) error {
		if _, err := r.env.db.Exec(ctx, update, id); err != nil {
			return err
		}
		return v.Del(ctx, cacheKey(id)).Err()
	}
	if err := r.warm(ctx, read); err != nil {
		return nil, err
	}
	res := &stackResult{load: runLoad(ctx, r.o, read, write, r.o.Progress, StackCacheAside)}
	res.hitRatio = ratio(res.load.hits, res.load.reads)
	// A cache-aside entry has nothing left to wait for: what is stale now
	// stays stale until the row is written again.
	var cursor uint64
	for n := 0; n < maxOps; n++ {
		keys, next, err := v.Scan(ctx, cursor, "row:*", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		for _, k := range keys {
			id, _ := strconv.ParseInt(k[len("row:"):], 10, 64)
			cached, err := v.Get(ctx, k).Result()
			if err == redis.Nil {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("audit: %w", err)
			}
			var row string
			if err := r.env.db.QueryRow(ctx, rowJSON, id).Scan(&row); err != nil {
				return nil, fmt.Errorf("audit: %w", err)
			}
			res.entries++
			if row != cached {
				res.stale++
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	return res, nil
}

func cacheKey(id int64) string { return "row:" + strconv.FormatInt(id, 10) }

// runSQL reads every row from PostgreSQL with a prepared statement.
func (r *run) runSQL(ctx context.Context) (*stackResult, error) {
	read := func(ctx context.Context, id int64) (bool, error) {
		var row string
		return false, r.env.db.QueryRow(ctx, rowJSON, id).Scan(&row)
	}
	update := fmt.Sprintf(updateSQL, rowsTable)
	write := func(ctx context.Context, id int64) error {
		_, err := r.env.db.Exec(ctx, update, id)
		return err
	}
	if err := r.warm(ctx, read); err != nil {
		return nil, err
	}
	return &stackResult{load: runLoad(ctx, r.o, read, write, r.o.Progress, StackSQL), hitRatio: -1}, nil
}

// warm runs the warmup unless the options skip it.
func (r *run) warm(ctx context.Context, read readFunc) error {
	if r.o.NoWarmup {
		return nil
	}
	return warm(ctx, r.o, read)
}

func waitFor(ctx context.Context, limit time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %v for %s", limit, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
