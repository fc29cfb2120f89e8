package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/coherence/fence"
)

// What a coherent L1 tier (package coherence) needs of a PostgreSQL route:
// the table and keys as its fence triggers publish them (backends.Fenced),
// values with their remaining lifetime (backends.ExpiryReader), and a way to
// create or check the table before the triggers are installed (Prepare).

// defaultSchema is where a kv table named without a schema lives. It is
// fixed rather than taken from search_path so that the table a route
// creates and the table its fences name are one and the same.
const defaultSchema = "public"

// errFenceKey: the key's type has no rendering known to match the
// triggers'; an L1 tier reads such keys from the table, uncached.
var errFenceKey = errors.New("primary key type without a fence rendering")

// FenceTable names the table as its triggers do: schema.table.
func (s *KV) FenceTable() string { return s.table.schema + "." + s.table.name }

// FenceKey is the key as the triggers publish it: to_jsonb(key) is a JSON
// string for text and uuid keys and a number for bigint ones, whose text is
// the key itself (keys are accepted only in PostgreSQL's own spelling).
func (s *KV) FenceKey(key string) (string, error) {
	if _, err := s.key.param(key); err != nil {
		return "", err
	}
	return key, nil
}

// ItemsTable names the table of the members of the route's collections,
// whose fence triggers publish in FenceTable's name.
func (s *KV) ItemsTable() string {
	t := itemsTable(s.table)
	return t.schema + "." + t.name
}

// Prepare creates or checks the route's table now.
func (s *KV) Prepare(ctx context.Context) error { return s.setup.ensure(ctx) }

// getTTLSQL is getSQL with the row's remaining lifetime in milliseconds by
// the database's clock, -1 for none.
const getTTLSQL = `SELECT value,
	CASE WHEN expires_at = 'infinity' THEN -1
	     ELSE greatest(floor(extract(epoch FROM expires_at - now()) * 1000), 0)::bigint END,
	kind
	FROM %s WHERE key = $1::%s AND expires_at > now()`

// expiring is a row read with its lifetime: a string's value, or the type
// of a collection (whose members it does not read).
func expiring(val []byte, ms int64, kind byte) backends.Expiring {
	if kind != kindString {
		return backends.Expiring{TTL: ttlOf(ms), Type: typeOf(kind)}
	}
	return backends.Expiring{Val: value(val), TTL: ttlOf(ms)}
}

// ttlOf turns the milliseconds of getTTLSQL's second column into a TTL.
func ttlOf(ms int64) time.Duration {
	if ms < 0 {
		return backends.TTLPersistent
	}
	return time.Duration(ms) * time.Millisecond
}

// mgetTTLSQL is mgetSQL with each row's remaining lifetime, as getTTLSQL.
const mgetTTLSQL = `SELECT key::text, value,
	CASE WHEN expires_at = 'infinity' THEN -1
	     ELSE greatest(floor(extract(epoch FROM expires_at - now()) * 1000), 0)::bigint END,
	kind
	FROM %s WHERE key = ANY($1::%s[]) AND expires_at > now()`

// MGetWithTTL appends each key's value and remaining lifetime to dst, a
// nil value for a key that is absent or holds a collection (Type says
// which): one query for all.
func (s *KV) MGetWithTTL(ctx context.Context, keys []string, dst []backends.Expiring) ([]backends.Expiring, error) {
	if len(keys) == 0 {
		return dst, nil
	}
	ks, err := s.key.params(keys)
	if err != nil {
		return dst, err
	}
	sql := fmt.Sprintf(mgetTTLSQL, s.table.ident(), s.key.sqlType)
	found := make(map[string]backends.Expiring, len(keys))
	err = s.do(ctx, "mget", func(ctx context.Context) error {
		clear(found)
		rows, err := s.pool.Query(ctx, sql, ks)
		if err != nil {
			return err
		}
		var k string
		var v []byte
		var ms int64
		var kind byte
		_, err = pgx.ForEachRow(rows, []any{&k, &v, &ms, &kind}, func() error {
			found[k] = expiring(v, ms, kind)
			return nil
		})
		return err
	})
	if err != nil {
		return dst, err
	}
	for _, k := range keys {
		dst = append(dst, found[k]) // a nil Val when absent
	}
	return dst, nil
}

// GetWithTTL returns a live key's value and remaining lifetime.
func (s *KV) GetWithTTL(ctx context.Context, key string) (val []byte, ttl time.Duration, ok bool, err error) {
	if _, err := s.key.param(key); err != nil {
		return nil, 0, false, err // as Get: never one bad key in a shared query
	}
	e, err := s.getTTLs.get(ctx, key)
	if e.Type != backends.TypeNone {
		return nil, 0, false, backends.ErrWrongType
	}
	return e.Val, e.TTL, e.Val != nil, err
}

