package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/route"
)

// crudPrefixer is a driver whose table routes are also reached by
// `CRUD:<db>.<schema>.<table>:<pk>` keys ("Cache-aside without the race").
type crudPrefixer interface {
	CRUDPrefix(sourceTable string) (string, error)
}

// generation is what one config built: its drivers, the backends its
// routes opened (L1 tiers included) and the coordinators of those tiers.
// A reload builds the next generation from the previous one and swaps it
// in whole; nothing in a generation changes after it is built.
type generation struct {
	cfg     *conf.Config
	drivers map[string]backends.Driver
	opened  map[string]backends.Backend // by route name, as opened (a tier for an l1 route)
	coords  *coordinators
	l1      map[string]*coherence.Metrics // by backend

	// collectors are the drivers' own metrics (backends.Collector).
	collectors []prometheus.Collector
}

// build makes the generation cfg describes, and its route table. With a
// previous generation it reuses what did not change, so a reload costs
// only what it changes:
//
//   - a driver whose entry under backends: is unchanged is kept, and so
//     are its connections, its data (memory) and its L1 coordinator;
//   - a route whose entry under routes: is unchanged, on a kept driver,
//     keeps its opened backend, L1 entries included;
//   - everything else is built anew. A changed route gets a fresh L1, so
//     no entry cached under its old definition is served under the new.
//
// Everything that can be checked without the network is checked first,
// every reason at once (prepare). A reload (connect) then has every driver
// it made reach its store before any route is opened on it: one that
// cannot refuses the config (see connectNew). A start does not wait: a
// store down at start makes its routes answer "unavailable" until it is
// back. On error build closes what it built, and leaves prev as it was.
// env is the server's: its logger, and what its drivers share.
func build(ctx context.Context, cfg *conf.Config, prev *generation, connect bool, m *route.Metrics, env backends.Env) (*generation, *route.Table, *tls.Config, error) {
	log := env.Log
	p, err := prepare(ctx, cfg, prev, env)
	if err != nil {
		return nil, nil, nil, err
	}
	if connect {
		if err := p.connectNew(ctx, prev); err != nil {
			p.closeNotIn(prev, log)
			return nil, nil, nil, err
		}
	}
	g := &generation{cfg: cfg, drivers: p.drivers, opened: map[string]backends.Backend{}, coords: newCoordinators(log)}
	kept := func(name string) bool {
		return prev != nil && prev.drivers[name] != nil && prev.drivers[name] == g.drivers[name]
	}
	if prev != nil {
		g.coords.carry(prev.coords, kept)
	}
	table, err := g.buildTable(ctx, prev, kept, m)
	if err != nil {
		g.coords.closeFresh()
		g.closeDriversNotIn(prev, log)
		return nil, nil, nil, err
	}
	g.coords.prune(cfg)
	g.l1 = g.coords.metrics()
	for _, name := range sortedNames(g.drivers) {
		if c, ok := g.drivers[name].(backends.Collector); ok {
			g.collectors = append(g.collectors, c.Collectors()...)
		}
	}
	return g, table, p.tls, nil
}

// newDriver builds the driver of backend name, with the server's env.
func newDriver(ctx context.Context, name string, entry map[string]any, env backends.Env) (backends.Driver, error) {
	typ, _ := entry["type"].(string)
	factory, err := backends.Lookup(typ)
	if err != nil {
		return nil, err
	}
	env.Log = env.Log.Named("backend").With(zap.String("backend", name))
	return factory(ctx, name, options(entry), env)
}

// options is a backend's entry without its type: what its factory takes.
func options(entry map[string]any) map[string]any {
	opts := make(map[string]any, len(entry))
	for k, v := range entry {
		if k != "type" {
			opts[k] = v
		}
	}
	return opts
}

func closeDrivers(drivers map[string]backends.Driver, log *zap.Logger) {
	for name, d := range drivers {
		if err := d.Close(); err != nil {
			log.Warn("closing backend", zap.String("backend", name), zap.Error(err))
		}
	}
}

// closeDriversNotIn closes g's drivers that prev does not hold.
func (g *generation) closeDriversNotIn(prev *generation, log *zap.Logger) {
	created := map[string]backends.Driver{}
	for name, d := range g.drivers {
		if prev == nil || prev.drivers[name] != d {
			created[name] = d
		}
	}
	closeDrivers(created, log)
}

