package coherence

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// stackResult is what a stack measured, before it becomes a Result.
type stackResult struct {
	load     *loadResult
	hitRatio float64 // -1: the stack has no cache
	entries  int     // cached entries audited
	stale    int
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
	update := r.sqlWriter()
	write := func(ctx context.Context, id int64) error {
		if err := update(ctx, id); err != nil {
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
	if err := r.warm(ctx, read); err != nil {
		return nil, err
	}
	return &stackResult{load: runLoad(ctx, r.o, read, r.sqlWriter(), r.o.Progress, StackSQL), hitRatio: -1}, nil
}

// sqlWriter is the writers' UPDATE of one row by SQL, the same in every
// stack.
func (r *run) sqlWriter() writeFunc {
	update := fmt.Sprintf(updateSQL, rowsTable)
	return func(ctx context.Context, id int64) error {
		_, err := r.env.writers.Exec(ctx, update, id)
		return err
	}
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
