package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
)

// child is pgcache running as a child process: `pgcache run --config FILE`
// with GOMAXPROCS and GOMEMLIMIT of its own, seeds/000's server caps.
//
// It runs in a process group of its own, so a Ctrl-C at the terminal
// reaches the bench only, which then stops it in order (SIGTERM: drain,
// then exit); and it gets SIGTERM from the kernel if the bench dies first,
// so it is never left behind.
type child struct {
	cmd     *exec.Cmd
	listen  map[string]string
	logPath string
	exited  chan struct{}
	waitErr error // set before exited is closed
	once    sync.Once
	stopErr error
}

// childArgs are what the binary is run with before the config file;
// tests replace them to run a helper process instead of the binary.
var childArgs = []string{"run", "--config"}

// startChild starts the binary on the config at cfgPath, which listens on
// listen, logging to logPath.
func startChild(o *Options, cfgPath, logPath string, listen map[string]string) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child holds its own copy
	args := append(append([]string{}, childArgs...), cfgPath)
	cmd := exec.Command(o.Executable, args...)
	cmd.Env = append(childEnv(),
		fmt.Sprintf("GOMAXPROCS=%d", o.ServerProcs),
		fmt.Sprintf("GOMEMLIMIT=%dMiB", o.ServerMemLimit>>20))
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgcache: start %s: %w", o.Executable, err)
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
		return fmt.Errorf("pgcache exited (%v): %s\nlog %s:\n%s", c.waitErr, lastError(c.logPath), c.logPath, tailFile(c.logPath, 10))
	default:
		return nil
	}
}

// stop sends SIGTERM, waits for the drain, and kills the process group
// if it takes longer than pgcacheStopTimeout.
func (c *child) stop() error {
	c.once.Do(func() {
		select {
		case <-c.exited:
			return
		default:
		}
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(pgcacheStopTimeout):
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.exited
			c.stopErr = fmt.Errorf("pgcache did not stop within %v; killed", pgcacheStopTimeout)
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
	lines := strings.Split(tailFile(path, 50), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var l struct{ Level, Msg, Error string }
		if json.Unmarshal([]byte(lines[i]), &l) == nil && l.Level == "error" {
			return strings.TrimSpace(l.Msg + ": " + l.Error)
		}
	}
	return lines[len(lines)-1] // not a JSON log: what it printed last
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

// memLimit writes a GOMEMLIMIT for people.
func memLimit(b int64) string { return humanize.IBytes(uint64(b)) }
