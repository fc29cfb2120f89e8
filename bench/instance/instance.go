// Package instance runs the pgcache a bench measures: as a child process
// of the bench's own binary (`pgcache run --config FILE`, with GOMAXPROCS
// and GOMEMLIMIT of its own, so the load generator shares neither its
// scheduler nor its garbage collector), or in the bench's process.
package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	_ "github.com/pgcache/pgcache/backends/standard" // the routes an in-process pgcache builds
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/server"
)

// Start and stop bounds of an instance.
const (
	StartTimeout = 60 * time.Second
	StopTimeout  = 15 * time.Second
	readyPoll    = 50 * time.Millisecond
)

// Instance is a running pgcache.
type Instance interface {
	// Addr is the address of a front: "http", "resp" or "admin".
	Addr(front string) string
	// Stop drains and stops pgcache; it may be called more than once.
	Stop() error
}

// ChildSpec is how to run a child.
type ChildSpec struct {
	Executable string            // the pgcache binary
	Procs      int               // its GOMAXPROCS
	MemLimit   int64             // its GOMEMLIMIT, in bytes
	Config     string            // the config file it runs
	Log        string            // where its output goes
	Listen     map[string]string // the fronts the config listens on
}

// ChildArgs are what the binary is run with before the config file;
// tests replace them to run a helper process instead of the binary
// (instancetest.UseChild).
var ChildArgs = []string{"run", "--config"}

// Child is pgcache running as a child process. It runs in a process group
// of its own, so a Ctrl-C at the terminal reaches the bench only, which
// then stops it in order (SIGTERM: drain, then exit); and it gets SIGTERM
// from the kernel if the bench dies first, so it is never left behind.
type Child struct {
	cmd     *exec.Cmd
	listen  map[string]string
	logPath string
	exited  chan struct{}
	waitErr error // set before exited is closed
	once    sync.Once
	stopErr error
}

// StartChild starts the binary on s.Config.
func StartChild(s ChildSpec) (*Child, error) {
	f, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child holds its own copy
	cmd := exec.Command(s.Executable, append(append([]string{}, ChildArgs...), s.Config)...)
	cmd.Env = append(childEnv(),
		fmt.Sprintf("GOMAXPROCS=%d", s.Procs),
		fmt.Sprintf("GOMEMLIMIT=%dMiB", s.MemLimit>>20))
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgcache: start %s: %w", s.Executable, err)
	}
	c := &Child{cmd: cmd, listen: s.Listen, logPath: s.Log, exited: make(chan struct{})}
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

// Addr is the address of a front, as the config says.
func (c *Child) Addr(front string) string { return c.listen[front] }

// ExitErr says why the child exited, with the end of its log, or nil
// while it runs.
func (c *Child) ExitErr() error {
	select {
	case <-c.exited:
		return fmt.Errorf("pgcache exited (%v): %s\nlog %s:\n%s", c.waitErr, lastError(c.logPath), c.logPath, TailFile(c.logPath, 10))
	default:
		return nil
	}
}

// Stop sends SIGTERM, waits for the drain, and kills the process group
// if it takes longer than StopTimeout. A child that had exited already
// reports why.
func (c *Child) Stop() error {
	c.once.Do(func() {
		select {
		case <-c.exited:
			c.stopErr = c.ExitErr()
			return
		default:
		}
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(StopTimeout):
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.exited
			c.stopErr = fmt.Errorf("pgcache did not stop within %v; killed (log %s)", StopTimeout, c.logPath)
			return
		}
		var ee *exec.ExitError
		if c.waitErr != nil && !errors.As(c.waitErr, &ee) {
			c.stopErr = c.waitErr
		} else if ee != nil && ee.ExitCode() != 0 {
			c.stopErr = fmt.Errorf("pgcache exited with %v; log %s", c.waitErr, c.logPath)
		}
	})
	return c.stopErr
}

// lastError is the reason in the last error line of a JSON log (zap's
// "msg" and "error" fields), else the log's last line.
func lastError(path string) string {
	lines := strings.Split(TailFile(path, 50), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var l struct{ Level, Msg, Error string }
		if json.Unmarshal([]byte(lines[i]), &l) == nil && l.Level == "error" {
			return strings.TrimSpace(l.Msg + ": " + l.Error)
		}
	}
	return lines[len(lines)-1] // not a JSON log: what it printed last
}

// TailFile returns the last n lines of a file.
func TailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// InProcess is pgcache running in the bench's own process: simpler, but
// it shares GOMAXPROCS and the garbage collector with the load.
type InProcess struct {
	srv *server.Server
	log *os.File
}

// StartInProcess serves cfg in this process, logging warnings and errors
// as JSON to logPath.
func StartInProcess(ctx context.Context, cfg *conf.Config, logPath string) (*InProcess, error) {
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
	return &InProcess{srv: srv, log: f}, nil
}

// Addr is the address a front listens on.
func (p *InProcess) Addr(front string) string { return p.srv.Addr(front) }

// Stop drains and stops the server; later calls return the first result.
func (p *InProcess) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	p.log.Close()
	return err
}

// Start runs cfg as a child process when child is not nil (its Config and
// Log name cfg's file and the log), else in this process logging to
// logPath, and waits until /readyz says it serves.
func Start(ctx context.Context, child *ChildSpec, cfg *conf.Config, logPath string) (Instance, error) {
	var inst Instance
	var err error
	if child != nil {
		inst, err = StartChild(*child)
	} else {
		inst, err = StartInProcess(ctx, cfg, logPath)
	}
	if err != nil {
		return nil, err
	}
	if err := WaitReady(ctx, inst); err != nil {
		inst.Stop()
		return nil, err
	}
	return inst, nil
}

// WaitReady polls the admin API's /readyz until it answers 200 (every
// backend serves, every L1 is online), at most StartTimeout. A child that
// exits meanwhile is reported at once.
func WaitReady(ctx context.Context, inst Instance) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	url := "http://" + inst.Addr("admin") + "/readyz"
	var last string
	for {
		if c, ok := inst.(*Child); ok {
			if err := c.ExitErr(); err != nil {
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
				return fmt.Errorf("pgcache not ready after %v: /readyz: %s", StartTimeout, last)
			}
			return ctx.Err()
		case <-time.After(readyPoll):
		}
	}
}
