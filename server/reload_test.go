package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/pgcachetest"
)

// Two configs a reload alternates between. Both keep backend mem and the
// catch-all; "sess" changes (its limit), "extra" comes and goes with its
// own backend.
const (
	reloadA = `
backends:
  mem: {type: memory, max_bytes: 64MiB}
routes:
  - {name: sess, prefix: "s:", backend: mem, max_value_bytes: 1MiB}
  - {name: memory, prefix: "", backend: mem}
`
	reloadB = `
backends:
  mem: {type: memory, max_bytes: 64MiB}
  extra: {type: memory, max_bytes: 8MiB}
routes:
  - {name: sess, prefix: "s:", backend: mem, max_value_bytes: 2MiB}
  - {name: extra, prefix: "x:", backend: extra}
  - {name: memory, prefix: "", backend: mem}
`
)

// respConn is one persistent RESP connection, read reply by reply.
type respConn struct {
	nc net.Conn
	br *bufio.Reader
}

func dialRESP(t *testing.T, addr string) *respConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &respConn{nc: nc, br: bufio.NewReader(nc)}
}

// do sends one command and returns its reply's first line and, for a
// bulk string, its content.
func (c *respConn) do(args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.nc, b.String()); err != nil {
		return "", err
	}
	line, err := c.br.ReadString('\n')
	if err != nil {
		return "", err
	}
	if line[0] != '$' || line == "$-1\r\n" {
		return strings.TrimSuffix(line, "\r\n"), nil
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// metric reads one series from /metrics ("" when absent).
func metric(t *testing.T, s *Server, series string) string {
	t.Helper()
	_, body := httpDo(t, "GET", "http://"+s.Addr("admin")+"/metrics", nil)
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return ""
}

// A loop of RESP and HTTP clients on persistent connections reads back
// every write while 20 reloads alternate two configs that change routes:
// no request fails and no connection is dropped or replaced.
func TestReloadUnderLoad(t *testing.T) {
	in := pgcachetest.Start(t, New, pgcachetest.Config{YAML: reloadA})
	s, file := in.Server, in.ConfigFile
	rc := dialRESP(t, s.Addr("resp"))
	if r, err := rc.do("SET", "s:survivor", "kept"); err != nil || r != "+OK" {
		t.Fatalf("SET = %q, %v", r, err)
	}

	var (
		stop     atomic.Bool
		requests atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		failures []string
	)
	fail := func(format string, args ...any) {
		errMu.Lock()
		defer errMu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	for i := range 3 {
		c := dialRESP(t, s.Addr("resp"))
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				for _, k := range []string{fmt.Sprintf("s:r%d:%d", i, n%50), fmt.Sprintf("r%d:%d", i, n%50)} {
					v := strconv.Itoa(n)
					if r, err := c.do("SET", k, v); err != nil || r != "+OK" {
						fail("RESP SET %s = %q, %v", k, r, err)
						return
					}
					if r, err := c.do("GET", k); err != nil || r != v {
						fail("RESP GET %s = %q, %v; want %q", k, r, err, v)
						return
					}
					requests.Add(2)
				}
			}
		})
	}
	for i := range 3 {
		c := dialHTTP(t, s.Addr("http"))
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				for _, path := range []string{"/sess/", "/memory/"} {
					k, v := fmt.Sprintf("h%d-%d", i, n%50), strconv.Itoa(n)
					status, body, err := c.do("POST", path+"set?id="+k, v)
					if err != nil || status != http.StatusNoContent {
						fail("HTTP set %s%s = %d %q, %v", path, k, status, body, err)
						return
					}
					status, body, err = c.do("GET", path+"get?id="+k, "")
					if err != nil || status != http.StatusOK || body != v {
						fail("HTTP get %s%s = %d %q, %v; want %q", path, k, status, body, err, v)
						return
					}
					requests.Add(2)
				}
			}
		})
	}

	for i := range 20 {
		next := reloadB
		if i%2 == 1 {
			next = reloadA
		}
		var err error
		if i%4 < 2 { // POST /load, as `pgcache reload` does
			status, body := httpDo(t, "POST", "http://"+s.Addr("admin")+"/load", []byte(next))
			if status != http.StatusOK {
				err = fmt.Errorf("POST /load = %d %s", status, body)
			}
		} else { // SIGHUP: the file, read again
			if err = os.WriteFile(file, []byte(next), 0o600); err == nil {
				err = s.ReloadFile(context.Background())
			}
		}
		if err != nil {
			t.Fatalf("reload %d: %v", i+1, err)
		}
		time.Sleep(15 * time.Millisecond) // let requests run on each config
	}
	stop.Store(true)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if requests.Load() == 0 {
		t.Fatal("no request ran")
	}
	if got := metric(t, s, `pgcache_config_reloads_total{result="ok"}`); got != "20" {
		t.Errorf(`reloads_total{result="ok"} = %q, want 20`, got)
	}
	// The memory backend was kept through every reload, and so was its data.
	if r, err := rc.do("GET", "s:survivor"); err != nil || r != "kept" {
		t.Errorf("GET s:survivor after the reloads = %q, %v", r, err)
	}
	// The last config (A) has no route "extra".
	if status, _ := httpDo(t, "GET", "http://"+s.Addr("http")+"/extra/get?id=a", nil); status != http.StatusNotFound {
		t.Errorf("/extra after reloading to A = %d, want 404", status)
	}
	t.Logf("%d requests across 20 reloads", requests.Load())
}

