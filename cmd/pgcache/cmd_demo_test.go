package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// demoChecks are the cheat sheet's commands in order, each by a part of
// its text (the sheet spells the ports), with what it must print.
var demoChecks = []struct {
	command    string // a part of the command line
	want       string // a part of its output
	eventually bool   // retried until want shows (the read after plain SQL)
}{
	{command: "get pg:42", want: "value 42"},
	{command: "/postgres/get?id=42", want: "value 42"},
	{command: "set session:abc token EX 60", want: "OK"},
	{command: "ttl session:abc", want: "60"},
	{command: "hset session:cart:7 apples 3 pears 2", want: "2"},
	{command: "hincrby session:cart:7 apples 1", want: "4"},
	{command: "hgetall session:cart:7", want: "apples\n4\npears\n2"},
	{command: "incr counter:visits", want: fmt.Sprint(demoVisits + 1)},
	{command: "get user:42", want: `"name":"user 42"`},
	{command: "CRUD:pgcache.public.users:42", want: `"name":"user 42"`},
	{command: "hget user:42 email", want: "@"},
	{command: "UPDATE users SET name", want: "UPDATE 1"},
	{command: "get user:42", want: demoNewName, eventually: true},
	{command: "/debug/l1", want: demoNewName},
	{command: "/metrics", want: `pgcache_l1_requests_total{backend="pg",result="hit",route="users"}`},
	{command: "set vk:hello world", want: "OK"},
	{command: "get valkey:hello", want: "world"},
	{command: "set a b", want: "OK"},
	{command: "/memory/get?id=a", want: "b"},
	{command: "publish news hello", want: "message\nnews\nhello"},
}

