package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/cursor"
	"github.com/pgcache/pgcache/internal/glob"
)

// The keyspace capabilities of a kv table (backends/keyspace.go). A table
// route (source_table) has none: its rows are the application's, never
// listed by SCAN nor removed by a flush.

// keyspace is a kv table's scans under way and its keyspace statements,
// made on first use.
type keyspace struct {
	once    sync.Once
	sql     keyspaceSQL
	cursors *cursor.Table[string] // scan cursor -> the last key returned
}

type keyspaceSQL struct {
	scanFirst, scanAfter, scanFrom  string
	flush, copy, expireTime, random string
}

func (s *KV) ks() *keyspace {
	s.keyspace.once.Do(func() {
		r := strings.NewReplacer("{t}", s.table.ident(), "{i}", itemsTable(s.table).ident(), "{k}", s.key.sqlType)
		s.keyspace.sql = keyspaceSQL{
			scanFirst:  r.Replace(scanFirstSQL),
			scanAfter:  r.Replace(scanAfterSQL),
			scanFrom:   r.Replace(scanFromSQL),
			flush:      r.Replace(flushSQL),
			copy:       r.Replace(copySQL),
			expireTime: r.Replace(expireTimeSQL),
			random:     r.Replace(randomKeySQL),
		}
		s.keyspace.cursors = cursor.New[string](1, backends.MaxCursor+1, 0, 0, nil)
	})
	return &s.keyspace
}

// A scan pages through the primary key's index: each page is the next
// live keys after the last one returned (keyset pagination), so a key
// present all along is returned exactly once, whatever is written
// meanwhile. The last key is the scan's position; SCAN's cursor must be a
// number, so it is kept in a cursor.Table under the number the client gets.
//
// $1 limit
const scanFirstSQL = `SELECT key::text FROM {t} WHERE expires_at > now() ORDER BY key LIMIT $1`

// $1 the last key returned, $2 limit
const scanAfterSQL = `SELECT key::text FROM {t} WHERE key > $1::{k} AND expires_at > now() ORDER BY key LIMIT $2`

// $1 the literal start of the pattern, $2 limit: text keys sort bytewise
// (COLLATE "C"), so the keys that start with it are one range from it.
const scanFromSQL = `SELECT key::text FROM {t} WHERE key >= $1::{k} AND expires_at > now() ORDER BY key LIMIT $2`

// maxScanPage bounds the rows of one page, whatever COUNT asks.
const maxScanPage = 10_000

// Scan returns the next live keys of the table, in key order.
func (s *KV) Scan(ctx context.Context, cur uint64, match string, count int) (uint64, []string, error) {
	ks := s.ks()
	var last string
	resume := false
	if cur != 0 {
		last, resume = ks.cursors.Take(cur)
	}
	// Text keys are the pattern's bytes: its literal start bounds the range.
	lit := ""
	if s.key.name == KeyText && match != "*" {
		lit, _ = glob.LiteralPrefix(match)
	}
	limit := min(max(count, 1), maxScanPage)
	var sql string
	var args []any
	switch {
	case resume && last >= lit:
		k, err := s.key.param(last)
		if err != nil {
			return 0, nil, err
		}
		sql, args = ks.sql.scanAfter, []any{k, limit}
	case lit != "":
		sql, args = ks.sql.scanFrom, []any{lit, limit}
	default:
		sql, args = ks.sql.scanFirst, []any{limit}
	}
	var page []string
	err := s.do(ctx, "scan", func(ctx context.Context) error {
		page = page[:0]
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var k string
		_, err = pgx.ForEachRow(rows, []any{&k}, func() error {
			page = append(page, k)
			return nil
		})
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	done := len(page) < limit
	keys := page[:0]
	for _, k := range page {
		if !strings.HasPrefix(k, lit) {
			done = true // past the pattern's range: no later key can match
			break
		}
		if backends.Match(match, k) {
			keys = append(keys, k)
		}
	}
	if done || len(page) == 0 {
		return 0, keys, nil
	}
	return ks.cursors.Put(page[len(page)-1]), keys, nil
}

// TRUNCATE: the fence trigger for TRUNCATE (see coherence) tells every L1
// the whole table changed. The items go with the keys.
const flushSQL = `TRUNCATE {t}, {i}`

// Flush empties the table.
func (s *KV) Flush(ctx context.Context) error {
	sql := s.ks().sql.flush
	return s.do(ctx, "flush", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, sql)
		return err
	})
}

