package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// openTableRoute opens a table route on schema.table.
func openTableRoute(t *testing.T, d *Driver, source string) *Table {
	t.Helper()
	b, err := d.Open(testCtx(t), backends.RouteSpec{Name: source, SourceTable: source})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.(*Table)
}

// row decodes a JSON row.
func row(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return m
}

func TestTableKeys(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	for _, tc := range []struct {
		name, pk string
		insert   string   // VALUES of two rows: (pk…, note)
		keys     []string // spellings of the first row's key
		second   string   // the second row's key
		bad      []string // keys that cannot name a row
		absent   []string // keys that name no row (close to the first one)
	}{
		{"int", "id int PRIMARY KEY", "(42, 'a'), (7, 'b')",
			[]string{"42", "[42]", `"42"`, `["42"]`}, "7",
			[]string{"abc", "4.2", "[1,2]", "null", "[null]", "[{}]", "99999999999", "[]", ""}, []string{"43", "[43]"}},
		{"bigint", "id bigint PRIMARY KEY", "(9007199254740993, 'a'), (-1, 'b')",
			[]string{"9007199254740993", "[9007199254740993]", `"9007199254740993"`}, "-1",
			[]string{"x", "1e3", "99999999999999999999"}, []string{"9007199254740992"}},
		{"uuid", "id uuid PRIMARY KEY", "('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 'a'), ('00000000-0000-0000-0000-000000000001', 'b')",
			[]string{"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", `"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"`, `["0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"]`},
			"00000000-0000-0000-0000-000000000001",
			[]string{"not-a-uuid", "42", "[true]"}, []string{"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c"}},
		{"text", "id text PRIMARY KEY", "('abc', 'a'), ('x y', 'b')",
			[]string{"abc", `"abc"`, `["abc"]`}, `x y`,
			[]string{"[1,2]", "nul\x00", "\xff"}, []string{"ABC", "abc "}},
		{"composite", "a int, b text, PRIMARY KEY (a, b)", "(1, 'x', 'a'), (2, 'y', 'b')",
			[]string{`[1,"x"]`, `["1","x"]`, ` [1, "x"] `[1:]}, `[2,"y"]`,
			[]string{`1`, `[1]`, `[1,"x",3]`, `["x",1]`, `{"a":1}`, `1,x`}, []string{`[1,"y"]`}},
		{"varchar", "id varchar(3) PRIMARY KEY", "('abc', 'a'), ('xy', 'b')",
			[]string{"abc", `["abc"]`}, "xy", []string{"\xff"}, []string{"abcdef", "ab"}},
		{"char", "id char(5) PRIMARY KEY", "('abc', 'a'), ('x', 'b')",
			[]string{"abc", "abc  ", `"abc"`}, "x", []string{"nul\x00"}, []string{"abcdefg", "ab"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			source := "public." + uniqueTable(t)
			sql(t, fmt.Sprintf("CREATE TABLE %s (%s, note text)", source, tc.pk))
			sql(t, fmt.Sprintf("INSERT INTO %s VALUES %s", source, tc.insert))
			s := openTableRoute(t, d, source)
			for _, k := range tc.keys {
				v, ok, err := s.Get(ctx, k)
				if err != nil || !ok || row(t, v)["note"] != "a" {
					t.Fatalf("Get(%s) = %s, %v, %v", k, v, ok, err)
				}
			}
			vals, err := s.MGet(ctx, []string{tc.second, tc.keys[0], tc.keys[len(tc.keys)-1], tc.second}, nil)
			if err != nil || len(vals) != 4 {
				t.Fatalf("MGet = %q, %v", vals, err)
			}
			for i, want := range []string{"b", "a", "a", "b"} {
				if row(t, vals[i])["note"] != want {
					t.Fatalf("MGet[%d] = %s, want note %s", i, vals[i], want)
				}
			}
			if n, err := s.Exists(ctx, []string{tc.keys[0], tc.second, tc.keys[0]}); err != nil || n != 3 {
				t.Fatalf("Exists = %d, %v", n, err)
			}
			if d, err := s.TTL(ctx, tc.keys[0]); err != nil || d != backends.TTLPersistent {
				t.Fatalf("TTL = %v, %v", d, err)
			}
			for _, k := range tc.absent {
				if v, ok, err := s.Get(ctx, k); err != nil || ok {
					t.Errorf("Get(%q) = %s, %v, %v; want absent", k, v, ok, err)
				}
			}
			for _, k := range tc.bad {
				_, _, err := s.Get(ctx, k)
				if !errors.Is(err, backends.ErrBadKey) {
					t.Errorf("Get(%q) = %v, want ErrBadKey", k, err)
				}
				if _, err := s.MGet(ctx, []string{tc.second, k}, nil); !errors.Is(err, backends.ErrBadKey) {
					t.Errorf("MGet(%q) = %v, want ErrBadKey", k, err)
				}
			}
			if v, ok, err := backends.DoGetDel(ctx, s, tc.keys[0]); err != nil || !ok || row(t, v)["note"] != "a" {
				t.Fatalf("GetDel = %s, %v, %v", v, ok, err)
			}
			if d, err := s.TTL(ctx, tc.keys[0]); err != nil || d != backends.TTLMissing {
				t.Fatalf("TTL after GetDel = %v, %v", d, err)
			}
			if n, err := s.Del(ctx, []string{tc.second, tc.second, tc.keys[0]}); err != nil || n != 1 {
				t.Fatalf("Del = %d, %v", n, err)
			}
		})
	}
}

