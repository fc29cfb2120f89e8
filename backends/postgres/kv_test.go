package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// TestIncrConcurrent: concurrent increments of one key queue on its row
// lock and none is lost. The full 100 × 1000 runs on the unlogged table;
// a logged table commits each increment with a WAL flush while holding the
// row, so the others get a smaller count that proves the same.
func TestIncrConcurrent(t *testing.T) {
	for _, tc := range []struct {
		durability    string
		workers, each int
	}{
		{DurabilityUnlogged, 100, 1000},
		{DurabilityAsync, 20, 100},
		{DurabilityStandard, 20, 50},
	} {
		t.Run(tc.durability, func(t *testing.T) {
			d := newDriver(t, Options{MaxConns: 8})
			s := openKV(t, d, uniqueTable(t), tc.durability, "")
			// 100,000 increments of one row take seconds on a quiet
			// machine and over a minute on a loaded one: the bound is
			// for a hung test, not a slow one.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			var failed atomic.Pointer[error]
			for range tc.workers {
				wg.Go(func() {
					for range tc.each {
						if _, err := backends.DoIncrBy(ctx, s, "counter", 1); err != nil {
							failed.CompareAndSwap(nil, &err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := failed.Load(); err != nil {
				t.Fatal(*err)
			}
			want := strconv.Itoa(tc.workers * tc.each)
			got, ok, err := s.Get(ctx, "counter")
			if err != nil || !ok || string(got) != want {
				t.Fatalf("counter = %q, %v, %v; want %s", got, ok, err, want)
			}
		})
	}
}

// TestSetNXConcurrent: of 200 concurrent SET NX on one key exactly one
// stores, and the key holds its value.
func TestSetNXConcurrent(t *testing.T) {
	d := newDriver(t, Options{MaxConns: 16})
	s := openKV(t, d, uniqueTable(t), DurabilityAsync, "")
	ctx := testCtx(t)
	const n = 200
	var stored atomic.Int64
	var winner atomic.Value
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			v := "owner-" + strconv.Itoa(i)
			res, err := s.Set(ctx, "lock", []byte(v), backends.SetOptions{Cond: backends.SetIfAbsent, TTL: rel(time.Minute)})
			if err != nil {
				errs <- err
				return
			}
			if res.Stored {
				stored.Add(1)
				winner.Store(v)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := stored.Load(); got != 1 {
		t.Fatalf("%d SET NX stored, want exactly 1", got)
	}
	got, ok, err := s.Get(ctx, "lock")
	if err != nil || !ok || string(got) != winner.Load().(string) {
		t.Fatalf("lock = %q, %v, %v; want the winner %q", got, ok, err, winner.Load())
	}
}

// TestSetGetConcurrent: SET … GET is atomic. Each writer gets back the
// value it replaced, so the values returned plus the last one stored are
// every value written, each exactly once: a chain with no value lost and
// none returned twice.
func TestSetGetConcurrent(t *testing.T) {
	d := newDriver(t, Options{MaxConns: 8})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	const workers, each = 20, 25
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				res, err := s.Set(ctx, "k", []byte(fmt.Sprintf("%d/%d", w, i)), backends.SetOptions{Get: true})
				if err != nil {
					errs <- err
					return
				}
				if res.OldFound {
					mu.Lock()
					seen[string(res.Old)]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	last, ok, err := s.Get(ctx, "k")
	if err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	seen[string(last)]++
	if len(seen) != workers*each {
		t.Fatalf("%d distinct values returned or left, want %d", len(seen), workers*each)
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("value %q seen %d times", v, n)
		}
	}
}

// TestMSetConcurrent: concurrent MSETs of the same keys in opposite orders
// do not deadlock (rows are locked in key order), and one of them wins
// whole.
func TestMSetConcurrent(t *testing.T) {
	d := newDriver(t, Options{MaxConns: 8})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				pairs := make([]backends.KV, len(keys))
				for j, k := range keys {
					if w%2 == 1 {
						k = keys[len(keys)-1-j]
					}
					pairs[j] = backends.KV{Key: k, Val: []byte(fmt.Sprintf("%d/%d", w, i))}
				}
				if err := s.MSet(ctx, pairs); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	vals, err := s.MGet(ctx, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if !bytes.Equal(v, vals[0]) {
			t.Fatalf("MSET not atomic: %q", vals)
		}
	}
}

// TestSetNXTakesOverExpired: an expired row still owns its key until it
// is swept; SET NX treats it as absent (the trap "Postgres as a Key-Value Store" describes).
func TestSetNXTakesOverExpired(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityStandard, "")
	ctx := testCtx(t)
	if _, err := s.Set(ctx, "lease", []byte("old"), backends.SetOptions{TTL: rel(time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	poll(t, "expiry of a 1ms key", func() bool {
		_, ok, err := s.Get(ctx, "lease")
		return err == nil && !ok
	})
	if n := queryInt(t, "SELECT count(*) FROM "+s.table.ident()); n != 1 {
		t.Fatalf("%d rows; the expired row should still be there", n)
	}
	res, err := s.Set(ctx, "lease", []byte("new"), backends.SetOptions{Cond: backends.SetIfAbsent})
	if err != nil || !res.Stored {
		t.Fatalf("SET NX over an expired row = %+v, %v", res, err)
	}
	if got, ok, _ := s.Get(ctx, "lease"); !ok || string(got) != "new" {
		t.Fatalf("Get = %q, %v", got, ok)
	}
}

// TestKeyTypes: uuid and bigint tables store the same values; keys that do
// not parse as the key type are ErrBadKey before any SQL, as are text keys
// PostgreSQL cannot hold.
func TestKeyTypes(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	for _, tc := range []struct {
		keyType string
		good    []string
		bad     []string
	}{
		{KeyText, []string{"a", "user:42:é", ""}, []string{"nul\x00byte", "bad\xffutf8"}},
		{KeyUUID, []string{"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "00000000-0000-0000-0000-000000000000"},
			[]string{"nope", "0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B", "0190a1b2c3d47e5f8a9b0c1d2e3f4a5b", ""}},
		{KeyBigint, []string{"0", "42", "-7", "9223372036854775807", "-9223372036854775808"},
			[]string{"abc", "007", "+1", "-0", "1.5", "9223372036854775808", " 1", ""}},
	} {
		t.Run(tc.keyType, func(t *testing.T) {
			s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, tc.keyType)
			for i, k := range tc.good {
				v := []byte{0, byte(i), 0xff}
				if _, err := s.Set(ctx, k, v, backends.SetOptions{}); err != nil {
					t.Fatalf("Set(%q): %v", k, err)
				}
				if got, ok, err := s.Get(ctx, k); err != nil || !ok || !bytes.Equal(got, v) {
					t.Fatalf("Get(%q) = %q, %v, %v", k, got, ok, err)
				}
			}
			vals, err := s.MGet(ctx, append([]string{tc.good[1]}, tc.good...), nil)
			if err != nil || len(vals) != len(tc.good)+1 || vals[0][1] != 1 || vals[len(vals)-1][1] != byte(len(tc.good)-1) {
				t.Fatalf("MGet = %q, %v", vals, err)
			}
			if n, err := s.Exists(ctx, tc.good); err != nil || n != int64(len(tc.good)) {
				t.Fatalf("Exists = %d, %v", n, err)
			}
			if n, err := backends.DoIncrBy(ctx, s, tc.good[0], 0); !errors.Is(err, backends.ErrNotInteger) {
				t.Fatalf("IncrBy on a binary value = %d, %v", n, err)
			}
			for _, k := range tc.bad {
				checks := map[string]error{}
				_, _, checks["Get"] = s.Get(ctx, k)
				_, checks["Set"] = s.Set(ctx, k, []byte("v"), backends.SetOptions{})
				_, checks["MGet"] = s.MGet(ctx, []string{tc.good[0], k}, nil)
				checks["MSet"] = s.MSet(ctx, []backends.KV{{Key: k, Val: []byte("v")}})
				_, checks["Del"] = s.Del(ctx, []string{k})
				_, checks["IncrBy"] = backends.DoIncrBy(ctx, s, k, 1)
				_, checks["TTL"] = s.TTL(ctx, k)
				for op, err := range checks {
					if !errors.Is(err, backends.ErrBadKey) {
						t.Errorf("%s(%q) = %v, want ErrBadKey", op, k, err)
					}
				}
			}
		})
	}
}

// TestNilValue: a nil value is stored as an empty one (the column is NOT
// NULL), and comes back non-nil.
func TestNilValue(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	if _, err := s.Set(ctx, "k", nil, backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.MSet(ctx, []backends.KV{{Key: "m", Val: nil}}); err != nil {
		t.Fatal(err)
	}
	vals, err := s.MGet(ctx, []string{"k", "m"}, nil)
	if err != nil || vals[0] == nil || vals[1] == nil || len(vals[0])+len(vals[1]) != 0 {
		t.Fatalf("MGet = %#v, %v", vals, err)
	}
}

// TestExistingTable: a table that is there already is used as it is when
// it has the kv layout, and refused, with the difference named and the
// table untouched, when it does not.
func TestExistingTable(t *testing.T) {
	d := newDriver(t, Options{})
	for _, tc := range []struct {
		name, ddl, durability, keyType string
		want                           string // in the error; "" for success
	}{
		{"matches", `CREATE TABLE %s (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL)`,
			DurabilityStandard, "", ""},
		{"matches-uuid-unlogged", `CREATE UNLOGGED TABLE %s (key uuid PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL)`,
			DurabilityUnlogged, KeyUUID, ""},
		{"key-type", `CREATE TABLE %s (key uuid PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL)`,
			DurabilityStandard, "", "column key is uuid, want text"},
		{"collation", `CREATE TABLE %s (key text PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL)`,
			DurabilityStandard, "", `collation "default", want "C"`},
		{"value-type", `CREATE TABLE %s (key text COLLATE "C" PRIMARY KEY, value text NOT NULL, expires_at timestamptz NOT NULL)`,
			DurabilityStandard, "", "column value is text, want bytea"},
		{"timestamp", `CREATE TABLE %s (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, expires_at timestamp NOT NULL)`,
			DurabilityStandard, "", "column expires_at is timestamp without time zone"},
		{"nullable", `CREATE TABLE %s (key text COLLATE "C" PRIMARY KEY, value bytea, expires_at timestamptz NOT NULL)`,
			DurabilityStandard, "", "column value allows NULL"},
		{"extra-column", `CREATE TABLE %s (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL, note text)`,
			DurabilityStandard, "", `has column "note" where the kv layout has "kind"`},
		{"no-pk", `CREATE TABLE %s (key text COLLATE "C" NOT NULL, value bytea NOT NULL, expires_at timestamptz NOT NULL)`,
			DurabilityStandard, "", "does not have key as its primary key"},
		{"unlogged-for-async", `CREATE UNLOGGED TABLE %s (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL)`,
			DurabilityAsync, "", "is UNLOGGED, but durability async needs a logged table"},
		{"logged-for-unlogged", `CREATE TABLE %s (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL)`,
			DurabilityUnlogged, "", "is a logged table, but durability unlogged needs an UNLOGGED one"},
		{"view", `CREATE VIEW %s AS SELECT 'k'::text COLLATE "C" AS key, ''::bytea AS value, now() AS expires_at`,
			DurabilityStandard, "", "is not an ordinary table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := uniqueTable(t)
			sql(t, fmt.Sprintf(tc.ddl, table))
			_, err := d.Open(testCtx(t), backends.RouteSpec{Name: tc.name, Table: table, Durability: tc.durability, KeyType: tc.keyType})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Open = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTableMismatch) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v\nwant ErrTableMismatch naming %q", err, tc.want)
			}
			if errors.Is(err, backends.ErrUnavailable) {
				t.Fatalf("a mismatch is not unavailability: %v", err)
			}
		})
	}
}

// TestCreatedTable: the table a route creates has the layout and storage
// options of "Postgres as a Key-Value Store", and the persistence of its durability.
func TestCreatedTable(t *testing.T) {
	d := newDriver(t, Options{})
	for _, durability := range []string{DurabilityStandard, DurabilityAsync, DurabilityUnlogged} {
		s := openKV(t, d, uniqueTable(t), durability, KeyBigint)
		var persistence string
		var options []string
		ctx := testCtx(t)
		err := d.pool.QueryRow(ctx, `SELECT relpersistence::text, reloptions FROM pg_class WHERE oid = to_regclass($1)`,
			s.table.ident()).Scan(&persistence, &options)
		if err != nil {
			t.Fatal(err)
		}
		want := "p"
		if durability == DurabilityUnlogged {
			want = "u"
		}
		if persistence != want || strings.Join(options, ",") != "fillfactor=70,autovacuum_vacuum_scale_factor=0.01" {
			t.Errorf("%s: relpersistence %s, reloptions %v", durability, persistence, options)
		}
		if n := queryInt(t, `SELECT count(*) FROM pg_index WHERE indrelid = to_regclass($1)`, s.table.ident()); n != 1 {
			t.Errorf("%s: %d indexes, want only the primary key", durability, n)
		}
	}
}

// TestAsyncSessions: the async route's sessions commit asynchronously, the
// others synchronously.
func TestAsyncSessions(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	async := openKV(t, d, uniqueTable(t), DurabilityAsync, "")
	std := openKV(t, d, uniqueTable(t), DurabilityStandard, "")
	for _, tc := range []struct {
		s    *KV
		want string
	}{{async, "off"}, {std, "on"}} {
		var got string
		if err := tc.s.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s route: synchronous_commit = %s, want %s", tc.s.durability, got, tc.want)
		}
	}
}

// TestDroppedTable: a kv table dropped under a route is created again by
// the next request after the one that failed.
func TestDroppedTable(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityStandard, "")
	ctx := testCtx(t)
	sql(t, "DROP TABLE "+s.table.ident())
	if _, _, err := s.Get(ctx, "k"); err == nil {
		t.Fatal("Get on a dropped table succeeded")
	}
	if _, err := s.Set(ctx, "k", []byte("v"), backends.SetOptions{}); err != nil {
		t.Fatalf("Set after the table was dropped: %v", err)
	}
}

func rel(d time.Duration) backends.TTL { return backends.TTL{Mode: backends.TTLRelative, D: d} }

// poll waits for cond, up to 5s: expiry and the statistics views follow the
// database's clock, which the test does not drive.
func poll(t testing.TB, what string, cond func() bool) { pollFor(t, 5*time.Second, what, cond) }

// pollFor waits for cond, checking every 20ms, up to limit.
func pollFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for range int(limit / (20 * time.Millisecond)) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v", what, limit)
}

// TestMGetWithTTL: one read of many keys returns each live row with its
// remaining lifetime by the database clock, nil for an absent or expired
// key, in the order asked, for every key type.
func TestMGetWithTTL(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	for _, tc := range []struct {
		keyType                      string
		persistent, expiring, absent string
	}{
		{KeyText, "p", "e", "x"},
		{KeyUUID, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d"},
		{KeyBigint, "1", "-2", "3"},
	} {
		t.Run(tc.keyType, func(t *testing.T) {
			s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, tc.keyType)
			if _, err := s.Set(ctx, tc.persistent, []byte("forever"), backends.SetOptions{}); err != nil {
				t.Fatal(err)
			}
			ttl := backends.TTL{Mode: backends.TTLRelative, D: time.Hour}
			if _, err := s.Set(ctx, tc.expiring, []byte("an hour"), backends.SetOptions{TTL: ttl}); err != nil {
				t.Fatal(err)
			}
			got, err := s.MGetWithTTL(ctx, []string{tc.expiring, tc.absent, tc.persistent, tc.expiring}, nil)
			if err != nil || len(got) != 4 {
				t.Fatalf("MGetWithTTL = %v, %v", got, err)
			}
			if string(got[0].Val) != "an hour" || got[0].TTL <= 59*time.Minute || got[0].TTL > time.Hour || got[3].TTL != got[0].TTL {
				t.Errorf("expiring key: %q, ttl %v (and %v again)", got[0].Val, got[0].TTL, got[3].TTL)
			}
			if got[1].Val != nil {
				t.Errorf("absent key: %q", got[1].Val)
			}
			if string(got[2].Val) != "forever" || got[2].TTL != backends.TTLPersistent {
				t.Errorf("persistent key: %q, ttl %v", got[2].Val, got[2].TTL)
			}
			if _, err := s.MGetWithTTL(ctx, []string{tc.persistent, "not a " + tc.keyType + "\x00"}, nil); !errors.Is(err, backends.ErrBadKey) {
				t.Errorf("a bad key: %v, want ErrBadKey", err)
			}
		})
	}
}

// TestGetsShareQueries: with more readers than pool connections, reads
// share queries, and each reader still gets exactly its own key's value
// (or absent), through Get and GetWithTTL alike.
func TestGetsShareQueries(t *testing.T) {
	d := newDriver(t, Options{MaxConns: 2})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	const keys = 500
	pairs := make([]backends.KV, 0, keys)
	for i := range keys {
		pairs = append(pairs, backends.KV{Key: fmt.Sprint("k", i), Val: []byte(fmt.Sprint("v", i))})
	}
	if err := s.MSet(ctx, pairs); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := range 100 {
				n := (w*131 + i*17) % (keys + 50) // some absent
				k, want := fmt.Sprint("k", n), fmt.Sprint("v", n)
				var got []byte
				var ok bool
				var err error
				if i%2 == 0 {
					got, ok, err = s.Get(ctx, k)
				} else {
					got, _, ok, err = s.GetWithTTL(ctx, k)
				}
				switch {
				case err != nil:
					t.Error(err)
					return
				case n >= keys && ok:
					t.Errorf("%s: absent key read as %q", k, got)
				case n < keys && (!ok || string(got) != want):
					t.Errorf("%s = %q, %v, want %q", k, got, ok, want)
				}
			}
		})
	}
	wg.Wait()
	if s.gets.shared.Load() == 0 || s.getTTLs.shared.Load() == 0 {
		t.Errorf("no read shared a query (Get %d, GetWithTTL %d) with 32 readers on 2 connections",
			s.gets.shared.Load(), s.getTTLs.shared.Load())
	}
	if got, want := d.sharedReads()[s.table.label()], s.gets.shared.Load()+s.getTTLs.shared.Load(); got != want {
		t.Errorf("pgcache_postgres_shared_reads_total for the table = %d, want %d", got, want)
	}
}

// TestSetsShareStatements: with more writers than pool connections, plain
// SETs share upserts, and every acknowledged SET is stored with its own
// value and lifetime: a key's final value is the last one its only writer
// set, a SET with EX expires, and a concurrent SET NX still has one winner.
func TestSetsShareStatements(t *testing.T) {
	d := newDriver(t, Options{MaxConns: 2})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	const writers, rounds = 32, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				k := fmt.Sprint("w", w)
				opts := backends.SetOptions{}
				if w%4 == 0 {
					opts.TTL = backends.TTL{Mode: backends.TTLRelative, D: time.Hour}
				}
				if _, err := s.Set(ctx, k, []byte(fmt.Sprint(i)), opts); err != nil {
					t.Error(err)
					return
				}
				// Two writers on one key: either order is fine, but the
				// value must be one of theirs.
				if _, err := s.Set(ctx, "shared", []byte(fmt.Sprint(w)), backends.SetOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if s.sets.shared.Load() == 0 {
		t.Fatalf("no SET shared an upsert with %d writers on 2 connections", writers)
	}
	for w := range writers {
		k := fmt.Sprint("w", w)
		v, ok, err := s.Get(ctx, k)
		if err != nil || !ok || string(v) != fmt.Sprint(rounds-1) {
			t.Errorf("%s = %q, %v, %v; want %d", k, v, ok, err, rounds-1)
		}
		ttl, err := s.TTL(ctx, k)
		switch {
		case err != nil:
			t.Error(err)
		case w%4 == 0 && (ttl <= 59*time.Minute || ttl > time.Hour):
			t.Errorf("%s: TTL %v, want about an hour", k, ttl)
		case w%4 != 0 && ttl != backends.TTLPersistent:
			t.Errorf("%s: TTL %v, want none", k, ttl)
		}
	}
	if v, ok, err := s.Get(ctx, "shared"); err != nil || !ok {
		t.Errorf("shared = %q, %v, %v", v, ok, err)
	}
	if got, want := d.Info(ctx), fmt.Sprint(s.sets.shared.Load()); !slices.Contains(got, [2]string{"backend_" + d.name + "_shared_sets", want}) {
		t.Errorf("INFO has no backend_%s_shared_sets:%s in %v", d.name, want, got)
	}

	// A short EX through a shared upsert expires.
	for w := range writers {
		wg.Go(func() {
			opts := backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLRelative, D: 200 * time.Millisecond}}
			if _, err := s.Set(ctx, fmt.Sprint("short", w), []byte("x"), opts); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	time.Sleep(400 * time.Millisecond)
	for w := range writers {
		if v, ok, err := s.Get(ctx, fmt.Sprint("short", w)); err != nil || ok {
			t.Errorf("short%d after its EX: %q, %v, %v; want absent", w, v, ok, err)
		}
	}
}
