package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/decode"
	"github.com/pgcache/pgcache/internal/rawio"
)

func TestRegistered(t *testing.T) {
	f, err := backends.Lookup(TypeName)
	if err != nil {
		t.Fatal(err)
	}
	d, err := f(context.Background(), "pg", map[string]any{"dsn": pg.DSN(), "max_conns": "3", "sweep_interval": "-1s"}, backends.Env{Log: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.(backends.Checker).Check(testCtx(t)); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options map[string]any
		check   func(*Driver) bool
		wantErr string
	}{
		{"defaults", map[string]any{}, func(d *Driver) bool {
			o := d.opts
			return o.MaxConns == DefaultMaxConns() && o.MinConns == 0 &&
				time.Duration(o.ConnectTimeout) == DefaultConnectTimeout &&
				time.Duration(o.StatementTimeout) == DefaultStatementTimeout &&
				time.Duration(o.CommandTimeout) == DefaultCommandTimeout &&
				time.Duration(o.SweepInterval) == DefaultSweepInterval &&
				d.pool.Config().ConnConfig.RuntimeParams["application_name"] == "pgcache" &&
				d.pool.Config().ConnConfig.RuntimeParams["statement_timeout"] == "5000"
		}, ""},
		{"set", map[string]any{"dsn": "postgres://u@h:5433/db?application_name=app", "max_conns": 7, "min_conns": 2,
			"connect_timeout": "2s", "statement_timeout": "-1s", "command_timeout": "1s", "sweep_interval": "5m"},
			func(d *Driver) bool {
				cc := d.pool.Config().ConnConfig
				_, hasTimeout := cc.RuntimeParams["statement_timeout"]
				return d.opts.MaxConns == 7 && d.pool.Config().MinConns == 2 && cc.ConnectTimeout == 2*time.Second &&
					cc.Port == 5433 && cc.RuntimeParams["application_name"] == "app" && !hasTimeout &&
					d.Database() == "db" && d.asyncCfg.ConnConfig.RuntimeParams["synchronous_commit"] == "off"
			}, ""},
		{"database-defaults-to-user", map[string]any{"dsn": "postgres://alice@h/"}, func(d *Driver) bool {
			return d.Database() == "alice"
		}, ""},
		{"unknown", map[string]any{"dsn": "", "maxconns": 3}, nil, "maxconns"},
		{"bad-duration", map[string]any{"connect_timeout": 5}, nil, "write it with a unit"},
		{"bad-dsn", map[string]any{"dsn": "postgres://h:notaport/"}, nil, "dsn:"},
		{"max-conns", map[string]any{"max_conns": -1}, nil, "max_conns"},
		{"min-conns", map[string]any{"max_conns": 2, "min_conns": 3}, nil, "min_conns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv, err := New(context.Background(), "pg", tc.options, backends.Env{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New = %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer drv.Close()
			if !tc.check(drv.(*Driver)) {
				t.Fatalf("options not applied: %+v", drv.(*Driver).opts)
			}
		})
	}
}

