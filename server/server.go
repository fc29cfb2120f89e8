// Package server assembles pgcache from its config: the backends, the route
// table, the RESP and HTTP fronts and the admin API, and runs them until
// told to stop. cmd/pgcache is a thin shell around it; tests start it
// in-process on free ports.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/httpapi"
	"github.com/pgcache/pgcache/proxy"
	"github.com/pgcache/pgcache/route"
)

// Server is one running pgcache.
type Server struct {
	cfg     *conf.Config
	log     *zap.Logger
	reg     *prometheus.Registry
	metrics *route.Metrics
	drivers map[string]backends.Driver
	coords  *coordinators
	router  *route.Router

	resp  *proxy.Server
	data  *httpapi.Data
	admin *httpapi.Admin

	mu        sync.Mutex
	listeners map[string]net.Listener // "resp", "http", "admin"
	serving   sync.WaitGroup
	serveErr  chan error

	// extras are INFO sections and readiness checks beyond the drivers'.
	extras []interface {
		Info(context.Context) [][2]string
		Check(context.Context) error
	}

	shutdownOnce sync.Once
	shutdownErr  error
}

// New builds everything the config describes, without listening yet.
func New(ctx context.Context, cfg *conf.Config, log *zap.Logger) (*Server, error) {
	s := &Server{
		cfg:       cfg,
		log:       log,
		reg:       prometheus.NewRegistry(),
		listeners: map[string]net.Listener{},
		serveErr:  make(chan error, 3),
	}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = route.NewMetrics(s.reg)

	drivers, err := buildDrivers(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	s.coords = newCoordinators(log)
	table, err := buildTable(ctx, cfg, drivers, s.coords, s.metrics)
	if err != nil {
		closeDrivers(drivers, log)
		return nil, err
	}
	s.drivers = drivers
	s.router = route.NewRouter(table)
	for name, d := range drivers {
		if c, ok := d.(backends.Collector); ok {
			for _, col := range c.Collectors() {
				if err := s.reg.Register(col); err != nil {
					s.close()
					return nil, fmt.Errorf("backends.%s: metrics: %w", name, err)
				}
			}
		}
	}

	for name, c := range s.coords.byDrv {
		m := coherence.NewMetrics(name, c)
		if err := s.reg.Register(m); err != nil {
			s.close()
			return nil, fmt.Errorf("backends.%s: l1 metrics: %w", name, err)
		}
		s.extras = append(s.extras, m)
	}

	s.resp = proxy.New(s.router, s.metrics, proxy.Config{
		MaxClients:        cfg.RESP.MaxClients,
		MaxBulkBytes:      int64(cfg.RESP.MaxBulkBytes),
		MaxInlineBytes:    int(cfg.RESP.MaxInlineBytes),
		MaxMultibulkLen:   cfg.RESP.MaxMultibulkLen,
		MaxQueryBytes:     int64(cfg.RESP.MaxQueryBytes),
		OutputBufferLimit: int64(cfg.RESP.OutputBufferLimit),
		IdleTimeout:       time.Duration(cfg.RESP.IdleTimeout),
		WriteTimeout:      time.Duration(cfg.RESP.WriteTimeout),
		Version:           Version(),
	}, log.Named("resp"), s.reg)
	s.resp.SetInfoFunc(s.info)
	s.data = httpapi.NewData(s.router, httpapi.Config{
		MaxBodyBytes:   int64(cfg.HTTP.MaxBodyBytes),
		ReadTimeout:    time.Duration(cfg.HTTP.ReadTimeout),
		WriteTimeout:   time.Duration(cfg.HTTP.WriteTimeout),
		IdleTimeout:    time.Duration(cfg.HTTP.IdleTimeout),
		MaxConns:       cfg.HTTP.MaxConns,
		ReadBufferSize: int(cfg.HTTP.MaxHeaderBytes),
	}, log.Named("http"), s.reg)
	s.admin = httpapi.NewAdmin(httpapi.AdminOptions{
		Gatherer: s.reg,
		Ready:    s.ready,
		Config:   cfg.Redacted,
	}, log.Named("admin"))
	return s, nil
}

// Start listens on every configured address and serves in the background.
// An address with port 0 gets a free port: Addr tells which.
func (s *Server) Start() error {
	s.coords.start()
	type front struct {
		name, addr string
		serve      func(net.Listener) error
	}
	fronts := []front{
		{"resp", s.cfg.Listen.RESP, s.resp.Serve},
		{"http", s.cfg.Listen.HTTP, s.data.Serve},
		{"admin", s.cfg.Listen.Admin, s.admin.Serve},
	}
	var lc net.ListenConfig
	for _, f := range fronts {
		if f.addr == "" {
			continue
		}
		ln, err := lc.Listen(context.Background(), "tcp", f.addr)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("listen.%s: %w", f.name, err)
		}
		s.mu.Lock()
		s.listeners[f.name] = ln
		s.mu.Unlock()
	}
	for _, f := range fronts {
		ln := s.listener(f.name)
		if ln == nil {
			continue
		}
		s.log.Info("listening", zap.String("front", f.name), zap.String("addr", ln.Addr().String()))
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			if err := f.serve(ln); err != nil {
				s.serveErr <- fmt.Errorf("%s: %w", f.name, err)
			}
		}()
	}
	return nil
}

func (s *Server) listener(name string) net.Listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listeners[name]
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, ln := range s.listeners {
		ln.Close()
		delete(s.listeners, name)
	}
}

// Addr returns the address a front listens on ("resp", "http", "admin"),
// or "" when it is off.
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
	s.close()
	return errors.Join(errs...)
}

func (s *Server) close() {
	s.coords.close()
	if err := s.router.Current().Close(); err != nil {
		s.log.Warn("closing routes", zap.Error(err))
	}
	closeDrivers(s.drivers, s.log)
}

// ready lists why pgcache cannot serve every route now, for /readyz.
func (s *Server) ready(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	reasons := readiness(ctx, s.drivers)
	for _, e := range s.extras {
		if err := e.Check(ctx); err != nil {
			reasons = append(reasons, err.Error())
		}
	}
	return reasons
}

// info adds each backend's INFO lines.
func (s *Server) info(ctx context.Context) [][2]string {
	var lines [][2]string
	for _, d := range s.drivers {
		if is, ok := d.(backends.InfoSection); ok {
			lines = append(lines, is.Info(ctx)...)
		}
	}
	for _, e := range s.extras {
		lines = append(lines, e.Info(ctx)...)
	}
	return lines
}

// Router is the server's router (tests, the bench).
func (s *Server) Router() *route.Router { return s.router }
