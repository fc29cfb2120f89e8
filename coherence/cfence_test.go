package coherence

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/internal/testenv"
)

// logged runs stmts in one transaction and returns the fence log rows they
// wrote, read before it ends (so no relay drains them first), as
// "table keys" lines.
func logged(t *testing.T, conn *pgxpool.Conn, stmts ...string) []string {
	t.Helper()
	return loggedBy(t, conn, func(tx pgx.Tx) {
		for _, s := range stmts {
			if _, err := tx.Exec(context.Background(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	})
}

// loggedBy is logged for the writes write makes in the transaction.
func loggedBy(t *testing.T, conn *pgxpool.Conn, write func(tx pgx.Tx)) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// Rows of other transactions are committed before this snapshot or
	// invisible to it; so the log this transaction sees grows only by its own.
	before, err := pgx.CollectRows(mustQuery(t, tx, `SELECT ctid::text FROM `+Schema+`.fence_log`), pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	write(tx)
	rows, err := pgx.CollectRows(mustQuery(t, tx, `SELECT tbl || ' ' || coalesce(keys::text, 'NULL') FROM `+Schema+`.fence_log
		WHERE ctid::text <> ALL($1) ORDER BY ctid`, before), pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func mustQuery(t *testing.T, tx pgx.Tx, sql string, args ...any) pgx.Rows {
	t.Helper()
	rows, err := tx.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestTriggerFunctionsLogAlike: the C trigger (pgext/) logs the keys the
// PL/pgSQL functions log, rendered alike, for keys of every common type,
// single and composite, and for key changes; the relay and the listeners
// read one format, whichever trigger a table runs. (The C trigger logs an
// unchanged key of an UPDATE once; the PL/pgSQL one twice.) That both agree
// with the fence key a route computes is TestTriggersLogFenceKeys.
func TestTriggerFunctionsLogAlike(t *testing.T) {
	p := pg.Pool(t)
	ctx := context.Background()
	tables := []struct{ name, columns string }{
		{"lk_int", "k int PRIMARY KEY, v int"},
		{"lk_big", "k bigint PRIMARY KEY, v int"},
		{"lk_small", "k smallint PRIMARY KEY, v int"},
		{"lk_varchar", "k varchar(20) PRIMARY KEY, v int"},
		{"lk_char", "k char(4) PRIMARY KEY, v int"},
		{"lk_text", "k text PRIMARY KEY, v int"},
		{"lk_uuid", "k uuid PRIMARY KEY, v int"},
		{"lk_num", "k numeric PRIMARY KEY, v int"},
		{"lk_ts", "k timestamptz PRIMARY KEY, v int"},
		{"lk_bool", "k bool PRIMARY KEY, v int"},
		{"lk_pair", "a int, b text, v int, PRIMARY KEY (b, a)"},
	}
	writes := map[string][]string{
		"lk_int":     {`INSERT INTO {t} VALUES (1, 0), (-2147483648, 0)`, `UPDATE {t} SET v = 1`, `UPDATE {t} SET k = 7 WHERE k = 1`, `DELETE FROM {t}`},
		"lk_big":     {`INSERT INTO {t} VALUES (9007199254740993, 0)`, `UPDATE {t} SET v = 1`, `DELETE FROM {t}`},
		"lk_small":   {`INSERT INTO {t} VALUES (-32768, 0), (0, 0)`, `UPDATE {t} SET v = 1`, `DELETE FROM {t}`},
		"lk_varchar": {`INSERT INTO {t} VALUES ('a\b', 0)`, `UPDATE {t} SET k = 'c'`, `DELETE FROM {t}`},
		"lk_char":    {`INSERT INTO {t} VALUES ('ab', 0)`, `UPDATE {t} SET v = 1`, `DELETE FROM {t}`},
		"lk_text":    {`INSERT INTO {t} VALUES (E'q"uo\\te\n', 0), ('é ✓', 0), ('', 0)`, `UPDATE {t} SET v = 1`, `DELETE FROM {t}`},
		"lk_uuid":    {`INSERT INTO {t} VALUES ('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 0)`, `UPDATE {t} SET v = 1`, `DELETE FROM {t}`},
		"lk_num":     {`INSERT INTO {t} VALUES (1.50, 0), (-0.000001, 0), ('NaN', 0)`, `UPDATE {t} SET v = 1`, `DELETE FROM {t}`},
		"lk_ts":      {`INSERT INTO {t} VALUES ('2026-11-30 12:34:56.789+02', 0), ('infinity', 0)`, `UPDATE {t} SET v = 1`, `DELETE FROM {t}`},
		"lk_bool":    {`INSERT INTO {t} VALUES (true, 0)`, `UPDATE {t} SET k = false`, `DELETE FROM {t}`},
		"lk_pair":    {`INSERT INTO {t} VALUES (1, 'x', 0), (2, 'y"', 0)`, `UPDATE {t} SET v = 1`, `UPDATE {t} SET a = 3 WHERE b = 'x'`, `DELETE FROM {t}`},
	}
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			var got [2][]string
			for i, fn := range []TriggerFunc{TriggerC, TriggerPLpgSQL} {
				name := tb.name + "_" + string(fn)
				testenv.Exec(t, p, "CREATE TABLE "+name+" ("+tb.columns+")")
				if f, err := AttachUsing(ctx, p, name, fn); err != nil || f != fn {
					t.Fatalf("attach %s with %s: %q, %v", name, fn, f, err)
				}
				var stmts []string
				for _, w := range writes[tb.name] {
					stmts = append(stmts, strings.ReplaceAll(w, "{t}", name))
				}
				for _, line := range logged(t, conn, stmts...) {
					got[i] = append(got[i], distinctKeys(t, strings.Replace(line, "public."+name+" ", "public."+tb.name+" ", 1)))
				}
			}
			if len(got[0]) == 0 || strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
				t.Fatalf("log rows differ\nc:\n%s\nplpgsql:\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
			}
		})
	}
}

// distinctKeys drops the repeats from the keys of a logged line.
func distinctKeys(t *testing.T, line string) string {
	t.Helper()
	tbl, keys, _ := strings.Cut(line, " ")
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(keys), &list); err != nil {
		t.Fatalf("log row %q: %v", line, err)
	}
	var out []string
	for _, k := range list {
		if !slices.Contains(out, string(k)) {
			out = append(out, string(k))
		}
	}
	return tbl + " [" + strings.Join(out, ", ") + "]"
}

// TestCTriggerFollowsChanges: the C trigger keeps what it needs per
// trigger across statements, so it must notice when the trigger's
// arguments or the key column's type change under it, in the same session.
func TestCTriggerFollowsChanges(t *testing.T) {
	p := pg.Pool(t)
	ctx := context.Background()
	testenv.Exec(t, p, `CREATE TABLE cf (k int PRIMARY KEY, other text NOT NULL, v int)`)
	if _, err := AttachUsing(ctx, p, "cf", TriggerC); err != nil {
		t.Fatal(err)
	}
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	testenv.Exec(t, p, `INSERT INTO cf VALUES (1, 'a', 0)`)
	want := func(stmt, line string) {
		t.Helper()
		if got := logged(t, conn, stmt); len(got) != 1 || got[0] != line {
			t.Fatalf("%s logged %q, want %q", stmt, got, line)
		}
	}
	want(`UPDATE cf SET v = v + 1`, `public.cf [1]`)
	want(`UPDATE cf SET k = 2`, `public.cf [2, 1]`)
	testenv.Exec(t, p, `ALTER TABLE cf ALTER COLUMN k TYPE bigint`)
	testenv.Exec(t, p, `UPDATE cf SET k = 9007199254740993`)
	want(`UPDATE cf SET v = v + 1`, `public.cf [9007199254740993]`)
	testenv.Exec(t, p, `ALTER TABLE cf ALTER COLUMN k TYPE text`)
	want(`UPDATE cf SET v = v + 1`, `public.cf ["9007199254740993"]`)
	// CREATE OR REPLACE keeps the trigger's OID and changes its arguments.
	testenv.Exec(t, p, `CREATE OR REPLACE TRIGGER pgcache_fence_upd AFTER UPDATE ON cf FOR EACH ROW EXECUTE FUNCTION `+Schema+`.fence_row('public.cf', 'other')`)
	want(`UPDATE cf SET v = v + 1`, `public.cf ["a"]`)
	testenv.Exec(t, p, `CREATE OR REPLACE TRIGGER pgcache_fence_upd AFTER UPDATE ON cf FOR EACH ROW EXECUTE FUNCTION `+Schema+`.fence_row('public.cf', 'gone')`)
	if _, err := conn.Exec(ctx, `UPDATE cf SET v = v + 1`); err == nil || !strings.Contains(err.Error(), `column "gone" of public.cf does not exist`) {
		t.Fatalf("a trigger naming a missing column: %v", err)
	}
	// The trigger appends to the log's heap alone: an index on the log
	// would be left behind, so a write refuses it rather than corrupt it.
	testenv.Exec(t, p, `CREATE OR REPLACE TRIGGER pgcache_fence_upd AFTER UPDATE ON cf FOR EACH ROW EXECUTE FUNCTION `+Schema+`.fence_row('public.cf', 'k')`)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `CREATE INDEX ON `+Schema+`.fence_log (tbl)`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE cf SET v = v + 1`); err == nil || !strings.Contains(err.Error(), "pgcache.fence_log has an index") {
		t.Fatalf("a write with an index on the log: %v", err)
	}
}

// TestAttachWithoutExtensionRights: where the extension is not yet created
// and the session may not create it, auto falls back to PL/pgSQL (in the
// same transaction: the refusal must not abort it) and asking for the C
// trigger is an error that says what to do.
func TestAttachWithoutExtensionRights(t *testing.T) {
	ctx := context.Background()
	testenv.Exec(t, pg.Pool(t), `CREATE ROLE fence_app LOGIN`)
	if err := pg.CreateDatabase(ctx, "fence_noext"); err != nil {
		t.Fatal(err)
	}
	testenv.Exec(t, pg.Pool(t), `ALTER DATABASE fence_noext OWNER TO fence_app`)
	cfg, err := pgxpool.ParseConfig(pg.DSNFor("fence_noext"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User = "fence_app"
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	testenv.Exec(t, p, `CREATE TABLE app_rows (id int PRIMARY KEY, v int)`)
	if _, err := AttachUsing(ctx, p, "app_rows", TriggerC); err == nil || !strings.Contains(err.Error(), "create extension "+Extension) {
		t.Fatalf("attach with the C trigger, no rights to create it: %v", err)
	}
	if got, err := AttachUsing(ctx, p, "app_rows", TriggerAuto); err != nil || got != TriggerPLpgSQL {
		t.Fatalf("auto without rights: %q, %v", got, err)
	}
	if got, err := TriggerOf(ctx, p, "app_rows"); err != nil || got != TriggerPLpgSQL {
		t.Fatalf("TriggerOf: %q, %v", got, err)
	}
}

// TestRelayDrainsAndVacuums: a backlog of more than vacuumEvery rows is
// published in full, and the relay then vacuums the log itself, so the
// dead tuples of drained rows do not wait for autovacuum.
func TestRelayDrainsAndVacuums(t *testing.T) {
	p := pg.Pool(t)
	ctx := context.Background()
	if err := Setup(ctx, p); err != nil {
		t.Fatal(err)
	}
	const rows = vacuumEvery + 500
	testenv.Exec(t, p, `INSERT INTO `+Schema+`.fence_log SELECT 'public.backlog', jsonb_build_array(g) FROM generate_series(1, $1) g`, rows)
	cfg, err := pgx.ParseConfig(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	relay := NewRelay(cfg, 0, zap.NewNop())
	done := make(chan struct{})
	go func() { relay.Run(rctx); close(done) }()
	defer func() { stop(); <-done }()
	waitFor(t, "the backlog published and the log vacuumed", func() bool {
		return relay.Stats.Rows.Load() >= rows && relay.Stats.Vacuums.Load() >= 1
	})
	var left int
	if err := p.QueryRow(ctx, `SELECT count(*) FROM `+Schema+`.fence_log WHERE tbl = 'public.backlog'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d backlog rows left in the log (%v)", left, err)
	}
}
