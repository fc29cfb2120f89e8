package coherence

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/internal/testenv"
)

// oldFenceFunctions are the statement-level trigger functions over
// transition tables that pgcache installed before the row triggers, as they
// were written then: Attach must replace them.
const oldFenceFunctions = `
CREATE OR REPLACE FUNCTION {fn}_ins() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ` + Schema + `.fence_log SELECT {tbl}, jsonb_agg({k}) FROM pgcache_new HAVING count(*) > 0;
  RETURN NULL;
END $fn$;
CREATE OR REPLACE FUNCTION {fn}_del() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ` + Schema + `.fence_log SELECT {tbl}, jsonb_agg({k}) FROM pgcache_old HAVING count(*) > 0;
  RETURN NULL;
END $fn$;
CREATE OR REPLACE FUNCTION {fn}_upd() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ` + Schema + `.fence_log SELECT {tbl}, jsonb_agg(k)
    FROM (SELECT {k} AS k FROM pgcache_old UNION SELECT {k} FROM pgcache_new) s HAVING count(*) > 0;
  RETURN NULL;
END $fn$;
CREATE OR REPLACE FUNCTION {fn}_trunc() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO ` + Schema + `.fence_log VALUES ({tbl}, NULL);
  RETURN NULL;
END $fn$;
CREATE TRIGGER pgcache_fence_ins AFTER INSERT ON {rel} REFERENCING NEW TABLE AS pgcache_new FOR EACH STATEMENT EXECUTE FUNCTION {fn}_ins();
CREATE TRIGGER pgcache_fence_upd AFTER UPDATE ON {rel} REFERENCING OLD TABLE AS pgcache_old NEW TABLE AS pgcache_new FOR EACH STATEMENT EXECUTE FUNCTION {fn}_upd();
CREATE TRIGGER pgcache_fence_del AFTER DELETE ON {rel} REFERENCING OLD TABLE AS pgcache_old FOR EACH STATEMENT EXECUTE FUNCTION {fn}_del();
CREATE TRIGGER pgcache_fence_trunc AFTER TRUNCATE ON {rel} FOR EACH STATEMENT EXECUTE FUNCTION {fn}_trunc()`

// installOldTriggers attaches public.<table> (key column id) as the
// statement-trigger version did.
func installOldTriggers(t *testing.T, table string) {
	t.Helper()
	p := pg.Pool(t)
	fn := Schema + "." + functionPrefix("public", table)
	testenv.Exec(t, p, setupSQL)
	testenv.Exec(t, p, strings.NewReplacer("{fn}", fn, "{tbl}", quoteLiteral("public."+table),
		"{k}", "to_jsonb(id)", "{rel}", "public."+table).Replace(oldFenceFunctions))
}

// triggerLevels returns each pgcache fence trigger on table with "row" or
// "statement".
func triggerLevels(t *testing.T, table string) map[string]string {
	t.Helper()
	rows, err := pg.Pool(t).Query(context.Background(), `
		SELECT tgname, CASE WHEN tgtype & 1 = 1 THEN 'row' ELSE 'statement' END
		FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname LIKE 'pgcache_fence_%'`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var name, level string
		if err := rows.Scan(&name, &level); err != nil {
			t.Fatal(err)
		}
		got[name] = level
	}
	return got
}