// $1 src, $2 dst, $3 replace. src's live row is locked and its value,
// deadline and kind written to dst (an upsert that, without replace, takes
// over only an expired row: ON CONFLICT's WHERE sees the latest committed
// version of a dst written concurrently); the third column is src's kind.
// A collection's items follow (copyItemsSQL) in the same transaction, and
// a RENAME deletes src last, its items with it. Two RENAMEs crossing each
// other lock the two rows in opposite orders; PostgreSQL breaks the
// deadlock by rolling one back, and do runs it again.
const copySQL = `
WITH src AS (
    SELECT value, expires_at, kind FROM {t}
    WHERE key = $1::{k} AND expires_at > now()
    FOR UPDATE
), put AS (
    INSERT INTO {t} AS t (key, value, expires_at, kind)
    SELECT $2::{k}, value, expires_at, kind FROM src
    ON CONFLICT (key) DO UPDATE
    SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at, kind = EXCLUDED.kind
    WHERE $3::bool OR t.expires_at <= now()
    RETURNING true
)
SELECT EXISTS (SELECT FROM src), EXISTS (SELECT FROM put), coalesce((SELECT kind FROM src), 's')`

// Copy copies src's row, value, deadline and a collection's items, to dst,
// in one transaction.
func (s *KV) Copy(ctx context.Context, src, dst string, o backends.CopyOptions) (backends.CopyResult, error) {
	ks, err := s.key.param(src)
	if err != nil {
		return 0, err
	}
	kd, err := s.key.param(dst)
	if err != nil {
		return 0, err
	}
	sql := s.ks().sql.copy
	var found, put bool
	err = s.do(ctx, "copy", func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var kind byte
			if err := tx.QueryRow(ctx, sql, ks, kd, o.Replace).Scan(&found, &put, &kind); err != nil || !put {
				return err
			}
			b := &pgx.Batch{}
			if kind != kindString {
				b.Queue(s.coll.delAll, kd) // what dst held, if the same type (another's went with its kind)
				b.Queue(s.coll.copyIn, ks, kd)
			}
			if o.Move {
				b.Queue(s.coll.delRow, ks)
			}
			return tx.SendBatch(ctx, b).Close()
		})
	})
	switch {
	case err != nil:
		return 0, err
	case !found:
		return backends.CopyNoSource, nil
	case !put:
		return backends.CopyDstExists, nil
	}
	return backends.Copied, nil
}

// $1 key. The deadline in unix milliseconds; -1 for none.
const expireTimeSQL = `
SELECT CASE WHEN expires_at = 'infinity' THEN -1
            ELSE floor(extract(epoch FROM expires_at) * 1000)::int8 END
FROM {t}
WHERE key = $1::{k} AND expires_at > now()`

// ExpireTime returns key's deadline by the database's clock.
func (s *KV) ExpireTime(ctx context.Context, key string) (int64, error) {
	k, err := s.key.param(key)
	if err != nil {
		return 0, err
	}
	sql := s.ks().sql.expireTime
	ms := int64(backends.TTLMissing)
	err = s.do(ctx, "expiretime", func(ctx context.Context) error {
		err := s.pool.QueryRow(ctx, sql, k).Scan(&ms)
		if errors.Is(err, pgx.ErrNoRows) {
			ms = int64(backends.TTLMissing)
			return nil
		}
		return err
	})
	return ms, err
}

// A uniform pick reads the whole table: RANDOMKEY is rare, and a cheaper
// sample (TABLESAMPLE) comes back empty from small tables.
const randomKeySQL = `SELECT key::text FROM {t} WHERE expires_at > now() ORDER BY random() LIMIT 1`

// RandomKey returns a live key picked uniformly.
func (s *KV) RandomKey(ctx context.Context) (string, bool, error) {
	sql := s.ks().sql.random
	var key string
	var ok bool
	err := s.do(ctx, "randomkey", func(ctx context.Context) error {
		err := s.pool.QueryRow(ctx, sql).Scan(&key)
		if errors.Is(err, pgx.ErrNoRows) {
			ok = false
			return nil
		}
		ok = err == nil
		return err
	})
	return key, ok, err
}

var (
	_ backends.Scanner     = (*KV)(nil)
	_ backends.Flusher     = (*KV)(nil)
	_ backends.Copier      = (*KV)(nil)
	_ backends.ExpireTimer = (*KV)(nil)
	_ backends.RandomKeyer = (*KV)(nil)
	_ backends.Sequencer   = (*KV)(nil)
)
