package server

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/httpapi"
)

// coordinators hold one coherence coordinator per postgres driver that has
// a route with l1. A reload carries the coordinator of a driver it keeps,
// with its fences and LISTEN connection, into the next generation, so the
// tiers it keeps stay coherent across the swap.
type coordinators struct {
	log   *zap.Logger
	byDrv map[string]*coherence.Coordinator
	fresh map[*coherence.Coordinator]bool // made by this generation, not started yet
}

func newCoordinators(log *zap.Logger) *coordinators {
	return &coordinators{log: log, byDrv: map[string]*coherence.Coordinator{}, fresh: map[*coherence.Coordinator]bool{}}
}

// carry takes over prev's coordinator of every driver kept says is kept.
func (cs *coordinators) carry(prev *coordinators, kept func(backend string) bool) {
	if prev == nil {
		return
	}
	for name, c := range prev.byDrv {
		if kept(name) {
			cs.byDrv[name] = c
		}
	}
}

// tier wraps a route's backend with its coherent L1. What the tier does
// about its table's fence triggers (coherence.AttachMode) follows from the
// route: pgcache owns a kv table; a source table is attached when the route
// says attach: auto, else only checked.
func (cs *coordinators) tier(ctx context.Context, d backends.Driver, rc conf.Route, b backends.Backend) (backends.Backend, error) {
	c := cs.byDrv[rc.Backend]
	if c == nil {
		pool, err := coherence.PoolOf(d)
		if err != nil {
			return nil, fmt.Errorf("l1: backend %s is %w", rc.Backend, err)
		}
		c = coherence.NewCoordinator(pool, coherence.CoordinatorOptions{}, cs.log.Named("coherence").With(zap.String("backend", rc.Backend)))
		cs.byDrv[rc.Backend] = c
		cs.fresh[c] = true
	}
	mode := coherence.AttachCheck
	switch {
	case rc.Table != "":
		mode = coherence.AttachOwned
	case rc.Attach == "auto":
		mode = coherence.AttachAuto
	}
	t, err := c.AddRoute(ctx, rc.Name, b, coherence.L1{MaxBytes: int64(rc.L1.MaxBytes), TTL: time.Duration(rc.L1.TTL), Refresh: rc.L1.Refresh}, mode)
	if err != nil {
		return nil, fmt.Errorf("l1: %w", err)
	}
	return t, nil
}

// prune drops the coordinators of drivers no route with l1 uses any more.
// A carried one keeps running until the reload retires the generation it
// came from (see Server.retire).
func (cs *coordinators) prune(cfg *conf.Config) {
	used := map[string]bool{}
	for _, rc := range cfg.Routes {
		if rc.L1 != nil {
			used[rc.Backend] = true
		}
	}
	for name, c := range cs.byDrv {
		if !used[name] {
			delete(cs.byDrv, name)
			delete(cs.fresh, c)
		}
	}
}

// start runs the coordinators this generation made.
func (cs *coordinators) start() {
	for c := range cs.fresh {
		c.Start()
	}
	clear(cs.fresh)
}

// close stops every coordinator.
func (cs *coordinators) close() {
	for _, c := range cs.byDrv {
		c.Close()
	}
}

// closeFresh stops the coordinators this generation made: a build that
// failed.
func (cs *coordinators) closeFresh() {
	for c := range cs.fresh {
		c.Close()
	}
}

// metrics returns the collectors of the coordinators, by backend: they
// serve /metrics, INFO and /readyz.
func (cs *coordinators) metrics() map[string]*coherence.Metrics {
	m := make(map[string]*coherence.Metrics, len(cs.byDrv))
	for name, c := range cs.byDrv {
		m[name] = coherence.NewMetrics(name, c)
	}
	return m
}

// l1Tiers returns the L1 tiers of the routes serving now, for GET
// /debug/l1. A listing that outlives a reload keeps the tiers it was
// given; a retired tier lists what it still holds, which is nothing once
// it has closed.
func (s *Server) l1Tiers() []httpapi.L1Tier {
	g := s.gen.Load()
	var tiers []httpapi.L1Tier
	for _, name := range sortedNames(g.opened) {
		if t, ok := g.opened[name].(*coherence.Tier); ok {
			tiers = append(tiers, t)
		}
	}
	return tiers
}
