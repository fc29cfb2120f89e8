package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// tableName is a table as a route names it: "name" (found on the
// search_path) or "schema.name". Both parts are used exactly as written
// (quoted identifiers: case matters), so a route creates and finds the
// table it names, whatever it is called.
type tableName struct {
	schema, name string
}

func parseTableName(s string) (tableName, error) {
	schema, name, qualified := strings.Cut(s, ".")
	if !qualified {
		schema, name = "", s
	}
	if name == "" || (qualified && schema == "") || strings.Contains(name, ".") {
		return tableName{}, fmt.Errorf("%q is not a table name (name or schema.name)", s)
	}
	return tableName{schema: schema, name: name}, nil
}

// ident is the table in SQL, quoted.
func (t tableName) ident() string {
	if t.schema == "" {
		return pgx.Identifier{t.name}.Sanitize()
	}
	return pgx.Identifier{t.schema, t.name}.Sanitize()
}

func (t tableName) String() string { return t.ident() }

// lockKey is an advisory lock key for one purpose on this table: creating
// it (so two pgcache instances starting together do not race on CREATE
// TABLE) or sweeping it (one instance at a time). Advisory locks are per
// database, which is where table names are unique too.
func (t tableName) lockKey(purpose string) int64 {
	h := fnv.New64a()
	h.Write([]byte("pgcache " + purpose + " " + t.ident()))
	return int64(h.Sum64())
}

// column is one column of a table, from the catalog.
type column struct {
	name string
	typ  string // format_type: "text", "bigint", "character varying(20)", …
	// baseType is the type without its modifier, for casting key values:
	// a cast to varchar(3) or numeric(10,2) would truncate or round a key
	// into matching a row it does not name. "character varying", "bpchar".
	baseType  string
	collation string // "" when the type has none or uses the default
	notNull   bool
	pkPos     int  // position in the primary key, 1-based; 0 when not in it
	generated bool // GENERATED ALWAYS AS (…) STORED: never written
	identity  byte // 'a' GENERATED ALWAYS AS IDENTITY, 'd' BY DEFAULT, 0 none
}

// relation is a table as the catalog describes it.
type relation struct {
	schema, name string
	kind         byte // pg_class.relkind: 'r' table, 'p' partitioned, 'v' view, …
	persistence  byte // pg_class.relpersistence: 'p' logged, 'u' unlogged, 't' temporary
	columns      []column
	pk           []int // indexes into columns, in key order
}

// describeSQL reads a table's columns and primary key; no row when the
// table does not exist. to_regclass resolves the name as SQL would, on the
// session's search_path when it is not qualified.
const describeSQL = `
SELECT n.nspname, c.relname, c.relkind::text, c.relpersistence::text,
       a.attname, format_type(a.atttypid, a.atttypmod),
       CASE a.atttypid WHEN 'bpchar'::regtype THEN 'bpchar'   -- "character" alone is char(1)
                       WHEN 'bit'::regtype THEN 'varbit'      -- "bit" alone is bit(1)
                       ELSE format_type(a.atttypid, NULL) END,
       coalesce(co.collname, ''), a.attnotnull,
       coalesce((SELECT k.pos FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, pos) WHERE k.attnum = a.attnum), 0)::int,
       a.attgenerated <> '', a.attidentity::text
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 100 -- "default"
LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
WHERE c.oid = to_regclass($1)
ORDER BY a.attnum`

// describe reads a table from the catalog; ok is false when it does not exist.
func describe(ctx context.Context, q querier, t tableName) (rel relation, ok bool, err error) {
	rows, err := q.Query(ctx, describeSQL, t.ident())
	if err != nil {
		return rel, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var c column
		var kind, persistence, identity string
		if err := rows.Scan(&rel.schema, &rel.name, &kind, &persistence, &c.name, &c.typ, &c.baseType,
			&c.collation, &c.notNull, &c.pkPos, &c.generated, &identity); err != nil {
			return rel, false, err
		}
		rel.kind, rel.persistence = kind[0], persistence[0]
		if identity != "" {
			c.identity = identity[0]
		}
		rel.columns = append(rel.columns, c)
	}
	if err := rows.Err(); err != nil {
		return rel, false, err
	}
	if len(rel.columns) == 0 {
		return rel, false, nil
	}
	rel.pk = make([]int, 0, 1)
	for pos := 1; ; pos++ {
		i := rel.columnAtPK(pos)
		if i < 0 {
			break
		}
		rel.pk = append(rel.pk, i)
	}
	return rel, true, nil
}

func (r *relation) columnAtPK(pos int) int {
	for i, c := range r.columns {
		if c.pkPos == pos {
			return i
		}
	}
	return -1
}

// querier is a pool, a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// kvColumns is the kv layout of "Postgres as a Key-Value Store", by key type: the columns a kv
// table must have, in order, as describe reports them.
func kvColumns(k keyType) []column {
	return []column{
		{name: "key", typ: k.sqlType, collation: k.collation, notNull: true, pkPos: 1},
		{name: "value", typ: "bytea", notNull: true},
		{name: "expires_at", typ: "timestamp with time zone", notNull: true},
		{name: "kind", typ: `"char"`, notNull: true},
	}
}

