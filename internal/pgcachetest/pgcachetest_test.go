package pgcachetest_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/server"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgcachetest.RemoveBinary()
	os.Exit(code)
}

const memoryYAML = `
backends:
  mem: {type: memory}
routes:
  - {name: memory, prefix: "", backend: mem}
`

// setGet sets key to v through the RESP address addr (network tcp or unix)
// and reads it back.
func setGet(t *testing.T, network, addr, key, v string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Network: network, Addr: addr, DisableIdentity: true})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, key, v, 0).Err(); err != nil {
		t.Fatalf("SET on %s %s: %v", network, addr, err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != v {
		t.Fatalf("GET on %s %s = %q, %v; want %q", network, addr, got, err, v)
	}
}

// healthy reports whether the admin API at addr answers /healthz.
func healthy(t *testing.T, admin string) {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz = %d", resp.StatusCode)
	}
}

// In-process: every front on the address Addrs gives, the socket Env asked
// for included; the config file is the YAML, and none for the default.
func TestStart(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "p.sock")
	def := pgcachetest.Start(t, server.New, pgcachetest.Config{Env: []string{"PGCACHE_LISTEN__RESP_UNIX=" + sock}})
	if def.ConfigFile != "" {
		t.Errorf("ConfigFile of the embedded default = %q, want none", def.ConfigFile)
	}
	if def.RESPUnix != sock || def.RESP != def.Server.Addr("resp") || def.HTTP == "" {
		t.Errorf("Addrs = %+v, want the server's, with %s", def.Addrs, sock)
	}
	setGet(t, "tcp", def.RESP, "k", "tcp")
	setGet(t, "unix", def.RESPUnix, "k", "unix")
	healthy(t, def.Admin)

	in := pgcachetest.Start(t, server.New, pgcachetest.Config{YAML: memoryYAML})
	if b, err := os.ReadFile(in.ConfigFile); err != nil || string(b) != memoryYAML {
		t.Errorf("ConfigFile %q holds %q, %v; want the YAML", in.ConfigFile, b, err)
	}
	if in.RESP == def.RESP {
		t.Errorf("two servers on one address %s", in.RESP)
	}
	setGet(t, "tcp", in.RESP, "k", "second")
}

// A child process serves once StartProcess returns; killed, it comes back
// on the same addresses with Restart; SIGTERM stops it with exit 0.
func TestStartProcess(t *testing.T) {
	p := pgcachetest.StartProcess(t, pgcachetest.Config{YAML: memoryYAML})
	setGet(t, "tcp", p.RESP, "k", "v")
	healthy(t, p.Admin)

	p.Signal(syscall.SIGKILL)
	if st := p.Wait(10 * time.Second); st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("ended with %v, want SIGKILL", st)
	}
	if p.Running() {
		t.Fatal("Running after Wait")
	}
	q := p.Restart(t)
	if q.Addrs != p.Addrs || q.LogFile != p.LogFile || q.Pid() == p.Pid() {
		t.Fatalf("restarted as %+v pid %d, from %+v pid %d", q.Addrs, q.Pid(), p.Addrs, p.Pid())
	}
	setGet(t, "tcp", q.RESP, "k", "again")
	q.Signal(syscall.SIGTERM)
	if st := q.Wait(30 * time.Second); st.ExitCode() != 0 {
		t.Fatalf("exit after SIGTERM: %v; log:\n%s", st, q.LogTail(20))
	}
	if !q.LogHas("pgcache stopped") {
		t.Errorf("no \"pgcache stopped\" in the log:\n%s", q.LogTail(20))
	}
}
