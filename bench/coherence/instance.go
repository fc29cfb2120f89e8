package coherence

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.yaml.in/yaml/v3"

	_ "github.com/pgcache/pgcache/backends/standard" // the routes an in-process pgcache builds
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/testenv"
	"github.com/pgcache/pgcache/server"
)

// Start and stop bounds of a pgcache instance.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 15 * time.Second
	readyPoll    = 50 * time.Millisecond
)

// routeName is the table route every instance serves.
const routeName = "rows"

// instance is one running pgcache of the pgcache stack.
type instance interface {
	// addr is the address of a front: "resp" or "admin".
	addr(front string) string
	// stop drains and stops pgcache; it may be called more than once.
	stop() error
}

// instanceConfig is the YAML `pgcache run --config` reads, kept in the
// run's directory with the instance's log.
type instanceConfig struct {
	Listen          map[string]string         `yaml:"listen"`
	Log             map[string]string         `yaml:"log"`
	ShutdownTimeout string                    `yaml:"shutdown_timeout"`
	Backends        map[string]map[string]any `yaml:"backends"`
	Routes          []map[string]any          `yaml:"routes"`
}

// startInstance writes instance i's config under dir and starts it, as a
// child process or in this one, and waits until /readyz says its L1 is
// online.
func (r *run) startInstance(ctx context.Context, dir string, i int) (instance, error) {
	tag := fmt.Sprintf("pgcache-%d", i)
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
		ShutdownTimeout: stopTimeout.String(),
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
	var inst instance
	if r.o.Server == ServerChild {
		inst, err = startChild(r.o, cfgPath, logPath, listen)
	} else {
		inst, err = startInProcess(ctx, cfg, logPath)
	}
	if err != nil {
		return nil, fmt.Errorf("pgcache instance %d: %w", i, err)
	}
	if err := waitReady(ctx, inst); err != nil {
		inst.stop()
		return nil, fmt.Errorf("pgcache instance %d: %w", i, err)
	}
	return inst, nil
}

// waitReady polls the admin API's /readyz until it answers 200: the
// backend serves and the L1 is online.
func waitReady(ctx context.Context, inst instance) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
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
				return fmt.Errorf("not ready after %v: /readyz: %s", startTimeout, last)
			}
			return ctx.Err()
		case <-time.After(readyPoll):
		}
	}
}

// child is pgcache running as a child process of this binary (`pgcache
// run --config FILE`) with GOMAXPROCS and GOMEMLIMIT of its own, so the
// load generator shares neither its scheduler nor its garbage collector.
// It runs in a process group of its own, so a Ctrl-C at the terminal
// reaches the bench only, which then stops it in order; and it gets
// SIGTERM from the kernel if the bench dies first.
type child struct {
	cmd     *exec.Cmd
	listen  map[string]string
	logPath string
	exited  chan struct{}
	waitErr error // set before exited is closed
	stopped bool
	stopErr error
}

// childArgs are what the binary is run with before the config file;
// tests replace them to run a helper process instead of the binary.
var childArgs = []string{"run", "--config"}

func startChild(o *Options, cfgPath, logPath string, listen map[string]string) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child holds its own copy
	cmd := exec.Command(o.Executable, append(append([]string{}, childArgs...), cfgPath)...)
	cmd.Env = append(childEnv(),
		fmt.Sprintf("GOMAXPROCS=%d", o.ServerProcs),
		fmt.Sprintf("GOMEMLIMIT=%dMiB", o.ServerMemLimit>>20))
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Executable, err)
	}
	c := &child{cmd: cmd, listen: listen, logPath: logPath, exited: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// childEnv is this process's environment without what would change the
// child's config or caps behind the bench's back.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PGCACHE_") || name == "GOMAXPROCS" || name == "GOMEMLIMIT" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (c *child) addr(front string) string { return c.listen[front] }

// exitErr says why the child exited, with the end of its log, or nil
// while it runs.
func (c *child) exitErr() error {
	select {
	case <-c.exited:
		return fmt.Errorf("pgcache exited (%v); log %s:\n%s", c.waitErr, c.logPath, tailFile(c.logPath, 10))
	default:
		return nil
	}
}

// stop sends SIGTERM, waits for the drain, and kills the process group
// when it takes longer than stopTimeout. The run calls it from one
// goroutine.
func (c *child) stop() error {
	if c.stopped {
		return c.stopErr
	}
	c.stopped = true
	select {
	case <-c.exited:
		c.stopErr = c.exitErr()
		return c.stopErr
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(stopTimeout):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
		c.stopErr = fmt.Errorf("pgcache did not stop within %v; killed (log %s)", stopTimeout, c.logPath)
		return c.stopErr
	}
	if c.waitErr != nil {
		c.stopErr = fmt.Errorf("pgcache exited with %v; log %s", c.waitErr, c.logPath)
	}
	return c.stopErr
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// inProcess is pgcache running in the bench's own process: simpler, but
// it shares GOMAXPROCS and the garbage collector with the load.
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
		return nil, err
	}
	if err := srv.Start(); err != nil {
		srv.Shutdown(context.Background())
		f.Close()
		return nil, err
	}
	return &inProcess{srv: srv, log: f}, nil
}

func (p *inProcess) addr(front string) string { return p.srv.Addr(front) }

func (p *inProcess) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err := p.srv.Shutdown(ctx) // once: later calls return the first result
	p.log.Close()
	return err
}
