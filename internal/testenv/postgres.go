package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresInstall is the Debian command that provides the PostgreSQL server
// (initdb, postgres, pg_ctl, pgbench) and its client (psql).
const PostgresInstall = "apt-get install postgresql"

// PostgresDatabase is the database StartPostgres creates for its callers.
const PostgresDatabase = "pgcache"

// postgresDirPrefix names the servers' temporary directories.
const postgresDirPrefix = "pgcache-pg-"

// postgresSuperuser is the role initdb creates; trust authentication on
// 127.0.0.1 lets it in without a password.
const postgresSuperuser = "postgres"

// postgresSettings are appended to postgresql.conf. Durability stays on
// (fsync, synchronous_commit, full_page_writes): the tests and benchmarks
// measure what the durabilities cost. The rest is the published comparison's tuning where
// it does not change behaviour: bigger buffers and fewer checkpoints.
var postgresSettings = []string{
	"listen_addresses = '127.0.0.1'",
	"fsync = on",
	"synchronous_commit = on",
	"full_page_writes = on",
	"shared_buffers = 256MB",
	"max_wal_size = 4GB",
	"checkpoint_completion_target = 0.9",
	"wal_buffers = 16MB",
	"max_connections = 200",
	"log_min_messages = warning",
	"log_checkpoints = off",
}

// Startup and shutdown bounds: generous for a loaded CI machine, but a
// server that does not come up fails the test instead of hanging it.
const (
	postgresStartTimeout = 60 * time.Second
	postgresStopTimeout  = 60 * time.Second
	postgresPollInterval = 50 * time.Millisecond
)

// ShutdownMode is how PostgreSQL is asked to stop (pg_ctl stop -m).
type ShutdownMode int

const (
	// ShutdownFast rolls back open transactions, checkpoints and exits: a
	// clean stop, UNLOGGED tables keep their rows.
	ShutdownFast ShutdownMode = iota
	// ShutdownImmediate exits without a checkpoint, as a crash: the next
	// start runs recovery and UNLOGGED tables come back empty.
	ShutdownImmediate
)

// PG is a throwaway PostgreSQL server listening on 127.0.0.1:Port, with its
// data directory, unix socket and log under Dir.
type PG struct {
	BinDir   string // the PostgreSQL binaries (initdb, postgres, pgbench, psql)
	Dir      string // removed by Stop
	DataDir  string
	LogFile  string
	Port     int
	User     string // the superuser role
	Database string // created at the first start

	acct *Account // nil: runs as the current user

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	stopped bool          // Stop has run: the directory is gone
}

// Postgres starts a server for one test (or benchmark) and stops it when the
// test ends. Prefer StartPostgres in TestMain: one server per package.
func Postgres(t testing.TB) *PG {
	t.Helper()
	pg, err := StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.Stop(); err != nil {
			t.Error(err)
		}
	})
	return pg
}

// Pool is a pool of up to 8 connections to the server's database, closed
// when the test ends.
func (pg *PG) Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Exec runs a statement on p, within 30 seconds, and fails the test if it
// fails.
func Exec(t testing.TB, p *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// StartPostgres initialises a cluster in a temporary directory, starts it,
// waits until it accepts connections and creates PostgresDatabase. As root it
// runs the server as the `postgres` user.
func StartPostgres() (*PG, error) {
	bin, err := PostgresBinDir()
	if err != nil {
		return nil, err
	}
	acct, err := ServerAccount("postgres", PostgresInstall)
	if err != nil {
		return nil, err
	}
	removeStale(postgresDirPrefix, filepath.Join("data", "postmaster.pid"))
	dir, err := TempDir(postgresDirPrefix, acct)
	if err != nil {
		return nil, err
	}
	pg := &PG{
		BinDir:   bin,
		Dir:      dir,
		DataDir:  filepath.Join(dir, "data"),
		LogFile:  filepath.Join(dir, "postgres.log"),
		User:     postgresSuperuser,
		Database: PostgresDatabase,
		acct:     acct,
	}
	if err := pg.init(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return pg, nil
}

func (pg *PG) init() error {
	initdb := pg.command(filepath.Join(pg.BinDir, "initdb"),
		"-D", pg.DataDir, "-U", pg.User, "--auth=trust", "--encoding=UTF8", "--locale=C",
		"--no-sync") // the cluster is thrown away: no need to fsync its template files
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("testenv: initdb: %v\n%s", err, out)
	}
	// A port taken between FreePort and the server's bind fails the start;
	// another port then does.
	var err error
	for range 3 {
		if pg.Port, err = FreePort(); err != nil {
			return err
		}
		if err = pg.writeConf(); err != nil {
			return err
		}
		if err = pg.Start(); err == nil {
			break
		}
		if !strings.Contains(tail(pg.LogFile, 20), "could not bind") {
			return err
		}
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), postgresStartTimeout)
	defer cancel()
	if err := pg.exec(ctx, "postgres", "CREATE DATABASE "+pgx.Identifier{pg.Database}.Sanitize()); err != nil {
		pg.Shutdown(ShutdownImmediate)
		return fmt.Errorf("testenv: create database: %w", err)
	}
	return nil
}