func TestTableWrites(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	source := "public." + uniqueTable(t)
	sql(t, fmt.Sprintf(`CREATE TABLE %s (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		name text NOT NULL,
		score numeric,
		tags text[],
		meta jsonb,
		upper_name text GENERATED ALWAYS AS (upper(name)) STORED)`, source))
	s := openTableRoute(t, d, source)

	res, err := s.Set(ctx, "1", []byte(`{"name":"ann","score":1.5,"tags":["a","b"],"meta":{"x":1}}`), backends.SetOptions{})
	if err != nil || !res.Stored {
		t.Fatalf("Set (insert) = %+v, %v", res, err)
	}
	got, ok, err := s.Get(ctx, "1")
	want := map[string]any{"id": 1.0, "name": "ann", "score": 1.5, "tags": []any{"a", "b"},
		"meta": map[string]any{"x": 1.0}, "upper_name": "ANN"}
	if err != nil || !ok || !reflect.DeepEqual(row(t, got), want) {
		t.Fatalf("Get = %s, %v, %v\nwant %v", got, ok, err, want)
	}

	// An update replaces the row: a column left out becomes NULL; the key
	// wins over an id in the object; the generated column follows.
	if _, err := s.Set(ctx, "1", []byte(`{"id":99,"name":"bob","upper_name":"ignored"}`), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _, _ = s.Get(ctx, "1")
	want = map[string]any{"id": 1.0, "name": "bob", "score": nil, "tags": nil, "meta": nil, "upper_name": "BOB"}
	if !reflect.DeepEqual(row(t, got), want) {
		t.Fatalf("after update: %s", got)
	}
	if n := queryInt(t, "SELECT count(*) FROM "+source); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}

	// NX and XX.
	for _, tc := range []struct {
		key  string
		cond backends.SetCond
		want bool
	}{
		{"1", backends.SetIfAbsent, false},
		{"2", backends.SetIfPresent, false},
		{"2", backends.SetIfAbsent, true},
		{"2", backends.SetIfPresent, true},
	} {
		res, err := s.Set(ctx, tc.key, []byte(`{"name":"n`+tc.key+`"}`), backends.SetOptions{Cond: tc.cond})
		if err != nil || res.Stored != tc.want {
			t.Fatalf("Set %s cond %d = %+v, %v; want stored %v", tc.key, tc.cond, res, err, tc.want)
		}
	}

	// MSet is all or nothing: a row that breaks NOT NULL undoes the batch.
	err = s.MSet(ctx, []backends.KV{{Key: "10", Val: []byte(`{"name":"ten"}`)}, {Key: "11", Val: []byte(`{"score":3}`)}})
	if !errors.Is(err, backends.ErrBadValue) {
		t.Fatalf("MSet with a NULL name = %v, want ErrBadValue", err)
	}
	if n, _ := s.Exists(ctx, []string{"10"}); n != 0 {
		t.Fatal("MSet wrote part of a failed batch")
	}
	if err := s.MSet(ctx, []backends.KV{{Key: "10", Val: []byte(`{"name":"ten"}`)}, {Key: "11", Val: []byte(`{"name":"eleven"}`)}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Exists(ctx, []string{"10", "11"}); n != 2 {
		t.Fatalf("MSet wrote %d rows, want 2", n)
	}

	for _, tc := range []struct {
		val  string
		want error
	}{
		{`[1]`, backends.ErrBadValue},
		{`not json`, backends.ErrBadValue},
		{`{"nope":1,"name":"x"}`, backends.ErrBadValue},
		{`{"name":"x","score":"many"}`, backends.ErrBadValue},
		{`{"score":1}`, backends.ErrBadValue}, // name NOT NULL
	} {
		if _, err := s.Set(ctx, "3", []byte(tc.val), backends.SetOptions{}); !errors.Is(err, tc.want) {
			t.Errorf("Set(%s) = %v, want %v", tc.val, err, tc.want)
		}
	}
	if _, err := s.Set(ctx, "x", []byte(`{"name":"x"}`), backends.SetOptions{}); !errors.Is(err, backends.ErrBadKey) {
		t.Errorf("Set with a text key on a bigint table = %v, want ErrBadKey", err)
	}

	unsupported := map[string]error{}
	_, unsupported["IncrBy"] = backends.DoIncrBy(ctx, s, "1", 1)
	_, unsupported["Expire"] = backends.DoExpire(ctx, s, "1", rel(time.Minute), backends.ExpireAlways)
	_, unsupported["SetTTL"] = s.Set(ctx, "1", []byte(`{"name":"x"}`), backends.SetOptions{TTL: rel(time.Minute)})
	_, unsupported["SetGet"] = s.Set(ctx, "1", []byte(`{"name":"x"}`), backends.SetOptions{Get: true})
	_, _, unsupported["GetEx"] = backends.DoGetEx(ctx, s, "1", rel(time.Minute))
	for op, err := range unsupported {
		if !errors.Is(err, backends.ErrUnsupported) {
			t.Errorf("%s = %v, want ErrUnsupported", op, err)
		}
	}
	if changed, err := backends.DoExpire(ctx, s, "1", backends.TTL{Mode: backends.TTLNone}, backends.ExpireAlways); err != nil || changed {
		t.Errorf("PERSIST = %v, %v; want false: rows have no expiry", changed, err)
	}
	if v, ok, err := backends.DoGetEx(ctx, s, "1", backends.TTL{Mode: backends.TTLNone}); err != nil || !ok || row(t, v)["name"] != "bob" {
		t.Errorf("GETEX PERSIST = %s, %v, %v", v, ok, err)
	}
}

// TestTableRefused: a route over a table without a primary key, a view or
// a missing table fails at Open with the reason.
func TestTableRefused(t *testing.T) {
	d := newDriver(t, Options{})
	nopk := "public." + uniqueTable(t)
	view := "public." + uniqueTable(t)
	sql(t, "CREATE TABLE "+nopk+" (id int, note text)")
	sql(t, "CREATE VIEW "+view+" AS SELECT 1 AS id")
	for _, tc := range []struct {
		source string
		want   error
		text   string
	}{
		{nopk, ErrTableMismatch, "has no primary key"},
		{view, ErrTableMismatch, "is not a table"},
		{"public.no_such_table", ErrNoTable, "no_such_table"},
	} {
		_, err := d.Open(testCtx(t), backends.RouteSpec{Name: "r", SourceTable: tc.source})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("Open(%s) = %v, want %v naming %q", tc.source, err, tc.want, tc.text)
		}
	}
	for _, spec := range []backends.RouteSpec{
		{Name: "r", SourceTable: "no_schema"},
		{Name: "r", SourceTable: "public.t", KeyType: "uuid"},
		{Name: "r", SourceTable: "public.t", Durability: "unlogged"},
		{Name: "r", SourceTable: "public.t", Table: "kv"},
		{Name: "r"},
		{Name: "r", Table: "kv", Durability: "fast"},
		{Name: "r", Table: "kv", KeyType: "int"},
		{Name: "r", Table: "a.b.c"},
	} {
		var specErr *backends.SpecError
		if _, err := d.Open(testCtx(t), spec); !errors.As(err, &specErr) {
			t.Errorf("Open(%+v) = %v, want a SpecError", spec, err)
		}
	}
}

func TestCRUDPrefix(t *testing.T) {
	d := newDriver(t, Options{})
	if got := d.Database(); got != "pgcache" {
		t.Fatalf("Database() = %q", got)
	}
	source := "public." + uniqueTable(t)
	sql(t, "CREATE TABLE "+source+" (id int PRIMARY KEY)")
	s := openTableRoute(t, d, source)
	if got, want := s.CRUDPrefix(), "CRUD:pgcache."+source+":"; got != want {
		t.Fatalf("CRUDPrefix = %q, want %q", got, want)
	}
	if got := CRUDPrefix("app", "public", "users"); got != "CRUD:app.public.users:" {
		t.Fatalf("CRUDPrefix = %q", got)
	}
	// A key made of nothing but key columns still upserts.
	if _, err := s.Set(testCtx(t), "5", []byte(`{}`), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Set(testCtx(t), "5", []byte(`{}`), backends.SetOptions{Cond: backends.SetIfPresent}); err != nil || !res.Stored {
		t.Fatalf("SET XX on a key-only table = %+v, %v", res, err)
	}
}

// TestTableGetsShareQueries: concurrent row reads share queries when the
// pool is busy; a key that only the database refuses ("abc" for an int
// key, 99999999999 out of its range) fails its own read, never the others
// that shared its query.
func TestTableGetsShareQueries(t *testing.T) {
	d := newDriver(t, Options{MaxConns: 2})
	table := "public." + uniqueTable(t)
	sql(t, "CREATE TABLE "+table+" (id int PRIMARY KEY, note text); INSERT INTO "+table+" SELECT g, 'n' || g FROM generate_series(1, 300) g")
	s := openTableRoute(t, d, table)
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := range 60 {
				n := (w*37+i*11)%330 + 1 // 301..330 absent
				key := strconv.Itoa(n)
				switch {
				case i%10 == 3:
					key = "abc"
				case i%10 == 7:
					key = "99999999999"
				}
				got, ok, err := s.Get(ctx, key)
				switch {
				case key == "abc" || key == "99999999999":
					if !errors.Is(err, backends.ErrBadKey) {
						t.Errorf("Get(%s) = %q, %v, want ErrBadKey", key, got, err)
					}
				case err != nil:
					t.Errorf("Get(%s): %v", key, err)
				case n > 300 && ok:
					t.Errorf("Get(%s): absent row read as %s", key, got)
				case n <= 300 && (!ok || row(t, got)["note"] != "n"+key):
					t.Errorf("Get(%s) = %s, %v", key, got, ok)
				}
			}
		})
	}
	wg.Wait()
	if s.gets.shared.Load() == 0 {
		t.Error("no read shared a query with 32 readers on 2 connections")
	}
}