// httpConn is one keep-alive HTTP/1.1 connection used by hand: unlike
// http.Client it never dials again, so a request on a connection the
// server closed fails instead of being retried on a new one.
type httpConn struct {
	nc   net.Conn
	br   *bufio.Reader
	host string
}

func dialHTTP(t *testing.T, addr string) *httpConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &httpConn{nc: nc, br: bufio.NewReader(nc), host: addr}
}

func (c *httpConn) do(method, path, body string) (int, string, error) {
	req, err := http.NewRequest(method, "http://"+c.host+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := req.Write(c.nc); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.Close {
		err = errors.New("the server closed the connection")
	}
	return resp.StatusCode, string(b), err
}

// An invalid config is refused with every reason, counted, and the
// running one goes on serving.
func TestReloadRefused(t *testing.T) {
	s := startPgcache(t, reloadB)
	rc := dialRESP(t, s.Addr("resp"))
	rc.do("SET", "x:k", "v")
	admin := "http://" + s.Addr("admin")
	for _, tc := range []struct{ name, body, want string }{
		{"invalid", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: pgx}, {name: b}]",
			"routes[0].backend: \"pgx\" is not a configured backend (configured: mem)\nroutes[1].backend: missing\n"},
		{"unknown key", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: mem, prefx: x}]", "routes[0].prefx: unknown key"},
		{"backend options", "backends: {mem: {type: memory, max_bytes: lots}}\nroutes: [{name: a, backend: mem}]", `backends.mem.max_bytes: "lots" is not a size`},
		{"not yaml", "routes: [", "config: "},
		{"empty", "  \n", "empty config"},
		{"fixed setting", reloadA + "http: {max_conns: 5}\n", "config reload not supported for http.max_conns (\"10000\" -> \"5\"): restart pgcache"},
	} {
		status, body := httpDo(t, "POST", admin+"/load", []byte(tc.body))
		if status != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: POST /load = %d %q, want 400 with %q", tc.name, status, body, tc.want)
		}
	}
	if got := metric(t, s, `pgcache_config_reloads_total{result="error"}`); got != "6" {
		t.Errorf(`reloads_total{result="error"} = %q, want 6`, got)
	}
	if got := metric(t, s, `pgcache_config_reloads_total{result="ok"}`); got != "0" {
		t.Errorf(`reloads_total{result="ok"} = %q, want 0`, got)
	}
	// The old routes serve on the same connection, "extra" included.
	if r, err := rc.do("GET", "x:k"); err != nil || r != "v" {
		t.Fatalf("GET x:k after refused reloads = %q, %v", r, err)
	}
	if status, body := httpDo(t, "GET", "http://"+s.Addr("http")+"/extra/get?id=k", nil); status != 200 || string(body) != "v" {
		t.Fatalf("/extra/get after refused reloads = %d %q", status, body)
	}
}

// What a running pgcache cannot change is refused by name, with both values.
func TestReloadFixedSettings(t *testing.T) {
	s := startPgcache(t, reloadA)
	base := s.Config()
	for _, tc := range []struct {
		field string
		edit  func(c *conf.Config)
	}{
		{"listen.resp", func(c *conf.Config) { c.Listen.RESP = "127.0.0.1:7" }},
		{"listen.http", func(c *conf.Config) { c.Listen.HTTP = "" }},
		{"listen.admin", func(c *conf.Config) { c.Listen.Admin = "127.0.0.1:8" }},
		{"listen.resp_unix", func(c *conf.Config) { c.Listen.RESPUnix = "/tmp/x.sock" }},
		{"log.level", func(c *conf.Config) { c.Log.Level = "debug" }},
		{"http.max_body_bytes", func(c *conf.Config) { c.HTTP.MaxBodyBytes = 1 }},
		{"tls.cert_file", func(c *conf.Config) { c.TLS.CertFile, c.TLS.KeyFile = "a.pem", "b.pem" }},
	} {
		cfg := *base
		tc.edit(&cfg)
		err := fixed(base, &cfg)
		want := "config reload not supported for " + tc.field + " ("
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), ": restart pgcache") {
			t.Errorf("%s: fixed = %v, want %q… restart pgcache", tc.field, err, want)
		}
	}
	// Through the whole reload, with what may change changed too.
	cfg := *base
	cfg.Listen.RESP = "127.0.0.1:7"
	cfg.RESP.MaxClients = 5
	err := s.Reload(context.Background(), &cfg)
	if err == nil || err.Error() != `config reload not supported for listen.resp ("127.0.0.1:0" -> "127.0.0.1:7"): restart pgcache` {
		t.Fatalf("Reload = %v", err)
	}
	if s.Config() != base {
		t.Fatal("a refused reload changed the config")
	}
	// What may change does, and the RESP front sees it at once.
	cfg = *base
	cfg.RESP.MaxClients = 1
	cfg.ShutdownTimeout = base.ShutdownTimeout * 2
	if err := s.Reload(context.Background(), &cfg); err != nil {
		t.Fatal(err)
	}
	if s.Config().ShutdownTimeout != cfg.ShutdownTimeout {
		t.Errorf("shutdown_timeout = %v after the reload, want %v", s.Config().ShutdownTimeout, cfg.ShutdownTimeout)
	}
	first := dialRESP(t, s.Addr("resp"))
	if r, err := first.do("PING"); err != nil || r != "+PONG" {
		t.Fatalf("PING = %q, %v", r, err)
	}
	// Refused at accept: the reply comes unasked.
	second := dialRESP(t, s.Addr("resp"))
	second.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if r, err := second.br.ReadString('\n'); r != "-ERR max number of clients reached\r\n" {
		t.Fatalf("a second client with max_clients 1: %q, %v", r, err)
	}
}
