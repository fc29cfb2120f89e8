package coherence

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Channel is the LISTEN/NOTIFY channel fences travel on.
const Channel = "pgcache_fence"

// maxPayload keeps a notification under PostgreSQL's 8000-byte limit: the
// relay splits a batch of keys across notifications of at most this size,
// and publishes a key that alone would not fit as a table fence.
const maxPayload = 7900

// Querier is what Attach needs of a connection or a pool (*pgx.Conn and
// *pgxpool.Pool both are one).
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Schema holds what pgcache installs in a database: the fence log and the
// trigger functions.
const Schema = "pgcache"

// setupSQL creates the fence log.
//
// Writers never NOTIFY. Committing a transaction that sent NOTIFY takes a
// database-wide lock that is held through the commit's WAL flush, so
// notifying writers commit one at a time: 16 pgbench clients updating one
// row each lost most of their throughput to a per-statement NOTIFY
// (docs/performance.md). So the trigger appends to a log, and a relay (relay.go) drains it
// and publishes the fences as batched notifications.
//
// The log is UNLOGGED: it costs no WAL, and after a crash it comes back
// empty, which is safe because every listener loses its connection in a
// crash and fences its whole cache when it reconnects. It has no index, no
// sequence and no constraint: an insert is a heap append and nothing else.
// One table is enough: at 16 writers the inserts did not wait on its pages
// (docs/performance.md), so spreading it over partitions would only add the
// routing cost.
//
// A row is a fence: tbl and a JSON array of primary keys (one column: its
// JSON value; several: a JSON array), or tbl with NULL keys for the whole
// table (TRUNCATE), or, under a name that is no table's, a canary
// (relay.go) or a sweep's expired keys (expired.go); and at, when the
// trigger logged it (clock_timestamp(): during the write, before its
// commit), which the relay publishes for CLIENT TRACKING's commit-to-push
// lag (payload.go).
//
// at came later than the log, and is added to a log without it here, as
// two steps that rewrite nothing (a volatile default given with ADD COLUMN
// would rewrite the log). Not where a C trigger of version 1.0 may run:
// that build forms a row of two values whatever the log's columns, and
// would read past them. So the column is added only while no 1.0 build of
// the extension is installed on the server, and the relay reads it as NULL
// unless it is a plausible time. The ALTER takes the log's exclusive lock
// once: it waits at most a second for writers in flight, and leaves the
// column for the next connect if it cannot have it, rather than stall the
// writers queued behind it.
const setupSQL = `
CREATE SCHEMA IF NOT EXISTS ` + Schema + `;
CREATE UNLOGGED TABLE IF NOT EXISTS ` + Schema + `.fence_log (
    tbl  text  NOT NULL,
    keys jsonb
) WITH (autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0);
GRANT USAGE ON SCHEMA ` + Schema + ` TO PUBLIC;
GRANT INSERT ON ` + Schema + `.fence_log TO PUBLIC;
DO $at$
DECLARE
  timeout text := current_setting('lock_timeout');
BEGIN
  IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = '` + Schema + `.fence_log'::regclass AND attname = 'at' AND NOT attisdropped)
     OR EXISTS (SELECT FROM pg_available_extensions WHERE name = '` + Extension + `' AND default_version = '1.0') THEN
    RETURN;
  END IF;
  PERFORM set_config('lock_timeout', '1s', true);
  BEGIN
    ALTER TABLE ` + Schema + `.fence_log ADD COLUMN at timestamptz;
    ALTER TABLE ` + Schema + `.fence_log ALTER COLUMN at SET DEFAULT clock_timestamp();
  EXCEPTION WHEN lock_not_available THEN
    NULL;
  END;
  PERFORM set_config('lock_timeout', timeout, true);
END $at$`

