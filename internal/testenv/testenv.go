// Package testenv starts throwaway servers for tests and benchmarks:
// PostgreSQL (postgres.go) and Valkey or Redis (redis.go). Each runs from the
// distribution's binaries, on a free 127.0.0.1 port, with its files in a
// temporary directory that is removed when the server is stopped. pgcache
// itself is started by internal/pgcachetest.
//
// A test package starts one server in TestMain and shares it:
//
//	var pg *testenv.PG
//
//	func TestMain(m *testing.M) {
//		var err error
//		if pg, err = testenv.StartPostgres(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		code := m.Run()
//		pg.Stop()
//		os.Exit(code)
//	}
//
// A missing server binary is an error whose message says how to install it
// (NotInstalledError), never a skip: a test that silently does not run is a
// test that silently does not pass.
//
// This file holds what every server needs: free ports, an OS account to run
// as, a directory that account owns, child processes that die with the test.
package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// NotInstalledError is a server program that could not be found.
type NotInstalledError struct {
	Program  string   // the missing binary, like "initdb"
	Searched []string // where it was looked for
	Install  string   // the command that installs it on Debian, like "apt-get install postgresql"
}

func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("testenv: %s not found (looked in %s and $PATH): install it with `%s`",
		e.Program, strings.Join(e.Searched, ", "), e.Install)
}

// LookPath finds program in the first of dirs that has it, then in $PATH.
// When it is nowhere it returns a *NotInstalledError carrying install.
func LookPath(program, install string, dirs ...string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, program)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(program); err == nil {
		return p, nil
	}
	return "", &NotInstalledError{Program: program, Searched: dirs, Install: install}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. Another
// process may take it before the server binds it; servers started here
// report that as a start error rather than hanging.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testenv: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Account is the OS user a server process runs as.
type Account struct {
	Name     string
	UID, GID uint32
}

// ServerAccount returns the account to run a server as when this process is
// root: the named system user (PostgreSQL refuses to run as root). When this
// process is not root it returns nil: the server runs as the current user.
// A root process without that user gets an error whose message says how to
// create it (the distribution's package does).
func ServerAccount(name, install string) (*Account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("testenv: running as root, and servers must run as the %q user, which does not exist (%v): `%s` creates it", name, err, install)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("testenv: user %q: %w", name, err)
	}
	return &Account{Name: name, UID: uint32(uid), GID: uint32(gid)}, nil
}

// TempDir creates a fresh directory for a server's files, named with prefix,
// mode 0700 and owned by acct (nil: the current user). The caller removes it.
//
// The directory is made under $TMPDIR, or under /tmp when acct could not
// reach $TMPDIR (a root's private TMPDIR is closed to other users).
func TempDir(prefix string, acct *Account) (string, error) {
	parent := os.TempDir()
	if acct != nil && !traversable(parent) {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	if err := Chown(dir, acct); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// staleAfter is how old a server directory must be before removeStale
// takes it for the leftover of a test binary that was killed.
const staleAfter = time.Hour

// removeStale removes the directories that servers of a killed test binary
// left behind (its servers died with it, see Command, but nothing removed
// their files): those named prefix* in the temporary directories, untouched
// for staleAfter, where busy (a file that exists while the server runs)
// does not exist. Errors are ignored: this is housekeeping.
func removeStale(prefix, busy string) {
	for _, parent := range []string{os.TempDir(), "/tmp"} {
		dirs, _ := filepath.Glob(filepath.Join(parent, prefix+"*"))
		for _, d := range dirs {
			fi, err := os.Stat(d)
			if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < staleAfter {
				continue
			}
			if _, err := os.Stat(filepath.Join(d, busy)); errors.Is(err, os.ErrNotExist) {
				os.RemoveAll(d)
			}
		}
	}
}

// traversable reports whether every directory from / down to dir lets
// other users through (the x bit for others).
func traversable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// Chown gives path to acct; nil acct does nothing.
func Chown(path string, acct *Account) error {
	if acct == nil {
		return nil
	}
	if err := os.Chown(path, int(acct.UID), int(acct.GID)); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// Command returns a command that runs as acct (nil: the current user) and
// is sent SIGQUIT if this process dies first: a test binary killed by
// `go test -timeout` or ^C leaves no server running behind it (SIGQUIT is
// an immediate shutdown for PostgreSQL and a plain exit for Valkey/Redis).
//
// The kernel sends that signal when the OS thread that started the child
// exits; the Go runtime keeps its threads for the life of the process, so in
// practice that is when the test process exits.
func Command(acct *Account, path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	// Setpgid: a Ctrl-C at the terminal goes to the caller, which stops the
	// server in order (after its load), not straight to the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if acct != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: acct.UID, Gid: acct.GID}
	}
	cmd.Env = Env(acct)
	return cmd
}

// Env returns this process's environment for a program run as acct: without
// the variables whose names start with one of drop (a stray PGPORT or
// REDISCLI_AUTH must not reach a throwaway server), and with HOME, USER and
// LOGNAME naming acct when there is one.
func Env(acct *Account, drop ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if acct != nil && (name == "HOME" || name == "USER" || name == "LOGNAME") {
			continue
		}
		for _, p := range drop {
			if strings.HasPrefix(name, p) {
				continue next
			}
		}
		env = append(env, kv)
	}
	if acct != nil {
		env = append(env, "HOME="+os.TempDir(), "USER="+acct.Name, "LOGNAME="+acct.Name)
	}
	return env
}

// tail returns the last n lines of a file, for start errors.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stopProcess signals a server this package started and waits until it has
// exited (exited is closed by whoever waits on cmd); one that does not stop
// within timeout is killed.
func stopProcess(what string, cmd *exec.Cmd, exited <-chan struct{}, sig syscall.Signal, timeout time.Duration) error {
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("testenv: stop %s: %w", what, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(timeout):
		killProcess(cmd, exited)
		return fmt.Errorf("testenv: %s did not stop within %v; killed", what, timeout)
	}
}

// killProcess ends a server at once and waits until it has exited.
func killProcess(cmd *exec.Cmd, exited <-chan struct{}) {
	cmd.Process.Kill()
	<-exited
}
