package server

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/auth"
)

// Live reload: build new, swap, stop old (caddy's Load, nats-server's
// reload.go). A reload checks the new config as `pgcache validate` does
// (every reason at once), has each backend that is new or whose options
// changed reach its store within its own timeouts (a PostgreSQL or Valkey
// it cannot reach refuses the config), and builds everything it describes
// next to what is serving, reusing what did not change (see build). Only then, when nothing can fail any more, does it swap: limits,
// credentials and certificates are replaced, the route table is swapped
// in one atomic store, and once the requests holding the old table have
// finished, whatever the new generation did not keep is closed. Listeners
// and client connections are untouched throughout. A config that fails
// anywhere before the swap is refused with the reason, and the running one
// goes on serving as if nothing happened.
//
// Only the settings declared reloadable change (settings.go); a change to
// any other is refused by name (fixed).

// buildTimeout bounds building a new config: opening routes on a new
// database, preparing the tables of new L1 routes. Waiting for the old
// routes to drain is bounded by shutdown_timeout on top.
const buildTimeout = time.Minute

// ReloadFile reads the config again from its source (the file, the
// environment and the flags it was started with) and reloads it: what
// SIGHUP does.
func (s *Server) ReloadFile(ctx context.Context) error {
	s.reloadMu.Lock()
	src := s.src
	s.reloadMu.Unlock()
	return s.reloadFrom(ctx, src)
}

// LoadConfig reloads the YAML or JSON config in body, read in place of the
// config file under the same environment and flags: POST /load.
func (s *Server) LoadConfig(ctx context.Context, body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		err := errors.New("empty config: post the config as YAML or JSON")
		s.reloaded(err, "admin")
		return err
	}
	s.reloadMu.Lock()
	src := s.src
	s.reloadMu.Unlock()
	src.File, src.Bytes = "", body
	return s.reloadFrom(ctx, src)
}

func (s *Server) reloadFrom(ctx context.Context, src conf.Source) error {
	origin := "admin"
	if src.Bytes == nil {
		origin = "file"
	}
	// Decoded only: reload validates it with everything else it checks
	// (prepare), so every reason comes back at once.
	cfg, err := conf.Decode(src)
	if err == nil {
		err = s.reload(ctx, cfg)
	}
	s.reloaded(err, origin)
	return err
}

// Reload replaces the running config with cfg, decoded (conf.Decode) or
// loaded. It returns once the old routes are closed, or with the reason
// cfg was refused.
func (s *Server) Reload(ctx context.Context, cfg *conf.Config) error {
	err := s.reload(ctx, cfg)
	s.reloaded(err, "api")
	return err
}

func (s *Server) reload(ctx context.Context, cfg *conf.Config) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if s.closed {
		return errors.New("pgcache is shutting down")
	}
	prev := s.gen.Load()
	if err := fixed(prev.cfg, cfg); err != nil {
		return s.alsoWrong(ctx, cfg, prev, err.(conf.Errors))
	}
	// Certificates are read again even when their paths are unchanged:
	// renewing them in place and sending SIGHUP is how they are rotated.
	buildCtx, cancelBuild := context.WithTimeout(ctx, buildTimeout)
	next, table, tlsCfg, err := build(buildCtx, cfg, prev, true, s.metrics, s.env())
	cancelBuild()
	if err != nil {
		return err
	}

	// Nothing below fails: the new config is taken as a whole.
	users := newUsers(cfg)
	s.resp.SetConfig(respConfig(cfg))
	s.resp.SetUsers(users)
	s.data.SetUsers(users)
	s.admin.SetUsers(users)
	if tlsCfg != nil {
		s.tls.Store(tlsCfg)
	}
	next.coords.start()
	s.gen.Store(next)

	// In-flight requests hold the old table; Swap waits for them, bounded
	// like a shutdown. Past that the old backends are closed anyway, and
	// the few requests still on them fail as they would at shutdown.
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(cfg.ShutdownTimeout))
	defer cancel()
	if _, err := s.router.Swap(drainCtx, table); err != nil {
		s.log.Warn("reload: closing old routes still in use", zap.Error(err))
	}
	s.retire(prev, next)
	return nil
}

// alsoWrong adds to the settings a reload cannot change whatever else is
// wrong with cfg, so one attempt tells everything; it builds nothing that
// stays.
func (s *Server) alsoWrong(ctx context.Context, cfg *conf.Config, prev *generation, errs conf.Errors) error {
	p, err := prepare(ctx, cfg, prev, s.env())
	if err != nil {
		return append(err.(conf.Errors), errs...)
	}
	p.closeNotIn(prev, s.log)
	return errs
}

// retire closes what prev held and next does not: routes first, then the
// coordinators whose tiers they were, then the drivers under both.
func (s *Server) retire(prev, next *generation) {
	if err := prev.closeOpenedNotIn(next); err != nil {
		s.log.Warn("reload: closing old routes", zap.Error(err))
	}
	kept := map[*coherence.Coordinator]bool{}
	for _, c := range next.coords.byDrv {
		kept[c] = true
	}
	for _, c := range prev.coords.byDrv {
		if !kept[c] {
			c.Close()
		}
	}
	for name, d := range prev.drivers {
		if next.drivers[name] != d {
			if err := d.Close(); err != nil {
				s.log.Warn("reload: closing old backend", zap.String("backend", name), zap.Error(err))
			}
		}
	}
}

// reloaded counts and logs the outcome of a reload.
func (s *Server) reloaded(err error, origin string) {
	if err != nil {
		s.reloads.total.WithLabelValues("error").Inc()
		s.log.Warn("config reload refused; the running config goes on", zap.String("from", origin), zap.Error(err))
		return
	}
	s.reloads.total.WithLabelValues("ok").Inc()
	s.reloads.last.SetToCurrentTime()
	cfg := s.Config()
	s.log.Info("config reloaded", zap.String("from", origin), zap.Int("backends", len(cfg.Backends)), zap.Int("routes", len(cfg.Routes)))
}

// newUsers is the credentials of cfg, nil when auth is off.
func newUsers(cfg *conf.Config) *auth.Users {
	users := make(map[string]string, len(cfg.Auth.Users))
	for _, u := range cfg.Auth.Users {
		users[u.Name] = u.Password
	}
	return auth.New(cfg.Auth.RequirePass, users, cfg.Auth.HTTPToken)
}

// reloadMetrics count reloads, for alerting on a refused one.
type reloadMetrics struct {
	total *prometheus.CounterVec // result=ok|error
	last  prometheus.Gauge
}

func newReloadMetrics(reg prometheus.Registerer) *reloadMetrics {
	m := &reloadMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgcache_config_reloads_total",
			Help: "Config reloads (SIGHUP, POST /load, pgcache reload) by result: ok, or error (refused; the running config went on).",
		}, []string{"result"}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pgcache_config_last_reload_success_timestamp_seconds",
			Help: "When the config was last loaded (start or reload), as a Unix time.",
		}),
	}
	m.total.WithLabelValues("ok")
	m.total.WithLabelValues("error")
	m.last.SetToCurrentTime()
	reg.MustRegister(m.total, m.last)
	return m
}
