package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/certs/certstest"
	"github.com/pgcache/pgcache/internal/pgcachetest"
)

// tool runs a command-line client the way an operator would and returns
// its output.
func tool(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed; the TLS tests drive it: apt-get install redis-tools curl", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// serverSerial is the serial number of the certificate a new TLS
// connection to addr is served.
func serverSerial(t *testing.T, addr, caFile string) int64 {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// RESP and HTTP over TLS with redis-cli --tls and curl --cacert; a renewed
// certificate at the same paths is served after SIGHUP's reload, while a
// connection made before goes on.
func TestTLS(t *testing.T) {
	f := certstest.Generate(t, t.TempDir())
	s := startPgcache(t, fmt.Sprintf(`
auth: {requirepass: tls-pass}
tls: {cert_file: %q, key_file: %q}
`, f.ServerCert, f.ServerKey))
	host, port := hostPort(t, s.Addr("resp"))
	cli := func(args ...string) (string, error) {
		return tool(t, "redis-cli", append([]string{"--tls", "--cacert", f.CA, "-h", host, "-p", port, "--no-auth-warning", "-a", "tls-pass"}, args...)...)
	}
	if out, err := cli("SET", "k", "over tls"); err != nil || out != "OK" {
		t.Fatalf("redis-cli --tls SET: %q, %v", out, err)
	}
	url := "https://" + s.Addr("http") + "/memory/get?id=k"
	if out, err := tool(t, "curl", "-sS", "--cacert", f.CA, "-H", "Authorization: Bearer tls-pass", url); err != nil || out != "over tls" {
		t.Fatalf("curl --cacert: %q, %v", out, err)
	}
	if out, _ := tool(t, "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "http://"+s.Addr("http")+"/memory/get?id=k"); out == "200" {
		t.Fatal("plain HTTP was answered on the TLS port")
	}
	if out, _ := tool(t, "redis-cli", "-h", host, "-p", port, "PING"); strings.Contains(out, "PONG") || strings.Contains(out, "NOAUTH") {
		t.Fatalf("plain RESP was answered on the TLS port: %q", out)
	}

	// Renew in place: same paths, a new certificate, then SIGHUP.
	before := tlsClient(t, s.Addr("resp"), f.CA)
	if got := serverSerial(t, s.Addr("resp"), f.CA); got != f.Serial {
		t.Fatalf("serial %d, want %d", got, f.Serial)
	}
	f.Authority.Issue(t, f.ServerCert, f.ServerKey, "pgcache renewed", f.Serial+1, false)
	if err := s.ReloadFile(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, front := range []string{"resp", "http"} {
		if got := serverSerial(t, s.Addr(front), f.CA); got != f.Serial+1 {
			t.Errorf("%s serves serial %d after the reload, want the renewed %d", front, got, f.Serial+1)
		}
	}
	if v, err := before.Get(context.Background(), "k").Result(); err != nil || v != "over tls" {
		t.Fatalf("a connection from before the renewal: %q, %v", v, err)
	}
	// A certificate that does not load refuses the reload; the old one serves.
	os.WriteFile(f.ServerKey, []byte("not a key"), 0o600)
	if err := s.ReloadFile(context.Background()); err == nil || !strings.Contains(err.Error(), "tls: cert_file") {
		t.Fatalf("reload with a broken key = %v", err)
	}
	if out, err := cli("PING"); err != nil || out != "PONG" {
		t.Fatalf("after a refused reload: %q, %v", out, err)
	}
}

func tlsClient(t *testing.T, addr, caFile string) *redis.Client {
	t.Helper()
	pem, _ := os.ReadFile(caFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	c := redis.NewClient(&redis.Options{Addr: addr, Password: "tls-pass", DisableIdentity: true,
		PoolSize: 1, TLSConfig: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}})
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

// With client_ca_file, a client must present a certificate the CA signed.
func TestTLSClientCertificates(t *testing.T) {
	f := certstest.Generate(t, t.TempDir())
	s := startPgcache(t, fmt.Sprintf(`
auth: {requirepass: tls-pass}
tls: {cert_file: %q, key_file: %q, client_ca_file: %q, fronts: [resp, http, admin]}
`, f.ServerCert, f.ServerKey, f.CA))
	host, port := hostPort(t, s.Addr("resp"))
	base := []string{"--tls", "--cacert", f.CA, "-h", host, "-p", port, "--no-auth-warning", "-a", "tls-pass"}
	if out, err := tool(t, "redis-cli", append(base, "PING")...); err == nil && out == "PONG" {
		t.Fatal("a client without a certificate was served")
	}
	if out, err := tool(t, "redis-cli", append(base, "--cert", f.ClientCert, "--key", f.ClientKey, "PING")...); err != nil || out != "PONG" {
		t.Fatalf("redis-cli with a client certificate: %q, %v", out, err)
	}
	curl := []string{"-sS", "--cacert", f.CA, "-H", "Authorization: Bearer tls-pass"}
	if out, err := tool(t, "curl", append(curl, "https://"+s.Addr("http")+"/memory/get?id=x")...); err == nil {
		t.Fatalf("curl without a client certificate was answered: %q", out)
	}
	out, err := tool(t, "curl", append(curl, "--cert", f.ClientCert, "--key", f.ClientKey, "-w", " %{http_code}",
		"https://"+s.Addr("admin")+"/healthz")...)
	if err != nil || out != "ok\n 200" && out != "ok 200" {
		t.Fatalf("curl with a client certificate to the admin API: %q, %v", out, err)
	}
}

// The HTTP auth matrix, and RESP with and without a password.
func TestAuthHTTPAndRESP(t *testing.T) {
	s := startPgcache(t, `
auth:
  requirepass: default-secret
  users: [{name: alice, password: alice-secret}]
  http_token: token-secret
`)
	ctx := context.Background()
	ok := redis.NewClient(&redis.Options{Addr: s.Addr("resp"), Username: "alice", Password: "alice-secret", DisableIdentity: true})
	defer ok.Close()
	if err := ok.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET as alice: %v", err)
	}
	anon := redisClient(t, s)
	if err := anon.Get(ctx, "k").Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
		t.Fatalf("GET without AUTH: %v", err)
	}

	get := func(url, authz string) (int, http.Header, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := make([]byte, 512)
		n, _ := resp.Body.Read(b)
		return resp.StatusCode, resp.Header, string(b[:n])
	}
	data := "http://" + s.Addr("http") + "/memory/get?id=k"
	admin := "http://" + s.Addr("admin")
	for _, tc := range []struct {
		name, url, authz string
		want             int
	}{
		{"data, none", data, "", 401},
		{"data, wrong", data, "Bearer nope", 401},
		{"data, basic", data, "Basic YWxpY2U6YWxpY2Utc2VjcmV0", 401},
		{"data, empty bearer", data, "Bearer ", 401},
		{"data, requirepass", data, "Bearer default-secret", 200},
		{"data, a user's password", data, "Bearer alice-secret", 200},
		{"data, http_token", data, "Bearer token-secret", 200},
		{"data, scheme in lower case", data, "bearer token-secret", 200},
		{"unknown route, none", "http://" + s.Addr("http") + "/nosuch/get?id=k", "", 401},
		{"healthz, none", admin + "/healthz", "", 200},
		{"readyz, none", admin + "/readyz", "", 200},
		{"metrics, none", admin + "/metrics", "", 401},
		{"config, none", admin + "/config", "", 401},
		{"pprof, none", admin + "/debug/pprof/", "", 401},
		{"metrics, token", admin + "/metrics", "Bearer token-secret", 200},
	} {
		status, h, body := get(tc.url, tc.authz)
		if status != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, status, body, tc.want)
		}
		if status == 401 && (h.Get("WWW-Authenticate") != `Bearer realm="pgcache"` || !strings.Contains(body, "Bearer")) {
			t.Errorf("%s: 401 with WWW-Authenticate %q and %q", tc.name, h.Get("WWW-Authenticate"), body)
		}
	}
	_, _, cfg := get(admin+"/config", "Bearer token-secret")
	for _, secret := range []string{"default-secret", "alice-secret", "token-secret"} {
		if strings.Contains(cfg, secret) {
			t.Errorf("/config shows %q", secret)
		}
	}
	// POST /load takes the token too.
	req, _ := http.NewRequest("POST", admin+"/load", strings.NewReader("routes: []"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("POST /load without a token: %d", resp.StatusCode)
	}
}

// RESP on a Unix socket: a stale file is replaced, the mode is set, the
// file goes at shutdown, and a file that is not a socket is refused.
func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pgcache.sock")
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close() // the file stays, as after a kill -9

	s := pgcachetest.Start(t, New, pgcachetest.Config{Env: []string{"PGCACHE_LISTEN__RESP_UNIX=" + path}}).Server
	if s.Addr("resp_unix") != path {
		t.Fatalf("Addr(resp_unix) = %q", s.Addr("resp_unix"))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket mode %v, want a socket with 0660", fi.Mode())
	}
	if out, err := tool(t, "redis-cli", "-s", path, "SET", "u", "unix"); err != nil || out != "OK" {
		t.Fatalf("redis-cli -s: %q, %v", out, err)
	}
	if v, err := redisClient(t, s).Get(context.Background(), "u").Result(); err != nil || v != "unix" {
		t.Fatalf("GET over TCP of a key set over the socket: %q, %v", v, err)
	}

	// Another pgcache on the same path is refused while this one serves.
	cfg, err := conf.Load(conf.Source{Environ: func() []string {
		return []string{"PGCACHE_LISTEN__RESP=127.0.0.1:0", "PGCACHE_LISTEN__HTTP=", "PGCACHE_LISTEN__ADMIN=", "PGCACHE_LISTEN__RESP_UNIX=" + path}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := startErr(t, cfg); err == nil || !strings.Contains(err.Error(), "another server is listening") {
		t.Fatalf("second server on a live socket: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket file after shutdown: %v", err)
	}

	os.WriteFile(path, []byte("not a socket"), 0o600)
	if err := startErr(t, cfg); err == nil || !strings.Contains(err.Error(), "listen.resp_unix: "+path+" exists and is not a socket") {
		t.Fatalf("a regular file at the socket path: %v", err)
	}
}

// startErr starts a server with cfg and returns Start's error, shutting
// down what started.
func startErr(t *testing.T, cfg *conf.Config) error {
	t.Helper()
	s, err := New(context.Background(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start()
	s.Shutdown(context.Background())
	return err
}
