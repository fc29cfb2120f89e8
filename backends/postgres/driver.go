// Package postgres is the PostgreSQL backend, on pgx/v5. A route opens
// either a kv table (the layout and queries of "Postgres as a Key-Value Store", docs/bench.md: a text, uuid or
// bigint key, a bytea value, an expires_at deadline kept by the database's
// clock) at one of three durabilities, or the rows of an existing table,
// served by primary key as JSON.
//
// One Driver holds one pool for the database, plus a second pool whose
// sessions run with synchronous_commit=off for the routes that ask for
// durability async. Nothing here blocks on the network at start: a database
// that is down makes its routes answer backends.ErrUnavailable until it is
// back, and each route creates or checks its table on first contact.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/deadline"
	"github.com/pgcache/pgcache/pubsub"
)

// TypeName is the `type:` of this backend in the config.
const TypeName = "postgres"

func init() {
	backends.Register(TypeName, New)
	backends.RegisterRouteCheck(TypeName, checkRoutes)
}

// Route durabilities (RouteSpec.Durability).
const (
	DurabilityStandard = "standard" // logged table, synchronous commit: the default
	DurabilityAsync    = "async"    // logged table, synchronous_commit=off
	DurabilityUnlogged = "unlogged" // UNLOGGED table: emptied by a crash
)

// Driver is one configured PostgreSQL database.
type Driver struct {
	name      string
	log       *zap.Logger
	opts      Options
	database  string
	pool      *pgxpool.Pool       // standard and unlogged kv tables, table routes, the sweeper
	asyncCfg  *pgxpool.Config     // for the async pool, made on first use
	deadlines *deadline.Shared    // operations' command_timeout contexts
	enc       *backends.Encodings // the server's encoding thresholds, for OBJECT ENCODING in runs

	mu     sync.Mutex
	async  *pgxpool.Pool
	stores map[opened]struct{} // open routes, for Check, metrics and INFO
}

// opened is a route's store as the driver sees it.
type opened interface {
	backends.Backend
	core() *base
}

// New builds a driver from its config options, decoded strictly. It does
// not connect: pgxpool opens connections when they are first needed.
var New = backends.Decoded(NewDriver)

// NewDriver builds a driver from decoded options; zero fields get their
// defaults.
func NewDriver(name string, o Options, env backends.Env) (*Driver, error) {
	o.fill()
	if err := o.validate(); err != nil {
		return nil, err
	}
	log := env.Log
	if log == nil {
		log = zap.NewNop()
	}
	cfg, err := o.poolConfig(nil)
	if err != nil {
		return nil, err
	}
	// Asynchronous commit is a session setting sent with the startup
	// packet, so the async pool's sessions carry it from their first
	// statement and no code path can forget it.
	asyncCfg, err := o.poolConfig(map[string]string{"synchronous_commit": "off"})
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	d := &Driver{
		name:      name,
		log:       log.Named("postgres"), // the caller names the backend (backends.Factory)
		opts:      o,
		database:  databaseOf(cfg),
		pool:      pool,
		asyncCfg:  asyncCfg,
		deadlines: deadline.New(time.Duration(o.CommandTimeout)),
		enc:       env.Encodings,
		stores:    map[opened]struct{}{},
	}
	return d, nil
}

// databaseOf is the database a session of cfg lands in: the one named, or
// else (libpq's rule, applied by the server) the one named like the user.
func databaseOf(cfg *pgxpool.Config) string {
	if db := cfg.ConnConfig.Database; db != "" {
		return db
	}
	return cfg.ConnConfig.User
}

// Name is the driver's name in the config.
func (d *Driver) Name() string { return d.name }

// Database is the name of the database the driver's sessions use, known
// from the config without connecting. Table routes' RESP keys are
// CRUDPrefix(d.Database(), schema, table) + primary key.
func (d *Driver) Database() string { return d.database }

