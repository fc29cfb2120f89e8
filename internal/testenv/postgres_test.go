package testenv

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestPostgresLifecycle(t *testing.T) {
	pg := Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ setting, want string }{
		{"fsync", "on"},
		{"synchronous_commit", "on"},
		{"shared_buffers", "256MB"},
		{"max_wal_size", "4GB"},
		{"wal_buffers", "16MB"},
		{"current_database", PostgresDatabase},
	} {
		q := "SHOW " + tc.setting
		if tc.setting == "current_database" {
			q = "SELECT current_database()"
		}
		var got string
		if err := conn.QueryRow(ctx, q).Scan(&got); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got != tc.want {
			t.Errorf("%s = %q, want %q", tc.setting, got, tc.want)
		}
	}
	_, err = conn.Exec(ctx, `
		CREATE TABLE logged (n int);
		CREATE UNLOGGED TABLE unlogged (n int);
		INSERT INTO logged VALUES (1);
		INSERT INTO unlogged VALUES (1);`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}

	count := func(table string) int {
		t.Helper()
		conn, err := pgx.Connect(ctx, pg.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// A clean stop keeps UNLOGGED rows; a crash empties the table.
	port := pg.Port
	if err := pg.Shutdown(ShutdownFast); err != nil {
		t.Fatal(err)
	}
	if pg.Running() {
		t.Fatal("Running after Shutdown")
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	if pg.Port != port {
		t.Fatalf("port changed across restart: %d -> %d", port, pg.Port)
	}
	if got := count("unlogged"); got != 1 {
		t.Fatalf("unlogged rows after a fast stop = %d, want 1", got)
	}
	if err := pg.Shutdown(ShutdownImmediate); err != nil {
		t.Fatal(err)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	if got, want := count("unlogged"), 0; got != want {
		t.Fatalf("unlogged rows after a crash = %d, want %d", got, want)
	}
	if got := count("logged"); got != 1 {
		t.Fatalf("logged rows after a crash = %d, want 1", got)
	}
	if err := pg.Start(); err == nil {
		t.Fatal("Start of a running server succeeded")
	}

	// The client programs reach the server through Env.
	out, err := pg.ClientCommand(ctx, "psql", "-XAtc", "SELECT 40 + 2").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "42" {
		t.Fatalf("psql = %q, %v", out, err)
	}
	if _, err := os.Stat(pg.Pgbench()); err != nil {
		t.Fatalf("pgbench: %v", err)
	}

	dir := pg.Dir
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory %s left behind: %v", dir, err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := pg.Start(); err == nil {
		t.Fatal("Start after Stop succeeded")
	}
}

func TestPostgresNotInstalled(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(PostgresBinDirEnv, empty)
	t.Setenv("PATH", empty)
	_, err := StartPostgres()
	var nie *NotInstalledError
	if !errors.As(err, &nie) {
		t.Fatalf("StartPostgres without binaries = %v, want a *NotInstalledError", err)
	}
	if !strings.Contains(err.Error(), "apt-get install postgresql") || nie.Program != "initdb" {
		t.Fatalf("error %q does not name initdb and the install command", err)
	}
}

func TestFreePort(t *testing.T) {
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if p <= 0 || p > 65535 {
		t.Fatalf("FreePort = %d", p)
	}
}
