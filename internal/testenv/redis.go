package testenv

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/certs"
)

// RedisInstall is the Debian command that provides a server StartRedis can
// run. Debian bookworm ships Redis 7, not Valkey; Valkey is preferred when
// valkey-server is on $PATH.
const RedisInstall = "apt-get install redis-server"

// Startup and shutdown bounds: generous for a loaded CI machine, but a server
// that does not come up fails the test instead of hanging it.
const (
	redisStartTimeout = 20 * time.Second
	redisStopTimeout  = 10 * time.Second
	redisPollInterval = 10 * time.Millisecond
	redisIOTimeout    = 2 * time.Second // one command of Do
)

// Redis is a throwaway Valkey or Redis server on 127.0.0.1:Port with no
// persistence (no RDB, no AOF): a restart starts it empty.
type Redis struct {
	Binary  string // the valkey-server or redis-server that runs
	Dir     string // its working directory and log, removed by Stop
	LogFile string
	Port    int
	Cluster bool      // a one-node cluster that serves every slot
	TLS     *RedisTLS // TLS only on Port; nil: plain TCP

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	stopped bool          // Stop has run: the directory is gone
}

// RedisFor starts a server for one test (or benchmark) and stops it when the
// test ends. Prefer StartRedis in TestMain: one server per package.
func RedisFor(t testing.TB) *Redis {
	t.Helper()
	r, err := StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// StartRedis starts valkey-server, or redis-server when there is no Valkey,
// on a free port of 127.0.0.1, and waits until it answers PING. Without
// either binary it returns a *NotInstalledError saying how to install one.
func StartRedis() (*Redis, error) { return startRedis(false) }

// StartRedisCluster starts a server as StartRedis does, in cluster mode,
// owning all 16384 slots: clients see a cluster (CLUSTER SLOTS answers, and
// no key is ever MOVED), which is enough to exercise their cluster code.
func StartRedisCluster() (*Redis, error) { return startRedis(true) }

// RedisTLS are the PEM files of a server that speaks only TLS. Clients
// are asked for a certificate signed by CA but may go without one
// (tls-auth-clients optional): one server tests both.
type RedisTLS struct {
	Cert, Key string // the server's certificate and key
	CA        string // the CA that signed it, and that client certificates must chain to
}

// StartRedisTLS starts a server as StartRedis does, speaking only TLS on
// its port.
func StartRedisTLS(files RedisTLS) (*Redis, error) { return startRedisWith(false, &files) }

func startRedis(cluster bool) (*Redis, error) { return startRedisWith(cluster, nil) }

func startRedisWith(cluster bool, tlsFiles *RedisTLS) (*Redis, error) {
	bin, err := redisBinary()
	if err != nil {
		return nil, err
	}
	dir, err := TempDir("pgcache-redis-", nil)
	if err != nil {
		return nil, err
	}
	r := &Redis{Binary: bin, Dir: dir, LogFile: filepath.Join(dir, "server.log"), Cluster: cluster, TLS: tlsFiles}
	// A port taken between FreePort and the server's bind fails the start;
	// another port then does.
	for range 3 {
		if r.Port, err = FreePort(); err != nil {
			break
		}
		if err = r.start(); err == nil || !redisBindFailed(r.LogFile) {
			break
		}
	}
	if err == nil && cluster {
		err = r.addAllSlots()
	}
	if err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// redisBinary prefers Valkey and falls back to Redis.
func redisBinary() (string, error) {
	if p, err := LookPath("valkey-server", RedisInstall); err == nil {
		return p, nil
	}
	return LookPath("redis-server", RedisInstall)
}

// Addr is the server's host:port.
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)) }

// Running reports whether the server process is up.
func (r *Redis) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil
}

// Kill ends the server with SIGKILL, as a crash: clients see their
// connections reset. The port and directory stay for Restart. Killing a
// server that is not running does nothing.
func (r *Redis) Kill() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.killLocked()
	return nil
}

// Restart stops the server if it runs (SIGTERM) and starts a new, empty one
// on the same port, waiting until it answers PING (and, for a cluster,
// until it serves its slots again: it keeps them in nodes.conf).
func (r *Redis) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return errors.New("testenv: redis: Restart after Stop")
	}
	if err := r.shutdownLocked(); err != nil {
		return err
	}
	// The old listening socket is gone once the process has been reaped, and
	// the server binds with SO_REUSEADDR, so the port is free again at once;
	// retry anyway, as the bind is what fails if something else took it.
	var err error
	for range 3 {
		if err = r.startLocked(); err == nil || !redisBindFailed(r.LogFile) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Stop shuts the server down (SIGTERM) and removes its directory. It is the
// end of the server: Restart fails afterwards. Calling it again does nothing.
func (r *Redis) Stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil
	}
	r.stopped = true
	err := r.shutdownLocked()
	if rerr := os.RemoveAll(r.Dir); rerr != nil && err == nil {
		err = fmt.Errorf("testenv: %w", rerr)
	}
	return err
}

func (r *Redis) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.startLocked()
}

