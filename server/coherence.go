package server

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/conf"
)

// pooled is a driver whose tables can be fenced: the postgres driver.
type pooled interface {
	Pool() *pgxpool.Pool
}

// preparer is a backend that can create or check its table now, rather
// than on first use: fence triggers need the table to exist.
type preparer interface {
	Prepare(ctx context.Context) error
}

// coordinators hold one coherence coordinator per postgres driver that has
// a route with l1, shared by every table a reload builds.
type coordinators struct {
	log   *zap.Logger
	byDrv map[string]*coherence.Coordinator
}

func newCoordinators(log *zap.Logger) *coordinators {
	return &coordinators{log: log, byDrv: map[string]*coherence.Coordinator{}}
}

// tier wraps a route's backend with its coherent L1.
func (cs *coordinators) tier(name string, d backends.Driver, rc conf.Route, b backends.Backend) (backends.Backend, error) {
	p, ok := d.(pooled)
	if !ok {
		return nil, fmt.Errorf("l1: backend %s is not postgres: only PostgreSQL tables publish fences", rc.Backend)
	}
	c := cs.byDrv[rc.Backend]
	if c == nil {
		c = coherence.NewCoordinator(p.Pool(), coherence.CoordinatorOptions{}, cs.log.Named("coherence").With(zap.String("backend", rc.Backend)))
		cs.byDrv[rc.Backend] = c
	}
	fenced, ok := b.(backends.Fenced)
	if !ok {
		return nil, fmt.Errorf("l1: route %s does not publish fences", rc.Name)
	}
	table := fenced.FenceTable()
	switch {
	case rc.Table != "":
		// pgcache owns kv tables: it creates them and their triggers.
		c.OnConnect(func(ctx context.Context) error {
			if p, ok := b.(preparer); ok {
				if err := p.Prepare(ctx); err != nil {
					return fmt.Errorf("route %s: %w", rc.Name, err)
				}
			}
			return coherence.Attach(ctx, c.Pool(), table)
		})
	case rc.Attach == "auto":
		c.OnConnect(func(ctx context.Context) error { return coherence.Attach(ctx, c.Pool(), table) })
	default:
		c.OnConnect(func(ctx context.Context) error {
			ok, err := coherence.Attached(ctx, c.Pool(), table)
			if err == nil && !ok {
				err = fmt.Errorf("route %s: %s has no fence triggers: run `pgcache attach %s`, or set attach: auto", rc.Name, table, table)
			}
			return err
		})
	}
	return c.NewTier(name, b, coherence.L1{MaxBytes: int64(rc.L1.MaxBytes), TTL: time.Duration(rc.L1.TTL)})
}

func (cs *coordinators) start() {
	for _, c := range cs.byDrv {
		c.Start()
	}
}

func (cs *coordinators) close() {
	for _, c := range cs.byDrv {
		c.Close()
	}
}
