package coherence

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
)

// The attach policy: what a route's L1 tier does about its table's fence
// triggers before fences for the table are trusted. It runs on every
// (re)connect of the listener (a table may be dropped and made again, its
// triggers removed) and, for a route added to a running coordinator, once
// before the tier is made (see Coordinator.AddTier).

// AttachMode is how a route's table gets its fence triggers.
type AttachMode int

const (
	// AttachCheck: the triggers must be on the table already (`pgcache
	// attach` installs them); until they are, L1 stays off and the
	// listener's state says what to run.
	AttachCheck AttachMode = iota
	// AttachAuto: pgcache installs them, or replaces those of an older
	// version (a source table's `attach: auto`).
	AttachAuto
	// AttachOwned: pgcache owns the table (a kv route): it creates it,
	// then installs them.
	AttachOwned
)

// ErrNotFenced: only PostgreSQL tables publish fences, so only the postgres
// driver's routes can have an L1 tier.
var ErrNotFenced = errors.New("not postgres: only PostgreSQL tables publish fences")

// pooled is a driver whose tables can be fenced: the postgres driver.
type pooled interface {
	Pool() *pgxpool.Pool
}

// PoolOf returns the pool a coordinator for driver d works through, or
// ErrNotFenced when d's tables publish no fences.
func PoolOf(d backends.Driver) (*pgxpool.Pool, error) {
	if p, ok := d.(pooled); ok {
		return p.Pool(), nil
	}
	return nil, ErrNotFenced
}

// preparer is a backend that can create or check its table now, rather
// than on first use: fence triggers need the table to exist.
type preparer interface {
	Prepare(ctx context.Context) error
}

// itemsTabled is a kv table whose collections' members are rows of
// another table (PostgreSQL's items table), fenced in the kv table's name.
type itemsTabled interface {
	ItemsTable() string
}

// AddRoute is AddTier for route, whose backend b is a fenced PostgreSQL
// table, with the preparation mode asks for.
func (c *Coordinator) AddRoute(ctx context.Context, route string, b backends.Backend, opts L1, mode AttachMode) (*Tier, error) {
	fenced, ok := backends.As[backends.Fenced](b)
	if !ok {
		return nil, fmt.Errorf("route %s does not publish fences", route)
	}
	table := fenced.FenceTable()
	var prepare func(ctx context.Context) error
	switch mode {
	case AttachOwned:
		prepare = func(ctx context.Context) error {
			if p, ok := backends.As[preparer](b); ok {
				if err := p.Prepare(ctx); err != nil {
					return fmt.Errorf("route %s: %w", route, err)
				}
			}
			if err := c.attachLogged(ctx, table); err != nil {
				return err
			}
			if it, ok := backends.As[itemsTabled](b); ok {
				if _, err := AttachItems(ctx, c.pool, it.ItemsTable(), table, TriggerAuto); err != nil {
					return fmt.Errorf("route %s: items of %s: %w", route, table, err)
				}
			}
			return nil
		}
	case AttachAuto:
		prepare = func(ctx context.Context) error { return c.attachLogged(ctx, table) }
	default:
		prepare = func(ctx context.Context) error {
			ok, err := Attached(ctx, c.pool, table)
			if err == nil && !ok {
				err = fmt.Errorf("route %s: %s has no fence triggers: run `pgcache attach %s`, or set attach: auto", route, table, table)
			}
			return err
		}
	}
	return c.AddTier(ctx, route, b, opts, prepare)
}

// attachLogged installs the fence triggers on table and says which function
// they run: the C trigger costs writers about a third of the PL/pgSQL one.
func (c *Coordinator) attachLogged(ctx context.Context, table string) error {
	fn, err := AttachUsing(ctx, c.pool, table, TriggerAuto)
	if err == nil {
		c.log.Info("fence triggers attached", zap.String("table", table), zap.String("trigger", string(fn)))
	}
	return err
}
