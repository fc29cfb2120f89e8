package pgcachetest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/testenv"
)

const (
	// startBound bounds how long a child may take to answer PING.
	startBound = 30 * time.Second
	// stopBound is how long a child still running when the test ends has
	// to drain after SIGTERM before it is killed.
	stopBound = 15 * time.Second
)

// Process is the pgcache binary running as a child of the test.
type Process struct {
	Addrs
	ConfigFile string // Config.YAML; "" for the embedded default
	LogFile    string // the child's stdout and stderr

	t      testing.TB
	env    []string // the PGCACHE_ variables it runs with
	cmd    *exec.Cmd
	exited chan struct{}
	state  *os.ProcessState // set when exited is closed
}

// StartProcess runs `pgcache run [--config FILE]` (Binary) with cfg, its
// TCP fronts on free loopback ports, and waits until it answers PING on its
// RESP listener. The child gets the test's environment without its PGCACHE_
// variables, and dies with the test process. When the test ends a child
// still running is sent SIGTERM, and killed if it has not exited within
// stopBound.
func StartProcess(t testing.TB, cfg Config) *Process {
	t.Helper()
	var ports [3]string
	for i := range ports {
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = "127.0.0.1:" + strconv.Itoa(port)
	}
	dir := t.TempDir()
	p := &Process{
		ConfigFile: cfg.writeFile(t, dir),
		LogFile:    filepath.Join(dir, "pgcache.log"),
		env:        cfg.env(Addrs{RESP: ports[0], HTTP: ports[1], Admin: ports[2]}),
	}
	// The addresses as the child reads them: Config.Env may have turned a
	// front off or added a socket.
	c, err := conf.Decode(conf.Source{File: p.ConfigFile, Environ: func() []string { return p.env }})
	if err != nil {
		t.Fatalf("pgcache config: %v", err)
	}
	p.Addrs = Addrs{RESP: c.Listen.RESP, RESPUnix: c.Listen.RESPUnix, HTTP: c.Listen.HTTP, Admin: c.Listen.Admin}
	p.run(t)
	return p
}

// Restart runs the binary again, after p has exited, on p's config file,
// addresses and log file (appended to), as a supervisor restarts it, and
// waits until the new process serves.
func (p *Process) Restart(t testing.TB) *Process {
	t.Helper()
	next := &Process{Addrs: p.Addrs, ConfigFile: p.ConfigFile, LogFile: p.LogFile, env: p.env}
	next.run(t)
	return next
}

// run starts the child and waits until it serves.
func (p *Process) run(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(p.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	args := []string{"run"}
	if p.ConfigFile != "" {
		args = append(args, "--config", p.ConfigFile)
	}
	p.t = t
	p.cmd = exec.Command(Binary(t), args...)
	p.cmd.Env = append(testenv.Env(nil, conf.EnvPrefix), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func() {
		p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.exited)
	}()
	t.Cleanup(p.stop)

	network, addr := "tcp", p.RESP
	if addr == "" {
		network, addr = "unix", p.RESPUnix
	}
	if addr == "" {
		t.Fatal("pgcachetest: the config has no RESP listener to see pgcache serve on")
	}
	deadline := time.Now().Add(startBound)
	for !serves(network, addr) {
		select {
		case <-p.exited:
			t.Fatalf("pgcache exited while starting (%v); log:\n%s", p.state, p.LogTail(30))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgcache did not answer PING within %v; log:\n%s", startBound, p.LogTail(30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serves reports whether a RESP server at addr answers PING: PONG, or
// NOAUTH from one that wants a password first.
func serves(network, addr string) bool {
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (line == "+PONG\r\n" || strings.HasPrefix(line, "-NOAUTH"))
}

// stop ends a child the test left running: SIGTERM, then SIGKILL.
func (p *Process) stop() {
	if !p.Running() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopBound):
		p.t.Logf("pgcache still running %v after SIGTERM at the end of the test; killed", stopBound)
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the child, or fails the test.
func (p *Process) Signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// Wait waits, at most bound, for the child to exit and returns its state;
// a child still running after bound fails the test.
func (p *Process) Wait(bound time.Duration) *os.ProcessState {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.state
	case <-time.After(bound):
		p.t.Fatalf("pgcache still running %v after being told to stop; log:\n%s", bound, p.LogTail(30))
		return nil
	}
}

// Running reports whether the child has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// LogTail is the last n lines of the log.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.LogFile)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogHas reports whether the log has a line containing s.
func (p *Process) LogHas(s string) bool {
	b, _ := os.ReadFile(p.LogFile)
	return strings.Contains(string(b), s)
}
