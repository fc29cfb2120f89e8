package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// notifySocket stands in for systemd: it sets NOTIFY_SOCKET and returns
// the datagrams pgcache sends to it.
func notifySocket(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	msgs := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return msgs
}

func expectNotify(t *testing.T, msgs <-chan string, want ...string) string {
	t.Helper()
	select {
	case m := <-msgs:
		for _, w := range want {
			if !strings.Contains(m, w) {
				t.Fatalf("sd_notify %q lacks %q", m, w)
			}
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatalf("no sd_notify with %q", want)
	}
	return ""
}

func runConfig(resp, httpAddr, admin string, extra string) string {
	return fmt.Sprintf(`
listen: {resp: %q, http: %q, admin: %q}
backends:
  mem: {type: memory}
routes:
  - {name: memory, prefix: "", backend: mem}
%s`, resp, httpAddr, admin, extra)
}

func httpStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// `pgcache run` under a stand-in systemd: READY once serving; SIGHUP
// reloads the file between RELOADING and READY, and a bad file leaves the
// old config serving with the reason in the status; `pgcache reload` posts
// a file; SIGTERM says STOPPING and exits 0.
func TestRunReloadsOnSIGHUP(t *testing.T) {
	msgs := notifySocket(t)
	resp, httpAddr, admin := freeAddr(t), freeAddr(t), freeAddr(t)
	file := filepath.Join(t.TempDir(), "pgcache.yaml")
	write := func(body string) {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(runConfig(resp, httpAddr, admin, ""))
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runCommand([]string{"run", "--config", file, "--log-level", "error"}, io.Discard, &stderr)
	}()
	expectNotify(t, msgs, "READY=1", "STATUS=serving")

	extraURL := "http://" + httpAddr + "/extra/get?id=a"
	if status, body := httpStatus(t, extraURL); status != 404 || !strings.Contains(body, "unknown route") {
		t.Fatalf("before the reload: %d %q", status, body)
	}
	write(runConfig(resp, httpAddr, admin, `  - {name: extra, prefix: "x:", backend: mem}`))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	expectNotify(t, msgs, "RELOADING=1", "MONOTONIC_USEC=")
	expectNotify(t, msgs, "READY=1", "STATUS=serving")
	if status, body := httpStatus(t, extraURL); status != 404 || body != "not found\n" {
		t.Fatalf("after the reload, route extra: %d %q; want the key's 404", status, body)
	}

	// A bad file is refused; the status says so and the old config serves.
	write("routes: [{name: a, backend: nope}]\n")
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	expectNotify(t, msgs, "RELOADING=1")
	m := expectNotify(t, msgs, "READY=1", "reload refused", `routes[0].backend: "nope" is not a configured backend`)
	if strings.Count(m, "\n") != 2 {
		t.Errorf("the status of a refused reload spans lines: %q", m)
	}
	if status, _ := httpStatus(t, extraURL); status != 404 {
		t.Fatalf("route extra after a refused reload: %d", status)
	}

	// pgcache reload posts a file and reports the answer.
	var out, errOut bytes.Buffer
	if code := runCommand([]string{"reload", "--config", file, "--admin", admin}, &out, &errOut); code != exitError ||
		!strings.Contains(errOut.String(), `routes[0].backend: "nope" is not a configured backend`) {
		t.Fatalf("pgcache reload of a bad file: exit %d, %q", code, errOut.String())
	}
	write(runConfig(resp, httpAddr, admin, ""))
	out.Reset()
	if code := runCommand([]string{"reload", "--config", file}, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "loaded") {
		t.Fatalf("pgcache reload: exit %d, %q %q", code, out.String(), errOut.String())
	}
	if status, body := httpStatus(t, extraURL); status != 404 || !strings.Contains(body, "unknown route") {
		t.Fatalf("after pgcache reload: %d %q", status, body)
	}

	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	expectNotify(t, msgs, "STOPPING=1")
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("pgcache run exited %d:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("pgcache run did not stop on SIGTERM")
	}
}