// An installed older trigger set (statement triggers over transition
// tables) keeps publishing until Attach replaces it with row triggers, and
// its functions go with it. Fences written by either version are published:
// during a rolling upgrade old and new instances re-attach each other's set.
func TestAttachReplacesStatementTriggers(t *testing.T) {
	p := pg.Pool(t)
	ctx := context.Background()
	testenv.Exec(t, p, `CREATE TABLE up_old (id int PRIMARY KEY, v text)`)
	testenv.Exec(t, p, `INSERT INTO up_old SELECT g, 'v' FROM generate_series(1, 10) g`)
	installOldTriggers(t, "up_old")
	if got := triggerLevels(t, "up_old"); got["pgcache_fence_upd"] != "statement" || len(got) != 4 {
		t.Fatalf("old set installed as %v", got)
	}
	if ok, err := Attached(ctx, p, "up_old"); err != nil || !ok {
		t.Fatalf("Attached with the old set = %v, %v; want true: it still fences", ok, err)
	}
	f := startCoordinator(t, p, CoordinatorOptions{}).Fences

	tok := f.Token()
	testenv.Exec(t, p, `UPDATE up_old SET v = 'old trigger' WHERE id = 1`)
	fenced(t, f, tok, "public.up_old", "1")

	if err := Attach(ctx, p, "up_old"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pgcache_fence_ins": "row", "pgcache_fence_upd": "row", "pgcache_fence_del": "row", "pgcache_fence_trunc": "statement"}
	if got := triggerLevels(t, "up_old"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after Attach: triggers %v, want %v", got, want)
	}
	for _, suffix := range obsoleteFunctions {
		var left bool
		sig := Schema + "." + functionPrefix("public", "up_old") + "_" + suffix + "()"
		if err := p.QueryRow(ctx, `SELECT to_regprocedure($1) IS NOT NULL`, sig).Scan(&left); err != nil || left {
			t.Fatalf("%s left behind (%v)", sig, err)
		}
	}
	for _, tc := range []struct{ sql, key string }{
		{`UPDATE up_old SET v = 'row trigger' WHERE id = 2`, "2"},
		{`INSERT INTO up_old VALUES (11, 'v')`, "11"},
		{`DELETE FROM up_old WHERE id = 3`, "3"},
	} {
		tok := f.Token()
		testenv.Exec(t, p, tc.sql)
		fenced(t, f, tok, "public.up_old", tc.key)
	}
	// And back: an old instance re-attaching its set on reconnect.
	for _, tr := range triggers {
		testenv.Exec(t, p, fmt.Sprintf("DROP TRIGGER %s ON up_old", tr.name))
	}
	installOldTriggers(t, "up_old")
	tok = f.Token()
	testenv.Exec(t, p, `UPDATE up_old SET v = 'old again' WHERE id = 4`)
	fenced(t, f, tok, "public.up_old", "4")
}

// Row triggers fence what a statement writes, row by row: a primary key
// changed by an UPDATE fences the old and the new key, and a statement
// writing many rows fences each of them.
func TestRowTriggersFenceEveryKey(t *testing.T) {
	p := pg.Pool(t)
	ctx := context.Background()
	testenv.Exec(t, p, `CREATE TABLE rows_kv (id int PRIMARY KEY, v text)`)
	testenv.Exec(t, p, `CREATE TABLE rows_pair (a int, b text, v text, PRIMARY KEY (a, b))`)
	testenv.Exec(t, p, `INSERT INTO rows_kv SELECT g, 'v' FROM generate_series(1, 3000) g`)
	testenv.Exec(t, p, `INSERT INTO rows_pair VALUES (1, 'x', 'v')`)
	for _, tbl := range []string{"rows_kv", "rows_pair"} {
		if err := Attach(ctx, p, tbl); err != nil {
			t.Fatal(err)
		}
	}
	f := startCoordinator(t, p, CoordinatorOptions{}).Fences

	t.Run("key change", func(t *testing.T) {
		tok := f.Token()
		testenv.Exec(t, p, `UPDATE rows_kv SET id = 5000 WHERE id = 1`)
		fenced(t, f, tok, "public.rows_kv", "1")
		fenced(t, f, tok, "public.rows_kv", "5000")
	})
	t.Run("composite key change", func(t *testing.T) {
		tok := f.Token()
		testenv.Exec(t, p, `UPDATE rows_pair SET b = 'y' WHERE a = 1`)
		fenced(t, f, tok, "public.rows_pair", `[1,"x"]`)
		fenced(t, f, tok, "public.rows_pair", `[1,"y"]`)
	})
	t.Run("a statement writing 3000 rows", func(t *testing.T) {
		tok := f.Token()
		tables := f.Stats.TableFences.Load()
		testenv.Exec(t, p, `UPDATE rows_kv SET v = 'bulk' WHERE id <= 3000`)
		for _, k := range []string{"2", "1500", "3000"} {
			fenced(t, f, tok, "public.rows_kv", k)
		}
		if f.Stats.TableFences.Load() != tables {
			t.Fatal("a table fence for keys that fit in notifications")
		}
	})
}
