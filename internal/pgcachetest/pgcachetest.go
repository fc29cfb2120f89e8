// Package pgcachetest starts a pgcache for a test, in the manner of
// nats-server's test.RunServer: given a config, it runs pgcache on free
// loopback ports, returns once it serves, tells its addresses, and stops it
// when the test ends. Two ways:
//
//   - Start runs it in this process (package server), for a test that
//     looks inside it (its routes, its L1 tiers) or reloads it:
//
//     s := pgcachetest.Start(t, server.New, pgcachetest.Config{YAML: yaml}).Server
//
//   - StartProcess runs the pgcache binary (Binary) as a child process, for
//     a test that signals or kills it, or that needs it to run at full speed
//     whatever flags the test binary has (-race):
//
//     p := pgcachetest.StartProcess(t, pgcachetest.Config{YAML: yaml})
//     p.Signal(syscall.SIGTERM)
//
// Start takes the server's constructor rather than importing package
// server, so that server's own tests, which cannot import a package that
// imports server, start their servers here too.
//
// The standard backends (memory, postgres, valkey) are registered, as in the
// binary. The servers pgcache talks to come from internal/testenv.
package pgcachetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	_ "github.com/pgcache/pgcache/backends/standard"
	"github.com/pgcache/pgcache/conf"
)

// Config is what a pgcache under test runs with.
type Config struct {
	// YAML is the config file's text; "" serves the embedded default (one
	// memory route) without a file.
	YAML string
	// Env are more PGCACHE_* variables, read after the listen addresses
	// this package sets: they may add listen.resp_unix or turn a front off
	// (PGCACHE_LISTEN__HTTP=). The environment of the test is not read.
	Env []string
	// Log is an in-process server's logger; nil logs nothing. A child
	// process logs to its LogFile as its config says.
	Log *zap.Logger
}

// Addrs are where a pgcache serves; "" for a front that is off.
type Addrs struct {
	RESP     string // host:port
	RESPUnix string // a socket path
	HTTP     string // host:port
	Admin    string // host:port
}

// anyPort is a listen address on a free loopback port, which Start reads
// back from the listener.
const anyPort = "127.0.0.1:0"

// env is the PGCACHE_ variables pgcache reads: the TCP fronts on listen,
// then c.Env.
func (c Config) env(listen Addrs) []string {
	return append([]string{
		"PGCACHE_LISTEN__RESP=" + listen.RESP,
		"PGCACHE_LISTEN__HTTP=" + listen.HTTP,
		"PGCACHE_LISTEN__ADMIN=" + listen.Admin,
	}, c.Env...)
}

// writeFile writes c.YAML to pgcache.yaml in dir and returns its path; ""
// when there is no YAML.
func (c Config) writeFile(t testing.TB, dir string) string {
	t.Helper()
	if c.YAML == "" {
		return ""
	}
	file := filepath.Join(dir, "pgcache.yaml")
	if err := os.WriteFile(file, []byte(c.YAML), 0o600); err != nil { // it may hold a DSN
		t.Fatal(err)
	}
	return file
}

// Server is what Start needs of an in-process pgcache: *server.Server.
type Server interface {
	SetSource(conf.Source)
	Start() error
	Shutdown(context.Context) error
	Addr(front string) string
}

// Instance is a pgcache running in this process.
type Instance[S Server] struct {
	Server S
	Addrs
	// ConfigFile holds Config.YAML ("" for the embedded default); the
	// server reads it again on ReloadFile (SIGHUP).
	ConfigFile string
}

// Start runs pgcache in this process with cfg, its TCP fronts on free
// loopback ports, and shuts it down when the test ends (a Shutdown error
// fails the test). newServer is server.New. The server's source is set
// (SetSource), so a reload reads the same file and variables again.
func Start[S Server](t testing.TB, newServer func(context.Context, *conf.Config, *zap.Logger) (S, error), cfg Config) *Instance[S] {
	t.Helper()
	file := ""
	if cfg.YAML != "" {
		file = cfg.writeFile(t, t.TempDir())
	}
	env := cfg.env(Addrs{RESP: anyPort, HTTP: anyPort, Admin: anyPort})
	src := conf.Source{File: file, Environ: func() []string { return env }}
	c, err := conf.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	log := cfg.Log
	if log == nil {
		log = zap.NewNop()
	}
	// Bounded, as `pgcache run` bounds it: a backend that cannot be
	// reached fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := newServer(ctx, c, log)
	if err != nil {
		t.Fatal(err)
	}
	s.SetSource(src)
	if err := s.Start(); err != nil {
		// What New built (pools, listeners of the L1 tier) is closed.
		s.Shutdown(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("pgcache shutdown: %v", err)
		}
	})
	return &Instance[S]{
		Server:     s,
		Addrs:      Addrs{RESP: s.Addr("resp"), RESPUnix: s.Addr("resp_unix"), HTTP: s.Addr("http"), Admin: s.Addr("admin")},
		ConfigFile: file,
	}
}