// `pgcache demo` as a user runs it: it prints the cheat sheet, every
// command on it answers as its comment says (a psql UPDATE seen through
// the L1 included), and Ctrl-C leaves no process and no directory behind.
func TestDemo(t *testing.T) {
	// The sheet's clients; psql comes with the server, by its path when
	// it is not on $PATH.
	for _, tool := range [][2]string{
		{"redis-cli", "apt-get install redis-tools"},
		{"curl", "apt-get install curl"},
	} {

		if _, err := testenv.LookPath(tool[0], tool[1]); err != nil {
			t.Fatalf("the cheat sheet runs %s: %v", tool[0], err)
		}
	}
	resp, httpAddr, admin := freeAddr(t), freeAddr(t), freeAddr(t)
	cmd := exec.Command(os.Args[0], "demo", "--listen-resp", resp, "--listen-http", httpAddr, "--listen-admin", admin)
	cmd.Env = append(os.Environ(), asBinaryEnv+"=1")
	// Its own process group, as at a terminal where Ctrl-C reaches the
	// demo; killed with the test if the test dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, done := make(chan error, 1), make(chan struct{})
	var stdout testenv.SyncBuffer
	go func() {
		_, err := io.Copy(&stdout, out)
		if werr := cmd.Wait(); err == nil {
			err = werr
		}
		close(done)
		exited <- err
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
		}
	})

	sheet := waitFor(t, &stdout, &stderr, exited, "opens the database", 3*time.Minute)
	commands := sheetCommands(sheet)
	dirs := regexp.MustCompile(`files in (\S+)\)`).FindAllStringSubmatch(sheet, -1)
	if len(commands) == 0 || len(dirs) != 2 {
		t.Fatalf("no commands, or not the two servers' directories, in the cheat sheet:\n%s", sheet)
	}
	tree := testenv.ProcessTree(cmd.Process.Pid)
	if len(tree) < 3 { // the demo, PostgreSQL's postmaster, Valkey/Redis
		t.Fatalf("the demo's processes: %v; want it, PostgreSQL and Valkey/Redis", tree)
	}

	if len(commands) != len(demoChecks) {
		t.Fatalf("the cheat sheet has %d commands, the test checks %d: check each one:\n%s", len(commands), len(demoChecks), sheet)
	}
	for i, c := range demoChecks {
		if !strings.Contains(commands[i], c.command) {
			t.Fatalf("command %d of the cheat sheet is %q; want the one with %q", i+1, commands[i], c.command)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			got, err := runShell(commands[i])
			if err == nil && strings.Contains(got, c.want) {
				break
			}
			if !c.eventually || time.Now().After(deadline) {
				t.Fatalf("%s\n answered %q (%v); want %q", commands[i], got, err, c.want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the demo exited with %v after SIGINT:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the demo did not stop within a minute of SIGINT:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "stopped; removed") {
		t.Errorf("the demo did not say it stopped:\n%s", stdout.String())
	}
	for _, pid := range tree[1:] {
		if alive(pid) {
			t.Errorf("process %d of the demo still runs after SIGINT", pid)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d[1]); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after SIGINT (%v)", d[1], err)
		}
	}
}

// The cheat sheet at pgcache's default ports names no port; on others it
// names each.
func TestCheatSheetPorts(t *testing.T) {
	s := demoSheet{PGDSN: "postgres://postgres@127.0.0.1:5432/pgcache", Psql: "psql", Valkey: "127.0.0.1:16379"}
	for _, tc := range []struct {
		resp, http, admin string
		want, notWant     []string
	}{
		{"127.0.0.1:6379", "127.0.0.1:8080", "127.0.0.1:2019",
			[]string{"  redis-cli get pg:42  #", "curl -s 'localhost:8080/postgres/get?id=42'", "curl -s localhost:2019/debug/l1", "redis-cli -p 16379 get valkey:hello"},
			[]string{"redis-cli -p 6379"}},
		{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003",
			[]string{"  redis-cli -p 7001 get pg:42  #", "curl -s 'localhost:7002/postgres/get?id=42'", "curl -s localhost:7003/debug/l1"},
			[]string{"  redis-cli get", "8080", "2019"}},
	} {
		s.RESP, s.HTTP, s.Admin = tc.resp, tc.http, tc.admin
		var b bytes.Buffer
		writeCheatSheet(&b, s)
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: the sheet lacks %q:\n%s", tc.resp, w, b.String())
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: the sheet has %q:\n%s", tc.resp, w, b.String())
			}
		}
	}
}

// sheetCommands are the indented command lines of the cheat sheet, without
// their comments.
func sheetCommands(sheet string) []string {
	_, try, _ := strings.Cut(sheet, "\ntry")
	var out []string
	sc := bufio.NewScanner(strings.NewReader(try))
	for sc.Scan() {
		line := sc.Text()
		if c, _, ok := strings.Cut(line, "  # "); ok && strings.HasPrefix(line, "  ") {
			out = append(out, strings.TrimSpace(c))
		}
	}
	return out
}

// runShell runs a cheat-sheet line as a user's shell would.
func runShell(line string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, "sh", "-c", line).CombinedOutput()
	return string(b), err
}

// waitFor returns the demo's output once it has printed want.
func waitFor(t *testing.T, stdout, stderr *testenv.SyncBuffer, exited <-chan error, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if s := stdout.String(); strings.Contains(s, want) {
			return s
		}
		select {
		case err := <-exited:
			t.Fatalf("the demo exited (%v) before printing %q:\n%s\n%s", err, want, stdout.String(), stderr.String())
		case <-deadline:
			t.Fatalf("no %q from the demo within %v:\n%s\n%s", want, timeout, stdout.String(), stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	return end < 0 || !strings.HasPrefix(strings.TrimSpace(s[end+1:]), "Z")
}

// A default address that something else listens on is taken: the demo
// moves that front to a free port instead of failing.
func TestDemoTakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if !taken(addr) {
		t.Errorf("%s is listened on, yet not taken", addr)
	}
	ln.Close()
	if taken(addr) {
		t.Errorf("%s is free, yet taken", addr)
	}
}
