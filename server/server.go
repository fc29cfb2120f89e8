// Package server assembles pgcache from its config: the backends, the route
// table, the RESP and HTTP fronts and the admin API, and runs them until
// told to stop. A reload (reload.go) swaps in what a new config builds
// while every listener and connection stays open. cmd/pgcache is a thin
// shell around it; tests start it in-process on free ports.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/httpapi"
	"github.com/pgcache/pgcache/internal/certs"
	"github.com/pgcache/pgcache/proxy"
	"github.com/pgcache/pgcache/pubsub"
	"github.com/pgcache/pgcache/route"
)

// Server is one running pgcache.
type Server struct {
	log     *zap.Logger
	reg     *prometheus.Registry
	metrics *route.Metrics
	router  *route.Router
	reloads *reloadMetrics
	// busy is the busy-reply-threshold the memory stores wait by and
	// scripts run by; CONFIG SET changes it, a reload keeps it.
	busy *backends.BusyThreshold
	enc  *backends.Encodings // encoding thresholds (CONFIG SET hash-max-listpack-entries…), every driver's

	resp  *proxy.Server
	data  *httpapi.Data
	admin *httpapi.Admin
	tls   *certs.Reloadable // nil when no front serves TLS

	// gen is the generation serving now. A reload replaces it under
	// reloadMu; readers (INFO, /readyz, /metrics) load it without a lock.
	reloadMu sync.Mutex
	gen      atomic.Pointer[generation]
	src      conf.Source // what SIGHUP and POST /load read again
	closed   bool        // under reloadMu: Shutdown closed the generation

	mu        sync.Mutex
	listeners map[string]net.Listener // "resp", "resp_unix", "http", "admin"
	serving   sync.WaitGroup
	serveErr  chan error

	shutdownOnce sync.Once
	shutdownErr  error
}

// New builds everything the config describes, without listening yet.
func New(ctx context.Context, cfg *conf.Config, log *zap.Logger) (*Server, error) {
	s := &Server{
		log:       log,
		reg:       prometheus.NewRegistry(),
		listeners: map[string]net.Listener{},
		serveErr:  make(chan error, 4),
		busy:      backends.NewBusyThreshold(backends.DefaultBusyThreshold),
		enc:       new(backends.Encodings),
	}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = route.NewMetrics(s.reg)
	s.reloads = newReloadMetrics(s.reg)
	// Backends and L1 tiers change with reloads: one collector reads
	// whatever generation is current at scrape time, so a replaced
	// driver's series go away with it and a new one's appear.
	s.reg.MustRegister(generationCollector{s})

	g, table, tlsCfg, err := build(ctx, cfg, nil, false, s.metrics, s.env())
	if err != nil {
		return nil, err
	}
	s.gen.Store(g)
	s.router = route.NewRouter(table)
	if tlsCfg != nil {
		s.tls = certs.NewReloadable(tlsCfg)
	}

	users := newUsers(cfg)
	s.resp = proxy.New(s.router, s.metrics, respConfig(cfg), s.env(), log.Named("resp"), s.reg)
	if err := s.attachPubSub(cfg, g); err != nil {
		g.close(log)
		return nil, err
	}
	s.resp.SetInfoFunc(s.info)
	s.resp.SetUsers(users)
	s.data = httpapi.NewData(s.router, httpapi.ConfigOf(cfg.HTTP), log.Named("http"), s.reg)
	s.data.SetUsers(users)
	s.admin = httpapi.NewAdmin(httpapi.AdminOptions{
		Gatherer: s.reg,
		Ready:    s.ready,
		Config:   func() ([]byte, error) { return s.Config().Redacted() },
		Load:     s.LoadConfig,
		L1:       s.l1Tiers,
	}, log.Named("admin"))
	s.admin.SetUsers(users)
	return s, nil
}

