package faults

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// The lifecycle cases run the pgcache binary as a child process, as an
// operator does, and signal it.

// pgcacheBinary is the binary the children run (testenv.PgcacheBinary).
func pgcacheBinary(t testing.TB) string { return testenv.PgcacheBinary(t) }

// removeBinary removes it; TestMain calls it.
func removeBinary() { testenv.RemovePgcacheBinary() }

// child is pgcache running as a child process.
type child struct {
	t                 testing.TB
	cmd               *exec.Cmd
	logFile           string
	resp, http, admin string

	exited chan struct{}
	state  *os.ProcessState // set when exited is closed
}

// childPorts are three free loopback addresses for a child's fronts.
type childPorts struct{ resp, http, admin string }

func freePorts(t testing.TB) childPorts {
	t.Helper()
	var addrs [3]string
	for i := range addrs {
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = "127.0.0.1:" + strconv.Itoa(port)
	}
	return childPorts{addrs[0], addrs[1], addrs[2]}
}

// startChild writes body (YAML without the listen: section) to a config
// file, runs `pgcache run --config FILE` on the given ports, and waits
// until it answers PING. The process is killed if still running when the
// test ends.
func startChild(t testing.TB, ports childPorts, body string) *child {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "pgcache.yaml")
	cfg := fmt.Sprintf("listen: {resp: %q, http: %q, admin: %q}\nlog: {level: info, format: json}\n%s",
		ports.resp, ports.http, ports.admin, body)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return runChild(t, ports, file, filepath.Join(dir, "pgcache.log"))
}

// runChild runs the binary on an existing config file.
func runChild(t testing.TB, ports childPorts, file, logFile string) *child {
	t.Helper()
	logf, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(pgcacheBinary(t), "run", "--config", file)
	cmd.Env = testenv.Env(nil, "PGCACHE_")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, logFile: logFile, resp: ports.resp, http: ports.http, admin: ports.admin, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		c.state = cmd.ProcessState
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-c.exited:
			t.Fatalf("pgcache exited while starting (%v); log:\n%s", c.state, c.logTail(30))
		default:
		}
		if conn, err := dialRESPTimeout(c.resp, time.Second); err == nil {
			reply, err := conn.Do("PING")
			conn.Close()
			if err == nil && reply == "PONG" {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgcache did not answer PING within 30s; log:\n%s", c.logTail(30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) signal(sig os.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits, bounded, for the process to exit and returns its state.
func (c *child) wait(bound time.Duration) *os.ProcessState {
	c.t.Helper()
	select {
	case <-c.exited:
		return c.state
	case <-time.After(bound):
		c.t.Fatalf("pgcache still running %v after being told to stop; log:\n%s", bound, c.logTail(30))
		return nil
	}
}

// running reports whether the process has not exited.
func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// rssKiB is the process's resident memory (VmRSS), in KiB.
func (c *child) rssKiB() int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.pid()))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// fds counts the process's open descriptors.
func (c *child) fds() int { return countFDs(strconv.Itoa(c.pid())) }

// logTail is the end of the process's log.
func (c *child) logTail(n int) string {
	b, err := os.ReadFile(c.logFile)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logHas reports whether the log has a line containing s.
func (c *child) logHas(s string) bool {
	b, _ := os.ReadFile(c.logFile)
	return strings.Contains(string(b), s)
}

// exitCode is the code of an exited process; a signal is an error.
func exitCode(st *os.ProcessState) (int, error) {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, errors.New("killed by " + ws.Signal().String())
	}
	return st.ExitCode(), nil
}