// fenceFunctions are a table's trigger functions, one per event, with the
// table name and key expressions written in: no dynamic SQL and no SET
// clause, because every written row runs one. {fn} is the functions' name
// prefix, {tbl} the table as fences name it (a SQL literal), {new} and
// {old} the key of the NEW and OLD row.
//
// Row triggers, not statement triggers with transition tables: for the
// single-row writes an L1 sits in front of, the statement trigger's
// aggregate over its transition tables cost as much again as the UPDATE
// itself, and even for a 10,000-row UPDATE it cost more per row than a row
// trigger's one INSERT (docs/performance.md, What the fence triggers cost
// writers, has the figures).
//
// An UPDATE logs the new and the old key: a primary key may change, and
// comparing them would need an equality that agrees with the JSON rendering
// (numeric 1.0 = 1.00, citext); the relay drops the duplicate.
//
// Writers need only INSERT on the log (granted to PUBLIC), so the functions
// run with the writer's rights, not SECURITY DEFINER.
const fenceFunctions = `
CREATE OR REPLACE FUNCTION {fn}_row_ins() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ` + Schema + `.fence_log VALUES ({tbl}, jsonb_build_array({new}));
  RETURN NULL;
END $fn$;
CREATE OR REPLACE FUNCTION {fn}_row_upd() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ` + Schema + `.fence_log VALUES ({tbl}, jsonb_build_array({new}, {old}));
  RETURN NULL;
END $fn$;
CREATE OR REPLACE FUNCTION {fn}_row_del() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ` + Schema + `.fence_log VALUES ({tbl}, jsonb_build_array({old}));
  RETURN NULL;
END $fn$;
CREATE OR REPLACE FUNCTION {fn}_trunc() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ` + Schema + `.fence_log VALUES ({tbl}, NULL);
  RETURN NULL;
END $fn$`

// The triggers Attach installs, by event, and the suffix of the function
// each runs.
var triggers = []struct{ name, event, level, fn string }{
	{"pgcache_fence_ins", "INSERT", "ROW", "row_ins"},
	{"pgcache_fence_upd", "UPDATE", "ROW", "row_upd"},
	{"pgcache_fence_del", "DELETE", "ROW", "row_del"},
	{"pgcache_fence_trunc", "TRUNCATE", "STATEMENT", "trunc"},
}

// obsoleteFunctions are the suffixes of trigger functions older versions
// installed (statement triggers over transition tables). Attach drops them
// once their triggers are replaced.
var obsoleteFunctions = []string{"ins", "upd", "del"}

// functionPrefix names a table's trigger functions in the pgcache schema:
// fence_<table>_<hash>, short enough for PostgreSQL's 63-byte names and
// unique per schema.table.
func functionPrefix(schema, name string) string {
	h := fnv.New32a()
	h.Write([]byte(schema + "." + name))
	short := name
	if len(short) > 32 {
		short = short[:32]
	}
	return fmt.Sprintf("fence_%s_%08x", short, h.Sum32())
}

// keyExpr renders the primary key of row (NEW or OLD) as an element of
// jsonb_build_array: one column as itself (its JSON value), several as a
// JSON array.
func keyExpr(row string, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = row + "." + pgx.Identifier{c}.Sanitize()
	}
	if len(cols) == 1 {
		return parts[0]
	}
	return "jsonb_build_array(" + strings.Join(parts, ", ") + ")"
}

// ErrNoPrimaryKey: a table without a primary key has no keys to fence.
var ErrNoPrimaryKey = errors.New("table has no primary key")

// TriggerFunc names what a table's row triggers run.
type TriggerFunc string

const (
	// TriggerC is pgcache.fence_row of the pgcache_fence extension
	// (pgext/ in this repository): the keys the PL/pgSQL functions log,
	// rendered alike (an unchanged key of an UPDATE once, not twice),
	// without the interpreter and the INSERT's executor. It needs the
	// extension's files on the database server (make pgext-install there)
	// and a superuser to create it once.
	TriggerC TriggerFunc = "c"
	// TriggerPLpgSQL is the functions Attach writes for each table: they
	// need nothing on the server, and add several times the C trigger's
	// instructions to a write (docs/performance.md, What the fence
	// triggers cost writers).
	TriggerPLpgSQL TriggerFunc = "plpgsql"
	// TriggerAuto is TriggerC where the extension is installed or can be
	// created, else TriggerPLpgSQL.
	TriggerAuto TriggerFunc = ""
)

// Extension is the PostgreSQL extension of the C trigger.
const Extension = "pgcache_fence"

