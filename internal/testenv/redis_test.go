package testenv

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/internal/certs/certstest"
)

func TestRedisLifecycle(t *testing.T) {
	ctx := context.Background()
	r, err := StartRedis()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()

	do := func(args ...string) string {
		t.Helper()
		got, err := r.Do(ctx, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return got
	}
	if got := do("SET", "k", "v\r\nwith newline"); got != "OK" {
		t.Fatalf("SET = %q", got)
	}
	if got := do("GET", "k"); got != "v\r\nwith newline" {
		t.Fatalf("GET = %q", got)
	}
	if got := do("INCR", "n"); got != "1" {
		t.Fatalf("INCR = %q", got)
	}
	if got := do("GET", "absent"); got != "" {
		t.Fatalf("GET absent = %q", got)
	}
	if _, err := r.Do(ctx, "NOSUCHCOMMAND"); err == nil {
		t.Fatal("unknown command: no error")
	}
	for _, tc := range []struct{ param, want string }{{"save", ""}, {"appendonly", "no"}, {"bind", "127.0.0.1"}} {
		if got := configGet(t, r, tc.param); got != tc.want {
			t.Errorf("CONFIG GET %s = %q, want %q", tc.param, got, tc.want)
		}
	}

	// A crash, then a restart on the same port: the data is gone.
	port := r.Port
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if r.Running() {
		t.Fatal("Running after Kill")
	}
	if _, err := r.Do(ctx, "PING"); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if r.Port != port {
		t.Fatalf("Restart moved the port from %d to %d", port, r.Port)
	}
	if got := do("GET", "k"); got != "" {
		t.Fatalf("GET after restart = %q, want empty (no persistence)", got)
	}
	// Restart of a running server stops it first.
	do("SET", "k", "v")
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := do("GET", "k"); got != "" {
		t.Fatalf("GET after second restart = %q", got)
	}

	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.Dir); !os.IsNotExist(err) {
		t.Fatalf("directory left after Stop: %v", err)
	}
	if err := r.Restart(); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// configGet reads one setting: CONFIG GET answers [name, value].
func configGet(t *testing.T, r *Redis, param string) string {
	t.Helper()
	got, err := r.Do(context.Background(), "CONFIG", "GET", param)
	if err != nil {
		t.Fatalf("CONFIG GET %s: %v", param, err)
	}
	name, value, _ := strings.Cut(got, "\n")
	if name != param {
		t.Fatalf("CONFIG GET %s = %q", param, got)
	}
	return value
}

func TestRedisNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := StartRedis()
	var nie *NotInstalledError
	if !errors.As(err, &nie) {
		t.Fatalf("StartRedis without binaries = %v, want *NotInstalledError", err)
	}
	if nie.Install != RedisInstall {
		t.Fatalf("install hint = %q, want %q", nie.Install, RedisInstall)
	}
}

func TestRedisFor(t *testing.T) {
	r := RedisFor(t)
	if got, err := r.Do(context.Background(), "PING"); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
}

func TestRedisCluster(t *testing.T) {
	r, err := StartRedisCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	ctx := context.Background()
	check := func() {
		t.Helper()
		info, err := r.Do(ctx, "CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_assigned:16384") {
			t.Fatalf("CLUSTER INFO = %q, %v", info, err)
		}
		// Keys of any slot are served here.
		for _, k := range []string{"a", "b", "{x}c"} {
			if _, err := r.Do(ctx, "SET", k, "v"); err != nil {
				t.Fatalf("SET %s: %v", k, err)
			}
		}
	}
	check()
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	check()
}

// A TLS server answers over TLS (Do speaks it), refuses plain RESP, and
// comes back on Restart.
func TestRedisTLS(t *testing.T) {
	files := certstest.Generate(t, t.TempDir())
	r, err := StartRedisTLS(RedisTLS{Cert: files.ServerCert, Key: files.ServerKey, CA: files.CA})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	ctx := context.Background()
	if v, err := r.Do(ctx, "SET", "k", "v"); err != nil || v != "OK" {
		t.Fatalf("SET over TLS = %q, %v", v, err)
	}
	plain := &Redis{Port: r.Port} // same port, no TLS
	if v, err := plain.Do(ctx, "PING"); err == nil {
		t.Errorf("plain PING to a TLS-only server = %q, want an error", v)
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if v, err := r.Do(ctx, "PING"); err != nil || v != "PONG" {
		t.Errorf("PING over TLS after Restart = %q, %v", v, err)
	}
}
