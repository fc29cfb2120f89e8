package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
)

// Table is a route over the rows of an existing table, by primary key. A
// value is the row as a JSON object (row_to_json); a write upserts a JSON
// object of the columns. Rows have no expiry: TTL answers -1 for a row
// that exists, and what only makes sense for bytes or deadlines (INCRBY,
// EXPIRE, SET with a TTL or GET) is backends.ErrUnsupported.
type Table struct {
	base
	schema, name string // as the route names them, for CRUDPrefix
	writable     bool   // HSET may change a row's columns (table_coll.go)
	shape        atomic.Pointer[tableShape]
	gets         coalescer[string, []byte] // single-key reads share queries (coalesce.go)
}

// tableShape is what a table route knows of its table from the catalog,
// and the statements built from it. It is replaced as a whole when the
// table is set up again (dropped and recreated under the route).
type tableShape struct {
	rel                    relation
	pk                     []column // the primary key columns, in key order
	get, getDel            string   // $1..$n: the key columns as text
	mget, exists, del      string   // $1..$n: arrays of the key columns as text
	lockMany               string   // as mget, the rows locked FOR UPDATE in key order
	upsert, insert, update string   // $1: the row as JSON, key columns set from the key
}

// openTable builds a table route's store; the catalog is read by the
// caller (Open) or on first use.
// tableSpec reads a table route's options, refusing every one it cannot
// honour.
func tableSpec(spec backends.RouteSpec) (tableName, error) {
	var errs []error
	t, err := parseTableName(spec.SourceTable)
	if err != nil || t.schema == "" {
		errs = append(errs, &backends.SpecError{Field: "source_table", Value: spec.SourceTable, Reason: "must be schema.table"})
	}
	if spec.KeyType != "" {
		errs = append(errs, &backends.SpecError{Field: "key_type", Value: spec.KeyType,
			Reason: "a table route's key is the table's primary key"})
	}
	switch spec.Durability {
	case "", DurabilityStandard, DurabilityAsync:
	default:
		errs = append(errs, &backends.SpecError{Field: "durability", Value: spec.Durability,
			Reason: "a table route writes an existing table: standard or async (durability unlogged is a kv table's)"})
	}
	return t, errors.Join(errs...)
}

func (d *Driver) openTable(spec backends.RouteSpec) (*Table, error) {
	t, err := tableSpec(spec)
	if err != nil {
		return nil, err
	}
	pool, err := d.poolFor(spec.Durability)
	if err != nil {
		return nil, err
	}
	s := &Table{schema: t.schema, name: t.name, writable: spec.Writable}
	s.init(d, pool, spec.Name, t, s.load)
	s.gets = coalescer[string, []byte]{slots: int(pool.Config().MaxConns), one: s.getOne, many: s.getMany, own: strings.Clone}
	return s, nil
}

// load reads the table from the catalog and builds its statements.
func (s *Table) load(ctx context.Context) error {
	rel, ok, err := describe(ctx, s.pool, s.table)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: %s", ErrNoTable, s.table)
	case rel.kind != 'r' && rel.kind != 'p':
		return fmt.Errorf("%w: %s is not a table (relkind %q)", ErrTableMismatch, rel.qualified(), rel.kind)
	case len(rel.pk) == 0:
		return fmt.Errorf("%w: %s has no primary key, and a table route reads and writes rows by primary key", ErrTableMismatch, rel.qualified())
	}
	s.shape.Store(buildTableShape(rel))
	return nil
}

// CRUDPrefix is the RESP prefix of this route's keys: CRUDPrefix of the
// driver's database and the route's source_table.
func (s *Table) CRUDPrefix() string { return CRUDPrefix(s.d.Database(), s.schema, s.name) }

// prepare sets the route up if needed and reads key into its parameters.
func (s *Table) prepare(ctx context.Context, key string) (*tableShape, []any, error) {
	sh, err := s.current(ctx)
	if err != nil {
		return nil, nil, err
	}
	vals, err := parseRowKey(key, sh.pkColumns())
	if err != nil {
		return nil, nil, err
	}
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return sh, args, nil
}

// prepareMany reads keys into one text array per key column.
func (s *Table) prepareMany(ctx context.Context, keys []string) (*tableShape, []any, error) {
	sh, err := s.current(ctx)
	if err != nil {
		return nil, nil, err
	}
	pk := sh.pkColumns()
	cols := make([][]string, len(pk))
	for i := range cols {
		cols[i] = make([]string, len(keys))
	}
	for j, k := range keys {
		vals, err := parseRowKey(k, pk)
		if err != nil {
			return nil, nil, err
		}
		for i, v := range vals {
			cols[i][j] = v
		}
	}
	args := make([]any, len(cols))
	for i, c := range cols {
		args[i] = c
	}
	return sh, args, nil
}

func (s *Table) current(ctx context.Context) (*tableShape, error) {
	if err := s.setup.ensure(ctx); err != nil {
		return nil, err
	}
	return s.shape.Load(), nil
}

