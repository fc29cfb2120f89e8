package coherence

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/coherence/fence"
	"github.com/pgcache/pgcache/internal/testenv"
)

var pg *testenv.PG

func TestMain(m *testing.M) {
	var err error
	pg, err = testenv.StartPostgres()
	if err != nil {
		fmt.Fprintln(os.Stderr, "coherence tests need PostgreSQL:", err)
		os.Exit(1)
	}
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// startCoordinator runs a coordinator until the test ends and waits until
// its listener is online.
func startCoordinator(t *testing.T, p *pgxpool.Pool, opts CoordinatorOptions) *Coordinator {
	t.Helper()
	if err := Setup(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	c := NewCoordinator(p, opts, zap.NewNop())
	c.Start()
	t.Cleanup(c.Close)
	waitFor(t, "listener online", func() bool { s, _ := c.Listener.State(); return s == StateOnline })
	return c
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fenced waits until a fence for key (or its table, or everything) is
// recorded after tok.
func fenced(t *testing.T, f *Fences, tok fence.Token, table, key string) {
	t.Helper()
	h, tb := f.Hash(table, key), f.Table(table)
	waitFor(t, fmt.Sprintf("fence for %s %s", table, key), func() bool { return !f.Valid(tok, tb, h) })
}

// TestAttachAndFences: every kind of write to an attached table fences its
// keys, with either trigger function.
func TestAttachAndFences(t *testing.T) {
	for _, fn := range []TriggerFunc{TriggerC, TriggerPLpgSQL} {
		t.Run(string(fn), func(t *testing.T) { testAttachAndFences(t, fn) })
	}
}

func testAttachAndFences(t *testing.T, fn TriggerFunc) {
	p := pg.Pool(t)
	kv, pairs := "kv_attach_"+string(fn), "pairs_"+string(fn)
	r := strings.NewReplacer("kv_attach", kv, "pairs", pairs)
	testenv.Exec(t, p, r.Replace(`CREATE TABLE kv_attach (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL)`))
	testenv.Exec(t, p, r.Replace(`CREATE TABLE pairs (a int, b text, v text, PRIMARY KEY (a, b))`))
	ctx := context.Background()
	for _, tbl := range []string{kv, "public." + pairs} {
		for range 2 { // idempotent
			if got, err := AttachUsing(ctx, p, tbl, fn); err != nil || got != fn {
				t.Fatalf("attach %s with %s: got %q, %v", tbl, fn, got, err)
			}
		}
		if ok, err := Attached(ctx, p, tbl); err != nil || !ok {
			t.Fatalf("Attached(%s) = %v, %v", tbl, ok, err)
		}
		if got, err := TriggerOf(ctx, p, tbl); err != nil || got != fn {
			t.Fatalf("TriggerOf(%s) = %q, %v; want %s", tbl, got, err, fn)
		}
	}
	c := startCoordinator(t, p, CoordinatorOptions{})
	f := c.Fences

	for _, tc := range []struct {
		name, sql  string
		table, key string
	}{
		{"insert", `INSERT INTO kv_attach VALUES ('k1', 'v', 'infinity')`, "public.kv_attach", "k1"},
		{"upsert", `INSERT INTO kv_attach VALUES ('k1', 'v2', 'infinity') ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, "public.kv_attach", "k1"},
		{"update", `UPDATE kv_attach SET value = 'v3' WHERE key = 'k1'`, "public.kv_attach", "k1"},
		{"key with quotes and newline", `INSERT INTO kv_attach VALUES (E'we"ird\nkey', 'v', 'infinity')`, "public.kv_attach", "we\"ird\nkey"},
		{"delete", `DELETE FROM kv_attach WHERE key = 'k1'`, "public.kv_attach", "k1"},
		{"composite insert", `INSERT INTO pairs VALUES (1, 'x', 'v')`, "public.pairs", `[1,"x"]`},
		{"composite update", `UPDATE pairs SET v = 'w' WHERE a = 1`, "public.pairs", `[1,"x"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := f.Token()
			testenv.Exec(t, p, r.Replace(tc.sql))
			fenced(t, f, tok, r.Replace(tc.table), tc.key)
		})
	}
	t.Run("truncate", func(t *testing.T) {
		tok := f.Token()
		testenv.Exec(t, p, r.Replace(`TRUNCATE kv_attach`))
		fenced(t, f, tok, "public."+kv, "any key at all")
	})
	t.Run("copy", func(t *testing.T) {
		tok := f.Token()
		conn, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		if _, err := conn.Conn().CopyFrom(ctx, pgx.Identifier{kv}, []string{"key", "value", "expires_at"},
			pgx.CopyFromRows([][]any{{"copied", []byte("v"), time.Now().Add(time.Hour)}})); err != nil {
			t.Fatal(err)
		}
		fenced(t, f, tok, "public."+kv, "copied")
	})
	t.Run("a statement's keys past one notification are split", func(t *testing.T) {
		tok := f.Token()
		tables, reconnects := f.Stats.TableFences.Load(), c.Listener.Stats.Reconnects.Load()
		testenv.Exec(t, p, r.Replace(`INSERT INTO kv_attach SELECT repeat('x', 100) || g, 'v', 'infinity' FROM generate_series(1, 500) g`))
		for _, g := range []int{1, 250, 500} {
			fenced(t, f, tok, "public."+kv, strings.Repeat("x", 100)+strconv.Itoa(g))
		}
		switch {
		case f.Valid(tok, f.Table("public."+kv), f.Hash("public."+kv, "unrelated")):
		case f.Stats.TableFences.Load() != tables:
			t.Fatal("a table fence was published for keys that fit in notifications")
		case c.Listener.Stats.Reconnects.Load() == reconnects:
			t.Fatal("a whole-cache fence was published for keys that fit in notifications")
		default: // the listener reconnected, and fenced everything when it was back: legitimate
			t.Log("the listener reconnected during the statement; its whole-cache fence hides the keys'")
		}
	})
	t.Run("a key too long for a notification fences its table", func(t *testing.T) {
		tok := f.Token()
		before := f.Stats.TableFences.Load()
		testenv.Exec(t, p, r.Replace(`INSERT INTO kv_attach VALUES (repeat('y', 9000), 'v', 'infinity')`))
		fenced(t, f, tok, "public."+kv, "unrelated")
		if f.Stats.TableFences.Load() == before {
			t.Fatal("no table fence recorded")
		}
	})
	t.Run("detach", func(t *testing.T) {
		if err := Detach(ctx, p, kv); err != nil {
			t.Fatal(err)
		}
		if ok, _ := Attached(ctx, p, kv); ok {
			t.Fatal("still attached")
		}
	})
}

func TestAttachRefusesTableWithoutKey(t *testing.T) {
	p := pg.Pool(t)
	testenv.Exec(t, p, `CREATE TABLE nokey (a int)`)
	if err := Attach(context.Background(), p, "nokey"); err == nil || !strings.Contains(err.Error(), "no primary key") {
		t.Fatalf("err = %v", err)
	}
	if err := Attach(context.Background(), p, "missing_table"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v", err)
	}
}

// The LISTEN connection killed: fences go offline, the listener reconnects,
// and comes back online through a whole-cache fence.
func TestListenerReconnects(t *testing.T) {
	p := pg.Pool(t)
	c := startCoordinator(t, p, CoordinatorOptions{ListenerOptions: ListenerOptions{PingInterval: 100 * time.Millisecond}})
	f, l := c.Fences, c.Listener
	tok := f.Token()
	allBefore := f.Stats.AllFences.Load()
	testenv.Exec(t, p, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`)
	waitFor(t, "offline", func() bool { return !f.Online() })
	waitFor(t, "online again", func() bool { s, _ := l.State(); return s == StateOnline })
	if l.Stats.Reconnects.Load() < 1 {
		t.Fatal("no reconnect counted")
	}
	if f.Stats.AllFences.Load() <= allBefore {
		t.Fatal("no whole-cache fence on reconnect")
	}
	if f.Valid(tok, f.Table("t"), f.Hash("t", "k")) {
		t.Fatal("a token from before the reconnect is still valid")
	}
	if lag := time.Duration(l.Stats.FenceLagNanos.Load()); lag <= 0 {
		t.Fatalf("fence lag = %v", lag)
	}
}
