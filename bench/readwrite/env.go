package readwrite

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/internal/testenv"
)

// Tables of the run: readers and writers use rowsTable; the write-overhead
// measurements compare plainTable (no triggers) with rowsTable (fenced).
const (
	rowsTable  = "bench_coh_rows"
	plainTable = "bench_coh_plain"
)

// env is the servers of a run: given, or started for it and stopped after.
type env struct {
	dsn, valkeyAddr string
	// db serves the readers (the SQL stack's reads, cache-aside misses)
	// and the audits; writers has a connection per writer. Apart, 64
	// readers holding db's connections cannot make a writer wait for one,
	// and the writers' session settings stay theirs.
	db, writers *pgxpool.Pool
	valkey      valkey.Client
	database    string
	trigger     coherence.TriggerFunc // what the fenced table's triggers run
	stops       []func() error
}

func startEnv(ctx context.Context, o *Options) (*env, error) {
	e := &env{dsn: o.PGDSN, valkeyAddr: o.ValkeyAddr}
	if e.dsn == "" {
		pg, err := testenv.StartPostgres()
		if err != nil {
			return nil, fmt.Errorf("start PostgreSQL: %w", err)
		}
		e.stops = append(e.stops, pg.Stop)
		e.dsn = pg.DSN()
	}
	if e.valkeyAddr == "" && o.needsValkey() {
		rd, err := testenv.StartRedis()
		if err != nil {
			e.close()
			return nil, fmt.Errorf("start Valkey/Redis: %w", err)
		}
		e.stops = append(e.stops, rd.Stop)
		e.valkeyAddr = rd.Addr()
	}
	cfg, err := pgxpool.ParseConfig(e.dsn)
	if err != nil {
		e.close()
		return nil, fmt.Errorf("--pg-dsn: %w", err)
	}
	wcfg := cfg.Copy()
	cfg.MaxConns = int32(o.Readers + 4)
	if e.db, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		e.close()
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	// The write-overhead measurements run up to overheadWriters.
	wcfg.MaxConns = int32(max(o.Writers, overheadWriters))
	if o.AsyncCommit {
		wcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	if e.writers, err = pgxpool.NewWithConfig(ctx, wcfg); err != nil {
		e.close()
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	if err := e.db.QueryRow(ctx, "SELECT current_database()").Scan(&e.database); err != nil {
		e.close()
		return nil, fmt.Errorf("connect to PostgreSQL %s: %w", redactDSN(e.dsn), err)
	}
	if e.valkeyAddr != "" {
		if e.valkey, err = dialRESP(e.valkeyAddr); err != nil {
			e.close()
			return nil, fmt.Errorf("connect to Valkey %s: %w", e.valkeyAddr, err)
		}
	}
	return e, nil
}

// dialRESP is the client readers and writers reach Valkey and pgcache
// with: valkey-go, which pipelines the requests of concurrent goroutines on
// a few connections, as an application's client would. Client-side caching
// is off: every read is the server's.
func dialRESP(addr string) (valkey.Client, error) {
	return valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true})
}

func redactDSN(dsn string) string {
	if cfg, err := pgxpool.ParseConfig(dsn); err == nil {
		c := cfg.ConnConfig
		return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
	}
	return "(unparsable DSN)"
}

func (e *env) close() {
	if e.valkey != nil {
		e.valkey.Close()
	}
	if e.db != nil {
		e.db.Close()
	}
	if e.writers != nil {
		e.writers.Close()
	}
	for i := len(e.stops) - 1; i >= 0; i-- {
		e.stops[i]()
	}
}

// seed (re)creates the tables with rows rows each; rowsTable gets the fence
// triggers, plainTable none.
func (e *env) seed(ctx context.Context, rows int) error {
	for _, t := range []string{rowsTable, plainTable} {
		if _, err := e.db.Exec(ctx, fmt.Sprintf(`
			DROP TABLE IF EXISTS %[1]s;
			CREATE TABLE %[1]s (id bigint PRIMARY KEY, v bigint NOT NULL, payload text NOT NULL) WITH (fillfactor = 70);
			INSERT INTO %[1]s SELECT g, 0, md5(g::text) FROM generate_series(1, %[2]d) g`, t, rows)); err != nil {
			return fmt.Errorf("seed %s: %w", t, err)
		}
		if _, err := e.db.Exec(ctx, "VACUUM ANALYZE "+t); err != nil {
			return fmt.Errorf("vacuum %s: %w", t, err)
		}
	}
	trigger, err := coherence.AttachUsing(ctx, e.db, "public."+rowsTable, coherence.TriggerAuto)
	e.trigger = trigger
	return err
}

// rowJSON is the row as pgcache's table route renders it.
const rowJSON = `SELECT row_to_json(t)::text FROM ` + rowsTable + ` AS t WHERE id = $1`

// rowsJSON is rowJSON for many rows, with their ids.
const rowsJSON = `SELECT id, row_to_json(t)::text FROM ` + rowsTable + ` AS t WHERE id = ANY($1)`

const updateSQL = `UPDATE %s SET v = v + 1, payload = md5(random()::text) WHERE id = $1`