// keyErr turns PostgreSQL's refusal of a key value (a failed cast: class
// 22, data exception) into backends.ErrBadKey, for statements whose only
// input is the key.
func keyErr(err error) error {
	if strings.HasPrefix(sqlState(err), "22") {
		return fmt.Errorf("%w: %v", backends.ErrBadKey, err)
	}
	return err
}

// valueErr turns PostgreSQL's refusal of a row (a bad value: class 22; a
// constraint: class 23) into backends.ErrBadValue.
func valueErr(err error) error {
	switch code := sqlState(err); {
	case strings.HasPrefix(code, "22"), strings.HasPrefix(code, "23"):
		return fmt.Errorf("%w: %v", backends.ErrBadValue, err)
	}
	return err
}

// Get returns the row as JSON.
func (s *Table) Get(ctx context.Context, key string) (val []byte, ok bool, err error) {
	if _, _, err := s.prepare(ctx, key); err != nil {
		return nil, false, err // checked first: a shared query must not fail for one bad key
	}
	val, err = s.gets.get(ctx, key)
	return val, val != nil, err
}

// getOne reads one row with a statement of its own; nil when absent.
func (s *Table) getOne(ctx context.Context, key string) (val []byte, err error) {
	sh, args, err := s.prepare(ctx, key)
	if err != nil {
		return nil, err
	}
	err = s.do(ctx, "get", func(ctx context.Context) error {
		val = nil
		err := s.pool.QueryRow(ctx, sh.get, args...).Scan(&val)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return keyErr(err)
	})
	return val, err
}

// getMany is the coalescer's shared query.
func (s *Table) getMany(ctx context.Context, keys []string) ([][]byte, error) {
	return s.MGet(ctx, keys, make([][]byte, 0, len(keys)))
}

// MGet appends each row as JSON, or nil, to dst: one query for all keys.
// A single key is read as Get, sharing a query with concurrent reads.
func (s *Table) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	if out, done, err := fewKeys(ctx, keys, dst, s.Get); done {
		return out, err
	}
	sh, args, err := s.prepareMany(ctx, keys)
	if err != nil {
		return dst, err
	}
	base := len(dst)
	dst = append(dst, make([][]byte, len(keys))...)
	err = s.do(ctx, "mget", func(ctx context.Context) error {
		clear(dst[base:])
		rows, err := s.pool.Query(ctx, sh.mget, args...)
		if err != nil {
			return keyErr(err)
		}
		var i int64
		var v []byte
		_, err = pgx.ForEachRow(rows, []any{&i, &v}, func() error {
			dst[base+int(i)-1] = v
			return nil
		})
		return keyErr(err)
	})
	if err != nil {
		return dst[:base], err
	}
	return dst, nil
}

// MGetWithTTL is MGet with each row's lifetime, which is none
// (backends.ExpiryReader): one statement, so the rows of one moment, which
// a read-only transaction reads its keys with.
func (s *Table) MGetWithTTL(ctx context.Context, keys []string, dst []backends.Expiring) ([]backends.Expiring, error) {
	vals, err := s.MGet(ctx, keys, nil)
	if err != nil {
		return dst, err
	}
	for _, v := range vals {
		dst = append(dst, backends.Expiring{Val: v, TTL: backends.TTLPersistent})
	}
	return dst, nil
}

// GetWithTTL is Get with the row's lifetime: none.
func (s *Table) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	v, ok, err := s.Get(ctx, key)
	return v, backends.TTLPersistent, ok, err
}

// Set upserts the row val describes; the key sets its primary key. A
// column the object leaves out is written NULL: the value is the whole row,
// as a Redis value is the whole value. It does not say whether it made the
// row (SetResult.Created), nor does MSet.
func (s *Table) Set(ctx context.Context, key string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	switch {
	case opts.Get:
		return backends.SetResult{}, fmt.Errorf("%s: set get: %w", s.where, backends.ErrUnsupported)
	case opts.TTL.Mode == backends.TTLRelative || opts.TTL.Mode == backends.TTLAt:
		return backends.SetResult{}, fmt.Errorf("%s: set with an expiry: rows do not expire: %w", s.where, backends.ErrUnsupported)
	}
	sh, args, err := s.prepare(ctx, key)
	if err != nil {
		return backends.SetResult{}, err
	}
	row, err := rowValue(val, &sh.rel, keyStrings(args))
	if err != nil {
		return backends.SetResult{}, err
	}
	var res backends.SetResult
	err = s.do(ctx, "set", func(ctx context.Context) error {
		var err error
		switch opts.Cond {
		case backends.SetIfAbsent:
			err = storedRow(s.pool.QueryRow(ctx, sh.insert, row), &res.Stored)
		case backends.SetIfPresent:
			err = storedRow(s.pool.QueryRow(ctx, sh.update, row), &res.Stored)
		default:
			_, err = s.pool.Exec(ctx, sh.upsert, row)
			res.Stored = err == nil
		}
		return valueErr(err)
	})
	return res, err
}