// Pool is the driver's standard pool, for callers that share the database
// (the coherence layer's LISTEN connection, the bench).
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// poolFor returns the pool a route of durability uses; the async pool is
// made by its first route.
func (d *Driver) poolFor(durability string) (*pgxpool.Pool, error) {
	if durability != DurabilityAsync {
		return d.pool, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.async == nil {
		p, err := pgxpool.NewWithConfig(context.Background(), d.asyncCfg)
		if err != nil {
			return nil, fmt.Errorf("async pool: %w", err)
		}
		d.async = p
	}
	return d.async, nil
}

// Open returns the store of one route: a kv table (spec.Table) or the rows
// of an existing table (spec.SourceTable).
//
// Open makes first contact at once, so a table that does not fit the route
// fails the config load with the reason. When the database cannot be
// reached, Open still succeeds: the route answers ErrUnavailable and sets
// its table up on the first request after the database is back.
func (d *Driver) Open(ctx context.Context, spec backends.RouteSpec) (backends.Backend, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	var s opened
	var err error
	if spec.Table != "" {
		s, err = d.openKV(spec)
	} else {
		s, err = d.openTable(spec)
	}
	if err != nil {
		return nil, err
	}
	if err := s.core().setup.ensure(ctx); err != nil {
		if !errors.Is(err, backends.ErrUnavailable) {
			s.Close()
			return nil, err
		}
		d.log.Warn("database unreachable; the route will set up its table when it is back",
			zap.String("route", spec.Name), zap.Error(err))
	}
	d.mu.Lock()
	d.stores[s] = struct{}{}
	d.mu.Unlock()
	return s, nil
}

// checkSpec is every refusal of Open that needs no database.
func checkSpec(spec backends.RouteSpec) error {
	switch {
	case spec.Table != "" && spec.SourceTable != "":
		return &backends.SpecError{Field: "source_table", Value: spec.SourceTable,
			Reason: "a route is a kv table (table) or the rows of an existing table (source_table), not both"}
	case spec.Table != "":
		_, _, _, err := kvSpec(spec)
		return err
	case spec.SourceTable != "":
		_, err := tableSpec(spec)
		return err
	}
	return &backends.SpecError{Field: "table",
		Reason: "a postgres route names a kv table (table) or an existing table (source_table)"}
}

// checkRoutes is checkSpec for every route of a config (backends.RouteCheck).
func checkRoutes(_ map[string]any, specs []backends.RouteSpec) []error {
	errs := make([]error, len(specs))
	for i, s := range specs {
		errs[i] = checkSpec(s)
	}
	return errs
}

// forget drops a closed store.
func (d *Driver) forget(s opened) {
	d.mu.Lock()
	delete(d.stores, s)
	d.mu.Unlock()
}

// openStores returns the open stores.
func (d *Driver) openStores() []opened {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]opened, 0, len(d.stores))
	for s := range d.stores {
		out = append(out, s)
	}
	return out
}

// Check reports whether every pool reaches the database and every route
// has its table set up (/readyz).
func (d *Driver) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(d.opts.CommandTimeout))
	defer cancel()
	if err := d.pool.Ping(ctx); err != nil {
		return opError(ctx, "database "+d.database, "ping", err)
	}
	d.mu.Lock()
	async := d.async
	d.mu.Unlock()
	if async != nil {
		if err := async.Ping(ctx); err != nil {
			return opError(ctx, "database "+d.database, "ping async pool", err)
		}
	}
	for _, s := range d.openStores() {
		if err := s.core().setup.ensure(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the pools. The routes' stores are closed before (the
// Driver contract); any left are closed here too.
func (d *Driver) Close() error {
	for _, s := range d.openStores() {
		s.Close()
	}
	d.pool.Close()
	d.mu.Lock()
	async := d.async
	d.mu.Unlock()
	if async != nil {
		async.Close()
	}
	return nil
}

var (
	_ backends.Driver      = (*Driver)(nil)
	_ backends.Checker     = (*Driver)(nil)
	_ backends.Collector   = (*Driver)(nil)
	_ backends.InfoSection = (*Driver)(nil)
	_ backends.RouteCheck  = checkRoutes
)

// PubSubTransport carries Publish/Subscribe messages between the pgcache
// instances that share this database (pubsub.Carrier), over a pool of its
// own.
func (d *Driver) PubSubTransport(string) (pubsub.Transport, error) {
	return pubsub.DialPostgres(d.pool.Config().Copy())
}

var _ pubsub.Carrier = (*Driver)(nil)
