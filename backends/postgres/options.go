package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgcache/pgcache/internal/decode"
	"github.com/pgcache/pgcache/internal/rawio"
)

// Defaults of the options, in one place.
const (
	DefaultConnectTimeout   = 5 * time.Second
	DefaultStatementTimeout = 5 * time.Second
	DefaultCommandTimeout   = 10 * time.Second
	DefaultSweepInterval    = 60 * time.Second
	DefaultMaxConnLifetime  = time.Hour
	DefaultMaxConnIdleTime  = 30 * time.Minute
	DefaultApplicationName  = "pgcache"
)

// DefaultMaxConns is pgxpool's own rule: 4, or the number of CPUs if more.
func DefaultMaxConns() int32 { return int32(max(4, runtime.NumCPU())) }

// Options are the postgres backend's config (the `backends:` entry without
// `type`). Durations are written like "5s"; zero or absent means the default.
type Options struct {
	// DSN is a libpq connection string or URL, like
	// "postgres://app@127.0.0.1:5432/app". What it leaves out comes from the
	// PG* environment variables (PGHOST, PGPORT, PGUSER, PGPASSWORD,
	// PGDATABASE, PGSSLMODE, …) and then libpq's defaults, as for psql.
	// Default "": everything from the environment.
	DSN string `mapstructure:"dsn"`
	// MaxConns bounds each pool: the driver's, and the separate pool that
	// routes with durability async share. Default DefaultMaxConns(). It
	// also sets when requests share statements (coalesce.go): single-key
	// reads of a table past MaxConns in flight, plain SETs of a kv table
	// past a quarter of it.
	MaxConns int32 `mapstructure:"max_conns"`
	// MinConns is how many connections each pool keeps open. Default 0.
	MinConns int32 `mapstructure:"min_conns"`
	// ConnectTimeout bounds opening one connection. Default 5s.
	ConnectTimeout decode.Duration `mapstructure:"connect_timeout"`
	// StatementTimeout is the sessions' statement_timeout: the server
	// cancels a statement that runs longer (a lock wait included).
	// Default 5s; a negative value keeps the server's setting.
	StatementTimeout decode.Duration `mapstructure:"statement_timeout"`
	// CommandTimeout bounds one operation on this side, the wait for a
	// connection included, when the caller's context does not end sooner.
	// An operation that runs out fails with backends.ErrUnavailable.
	// Default 10s.
	CommandTimeout decode.Duration `mapstructure:"command_timeout"`
	// SweepInterval is how often expired rows are deleted from each kv
	// table. Default 60s; a negative value turns the sweeper off (for
	// deployments where pg_cron runs the sweep).
	SweepInterval decode.Duration `mapstructure:"sweep_interval"`
	// MaxConnLifetime closes connections older than this. Default 1h.
	MaxConnLifetime decode.Duration `mapstructure:"max_conn_lifetime"`
	// MaxConnIdleTime closes connections idle longer than this. Default 30m.
	MaxConnIdleTime decode.Duration `mapstructure:"max_conn_idle_time"`
	// ApplicationName is shown in pg_stat_activity. Default "pgcache",
	// unless the DSN sets application_name.
	ApplicationName string `mapstructure:"application_name"`
}

// fill sets the defaults of the options left zero.
func (o *Options) fill() {
	def := func(d *decode.Duration, v time.Duration) {
		if *d == 0 {
			*d = decode.Duration(v)
		}
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns()
	}
	def(&o.ConnectTimeout, DefaultConnectTimeout)
	def(&o.StatementTimeout, DefaultStatementTimeout)
	def(&o.CommandTimeout, DefaultCommandTimeout)
	def(&o.SweepInterval, DefaultSweepInterval)
	def(&o.MaxConnLifetime, DefaultMaxConnLifetime)
	def(&o.MaxConnIdleTime, DefaultMaxConnIdleTime)
	if o.ApplicationName == "" {
		o.ApplicationName = DefaultApplicationName
	}
}

// validate checks the filled options: every problem, one per line, each
// naming the field.
func (o *Options) validate() error {
	var errs []error
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(o.MaxConns < 1, "max_conns: %d must be at least 1", o.MaxConns)
	check(o.MinConns < 0 || o.MinConns > o.MaxConns, "min_conns: %d must be between 0 and max_conns (%d)", o.MinConns, o.MaxConns)
	check(o.ConnectTimeout < 0, "connect_timeout: %v must be positive", o.ConnectTimeout)
	check(o.CommandTimeout < 0, "command_timeout: %v must be positive", o.CommandTimeout)
	check(o.MaxConnLifetime < 0, "max_conn_lifetime: %v must be positive", o.MaxConnLifetime)
	check(o.MaxConnIdleTime < 0, "max_conn_idle_time: %v must be positive", o.MaxConnIdleTime)
	if _, err := pgxpool.ParseConfig(o.DSN); err != nil {
		errs = append(errs, fmt.Errorf("dsn: %w", err))
	}
	return errors.Join(errs...)
}

// poolConfig builds one pool's config from the options; params are extra
// session settings sent in the startup packet (no round trip of their own).
func (o *Options) poolConfig(params map[string]string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		return nil, fmt.Errorf("dsn: %w", err)
	}
	cfg.MaxConns = o.MaxConns
	cfg.MinConns = o.MinConns
	cfg.MaxConnLifetime = time.Duration(o.MaxConnLifetime)
	cfg.MaxConnIdleTime = time.Duration(o.MaxConnIdleTime)
	cc := cfg.ConnConfig
	cc.ConnectTimeout = time.Duration(o.ConnectTimeout)
	if _, set := cc.RuntimeParams["application_name"]; !set {
		cc.RuntimeParams["application_name"] = o.ApplicationName
	}
	if o.StatementTimeout > 0 {
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(time.Duration(o.StatementTimeout).Milliseconds(), 10)
	}
	for k, v := range params {
		cc.RuntimeParams[k] = v
	}
	// Sessions read and write their sockets with raw system calls (see
	// package rawio): mostly idle between queries, pgcache otherwise woke
	// the runtime's monitor thread on nearly every one.
	dial := cc.DialFunc
	cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return rawio.Wrap(nc), nil
	}
	return cfg, nil
}