// errNoExtension explains how to get the C trigger.
var errNoExtension = errors.New("the " + Extension + " extension is not available on the server: " +
	"build and install it there (make pgext-install, which needs postgresql-server-dev), or attach with the plpgsql trigger")

// Attach installs the fence triggers on table ("schema.table", or "table"
// in the search path), with the C trigger where it can (TriggerAuto).
func Attach(ctx context.Context, db Querier, table string) error {
	_, err := AttachUsing(ctx, db, table, TriggerAuto)
	return err
}

// AttachUsing installs the fence functions and triggers on table, running
// want (TriggerAuto: the best available), and returns what they run. It
// is idempotent and replaces a trigger set of an older version or of the
// other function: triggers are replaced in one transaction, so a
// concurrent writer never runs unfenced.
func AttachUsing(ctx context.Context, db Querier, table string, want TriggerFunc) (TriggerFunc, error) {
	schema, name, cols, err := primaryKey(ctx, db, table)
	if err != nil {
		return "", err
	}
	return attach(ctx, db, schema, name, schema+"."+name, cols, want)
}

// AttachItems installs the fence triggers on a kv table's items table
// (the members of its collections): a write of an item fences its
// collection, the key in the kv table, as a write of the key's row does.
func AttachItems(ctx context.Context, db Querier, items, kv string, want TriggerFunc) (TriggerFunc, error) {
	schema, name, err := resolve(ctx, db, items)
	if err != nil {
		return "", err
	}
	kvSchema, kvName, err := resolve(ctx, db, kv)
	if err != nil {
		return "", err
	}
	return attach(ctx, db, schema, name, kvSchema+"."+kvName, []string{"key"}, want)
}

// attach installs the fence functions and triggers on schema.name, whose
// writes fence the keys cols hold in the table fences name fenceAs.
func attach(ctx context.Context, db Querier, schema, name, fenceAs string, cols []string, want TriggerFunc) (TriggerFunc, error) {
	qualified := pgx.Identifier{schema, name}.Sanitize()
	fn := Schema + "." + functionPrefix(schema, name)
	tbl := quoteLiteral(fenceAs)
	tx, err := begin(ctx, db, setupSQL, strings.NewReplacer(
		"{fn}", fn,
		"{tbl}", tbl,
		"{new}", keyExpr("NEW", cols),
		"{old}", keyExpr("OLD", cols),
	).Replace(fenceFunctions))
	if err != nil {
		return "", err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // a no-op after Commit
	got, err := triggerFunc(ctx, tx, want)
	if err != nil {
		return "", err
	}
	cArgs := tbl
	for _, c := range cols {
		cArgs += ", " + quoteLiteral(c)
	}
	for _, tr := range triggers {
		call := fmt.Sprintf("%s_%s()", fn, tr.fn)
		if got == TriggerC && tr.level == "ROW" {
			call = fmt.Sprintf("%s.fence_row(%s)", Schema, cArgs)
		}
		for _, stmt := range []string{
			fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", tr.name, qualified),
			fmt.Sprintf("CREATE TRIGGER %s AFTER %s ON %s FOR EACH %s EXECUTE FUNCTION %s",
				tr.name, tr.event, qualified, tr.level, call),
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return "", err
			}
		}
	}
	for _, suffix := range obsoleteFunctions {
		if _, err := tx.Exec(ctx, fmt.Sprintf("DROP FUNCTION IF EXISTS %s_%s()", fn, suffix)); err != nil {
			return "", err
		}
	}
	return got, tx.Commit(ctx)
}

// triggerFunc settles what the row triggers run: the C function when the
// extension is installed, or available and this session may create it (a
// savepoint keeps a refusal from ending the transaction), else PL/pgSQL.
func triggerFunc(ctx context.Context, tx pgx.Tx, want TriggerFunc) (TriggerFunc, error) {
	if want == TriggerPLpgSQL {
		return TriggerPLpgSQL, nil
	}
	var available, installed bool
	if err := tx.QueryRow(ctx, `SELECT count(*) > 0, coalesce(bool_or(installed_version IS NOT NULL), false)
		FROM pg_available_extensions WHERE name = $1`, Extension).Scan(&available, &installed); err != nil {
		return "", err
	}
	if installed {
		return TriggerC, nil
	}
	if available {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return "", err
		}
		_, err = sp.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+Extension+" SCHEMA "+Schema)
		if err == nil {
			return TriggerC, sp.Commit(ctx)
		}
		if rbErr := sp.Rollback(ctx); rbErr != nil {
			return "", rbErr
		}
		if want == TriggerC {
			return "", fmt.Errorf("create extension %s: %w", Extension, err)
		}
		return TriggerPLpgSQL, nil
	}
	if want == TriggerC {
		return "", errNoExtension
	}
	return TriggerPLpgSQL, nil
}