// attachPubSub connects the RESP front's Publish/Subscribe to the other
// instances through the backend pubsub.backend names, if any.
func (s *Server) attachPubSub(cfg *conf.Config, g *generation) error {
	name := cfg.PubSub.Backend
	if name == "" {
		return nil
	}
	c, ok := g.drivers[name].(pubsub.Carrier)
	if !ok {
		return fmt.Errorf("pubsub.backend: %q cannot carry messages between instances", name)
	}
	t, err := c.PubSubTransport(cfg.PubSub.Prefix)
	if err != nil {
		return fmt.Errorf("pubsub.backend: %q: %w", name, err)
	}
	s.resp.PubSub().Attach(t, s.log.Named("pubsub"))
	return nil
}

// respConfig is the RESP front's part of cfg.
func respConfig(cfg *conf.Config) proxy.Config { return proxy.ConfigOf(cfg.RESP, Version()) }

// env is what the server gives each driver it builds.
func (s *Server) env() backends.Env {
	return backends.Env{Log: s.log, Busy: s.busy, Encodings: s.enc}
}

// SetSource records where the config came from, so that SIGHUP
// (ReloadFile) reads the same file, environment and flags again, and POST
// /load puts its body in place of the file under the same environment and
// flags. Call it before Start. Without it a reload reads the embedded
// default under the process's environment.
func (s *Server) SetSource(src conf.Source) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.src = src
	file := src.File
	if abs, err := filepath.Abs(file); err == nil && file != "" {
		file = abs
	}
	s.resp.SetConfigFile(file) // INFO's config_file
}

// Config returns the config serving now. Callers must not modify it.
func (s *Server) Config() *conf.Config { return s.gen.Load().cfg }

// Addr returns the address a front listens on ("resp", "resp_unix",
// "http", "admin"), or "" when it is off.
func (s *Server) Addr(front string) string {
	if ln := s.listener(front); ln != nil {
		return ln.Addr().String()
	}
	return ""
}

// Errors reports a front that stopped serving on its own.
func (s *Server) Errors() <-chan error { return s.serveErr }

// Shutdown stops accepting, lets in-flight requests finish and their replies
// flush (bounded by ctx), then closes the routes and backends.
// It may be called more than once; the later calls return the first result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, stop := range []func(context.Context) error{s.resp.Shutdown, s.data.Shutdown} {
		wg.Go(func() {
			if err := stop(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// The admin API goes last, so /healthz answers while the fronts drain.
	if err := s.admin.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	s.serving.Wait()
	if err := s.resp.PubSub().Close(); err != nil {
		errs = append(errs, err)
	}
	s.close()
	return errors.Join(errs...)
}

// close closes the generation serving now. A reload still running is
// waited for, and none starts after.
func (s *Server) close() {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.closed = true
	s.gen.Load().close(s.log)
}

// ready lists why pgcache cannot serve every route now, for /readyz.
func (s *Server) ready(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	g := s.gen.Load()
	reasons := readiness(ctx, g.drivers)
	for _, name := range sortedNames(g.l1) {
		if err := g.l1[name].Check(ctx); err != nil {
			reasons = append(reasons, reason(name, err))
		}
	}
	return reasons
}

// info adds each backend's INFO lines.
func (s *Server) info(ctx context.Context) [][2]string {
	g := s.gen.Load()
	var lines [][2]string
	for _, name := range sortedNames(g.drivers) {
		if is, ok := g.drivers[name].(backends.InfoSection); ok {
			lines = append(lines, is.Info(ctx)...)
		}
	}
	for _, name := range sortedNames(g.l1) {
		lines = append(lines, g.l1[name].Info(ctx)...)
	}
	return lines
}

// Router is the server's router (tests, the bench).
func (s *Server) Router() *route.Router { return s.router }

// generationCollector exports the current generation's driver and L1
// metrics. It describes nothing (an unchecked collector, in Prometheus's
// terms) because what it collects changes with each reload.
type generationCollector struct{ s *Server }

func (generationCollector) Describe(chan<- *prometheus.Desc) {}

func (c generationCollector) Collect(ch chan<- prometheus.Metric) {
	g := c.s.gen.Load()
	for _, col := range g.collectors {
		col.Collect(ch)
	}
	for _, name := range sortedNames(g.l1) {
		g.l1[name].Collect(ch)
	}
}
