package postgres

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap/zaptest"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/decode"
	"github.com/pgcache/pgcache/internal/testenv"
)

// pg is the package's PostgreSQL server, started by TestMain.
var pg *testenv.PG

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run()) // a fuzz worker runs only FuzzParseRowKey, which needs no server
	}
	var err error
	if pg, err = testenv.StartPostgres(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// testCtx bounds a test's calls.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newDriver returns a driver on the test database; the sweeper is off
// unless opts says otherwise.
func newDriver(t testing.TB, opts Options) *Driver {
	t.Helper()
	if opts.DSN == "" {
		opts.DSN = pg.DSN()
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = decode.Duration(-1)
	}
	d, err := NewDriver("pg", opts, backends.Env{Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

var tableSeq atomic.Int64

// uniqueTable names a table after the running test.
func uniqueTable(t testing.TB) string {
	name := strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "_"))
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("t_%s_%d", name, tableSeq.Add(1))
}

// openKV opens a kv route on table.
func openKV(t testing.TB, d *Driver, table, durability, keyType string) *KV {
	t.Helper()
	b, err := d.Open(testCtx(t), backends.RouteSpec{Name: table, Table: table, Durability: durability, KeyType: keyType})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.(*KV)
}

// sql runs statements on a connection of its own.
func sql(t testing.TB, stmts string, args ...any) {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, stmts, args...); err != nil {
		t.Fatalf("%s: %v", stmts, err)
	}
}

// queryInt runs a query that returns one integer.
func queryInt(t testing.TB, q string, args ...any) int64 {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
