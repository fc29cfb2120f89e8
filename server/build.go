package server

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/route"
)

// crudPrefixer is a driver whose table routes are also reached by
// `CRUD:<db>.<schema>.<table>:<pk>` keys (seeds/001).
type crudPrefixer interface {
	CRUDPrefix(sourceTable string) (string, error)
}

// buildDrivers creates every configured backend. On error it closes what it
// built and names the backend.
func buildDrivers(ctx context.Context, cfg *conf.Config, log *zap.Logger) (map[string]backends.Driver, error) {
	drivers := make(map[string]backends.Driver, len(cfg.Backends))
	names := make([]string, 0, len(cfg.Backends))
	for name := range cfg.Backends {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		opts := make(map[string]any, len(cfg.Backends[name]))
		for k, v := range cfg.Backends[name] {
			if k != "type" {
				opts[k] = v
			}
		}
		typ, _ := cfg.Backends[name]["type"].(string)
		factory, err := backends.Lookup(typ)
		if err == nil {
			var d backends.Driver
			d, err = factory(ctx, name, opts, log.Named("backend").With(zap.String("backend", name)))
			if err == nil {
				drivers[name] = d
				continue
			}
		}
		closeDrivers(drivers, log)
		return nil, fmt.Errorf("backends.%s: %w", name, err)
	}
	return drivers, nil
}

func closeDrivers(drivers map[string]backends.Driver, log *zap.Logger) {
	for name, d := range drivers {
		if err := d.Close(); err != nil {
			log.Warn("closing backend", zap.String("backend", name), zap.Error(err))
		}
	}
}

// buildTable opens every route on its driver and builds the route table.
// On error it closes the backends it opened and names the route.
func buildTable(ctx context.Context, cfg *conf.Config, drivers map[string]backends.Driver, coords *coordinators, m *route.Metrics) (*route.Table, error) {
	routes := make([]*route.Route, 0, len(cfg.Routes))
	fail := func(err error) (*route.Table, error) {
		for _, r := range routes {
			r.Backend.Close()
		}
		return nil, err
	}
	for i, rc := range cfg.Routes {
		d := drivers[rc.Backend]
		b, err := d.Open(ctx, backends.RouteSpec{
			Name:        rc.Name,
			Table:       rc.Table,
			Durability:  rc.Durability,
			KeyType:     rc.KeyType,
			SourceTable: rc.SourceTable,
		})
		if err != nil {
			return fail(fmt.Errorf("routes[%d] (%s): %w", i, rc.Name, err))
		}
		if rc.L1 != nil {
			tiered, err := coords.tier(rc.Name, d, rc, b)
			if err != nil {
				b.Close()
				return fail(fmt.Errorf("routes[%d] (%s): %w", i, rc.Name, err))
			}
			b = tiered
		}
		r := &route.Route{Name: rc.Name, BackendName: rc.Backend, Backend: b, MaxValueBytes: int64(rc.MaxValueBytes)}
		routes = append(routes, r)
		if rc.Prefix != nil {
			r.Prefixes = append(r.Prefixes, *rc.Prefix)
		}
		if rc.SourceTable != "" {
			cp, ok := d.(crudPrefixer)
			if !ok {
				return fail(fmt.Errorf("routes[%d] (%s): backend %s cannot serve source_table", i, rc.Name, rc.Backend))
			}
			p, err := cp.CRUDPrefix(rc.SourceTable)
			if err != nil {
				return fail(fmt.Errorf("routes[%d] (%s): %w", i, rc.Name, err))
			}
			r.Prefixes = append(r.Prefixes, p)
		}
	}
	t, err := route.NewTable(routes, m)
	if err != nil {
		return fail(err)
	}
	return t, nil
}

// readiness asks every driver that can tell whether it is ready.
func readiness(ctx context.Context, drivers map[string]backends.Driver) []string {
	var reasons []string
	names := make([]string, 0, len(drivers))
	for n := range drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c, ok := drivers[n].(backends.Checker)
		if !ok {
			continue
		}
		if err := c.Check(ctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = errors.New("no answer in time")
			}
			reasons = append(reasons, fmt.Sprintf("backend %s: %v", n, err))
		}
	}
	return reasons
}

// CheckBackends builds every backend from its options and closes it again:
// the check `pgcache validate` makes beyond the config's own validation.
// Factories do not connect, so this needs no server to be up.
func CheckBackends(ctx context.Context, cfg *conf.Config, log *zap.Logger) error {
	drivers, err := buildDrivers(ctx, cfg, log)
	if err != nil {
		return err
	}
	closeDrivers(drivers, log)
	return nil
}
