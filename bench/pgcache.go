package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.yaml.in/yaml/v3"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/testenv"
	"github.com/pgcache/pgcache/server"
)

// Start and stop bounds of a pgcache instance.
const (
	pgcacheStartTimeout = 60 * time.Second
	pgcacheStopTimeout  = 15 * time.Second
	readyPoll           = 50 * time.Millisecond
)

// instance is one running pgcache serving one engine's route.
type instance interface {
	// addr is the address of a front: "http", "resp" or "admin".
	addr(front string) string
	// stop drains and stops pgcache; it may be called more than once.
	stop() error
}

// fileConfig is the pgcache config a run writes for an engine: the YAML
// `pgcache run --config` reads, kept in the results directory.
type fileConfig struct {
	Listen          map[string]string         `yaml:"listen"`
	Log             map[string]string         `yaml:"log"`
	ShutdownTimeout string                    `yaml:"shutdown_timeout"`
	Backends        map[string]map[string]any `yaml:"backends"`
	Routes          []map[string]any          `yaml:"routes"`
}

// Backend names in the configs the bench writes.
const (
	backendMemory   = "mem"
	backendValkey   = "valkey"
	backendPostgres = "pg"
)

// memoryBytesPerKey sizes the memory backend: far more than a UserData
// takes, so nothing is evicted during a run.
const memoryBytesPerKey = 1 << 10

// writeConfig writes the config of engine e, listening on listen, to path.
func (r *runner) writeConfig(path string, e *Engine, listen map[string]string) error {
	route := map[string]any{"name": e.Route, "prefix": e.Prefix}
	for k, v := range e.route {
		route[k] = v
	}
	c := fileConfig{
		Listen:          listen,
		Log:             map[string]string{"level": "warn", "format": "json"},
		ShutdownTimeout: pgcacheStopTimeout.String(),
		Backends:        map[string]map[string]any{},
	}
	switch e.service {
	case svcMemory:
		route["backend"] = backendMemory
		c.Backends[backendMemory] = map[string]any{"type": "memory", "max_bytes": max(256<<20, r.o.Keys*memoryBytesPerKey)}
	case svcValkey:
		route["backend"] = backendValkey
		c.Backends[backendValkey] = map[string]any{"type": "valkey", "addrs": []string{r.valkey.addr}}
	case svcPostgres:
		route["backend"] = backendPostgres
		c.Backends[backendPostgres] = map[string]any{"type": "postgres", "dsn": r.pg.dsn, "max_conns": r.o.PGConns}
	}
	c.Routes = []map[string]any{route}
	b, err := yaml.Marshal(&c)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return os.WriteFile(path, b, 0o600) // it holds the DSN
}

// startPgcache writes engine e's config and starts pgcache on it, in this
// process or as a child, and waits until /readyz says every backend can
// serve. tag names the run's files (config, log).
func (r *runner) startPgcache(ctx context.Context, e *Engine, tag string) (instance, error) {
	cfgPath := filepath.Join(r.o.Out, "config", tag+".yaml")
	logPath := filepath.Join(r.o.Out, "logs", tag+".log")
	listen := map[string]string{"http": r.o.HTTPAddr, "resp": r.o.RESPAddr, "admin": DefaultListen}
	if r.o.Server == ServerChild {
		// A child is told its ports: with port 0 only it would know them.
		for front, a := range listen {
			if strings.HasSuffix(a, ":0") {
				port, err := testenv.FreePort()
				if err != nil {
					return nil, err
				}
				listen[front] = net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
			}
		}
	}
	if err := r.writeConfig(cfgPath, e, listen); err != nil {
		return nil, err
	}
	// The config is checked here for both modes, with the same conf package
	// the binary has, so a refused option is reported the same way.
	cfg, err := conf.Load(conf.Source{File: cfgPath, Environ: func() []string { return nil }})
	if err != nil {
		return nil, classify(e, fmt.Errorf("pgcache config %s:\n%w", cfgPath, err))
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	var inst instance
	if r.o.Server == ServerChild {
		inst, err = startChild(r.o, cfgPath, logPath, listen)
	} else {
		inst, err = startInProcess(ctx, cfg, logPath)
	}
	if err != nil {
		return nil, classify(e, err)
	}
	if err := waitReady(ctx, inst); err != nil {
		inst.stop()
		return nil, classify(e, err)
	}
	return inst, nil
}

// classify turns a refusal of the l1 option into ErrUnavailable: the
// tiered engine waits for a pgcache that has the coherent L1.
func classify(e *Engine, err error) error {
	if e.l1 && strings.Contains(err.Error(), "l1") {
		return fmt.Errorf("%w: this pgcache does not accept the route option l1: %v", ErrUnavailable, err)
	}
	return err
}

// waitReady polls the admin API's /readyz until it answers 200.
func waitReady(ctx context.Context, inst instance) error {
	ctx, cancel := context.WithTimeout(ctx, pgcacheStartTimeout)
	defer cancel()
	url := "http://" + inst.addr("admin") + "/readyz"
	var last string
	for {
		if c, ok := inst.(*child); ok {
			if err := c.exitErr(); err != nil {
				return err
			}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var b [512]byte
			n, _ := resp.Body.Read(b[:])
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b[:n])))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("pgcache not ready after %v: /readyz: %s", pgcacheStartTimeout, last)
			}
			return ctx.Err()
		case <-time.After(readyPoll):
		}
	}
}

// inProcess is pgcache running in the bench's own process.
type inProcess struct {
	srv *server.Server
	log *os.File
}

func startInProcess(ctx context.Context, cfg *conf.Config, logPath string) (*inProcess, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(f), zap.WarnLevel))
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pgcache: %w", err)
	}
	if err := srv.Start(); err != nil {
		srv.Shutdown(context.Background())
		f.Close()
		return nil, fmt.Errorf("pgcache: %w", err)
	}
	return &inProcess{srv: srv, log: f}, nil
}

func (p *inProcess) addr(front string) string { return p.srv.Addr(front) }

func (p *inProcess) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), pgcacheStopTimeout)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	p.log.Close()
	return err
}