// CanonicalKey: the JSON spellings of a row's key become the one its fence
// key takes; a key that would name another row that way, or none, stays as
// it came.
func TestCanonicalKey(t *testing.T) {
	d := newDriver(t, Options{})
	for _, tc := range []struct {
		name, pk string
		canon    map[string]string // key -> its canonical spelling
	}{
		{"bigint", "id bigint PRIMARY KEY", map[string]string{
			"42": "42", "[42]": "42", `"42"`: "42", `["42"]`: "42", "042": "042", "abc": "abc", `"abc"`: `"abc"`}},
		{"text", "id text PRIMARY KEY", map[string]string{
			"abc": "abc", `"abc"`: "abc", `["abc"]`: "abc",
			`"[x]"`: `"[x]"`, `"\"q\""`: `"\"q\""`, `"null"`: `"null"`}},
		{"composite", "a int, b text, PRIMARY KEY (a, b)", map[string]string{
			`[1, "x"]`: `[1,"x"]`, `["1","x"]`: `[1,"x"]`, `[1,"x"]`: `[1,"x"]`, `[1]`: `[1]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			source := "public." + uniqueTable(t)
			sql(t, fmt.Sprintf("CREATE TABLE %s (%s, note text)", source, tc.pk))
			s := openTableRoute(t, d, source)
			for key, want := range tc.canon {
				if got := s.CanonicalKey(key); got != want {
					t.Errorf("CanonicalKey(%s) = %s, want %s", key, got, want)
				}
			}
		})
	}
}