func keyStrings(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a.(string)
	}
	return out
}

// MSet upserts every row in one pipelined batch: the statements run in one
// implicit transaction, so all are written or none.
func (s *Table) MSet(ctx context.Context, pairs []backends.KV) error {
	if len(pairs) == 0 {
		return nil
	}
	sh, err := s.current(ctx)
	if err != nil {
		return err
	}
	rows := make([][]byte, len(pairs))
	for i, p := range pairs {
		vals, err := parseRowKey(p.Key, sh.pkColumns())
		if err != nil {
			return err
		}
		if rows[i], err = rowValue(p.Val, &sh.rel, vals); err != nil {
			return err
		}
	}
	return s.do(ctx, "mset", func(ctx context.Context) error {
		var b pgx.Batch
		for _, r := range rows {
			b.Queue(sh.upsert, r)
		}
		return valueErr(s.pool.SendBatch(ctx, &b).Close())
	})
}

// Del deletes the rows and counts them.
func (s *Table) Del(ctx context.Context, keys []string) (int64, error) {
	return s.count(ctx, "del", keys, func(sh *tableShape) string { return sh.del })
}

// Exists counts the rows that exist; a key named twice counts twice.
func (s *Table) Exists(ctx context.Context, keys []string) (int64, error) {
	return s.count(ctx, "exists", keys, func(sh *tableShape) string { return sh.exists })
}

func (s *Table) count(ctx context.Context, op string, keys []string, sql func(*tableShape) string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	sh, args, err := s.prepareMany(ctx, keys)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.do(ctx, op, func(ctx context.Context) error {
		return keyErr(s.pool.QueryRow(ctx, sql(sh), args...).Scan(&n))
	})
	return n, err
}

// Update runs what a row can do: GETDEL, GETEX without an expiry, PERSIST
// (which finds none to remove). Rows do not expire, and a row is not a
// value to increment or append to.
func (s *Table) Update(ctx context.Context, key string, u backends.Update) error {
	return backends.RunUpdate(ctx, s, key, u, s.unsupported)
}

// unsupported is the generic update of a table route: none.
func (s *Table) unsupported(_ context.Context, _ string, u backends.Update) error {
	return fmt.Errorf("%s: %s: %w", s.where, u.Op(), backends.ErrUnsupported)
}

// GetDel returns the row as JSON and deletes it.
func (s *Table) GetDel(ctx context.Context, key string) (val []byte, ok bool, err error) {
	sh, args, err := s.prepare(ctx, key)
	if err != nil {
		return nil, false, err
	}
	err = s.do(ctx, "getdel", func(ctx context.Context) error {
		val, ok = nil, false
		err := s.pool.QueryRow(ctx, sh.getDel, args...).Scan(&val)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		ok = err == nil
		return keyErr(err)
	})
	return val, ok, err
}

// GetEx is Get: rows have no expiry to keep or remove, and setting one is
// unsupported.
func (s *Table) GetEx(ctx context.Context, key string, ttl backends.TTL) ([]byte, bool, error) {
	if ttl.Mode == backends.TTLRelative || ttl.Mode == backends.TTLAt {
		return nil, false, fmt.Errorf("%s: getex with an expiry: rows do not expire: %w", s.where, backends.ErrUnsupported)
	}
	return s.Get(ctx, key)
}

// Expire is unsupported, except PERSIST, which finds nothing to remove.
func (s *Table) Expire(ctx context.Context, key string, ttl backends.TTL, _ backends.ExpireCond) (bool, error) {
	if ttl.Mode != backends.TTLNone {
		return false, fmt.Errorf("%s: expire: rows do not expire: %w", s.where, backends.ErrUnsupported)
	}
	_, err := s.Exists(ctx, []string{key})
	return false, err
}

// TTL is TTLPersistent for a row that exists, TTLMissing otherwise.
func (s *Table) TTL(ctx context.Context, key string) (time.Duration, error) {
	n, err := s.Exists(ctx, []string{key})
	switch {
	case err != nil:
		return 0, err
	case n == 0:
		return backends.TTLMissing, nil
	}
	return backends.TTLPersistent, nil
}

// Close forgets the route; the pool is the driver's.
func (s *Table) Close() error {
	s.d.forget(s)
	return nil
}

func (sh *tableShape) pkColumns() []column { return sh.pk }

func (r *relation) qualified() string { return pgx.Identifier{r.schema, r.name}.Sanitize() }

func (r *relation) column(name string) int {
	for i, c := range r.columns {
		if c.name == name {
			return i
		}
	}
	return -1
}

var (
	_ backends.ExpiryReader = (*Table)(nil)
	_ backends.Backend      = (*Table)(nil)
	_ opened                = (*Table)(nil)
)