// TestPGEnvironment: an empty DSN takes everything from the PG* variables,
// as libpq does.
func TestPGEnvironment(t *testing.T) {
	t.Setenv("PGHOST", "127.0.0.1")
	t.Setenv("PGPORT", "1")
	t.Setenv("PGUSER", "envuser")
	t.Setenv("PGDATABASE", "envdb")
	d, err := NewDriver("pg", Options{}, backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cc := d.pool.Config().ConnConfig
	if cc.Host != "127.0.0.1" || cc.Port != 1 || cc.User != "envuser" || d.Database() != "envdb" {
		t.Fatalf("config from the environment: %s:%d user %s db %s", cc.Host, cc.Port, cc.User, d.Database())
	}
}

// TestCommandTimeout: an operation stuck behind a lock fails as
// unavailable when command_timeout runs out, not when the caller gives up.
func TestCommandTimeout(t *testing.T) {
	// The table is created with the default timeouts: on a loaded machine
	// CREATE TABLE alone can take longer than the short one under test.
	table := uniqueTable(t)
	openKV(t, newDriver(t, Options{}), table, DurabilityUnlogged, "")
	d := newDriver(t, Options{CommandTimeout: decode.Duration(300 * time.Millisecond), StatementTimeout: decode.Duration(-1)})
	s := openKV(t, d, table, DurabilityUnlogged, "")
	ctx := testCtx(t)
	if _, err := s.Set(ctx, "k", []byte("v"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+s.table.ident()+" WHERE key = 'k' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Set(ctx, "k", []byte("w"), backends.SetOptions{})
	if !errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("Set behind a row lock = %v, want ErrUnavailable", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.Get(cctx, "k"); !errors.Is(err, context.Canceled) || errors.Is(err, backends.ErrUnavailable) {
		t.Fatalf("Get with a cancelled context = %v, want context.Canceled", err)
	}
}

// Sessions of both pools read and write with raw system calls (package
// rawio), and queries through them work.
func TestSessionsUseRawIO(t *testing.T) {
	d := newDriver(t, Options{})
	ctx := testCtx(t)
	for _, durability := range []string{DurabilityStandard, DurabilityAsync} {
		pool, err := d.poolFor(durability)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := conn.Conn().PgConn().Conn().(*rawio.Conn); !ok {
			t.Errorf("%s pool: session over %T, want *rawio.Conn", durability, conn.Conn().PgConn().Conn())
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT length(repeat('x', 1000000))").Scan(&n); err != nil || n != 1000000 {
			t.Errorf("%s pool: query = %d, %v", durability, n, err)
		}
		conn.Release()
	}
}

// TestMetrics: the collector reports pool, sweep and table figures with
// the backend label, and INFO the same.
func TestMetrics(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	for range 20 {
		if _, err := s.Set(ctx, "hot", []byte("v"), backends.SetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	for _, c := range d.Collectors() {
		reg.MustRegister(c)
	}
	// A second driver's collector registers beside the first.
	d2 := newDriver(t, Options{})
	d2.name = "pg2"
	for _, c := range d2.Collectors() {
		reg.MustRegister(c)
	}
	label := s.table.label()
	var fams map[string]*dto.MetricFamily
	poll(t, "table statistics of the updates", func() bool {
		got, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		fams = map[string]*dto.MetricFamily{}
		for _, f := range got {
			fams[f.GetName()] = f
		}
		return metricValue(fams["pgcache_postgres_table_updates_total"], "pg", label) >= 19
	})
	for name, want := range map[string]float64{
		"pgcache_postgres_up":                       1,
		"pgcache_postgres_table_live_rows":          -1,
		"pgcache_postgres_table_size_bytes":         -1,
		"pgcache_postgres_table_hot_update_percent": -1,
		"pgcache_postgres_pool_max_conns":           float64(DefaultMaxConns()),
		"pgcache_postgres_swept_rows_total":         0,
	} {
		f := fams[name]
		if f == nil {
			t.Errorf("%s missing", name)
			continue
		}
		if got := metricValue(f, "pg", label); want >= 0 && got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if hot := metricValue(fams["pgcache_postgres_table_hot_update_percent"], "pg", label); hot <= 50 {
		t.Errorf("HOT updates %v%% on the kv layout, want most", hot)
	}

	info := map[string]string{}
	for _, kv := range d.Info(ctx) {
		info[kv[0]] = kv[1]
	}
	for _, field := range []string{"backend_pg_database", "backend_pg_up", "backend_pg_standard_pool_total_conns",
		"backend_pg_table_" + label + "_live_rows", "backend_pg_table_" + label + "_hot_update_percent"} {
		if info[field] == "" {
			t.Errorf("INFO has no %s: %v", field, info)
		}
	}
}

// metricValue finds the metric of a family by its backend label and, when it has
// one, its table or pool label; -2 when absent.
func metricValue(f *dto.MetricFamily, backend, table string) float64 {
	if f == nil {
		return -2
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["backend"] != backend {
			continue
		}
		if t, ok := labels["table"]; ok && t != table {
			continue
		}
		if p, ok := labels["pool"]; ok && p != "standard" {
			continue
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return -2
}
