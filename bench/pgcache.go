package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/pgcache/pgcache/bench/instance"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/testenv"
)

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
		ShutdownTimeout: instance.StopTimeout.String(),
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
func (r *runner) startPgcache(ctx context.Context, e *Engine, tag string) (instance.Instance, error) {
	for attempt := 1; ; attempt++ {
		listen := map[string]string{"http": r.o.HTTPAddr, "resp": r.o.RESPAddr, "admin": DefaultListen}
		chosen := false
		if r.o.Server == ServerChild {
			// A child is told its ports: with port 0 only it would know them.
			for front, a := range listen {
				if strings.HasSuffix(a, ":0") {
					port, err := testenv.FreePort()
					if err != nil {
						return nil, err
					}
					listen[front] = net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
					chosen = true
				}
			}
		}
		inst, err := r.startOn(ctx, e, tag, listen)
		// A port chosen here may be taken by another process before the
		// child binds it: choose again.
		if err != nil && chosen && attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			continue
		}
		return inst, err
	}
}

// startOn is startPgcache on the given listen addresses.
func (r *runner) startOn(ctx context.Context, e *Engine, tag string, listen map[string]string) (instance.Instance, error) {
	cfgPath := filepath.Join(r.o.Out, "config", tag+".yaml")
	logPath := filepath.Join(r.o.Out, "logs", tag+".log")
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
	var child *instance.ChildSpec
	if r.o.Server == ServerChild {
		child = &instance.ChildSpec{Executable: r.o.Executable, Procs: r.o.ServerProcs,
			MemLimit: r.o.ServerMemLimit, Config: cfgPath, Log: logPath, Listen: listen}
	}
	inst, err := instance.Start(ctx, child, cfg, logPath)
	if err != nil {
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