// startLocked runs the server as a child of this process (never daemonised)
// so that it dies with the test binary; see Command.
func (r *Redis) startLocked() error {
	if r.cmd != nil {
		return errors.New("testenv: redis: already running")
	}
	logf, err := os.OpenFile(r.LogFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	defer logf.Close() // the child holds its own copy
	logStart, _ := logf.Seek(0, 2)
	port := []string{"--port", strconv.Itoa(r.Port)}
	if r.TLS != nil {
		port = []string{"--port", "0", "--tls-port", strconv.Itoa(r.Port),
			"--tls-cert-file", r.TLS.Cert, "--tls-key-file", r.TLS.Key,
			"--tls-ca-cert-file", r.TLS.CA, "--tls-auth-clients", "optional"}
	}
	args := append(port,
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", r.Dir,
		"--logfile", "", // stdout, which is the log file
	)
	if r.Cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	}
	cmd := Command(nil, r.Binary, args...)
	cmd.Env = Env(nil, "REDIS", "VALKEY")
	cmd.Dir = r.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: start %s: %w", filepath.Base(r.Binary), err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	r.cmd, r.exited = cmd, exited
	if err := r.waitReady(exited, logStart); err != nil {
		r.killLocked()
		return err
	}
	return nil
}

// waitReady polls PING until it answers, the server exits, or the start
// timeout passes.
func (r *Redis) waitReady(exited <-chan struct{}, logStart int64) error {
	deadline := time.Now().Add(redisStartTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("testenv: %s exited during start-up; log %s:\n%s",
				filepath.Base(r.Binary), r.LogFile, redisLogSince(r.LogFile, logStart))
		default:
		}
		if last = r.ready(); last == nil {
			return nil
		}
		time.Sleep(redisPollInterval)
	}
	return fmt.Errorf("testenv: %s not ready after %v: %v; log %s:\n%s",
		filepath.Base(r.Binary), redisStartTimeout, last, r.LogFile, redisLogSince(r.LogFile, logStart))
}

// ready is nil when the server answers PING and, for a cluster node that
// has its slots, reports the cluster up.
func (r *Redis) ready() error {
	reply, err := r.Do(context.Background(), "PING")
	if err != nil {
		return err
	}
	if reply != "PONG" {
		return fmt.Errorf("PING answered %q", reply)
	}
	if !r.Cluster || !r.hasSlots() {
		return nil
	}
	return r.clusterUp()
}

func (r *Redis) clusterUp() error {
	info, err := r.Do(context.Background(), "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return errors.New("cluster state is not ok yet")
	}
	return nil
}

// hasSlots reports whether nodes.conf has given the node its slots: the
// first start has none until addAllSlots.
func (r *Redis) hasSlots() bool {
	b, err := os.ReadFile(filepath.Join(r.Dir, "nodes.conf"))
	return err == nil && strings.Contains(string(b), "0-16383")
}

// addAllSlots gives the node every slot and waits until the cluster is up.
func (r *Redis) addAllSlots() error {
	if _, err := r.Do(context.Background(), "CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
		return fmt.Errorf("testenv: cluster addslots: %w", err)
	}
	deadline := time.Now().Add(redisStartTimeout)
	for {
		err := r.clusterUp()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(redisPollInterval)
	}
}

// shutdownLocked asks the server to exit (SIGTERM: no save, as --save is
// empty) and waits; a server that does not stop in time is killed.
func (r *Redis) shutdownLocked() error {
	if r.cmd == nil {
		return nil
	}
	err := stopProcess("redis", r.cmd, r.exited, syscall.SIGTERM, redisStopTimeout)
	r.cmd, r.exited = nil, nil
	return err
}

func (r *Redis) killLocked() {
	if r.cmd == nil {
		return
	}
	killProcess(r.cmd, r.exited)
	r.cmd, r.exited = nil, nil
}

// Do sends one command to the server on a fresh connection, as redis-cli
// would, and returns the reply: a status or bulk string, an integer in
// decimal, "" for nil, an array as its elements joined by newlines. An error
// reply is returned as an error.
func (r *Redis) Do(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, redisIOTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", r.Addr())
	if err != nil {
		return "", err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	if r.TLS != nil {
		cfg, err := r.TLS.clientConfig()
		if err != nil {
			return "", err
		}
		conn = tls.Client(conn, cfg)
	}
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(req.String())); err != nil {
		return "", err
	}
	return redisReadReply(bufio.NewReader(conn))
}

// clientConfig trusts the server's CA, and presents no certificate.
func (f *RedisTLS) clientConfig() (*tls.Config, error) {
	roots, err := certs.Pool(f.CA)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	return &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}, nil
}

func redisReadReply(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("testenv: empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("testenv: bad bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("testenv: bad array length %q", line)
		}
		elems := make([]string, 0, max(n, 0))
		for range n {
			e, err := redisReadReply(br)
			if err != nil {
				return "", err
			}
			elems = append(elems, e)
		}
		return strings.Join(elems, "\n"), nil
	}
	return "", fmt.Errorf("testenv: unsupported reply %q", line)
}

// redisBindFailed reports whether the last start failed on a taken port.
func redisBindFailed(logFile string) bool {
	return strings.Contains(tail(logFile, 20), "Address already in use")
}

// redisLogSince returns what the server logged from offset on: the start
// that failed, not the runs before it.
func redisLogSince(logFile string, offset int64) string {
	b, err := os.ReadFile(logFile)
	if err != nil || offset > int64(len(b)) {
		return ""
	}
	return strings.TrimRight(string(b[offset:]), "\n")
}