// writeConf appends the settings; the last occurrence of a setting wins, so
// a retry with another port overrides the first.
func (pg *PG) writeConf() error {
	conf := filepath.Join(pg.DataDir, "postgresql.conf")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	lines := append([]string{
		"",
		"# testenv",
		"port = " + strconv.Itoa(pg.Port),
		"unix_socket_directories = '" + pg.Dir + "'",
	}, postgresSettings...)
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("testenv: %s: %w", conf, err)
	}
	return nil
}

// Start starts the server on its data directory and port and waits until
// it accepts connections; after a ShutdownImmediate it runs crash recovery
// first. Starting a running server is an error.
//
// The server is a child of this process (not daemonised by pg_ctl) so that
// it dies with the test binary; see Command.
func (pg *PG) Start() error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.stopped {
		return errors.New("testenv: postgres: Start after Stop")
	}
	if pg.cmd != nil {
		return errors.New("testenv: postgres: already running")
	}
	logf, err := os.OpenFile(pg.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	defer logf.Close() // the child holds its own copy
	cmd := pg.command(filepath.Join(pg.BinDir, "postgres"), "-D", pg.DataDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	pg.cmd, pg.exited = cmd, exited
	if err := pg.waitReady(exited); err != nil {
		pg.killLocked()
		return err
	}
	return nil
}

// waitReady polls until a connection succeeds, the server exits, or the
// start timeout passes.
func (pg *PG) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(postgresStartTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("testenv: postgres exited during start-up; log %s:\n%s", pg.LogFile, tail(pg.LogFile, 20))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		last = pg.exec(ctx, "postgres", "SELECT 1")
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(postgresPollInterval)
	}
	return fmt.Errorf("testenv: postgres not ready after %v: %v; log %s:\n%s", postgresStartTimeout, last, pg.LogFile, tail(pg.LogFile, 20))
}

// Shutdown stops the server as mode says and waits for it to exit; the data
// directory and port stay for Start. Shutting down a stopped server does
// nothing.
func (pg *PG) Shutdown(mode ShutdownMode) error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.shutdownLocked(mode)
}

func (pg *PG) shutdownLocked(mode ShutdownMode) error {
	if pg.cmd == nil {
		return nil
	}
	sig := syscall.SIGINT // fast
	if mode == ShutdownImmediate {
		sig = syscall.SIGQUIT
	}
	err := stopProcess("postgres", pg.cmd, pg.exited, sig, postgresStopTimeout)
	pg.cmd, pg.exited = nil, nil
	return err
}

// killLocked ends a server that will not stop by itself. Its backends exit
// on their own once the postmaster is gone.
func (pg *PG) killLocked() {
	if pg.cmd == nil {
		return
	}
	killProcess(pg.cmd, pg.exited)
	pg.cmd, pg.exited = nil, nil
}