// buildTable opens every route on its driver, or takes its backend from
// prev, and builds the route table. On error it closes the backends it
// opened and names the route.
func (g *generation) buildTable(ctx context.Context, prev *generation, kept func(backend string) bool, m *route.Metrics) (*route.Table, error) {
	cfg := g.cfg
	var prevRoutes map[string]conf.Route
	if prev != nil {
		prevRoutes = make(map[string]conf.Route, len(prev.cfg.Routes))
		for _, rc := range prev.cfg.Routes {
			prevRoutes[rc.Name] = rc
		}
	}
	fail := func(err error) (*route.Table, error) {
		g.closeOpenedNotIn(prev)
		return nil, err
	}
	routes := make([]*route.Route, 0, len(cfg.Routes))
	for i, rc := range cfg.Routes {
		d := g.drivers[rc.Backend]
		b, err := g.open(ctx, rc, d, prev, prevRoutes, kept)
		if err != nil {
			return fail(fmt.Errorf("routes[%d] (%s): %w", i, rc.Name, err))
		}
		g.opened[rc.Name] = b
		r := &route.Route{Name: rc.Name, BackendName: rc.Backend, Backend: b, MaxValueBytes: int64(rc.MaxValueBytes)}
		routes = append(routes, r)
		if rc.Prefix != nil {
			r.Prefixes = append(r.Prefixes, *rc.Prefix)
		}
		if rc.SourceTable != "" {
			r.Canon = canonOf(b)
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

// canonicalizer is a table route's store: it names each row by one key
// spelling (postgres.Table.CanonicalKey).
type canonicalizer interface {
	CanonicalKey(key string) string
}

// canonOf returns the key canonicalizer of b or of the store under its L1
// tier, nil if it has none.
func canonOf(b backends.Backend) func(string) string {
	if c, ok := backends.As[canonicalizer](b); ok {
		return c.CanonicalKey
	}
	return nil
}

// open returns the backend of one route: prev's, when the route and its
// driver are unchanged, or a newly opened one (behind a tier with l1).
func (g *generation) open(ctx context.Context, rc conf.Route, d backends.Driver, prev *generation, prevRoutes map[string]conf.Route, kept func(string) bool) (backends.Backend, error) {
	if old, ok := prevRoutes[rc.Name]; ok && kept(rc.Backend) && reflect.DeepEqual(old, rc) {
		return prev.opened[rc.Name], nil
	}
	b, err := d.Open(ctx, routeSpec(rc))
	if err != nil {
		return nil, err
	}
	if rc.L1 == nil {
		return b, nil
	}
	tiered, err := g.coords.tier(ctx, d, rc, b)
	if err != nil {
		b.Close()
		return nil, err
	}
	return tiered, nil
}

// closeOpenedNotIn closes the backends g opened that prev does not hold.
func (g *generation) closeOpenedNotIn(prev *generation) error {
	var errs []error
	for name, b := range g.opened {
		if prev != nil && prev.opened[name] == b {
			continue
		}
		if err := b.Close(); err != nil {
			errs = append(errs, fmt.Errorf("route %s: close: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// close closes the whole generation: routes, then coordinators, then
// drivers, each before what it uses.
func (g *generation) close(log *zap.Logger) {
	if err := g.closeOpenedNotIn(nil); err != nil {
		log.Warn("closing routes", zap.Error(err))
	}
	g.coords.close()
	closeDrivers(g.drivers, log)
}

// readiness asks every driver that can tell whether it is ready.
func readiness(ctx context.Context, drivers map[string]backends.Driver) []string {
	var reasons []string
	for _, n := range sortedNames(drivers) {
		c, ok := drivers[n].(backends.Checker)
		if !ok {
			continue
		}
		if err := c.Check(ctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = errors.New("no answer in time")
			}
			reasons = append(reasons, reason(n, err))
		}
	}
	return reasons
}

// reason is one line of /readyz: the backend, named once (drivers do not
// name themselves), and the error on one line: a driver's errors may carry
// newlines and tabs (pgx lists the addresses it tried on lines of their own).
func reason(backend string, err error) string {
	return "backend " + backend + ": " + strings.Join(strings.Fields(err.Error()), " ")
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
