package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A reload whose PostgreSQL cannot be reached is refused with the reason,
// before anything is swapped: the running config goes on serving, its
// PostgreSQL route included. That holds for a backend whose options change
// (a new DSN) and for a new one, PostgreSQL or Valkey.
func TestReloadToUnreachablePostgresIsRefused(t *testing.T) {
	ctx := context.Background()
	cfg := func(dsn, extra string) string {
		return fmt.Sprintf(`
backends:
  pg:  {type: postgres, dsn: %q, connect_timeout: 1s, command_timeout: 2s}
  mem: {type: memory}
%s
routes:
  - {name: postgres, prefix: "pg:", backend: pg, table: rc_kv}
  - {name: memory, prefix: "", backend: mem}
`, dsn, extra)
	}
	s := startPgcache(t, cfg(pg.DSN(), ""))
	rc := redisClient(t, s)
	if err := rc.Set(ctx, "pg:a", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := s.Config()
	down := "postgres://app@" + closedPort(t) + "/app"
	admin := "http://" + s.Addr("admin")
	for _, tc := range []struct{ name, body, want string }{
		{"changed backend", cfg(down, ""), "backends.pg: cannot serve: "},
		{"new backend", cfg(pg.DSN(), "  pg2: {type: postgres, dsn: "+fmt.Sprintf("%q", down)+", connect_timeout: 1s}") +
			"  - {name: other, prefix: \"o:\", backend: pg2, table: rc_kv}\n", "backends.pg2: cannot serve: "},
		{"new valkey backend", cfg(pg.DSN(), "  vk: {type: valkey, addrs: ["+fmt.Sprintf("%q", closedPort(t))+"]}") +
			"  - {name: vk, prefix: \"v:\", backend: vk}\n", "backends.vk: cannot serve: "},
	} {
		status, body := httpDo(t, "POST", admin+"/load", []byte(tc.body))
		if status != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: POST /load = %d %q, want 400 with %q", tc.name, status, body, tc.want)
		}
		if strings.Count(string(body), "\n") != 1 {
			t.Errorf("%s: the reason spans lines: %q", tc.name, body)
		}
		if s.Config() != before {
			t.Fatalf("%s: the refused config was swapped in", tc.name)
		}
		if v, err := rc.Get(ctx, "pg:a").Result(); err != nil || v != "kept" {
			t.Fatalf("%s: GET pg:a after the refused reload = %q, %v", tc.name, v, err)
		}
		if status, _ := httpDo(t, "GET", admin+"/readyz", nil); status != http.StatusOK {
			t.Errorf("%s: /readyz = %d after the refused reload", tc.name, status)
		}
	}
	if got := metric(t, s, `pgcache_config_reloads_total{result="error"}`); got != "3" {
		t.Errorf(`reloads_total{result="error"} = %q, want 3`, got)
	}
	// A reachable change is taken: the check does not refuse what works.
	if status, body := httpDo(t, "POST", admin+"/load", []byte(cfg(pg.DSN()+"&application_name=pgcache2", ""))); status != http.StatusOK {
		t.Fatalf("reload to a reachable DSN = %d %q", status, body)
	}
	if v, err := rc.Get(ctx, "pg:a").Result(); err != nil || v != "kept" {
		t.Fatalf("GET pg:a on the new driver = %q, %v", v, err)
	}
}