// Stop shuts the server down (fast) and removes its directory. It is the
// end of the server: Start fails afterwards. Calling it again does nothing.
func (pg *PG) Stop() error {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if pg.stopped {
		return nil
	}
	pg.stopped = true
	err := pg.shutdownLocked(ShutdownFast)
	if rerr := os.RemoveAll(pg.Dir); rerr != nil && err == nil {
		err = fmt.Errorf("testenv: %w", rerr)
	}
	return err
}

// Running reports whether the server process is up (it may still be
// starting or recovering).
func (pg *PG) Running() bool {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.cmd != nil
}

// DSN is the URL of PostgresDatabase over TCP.
func (pg *PG) DSN() string { return pg.DSNFor(pg.Database) }

// DSNFor is the URL of another database on the server.
func (pg *PG) DSNFor(database string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", pg.User, pg.Port, database)
}

// CreateDatabase creates a database, for tests that need one to themselves.
func (pg *PG) CreateDatabase(ctx context.Context, name string) error {
	return pg.exec(ctx, pg.Database, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// DropDatabase drops the database name if it exists, closing the
// connections still open to it.
func (pg *PG) DropDatabase(ctx context.Context, name string) error {
	return pg.exec(ctx, pg.Database, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// exec runs one statement on a fresh connection to database.
func (pg *PG) exec(ctx context.Context, database, sql string) error {
	conn, err := pgx.Connect(ctx, pg.DSNFor(database))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// Pgbench is the path of pgbench.
func (pg *PG) Pgbench() string { return filepath.Join(pg.BinDir, "pgbench") }

// Psql is the path of psql.
func (pg *PG) Psql() string { return filepath.Join(pg.BinDir, "psql") }

// Env is the environment for a client program (psql, pgbench): the PG*
// variables pointing at PostgresDatabase, and none inherited.
func (pg *PG) Env() []string {
	return append(Env(nil, "PG"),
		"PGHOST=127.0.0.1",
		"PGPORT="+strconv.Itoa(pg.Port),
		"PGUSER="+pg.User,
		"PGDATABASE="+pg.Database,
		"PGSSLMODE=disable",
	)
}

// ClientCommand returns a command running a client program of BinDir
// ("psql", "pgbench") against PostgresDatabase, as the current user.
func (pg *PG) ClientCommand(ctx context.Context, program string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(pg.BinDir, program), args...)
	cmd.Env = pg.Env()
	return cmd
}

// command runs a server program as the server's account, with the locale
// and PG* variables of this process kept out of the cluster.
func (pg *PG) command(path string, args ...string) *exec.Cmd {
	cmd := Command(pg.acct, path, args...)
	cmd.Env = append(Env(pg.acct, "PG", "LC_", "LANG"), "LC_ALL=C")
	cmd.Dir = pg.Dir
	return cmd
}

// PostgresBinDirEnv names a directory of PostgreSQL binaries to use instead
// of searching for them.
const PostgresBinDirEnv = "PGCACHE_PG_BINDIR"

// PostgresBinDir finds the directory of the PostgreSQL server binaries:
// $PGCACHE_PG_BINDIR when set (and then only there, or in $PATH), else the
// newest /usr/lib/postgresql/*/bin (Debian's layout), else
// `pg_config --bindir`, else the directory of initdb in $PATH. Without
// initdb and postgres it returns a *NotInstalledError.
func PostgresBinDir() (string, error) {
	var dirs []string
	if d := os.Getenv(PostgresBinDirEnv); d != "" {
		dirs = append(dirs, d)
	} else {
		dirs = append(dirs, debianPostgresBinDirs()...)
		if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
			dirs = append(dirs, strings.TrimSpace(string(out)))
		}
	}
	initdb, err := LookPath("initdb", PostgresInstall, dirs...)
	if err != nil {
		return "", err
	}
	bin := filepath.Dir(initdb)
	if _, err := LookPath("postgres", PostgresInstall, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// debianPostgresBinDirs lists /usr/lib/postgresql/<major>/bin, newest first.
func debianPostgresBinDirs() []string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		return v
	}
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	return matches
}
