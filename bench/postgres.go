package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgcache/pgcache/internal/testenv"
)

// pgServer is the PostgreSQL the engines store in: a throwaway server the
// bench started (and stops), or the one --pg-dsn names, which it only
// reads settings from and writes its own tables to.
type pgServer struct {
	dsn    string
	owned  *testenv.PG // nil for --pg-dsn
	pool   *pgxpool.Pool
	desc   string            // for the report
	caps   string            // the cgroup caps applied, or why none
	tuning map[string]string // the settings that matter, as in force
}

// pgConnectTimeout bounds reaching a --pg-dsn.
const pgConnectTimeout = 10 * time.Second

// pgTuning is the published comparison's postgresql.conf tuning, sized for the 4 GB its
// PostgreSQL was capped to. A throwaway server gets it with ALTER SYSTEM
// (and a restart where the setting needs one); testenv already sets
// max_wal_size, checkpoint_completion_target and wal_buffers.
var pgTuning = []struct {
	name, value string
	restart     bool
}{
	{"shared_buffers", "1GB", true},        // 25% of the 4 GB cap
	{"effective_cache_size", "3GB", false}, // 75% of it
	{"work_mem", "16MB", false},
	{"maintenance_work_mem", "256MB", false},
	{"max_wal_size", "4GB", false},
	{"checkpoint_completion_target", "0.9", false},
	{"wal_buffers", "16MB", true},
}

// startPostgres connects to --pg-dsn, or starts, tunes and caps a
// throwaway server.
func startPostgres(ctx context.Context, o *Options, note io.Writer) (*pgServer, error) {
	if o.PGDSN != "" {
		s := &pgServer{dsn: o.PGDSN, caps: "none: an existing server (--pg-dsn) is left as it is"}
		if err := s.connect(ctx); err != nil {
			return nil, err
		}
		s.desc = "existing server " + s.where() + ", " + s.version(ctx) + ", settings left as they are"
		s.tuning = s.settings(ctx)
		return s, nil
	}
	fmt.Fprintln(note, "starting a throwaway PostgreSQL …")
	pg, err := testenv.StartPostgres()
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &pgServer{dsn: pg.DSN(), owned: pg}
	if err := s.connect(ctx); err != nil {
		s.close()
		return nil, err
	}
	if err := s.tune(ctx); err != nil {
		s.close()
		return nil, err
	}
	s.desc = "throwaway server on " + s.where() + ", " + s.version(ctx) + " (fsync and synchronous_commit on)"
	s.tuning = s.settings(ctx)
	s.caps = "none: --no-caps"
	if !o.NoCaps {
		s.caps = capProcesses(ctx, fmt.Sprintf("pgcache-bench-postgres-%d.scope", pg.Port), testenv.ProcessTree(postmasterPID(pg)))
	}
	return s, nil
}

func (s *pgServer) connect(ctx context.Context) error {
	cfg, err := pgxpool.ParseConfig(s.dsn)
	if err != nil {
		return fmt.Errorf("--pg-dsn: %w", err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.ConnectTimeout = pgConnectTimeout
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fmt.Errorf("postgres %s: %w", s.where(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		s.pool.Close()
		s.pool = nil
		return fmt.Errorf("postgres %s: cannot connect: %w", s.where(), err)
	}
	return nil
}

// where names the server without its password: host:port/database.
func (s *pgServer) where() string {
	cfg, err := pgx.ParseConfig(s.dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

func (s *pgServer) version(ctx context.Context) string {
	var v string
	if err := s.pool.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "PostgreSQL (version unknown)"
	}
	return "PostgreSQL " + strings.Fields(v)[0]
}

// tune applies pgTuning to a throwaway server, restarting it when a
// setting needs that.
func (s *pgServer) tune(ctx context.Context) error {
	restart := false
	have := s.settings(ctx)
	for _, t := range pgTuning {
		if have[t.name] == t.value {
			continue
		}
		if _, err := s.pool.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = '%s'", t.name, t.value)); err != nil {
			return fmt.Errorf("postgres: tune %s: %w", t.name, err)
		}
		restart = restart || t.restart
	}
	if !restart {
		_, err := s.pool.Exec(ctx, "SELECT pg_reload_conf()")
		return err
	}
	s.pool.Close()
	if err := s.owned.Shutdown(testenv.ShutdownFast); err != nil {
		return fmt.Errorf("postgres: restart for tuning: %w", err)
	}
	if err := s.owned.Start(); err != nil {
		return fmt.Errorf("postgres: restart for tuning: %w", err)
	}
	return s.connect(ctx)
}

// settings reads the tuned settings as the server reports them.
func (s *pgServer) settings(ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, t := range pgTuning {
		var v string
		if err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", t.name).Scan(&v); err == nil {
			out[t.name] = v
		}
	}
	for _, name := range []string{"fsync", "synchronous_commit", "max_connections"} {
		var v string
		if err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err == nil {
			out[name] = v
		}
	}
	return out
}

// dropTable drops a kv engine's table, so its route makes it anew.
func (s *pgServer) dropTable(ctx context.Context, table string) error {
	if _, err := s.pool.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize()); err != nil {
		return fmt.Errorf("postgres: drop %s: %w", table, err)
	}
	return nil
}

// close stops a throwaway server (its files go with it).
func (s *pgServer) close() error {
	if s.pool != nil {
		s.pool.Close()
	}
	if s.owned != nil {
		return s.owned.Stop()
	}
	return nil
}

// postmasterPID reads the server's PID from postmaster.pid; 0 if unknown.
func postmasterPID(pg *testenv.PG) int {
	b, err := os.ReadFile(filepath.Join(pg.DataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}
