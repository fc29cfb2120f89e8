package readwrite

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"
)

// stackResult is what a stack measured, before it becomes a Result.
type stackResult struct {
	load     *loadResult
	hitRatio float64 // -1: the stack has no cache
	entries  int     // cached entries audited
	stale    int

	// pgcache-csc: entries and stale above add these up.
	l1Entries, l1Stale int
	apps               []AppAudit
	pushLag            *PushLag
	clientLag          *ClientLag
	static             bool   // DoCache sent GET alone
	note               string // why, when not asked to
}

// runCacheAside is the Valkey cache-aside of "Cache-aside without the race": readers GET, and
// on a miss SELECT the row and SET it; writers UPDATE, then DEL the key.
func (r *run) runCacheAside(ctx context.Context) (*stackResult, error) {
	v := r.env.valkey
	if err := v.Do(ctx, v.B().Flushdb().Build()).Error(); err != nil {
		return nil, fmt.Errorf("valkey: %w", err)
	}
	read := func(ctx context.Context, _ int, id int64) (bool, error) {
		key := cacheKey(id)
		if err := v.Do(ctx, v.B().Get().Key(key).Build()).Error(); err == nil {
			return true, nil
		} else if !valkey.IsValkeyNil(err) {
			return false, err
		}
		var row string
		if err := r.env.db.QueryRow(ctx, rowJSON, id).Scan(&row); err != nil {
			return false, err
		}
		if r.o.FillDelay > 0 {
			time.Sleep(r.o.FillDelay) // the late-fill race, made likely
		}
		return false, v.Do(ctx, v.B().Set().Key(key).Value(row).Build()).Error()
	}
	update := r.sqlWriter()
	write := func(ctx context.Context, id int64) error {
		if err := update(ctx, id); err != nil {
			return err
		}
		return v.Do(ctx, v.B().Del().Key(cacheKey(id)).Build()).Error()
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
		scan, err := v.Do(ctx, v.B().Scan().Cursor(cursor).Match("row:*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		for _, k := range scan.Elements {
			id, _ := strconv.ParseInt(k[len("row:"):], 10, 64)
			cached, err := v.Do(ctx, v.B().Get().Key(k).Build()).ToString()
			if valkey.IsValkeyNil(err) {
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
				r.noteStale("Valkey", id, cached, row)
			}
		}
		if cursor = scan.Cursor; cursor == 0 {
			break
		}
	}
	return res, nil
}

func cacheKey(id int64) string { return "row:" + strconv.FormatInt(id, 10) }

// runSQL reads every row from PostgreSQL with a prepared statement.
func (r *run) runSQL(ctx context.Context) (*stackResult, error) {
	read := func(ctx context.Context, _ int, id int64) (bool, error) {
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