// TriggerOf reports what the fence triggers on table run ("" when it has
// none).
func TriggerOf(ctx context.Context, db Querier, table string) (TriggerFunc, error) {
	rows, err := db.Query(ctx, `
		SELECT p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')
		FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
		WHERE t.tgrelid = to_regclass($1) AND t.tgname = 'pgcache_fence_upd'`, table)
	if err != nil {
		return "", err
	}
	isC, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", nil
	case err != nil:
		return "", err
	case isC:
		return TriggerC, nil
	}
	return TriggerPLpgSQL, nil
}

// Detach removes the triggers from table. Its functions and the log stay.
func Detach(ctx context.Context, db Querier, table string) error {
	schema, name, err := resolve(ctx, db, table)
	if err != nil {
		return err
	}
	qualified := pgx.Identifier{schema, name}.Sanitize()
	var stmts []string
	for _, tr := range triggers {
		stmts = append(stmts, fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", tr.name, qualified))
	}
	return inTx(ctx, db, stmts)
}

// Attached reports whether all of the fence triggers are on table.
func Attached(ctx context.Context, db Querier, table string) (bool, error) {
	schema, name, err := resolve(ctx, db, table)
	if err != nil {
		return false, err
	}
	rows, err := db.Query(ctx, `
		SELECT count(*) FROM pg_trigger t
		JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND t.tgname LIKE 'pgcache_fence_%'`, schema, name)
	if err != nil {
		return false, err
	}
	n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int])
	return n == len(triggers), err
}

// ddlLockKey serialises pgcache's DDL across instances starting together:
// concurrent CREATE OR REPLACE FUNCTION of one function fails otherwise.
const ddlLockKey = relayLockKey + 1

// Setup creates the fence log, if absent.
func Setup(ctx context.Context, db Querier) error {
	return inTx(ctx, db, []string{setupSQL})
}

func inTx(ctx context.Context, db Querier, stmts []string) error {
	tx, err := begin(ctx, db, stmts...)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) // a no-op after Commit
	return tx.Commit(ctx)
}

// begin starts a transaction of pgcache's DDL, under the DDL lock, and
// runs stmts in it.
func begin(ctx context.Context, db Querier, stmts ...string) (pgx.Tx, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	stmts = append([]string{fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", ddlLockKey)}, stmts...)
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			tx.Rollback(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return tx, nil
}

// resolve finds a table's schema and name as the catalog spells them.
func resolve(ctx context.Context, db Querier, table string) (schema, name string, err error) {
	rows, err := db.Query(ctx, `
		SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass($1)`, table)
	if err != nil {
		return "", "", err
	}
	type rel struct{ Schema, Name string }
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[rel])
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", fmt.Errorf("table %q does not exist", table)
	}
	return r.Schema, r.Name, err
}

// primaryKey returns a table's schema, name and primary key columns in key order.
func primaryKey(ctx context.Context, db Querier, table string) (schema, name string, cols []string, err error) {
	schema, name, err = resolve(ctx, db, table)
	if err != nil {
		return "", "", nil, err
	}
	rows, err := db.Query(ctx, `
		SELECT a.attname FROM pg_index i
		CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = to_regclass($1) AND i.indisprimary
		ORDER BY k.ord`, pgx.Identifier{schema, name}.Sanitize())
	if err != nil {
		return "", "", nil, err
	}
	cols, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", "", nil, err
	}
	if len(cols) == 0 {
		return "", "", nil, fmt.Errorf("%s.%s: %w", schema, name, ErrNoPrimaryKey)
	}
	return schema, name, cols, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
