package coherence

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/postgres"
	"github.com/pgcache/pgcache/coherence/fence"
	"github.com/pgcache/pgcache/internal/testenv"
)

// TestTriggersLogFenceKeys: three encodings of a row's key must agree —
// what the C trigger (pgext/) logs, what the PL/pgSQL trigger (attach.go)
// logs, each read as the listener reads it (fence.KeyOf), and what the route
// computes for the key naming that row (postgres FenceKey, through
// backends.Fenced), which an L1 entry is checked against. Were one to
// drift, a write would fence another bucket than the one the entry sits
// in, and the entry would stay stale. Every key type a route caches goes
// through both triggers: kv keys (text, uuid, bigint) and table rows with
// text, varchar, uuid and integer keys, composite keys, keys needing JSON
// escapes, and route keys spelled otherwise than PostgreSQL prints them.
func TestTriggersLogFenceKeys(t *testing.T) {
	ctx := context.Background()
	type row struct {
		vals []any // the key columns' values, in key order
		key  string
	}
	jsonKey := func(vals ...any) string { b, _ := json.Marshal(vals); return string(b) }
	jsonStr := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	escapes := []string{
		`q"uo\te`, "new\nline\ttab\r", "\x01\x1f control", "<&> html", "é ✓ \u2028\u2029", "", "42", `["not", "an array"]`, " spaced ",
	}
	var textRows, varcharRows, kvTextRows []row
	for _, s := range escapes {
		textRows = append(textRows, row{[]any{s}, jsonStr(s)})
		kvTextRows = append(kvTextRows, row{[]any{s}, s})
		if len(s) <= 20 {
			varcharRows = append(varcharRows, row{[]any{s}, jsonStr(s)})
		}
	}
	textRows = append(textRows, row{[]any{"bare"}, "bare"})
	const uuidLower, uuidUpper = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"
	for _, tc := range []struct {
		name    string
		kv      string   // a kv route with this key type; else a table route over columns
		columns string   // the table route's table
		cols    []string // its key columns, in key order
		rows    []row
	}{
		{name: "kv_text", kv: postgres.KeyText, rows: kvTextRows},
		{name: "kv_uuid", kv: postgres.KeyUUID, rows: []row{{[]any{uuidLower}, uuidLower}}},
		{name: "kv_bigint", kv: postgres.KeyBigint, rows: []row{
			{[]any{int64(9007199254740993)}, "9007199254740993"}, {[]any{int64(-9223372036854775808)}, "-9223372036854775808"}, {[]any{int64(0)}, "0"},
		}},
		{name: "t_text", columns: "k text PRIMARY KEY, v int", cols: []string{"k"}, rows: textRows},
		{name: "t_varchar", columns: "k varchar(20) PRIMARY KEY, v int", cols: []string{"k"}, rows: varcharRows},
		{name: "t_uuid", columns: "k uuid PRIMARY KEY, v int", cols: []string{"k"}, rows: []row{
			{[]any{uuidLower}, uuidLower}, {[]any{"b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}, strings.ToUpper(`"b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"`)},
		}},
		{name: "t_bigint", columns: "k bigint PRIMARY KEY, v int", cols: []string{"k"}, rows: []row{
			{[]any{int64(9007199254740993)}, "9007199254740993"}, {[]any{int64(-9223372036854775808)}, `"-9223372036854775808"`}, {[]any{int64(7)}, "007"},
		}},
		{name: "t_int", columns: "k int PRIMARY KEY, v int", cols: []string{"k"}, rows: []row{
			{[]any{int32(-2147483648)}, "-2147483648"}, {[]any{int32(8)}, "+8"}, {[]any{int32(9)}, "[9]"},
		}},
		{name: "t_smallint", columns: "k smallint PRIMARY KEY, v int", cols: []string{"k"}, rows: []row{{[]any{int16(-32768)}, "-32768"}}},
		{name: "t_int_text", columns: "a int, b text, v int, PRIMARY KEY (b, a)", cols: []string{"b", "a"}, rows: []row{
			{[]any{"x", int32(1)}, jsonKey("x", 1)}, {[]any{`a"b\<&>` + "\n", int32(-2)}, jsonKey(`a"b\<&>`+"\n", -2)},
			{[]any{"", int32(3)}, `["", "3"]`}, {[]any{"é\u2028", int32(4)}, jsonKey("é\u2028", 4)},
		}},
		{name: "t_uuid_bigint", columns: "u uuid, n bigint, v int, PRIMARY KEY (u, n)", cols: []string{"u", "n"}, rows: []row{
			{[]any{uuidLower, int64(9007199254740993)}, jsonKey(uuidUpper, 9007199254740993)},
		}},
		{name: "t_text_text", columns: "a text, b varchar(10), v int, PRIMARY KEY (a, b)", cols: []string{"a", "b"}, rows: []row{
			{[]any{"1", "2"}, jsonKey("1", "2")}, {[]any{`\`, `"`}, jsonKey(`\`, `"`)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pg.Pool(t)
			d, err := postgres.NewDriver("pg", postgres.Options{DSN: pg.DSN(), MaxConns: 4}, backends.Env{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			conn, err := p.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Release()
			for _, fn := range []TriggerFunc{TriggerC, TriggerPLpgSQL} {
				table := tc.name + "_" + string(fn)
				spec := backends.RouteSpec{Name: table, SourceTable: "public." + table}
				cols, set := tc.cols, "v = v + 1"
				insert := "INSERT INTO " + table + " (%s, v) VALUES (%s, 0)"
				if tc.kv != "" {
					spec = backends.RouteSpec{Name: table, Table: table, KeyType: tc.kv, Durability: "unlogged"}
					cols, set = []string{"key"}, `value = '\x01'`
					insert = "INSERT INTO " + table + ` (%s, value, expires_at) VALUES (%s, '\x00', 'infinity')`
				} else {
					testenv.Exec(t, p, "CREATE TABLE "+table+" ("+tc.columns+")")
				}
				b, err := d.Open(ctx, spec) // creates a kv table, reads a source table's key
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				if got, err := AttachUsing(ctx, p, table, fn); err != nil || got != fn {
					t.Fatalf("attach %s with %s: %q, %v", table, fn, got, err)
				}
				route := b.(backends.Fenced)
				params, match := make([]string, len(cols)), make([]string, len(cols))
				for i, c := range cols {
					params[i] = fmt.Sprintf("$%d", i+1)
					match[i] = pgx.Identifier{c}.Sanitize() + " = " + params[i]
				}
				where := " WHERE " + strings.Join(match, " AND ")
				writes := []string{
					fmt.Sprintf(insert, strings.Join(cols, ", "), strings.Join(params, ", ")),
					"UPDATE " + table + " SET " + set + where,
					"DELETE FROM " + table + where,
				}
				for _, r := range tc.rows {
					want, err := route.FenceKey(r.key)
					if err != nil {
						t.Fatalf("route key %q: FenceKey: %v", r.key, err)
					}
					// Each write is logged in a transaction rolled back; the
					// row the UPDATE and the DELETE find is committed between.
					for i, w := range writes {
						if i == 1 {
							if _, err := p.Exec(ctx, writes[0], r.vals...); err != nil {
								t.Fatalf("%s %v: %v", writes[0], r.vals, err)
							}
						}
						lines := loggedBy(t, conn, func(tx pgx.Tx) {
							if tag, err := tx.Exec(ctx, w, r.vals...); err != nil || tag.RowsAffected() != 1 {
								t.Fatalf("%s %v: %v, %v", w, r.vals, tag, err)
							}
						})
						if len(lines) != 1 {
							t.Fatalf("%s %v logged %q, want one row", w, r.vals, lines)
						}
						tbl, raw, _ := strings.Cut(lines[0], " ")
						if tbl != route.FenceTable() {
							t.Errorf("%s trigger logs table %q, the route fences %q", fn, tbl, route.FenceTable())
						}
						var keys []json.RawMessage
						if err := json.Unmarshal([]byte(raw), &keys); err != nil || len(keys) == 0 {
							t.Fatalf("%s trigger logged %q: %v", fn, raw, err)
						}
						for _, k := range keys {
							got, err := fence.KeyOf(k)
							if err != nil || got != want {
								t.Errorf("%s: row %v, route key %q: the %s trigger logs %s, read as %q (%v); FenceKey is %q",
									strings.Fields(w)[0], r.vals, r.key, fn, k, got, err, want)
							}
						}
					}
				}
			}
		})
	}
}
