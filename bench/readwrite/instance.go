package readwrite

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/pgcache/pgcache/bench/instance"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/testenv"
)

// routeName is the table route every instance serves.
const routeName = "rows"

// instanceConfig is the YAML `pgcache run --config` reads, kept in the
// run's directory with the instance's log.
type instanceConfig struct {
	Listen          map[string]string         `yaml:"listen"`
	Log             map[string]string         `yaml:"log"`
	ShutdownTimeout string                    `yaml:"shutdown_timeout"`
	Backends        map[string]map[string]any `yaml:"backends"`
	Routes          []map[string]any          `yaml:"routes"`
}

// startInstance writes the config of instance tag under dir and starts it,
// as a child process or in this one, and waits until /readyz says its L1
// is online.
func (r *run) startInstance(ctx context.Context, dir, tag string) (instance.Instance, error) {
	cfgPath := filepath.Join(dir, "config", tag+".yaml")
	logPath := filepath.Join(dir, "logs", tag+".log")
	// The HTTP data API is off: readers use RESP, the audit the admin API.
	listen := map[string]string{"resp": "127.0.0.1:0", "admin": "127.0.0.1:0", "http": ""}
	if r.o.Server == ServerChild {
		// A child is told its ports: with port 0 only it would know them.
		for _, front := range []string{"resp", "admin"} {
			port, err := testenv.FreePort()
			if err != nil {
				return nil, err
			}
			listen[front] = net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
		}
	}
	c := instanceConfig{
		Listen:          listen,
		Log:             map[string]string{"level": "warn", "format": "json"},
		ShutdownTimeout: instance.StopTimeout.String(),
		Backends: map[string]map[string]any{"pg": {
			"type": "postgres", "dsn": r.env.dsn,
			// The instance's share of readers, and every writer (a writer
			// may SET through any instance).
			"max_conns": r.o.Readers/r.o.Instances + r.o.Writers + 4,
		}},
		Routes: []map[string]any{{
			"name": routeName, "backend": "pg", "source_table": "public." + rowsTable, "attach": "auto",
			"l1": map[string]any{"max_bytes": "512MiB"},
		}},
	}
	b, err := yaml.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("pgcache config: %w", err)
	}
	for _, d := range []string{filepath.Dir(cfgPath), filepath.Dir(logPath)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil { // it holds the DSN
		return nil, err
	}
	cfg, err := conf.Load(conf.Source{File: cfgPath, Environ: func() []string { return nil }})
	if err != nil {
		return nil, fmt.Errorf("pgcache config %s: %w", cfgPath, err)
	}
	var child *instance.ChildSpec
	if r.o.Server == ServerChild {
		child = &instance.ChildSpec{Executable: r.o.Executable, Procs: r.o.ServerProcs,
			MemLimit: r.o.ServerMemLimit, Config: cfgPath, Log: logPath, Listen: listen}
	}
	inst, err := instance.Start(ctx, child, cfg, logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tag, err)
	}
	return inst, nil
}
