package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/testenv"
	"github.com/pgcache/pgcache/server"
)

func init() {
	register(command{
		name:  "demo",
		usage: "[--listen-resp ADDR] [--listen-http ADDR] [--listen-admin ADDR] [--log-level LEVEL]",
		short: "throwaway PostgreSQL and Valkey/Redis with sample data, served by pgcache, until Ctrl-C",
		run:   cmdDemo,
	})
}

// The demo's default fronts: pgcache's own defaults. One that is taken
// (a Redis already on 6379) is replaced by a free port, and the demo says so.
const (
	demoRESP  = "127.0.0.1:6379"
	demoHTTP  = "127.0.0.1:8080"
	demoAdmin = "127.0.0.1:2019"
)

// Bounds of the demo's own steps (the servers' starts have theirs in testenv).
const (
	demoStepTimeout  = 60 * time.Second // seeding, pgcache's start
	demoReadyTimeout = 30 * time.Second // until /readyz answers 200: the L1's first canary
	demoStopTimeout  = 15 * time.Second // pgcache's drain at Ctrl-C
)

// demoEnv is what the demo started; stop stops it, last started first.
type demoEnv struct {
	pg    *testenv.PG
	redis *testenv.Redis
	srv   *server.Server
	log   *zap.Logger

	pgDir, redisDir string // for the last word, after stop
}

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	fs := commands["demo"].flags(stderr)
	defaultUsage := fs.Usage
	fs.Usage = func() {
		defaultUsage()
		fmt.Fprintf(stderr, "\nStarts a throwaway PostgreSQL and Valkey/Redis (as `pgcache bench` does: apt-get install\n"+
			"postgresql redis-server), creates a sample table, runs pgcache with a route of every kind\n"+
			"in front of them and prints commands to try. Ctrl-C stops everything and removes its files.\n")
	}
	fronts := []struct {
		name, def string
		addr      *string
	}{{name: "resp", def: demoRESP}, {name: "http", def: demoHTTP}, {name: "admin", def: demoAdmin}}
	for i, f := range fronts {
		fronts[i].addr = fs.String("listen-"+f.name, f.def, f.name+" address (a free port when the default is taken)")
	}
	level := fs.String("log-level", "warn", "pgcache's log level: debug, info, warn or error")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	// A default address that is taken becomes port 0, a free port chosen
	// at listen time; an address given on the command line is kept, and
	// fails the start if taken.
	var moved []string
	for _, f := range fronts {
		if !fs.Changed("listen-"+f.name) && taken(*f.addr) {
			moved = append(moved, f.name)
			*f.addr = "127.0.0.1:0"
		}
	}

	// Signals are caught from the start: a Ctrl-C while PostgreSQL starts
	// still stops what was started.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var env demoEnv
	defer env.stop(stderr)
	if err := env.start(ctx, *fronts[0].addr, *fronts[1].addr, *fronts[2].addr, *level, stderr); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "pgcache demo: interrupted")
			return exitInterrupted
		}
		fmt.Fprintf(stderr, "pgcache demo: %v\n", err)
		return exitError
	}
	for _, f := range fronts {
		if slices.Contains(moved, f.name) {
			fmt.Fprintf(stdout, "note: %s is taken, so %s listens on %s\n", f.def, f.name, env.srv.Addr(f.name))
		}
	}
	writeCheatSheet(stdout, env.sheet())

	code := exitOK
	select {
	case <-ctx.Done():
	case err := <-env.srv.Errors():
		fmt.Fprintf(stderr, "pgcache demo: a front stopped serving: %v\n", err)
		code = exitError
	}
	fmt.Fprintln(stdout, "\nstopping pgcache, Valkey/Redis and PostgreSQL …")
	env.stop(stderr)
	fmt.Fprintf(stdout, "stopped; removed %s and %s\n", env.pgDir, env.redisDir)
	return code
}

// taken reports whether addr cannot be listened on now.
func taken(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return true
	}
	ln.Close()
	return false
}