// getTTLOne is GetWithTTL with a statement of its own.
func (s *KV) getTTLOne(ctx context.Context, key string) (e backends.Expiring, err error) {
	k, err := s.key.param(key)
	if err != nil {
		return e, err
	}
	sql := fmt.Sprintf(getTTLSQL, s.table.ident(), s.key.sqlType)
	err = s.do(ctx, "get", func(ctx context.Context) error {
		var ms int64
		var val []byte
		var kind byte
		e = backends.Expiring{}
		err := s.pool.QueryRow(ctx, sql, k).Scan(&val, &ms, &kind)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		e = expiring(val, ms, kind)
		return nil
	})
	return e, err
}

// getTTLMany is the coalescer's shared query for GetWithTTL.
func (s *KV) getTTLMany(ctx context.Context, keys []string) ([]backends.Expiring, error) {
	return s.MGetWithTTL(ctx, keys, make([]backends.Expiring, 0, len(keys)))
}

// FenceTable names the table as its triggers do: schema.table.
func (s *Table) FenceTable() string { return s.schema + "." + s.name }

// FenceKey renders a row key as the triggers publish it (fence.Key): one
// key column as its JSON value's text (42, abc), several as a compact JSON
// array ([1,"abc"]), as fence.KeyOf reads a notification. Integer, text
// and uuid columns only: the JSON of other types (timestamps, numerics)
// differs from their text, so such keys are not cached.
func (s *Table) FenceKey(key string) (string, error) {
	sh := s.shape.Load()
	if sh == nil {
		return "", fmt.Errorf("%w: table %s not read from the catalog yet", errFenceKey, s.FenceTable())
	}
	vals, err := parseRowKey(key, sh.pk)
	if err != nil {
		return "", err
	}
	var buf [4]fence.Value // a key of up to four columns stays on the stack
	parts := buf[:0]
	for i, v := range vals {
		c := sh.pk[i]
		if !fenceable(c) {
			return "", fmt.Errorf("%w: column %s is %s", errFenceKey, c.name, c.typ)
		}
		text, err := fenceText(v, c)
		if err != nil {
			return "", err
		}
		parts = append(parts, fence.Value{Text: text, Number: isInteger(c)})
	}
	return fence.Key(parts...)
}

// fenceText is a key value as the triggers publish it (to_jsonb), read
// back as text. The key may spell the row otherwise than PostgreSQL prints
// it, and the fence must name the row: an integer is rendered in
// PostgreSQL's spelling ("+7" and "007" name row 7, published as 7); a
// uuid is lowercased, and one written in another of the forms PostgreSQL
// reads (braces, hyphens elsewhere) is not cached.
func fenceText(v string, c column) (string, error) {
	switch {
	case isInteger(c):
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%w: %q for column %s", errFenceKey, v, c.name)
		}
		return strconv.FormatInt(n, 10), nil
	case c.baseType == "uuid":
		u := strings.ToLower(v)
		if checkUUID(u) != nil {
			return "", fmt.Errorf("%w: uuid %q is not in canonical form", errFenceKey, v)
		}
		return u, nil
	}
	return v, nil
}

func isInteger(c column) bool {
	return c.baseType == "smallint" || c.baseType == "integer" || c.baseType == "bigint"
}

func fenceable(c column) bool {
	return isInteger(c) || c.baseType == "text" || c.baseType == "character varying" || c.baseType == "uuid"
}

// CanonicalKey returns the one spelling of a row's key that the route
// stores and caches the row under: its fence key (42 for 42, [42] and "42";
// [1,"b"] for [1, "b"]) when that names the same row, else key as it is. A
// key that is neither a JSON string nor an array is returned at once: bare
// text and numbers are the spelling the fence key takes already.
func (s *Table) CanonicalKey(key string) string {
	if key == "" || (key[0] != '[' && key[0] != '"') {
		return key
	}
	fk, err := s.FenceKey(key)
	if err != nil {
		return key
	}
	// A text key that reads as JSON itself ("[x]" for the text [x]) would
	// name another row: keep such a key as it came.
	if again, err := s.FenceKey(fk); err != nil || again != fk {
		return key
	}
	return fk
}

// Prepare reads the table from the catalog now.
func (s *Table) Prepare(ctx context.Context) error { return s.setup.ensure(ctx) }

var (
	_ backends.Fenced       = (*KV)(nil)
	_ backends.ExpiryReader = (*KV)(nil)
	_ backends.Fenced       = (*Table)(nil)
)