// createKVSQL creates a kv table. There is deliberately no index on
// expires_at: every write changes it, and an index on it would make every
// update a non-HOT one ("Postgres as a Key-Value Store"). fillfactor 70 leaves room on each page
// for the next version of a row; the low vacuum threshold keeps dead
// versions of hot keys from piling up.
//
// kind is what the key holds: 's' a string (value), or a collection whose
// members are rows of the items table (collschema.go), value then empty.
const createKVSQL = `
CREATE %sTABLE IF NOT EXISTS %s (
    key        %s PRIMARY KEY,
    value      bytea       NOT NULL,
    expires_at timestamptz NOT NULL,
    kind       "char"      NOT NULL DEFAULT 's' CHECK (kind IN ('s', 'h', 'l', 't', 'z'))
) WITH (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0.01
)`

// ensureKVTable creates the kv table and its items table when they are
// absent and checks that they have the kv layout and the persistence the
// durability needs. It never alters a table, but for one change: a kv
// table of the layout before collections (key, value, expires_at) gets
// its kind column, which costs PostgreSQL a catalog update, not a rewrite.
func ensureKVTable(ctx context.Context, pool *pgxpool.Pool, t tableName, k keyType, durability string) error {
	rel, ok, err := describe(ctx, pool, t)
	if err != nil {
		return err
	}
	if ok && checkKVTable(rel, k, durability) == nil {
		if ready, err := itemsReady(ctx, pool, t); err != nil || ready {
			return err
		}
	}
	if err := createKVTable(ctx, pool, t, k, durability); err != nil {
		return err
	}
	if rel, ok, err = describe(ctx, pool, t); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: created, but not found on the search_path", ErrTableMismatch)
	}
	return checkKVTable(rel, k, durability)
}

// createKVTable creates the table, or gives one of the layout before
// collections its kind column, and makes its items table, under an
// advisory lock, so that pgcache instances starting together do not both
// try (CREATE TABLE IF NOT EXISTS alone can still fail on the catalog's
// unique index when they race).
func createKVTable(ctx context.Context, pool *pgxpool.Pool, t tableName, k keyType, durability string) error {
	unlogged := ""
	if durability == DurabilityUnlogged {
		unlogged = "UNLOGGED "
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", t.lockKey("create")); err != nil {
			return err
		}
		rel, ok, err := describe(ctx, tx, t)
		switch {
		case err != nil:
			return err
		case !ok:
			if _, err := tx.Exec(ctx, fmt.Sprintf(createKVSQL, unlogged, t.ident(), k.columnDDL)); err != nil {
				return err
			}
		case len(rel.columns) == len(kvColumns(k))-1:
			// The layout before collections, or a table that is not ours
			// to change: the difference is named as if it had kind.
			if err := checkKVTable(withKind(rel, k), k, durability); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, fmt.Sprintf(addKindSQL, t.ident())); err != nil {
				return err
			}
		default:
			if err := checkKVTable(rel, k, durability); err != nil {
				return err // not ours to change
			}
		}
		return createItems(ctx, tx, t, k, unlogged)
	})
}

// addKindSQL gives a kv table of the layout before collections its kind
// column: every row it has is a string.
const addKindSQL = `ALTER TABLE %s ADD COLUMN IF NOT EXISTS kind "char" NOT NULL DEFAULT 's' CHECK (kind IN ('s', 'h', 'l', 't', 'z'))`

// withKind is rel with the kind column added, as a kv table of the layout
// before collections becomes.
func withKind(rel relation, k keyType) relation {
	want := kvColumns(k)
	rel.columns = append(slices.Clone(rel.columns), want[len(want)-1])
	return rel
}

// checkKVTable names the first difference between rel and the kv layout.
func checkKVTable(rel relation, k keyType, durability string) error {
	name := pgx.Identifier{rel.schema, rel.name}.Sanitize()
	mismatch := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s (pgcache never alters a table: drop it, or point the route at another)",
			ErrTableMismatch, name, fmt.Sprintf(format, args...))
	}
	if rel.kind != 'r' {
		return mismatch("is not an ordinary table (relkind %q)", rel.kind)
	}
	want := kvColumns(k)
	if len(rel.columns) != len(want) {
		return mismatch("has columns %s, want %s", columnNames(rel.columns), columnNames(want))
	}
	for i, w := range want {
		c := rel.columns[i]
		switch {
		case c.name != w.name:
			return mismatch("has column %q where the kv layout has %q", c.name, w.name)
		case c.typ != w.typ:
			return mismatch("column %s is %s, want %s (key_type %s)", c.name, c.typ, w.typ, k.name)
		case c.collation != w.collation:
			return mismatch("column %s has collation %q, want %q", c.name, collationOrDefault(c.collation), collationOrDefault(w.collation))
		case c.notNull != w.notNull:
			return mismatch("column %s allows NULL", c.name)
		}
	}
	if len(rel.pk) != 1 || rel.pk[0] != 0 {
		return mismatch("does not have key as its primary key")
	}
	switch wantU := durability == DurabilityUnlogged; {
	case rel.persistence == 't':
		return mismatch("is a temporary table")
	case wantU && rel.persistence != 'u':
		return mismatch("is a logged table, but durability %s needs an UNLOGGED one", durability)
	case !wantU && rel.persistence == 'u':
		return mismatch("is UNLOGGED, but durability %s needs a logged table", durability)
	}
	return nil
}

func columnNames(cols []column) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

func collationOrDefault(c string) string {
	if c == "" {
		return "default"
	}
	return c
}