// start starts the servers, seeds them and serves pgcache until stop.
func (e *demoEnv) start(ctx context.Context, resp, httpAddr, admin, level string, note io.Writer) error {
	fmt.Fprintln(note, "starting a throwaway PostgreSQL …")
	var err error
	if e.pg, err = testenv.StartPostgres(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	e.pgDir = e.pg.Dir
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintln(note, "starting a throwaway Valkey/Redis …")
	if e.redis, err = testenv.StartRedis(); err != nil {
		return fmt.Errorf("valkey: %w", err)
	}
	e.redisDir = e.redis.Dir
	if ctx.Err() != nil {
		return ctx.Err()
	}
	sctx, cancel := context.WithTimeout(ctx, demoStepTimeout)
	defer cancel()
	if err := demoSeedSQL(sctx, e.pg.DSN()); err != nil {
		return err
	}

	fmt.Fprintln(note, "starting pgcache …")
	yaml := demoConfig(resp, httpAddr, admin, level, e.pg.DSN(), e.redis.Addr())
	cfg, err := conf.Load(conf.Source{Bytes: []byte(yaml), Environ: func() []string { return nil }})
	if err != nil {
		return fmt.Errorf("config:\n%w", err)
	}
	if e.log, err = server.NewLogger(cfg.Log); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	srv, err := server.New(sctx, cfg, e.log)
	if err != nil {
		return fmt.Errorf("pgcache: %w", err)
	}
	if err := srv.Start(); err != nil {
		srv.Shutdown(context.Background())
		return fmt.Errorf("pgcache: %w", err)
	}
	e.srv = srv
	if err := demoSeedKV(sctx, srv.Addr("resp")); err != nil {
		return err
	}
	return waitReady(ctx, "http://"+srv.Addr("admin")+"/readyz")
}

// stop stops what start started, pgcache first, and removes the servers'
// files. Errors are reported, not returned: everything is stopped anyway.
// Calling it again does nothing.
func (e *demoEnv) stop(stderr io.Writer) {
	defer func() { e.srv, e.log, e.redis, e.pg = nil, nil, nil, nil }()
	if e.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), demoStopTimeout)
		if err := e.srv.Shutdown(ctx); err != nil {
			fmt.Fprintf(stderr, "pgcache demo: stop pgcache: %v\n", err)
		}
		cancel()
	}
	if e.log != nil {
		e.log.Sync()
	}
	if e.redis != nil {
		if err := e.redis.Stop(); err != nil {
			fmt.Fprintf(stderr, "pgcache demo: stop Valkey/Redis: %v\n", err)
		}
	}
	if e.pg != nil {
		if err := e.pg.Stop(); err != nil {
			fmt.Fprintf(stderr, "pgcache demo: stop PostgreSQL: %v\n", err)
		}
	}
}

// demoSeedSQL creates the sample table the users route serves.
func demoSeedSQL(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, fmt.Sprintf(`
CREATE TABLE users (
	id    bigint PRIMARY KEY,
	name  text NOT NULL,
	email text NOT NULL
);
INSERT INTO users
SELECT i, 'user ' || i, 'user' || i || '@example.com' FROM generate_series(1, %d) AS i;`, demoUsers))
	if err != nil {
		return fmt.Errorf("postgres: sample table: %w", err)
	}
	return nil
}

// demoSeedKV writes the kv routes' sample values through pgcache itself,
// which creates their tables at start.
func demoSeedKV(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	pairs := make([]any, 0, 2*demoKVKeys)
	for i := 1; i <= demoKVKeys; i++ {
		pairs = append(pairs, fmt.Sprintf("pg:%d", i), fmt.Sprintf("value %d", i))
	}
	if err := c.MSet(ctx, pairs...).Err(); err != nil {
		return fmt.Errorf("seed pg:1..pg:%d: %w", demoKVKeys, err)
	}
	if err := c.Set(ctx, "counter:visits", demoVisits, 0).Err(); err != nil {
		return fmt.Errorf("seed counter:visits: %w", err)
	}
	return nil
}

// waitReady polls /readyz until it answers 200: the backends answer and
// the L1 has its first canary back, so it serves.
func waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, demoReadyTimeout)
	defer cancel()
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = strings.TrimSpace(string(b))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("pgcache not ready after %v: %s", demoReadyTimeout, last)
			}
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sheet gathers what the cheat sheet names.
func (e *demoEnv) sheet() demoSheet {
	psql := "psql"
	if _, err := exec.LookPath(psql); err != nil {
		psql = e.pg.Psql() // not on $PATH: the server's own
	}
	return demoSheet{
		RESP: e.srv.Addr("resp"), HTTP: e.srv.Addr("http"), Admin: e.srv.Addr("admin"),
		PGDSN: e.pg.DSN(), PGDir: e.pg.Dir, Psql: psql,
		Valkey: e.redis.Addr(), ValkeyDir: e.redis.Dir,
	}
}
