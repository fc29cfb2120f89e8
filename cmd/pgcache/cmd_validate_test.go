package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// validate and run agree: every broken config `run` refuses, `validate`
// refuses too, with the same reasons, all of them in one run, each line
// starting with the path of what it refuses and naming no Go type.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	const pgDSN = "postgres://app@127.0.0.1:1/app" // never reached: every case fails before
	for _, tc := range []struct {
		name string
		yaml string
		want []string // lines both must print, among others
	}{
		{"postgres route without a table", fmt.Sprintf(`
backends: {pg: {type: postgres, dsn: %q}}
routes: [{name: pg, prefix: "pg:", backend: pg}]`, pgDSN),
			[]string{"routes[0].table: a postgres route names a kv table (table) or an existing table (source_table)"}},
		{"unknown backend key", `
backends: {mem: {type: memory, maxbytes: 1MiB}}
routes: [{name: m, prefix: "", backend: mem}]`,
			[]string{"backends.mem.maxbytes: unknown key"}},
		{"backend and route errors together", fmt.Sprintf(`
backends:
  pg: {type: postgres, dsn: %q, min_conns: -1, connect_timeout: -1s, max_conn_lifetime: soon}
  mem: {type: memory, max_bytes: -5}
routes:
  - {name: a, prefix: "a:", backend: nope}
  - {name: b, prefix: "b:", backend: pg, table: kv, durability: sometimes, key_type: float}
  - {name: c, prefix: "c:", backend: pg, table: kv2, source_table: public.u}
  - {name: d, prefix: "d:", backend: pg, source_table: users}
  - {name: e, prefix: "", backend: mem, table: t}`, pgDSN),
			[]string{
				`routes[0].backend: "nope" is not a configured backend (configured: mem, pg)`,
				`backends.pg.max_conn_lifetime: "soon" is not a duration (like 500ms or 30s)`,
				`routes[1].durability: "sometimes": must be unlogged, async or standard`,
				`routes[1].key_type: "float": must be text, uuid or bigint`,
				`routes[2].source_table: "public.u": a route is a kv table (table) or the rows of an existing table (source_table), not both`,
				`routes[3].source_table: "users": must be schema.table`,
			}},
		{"every option error of a backend", fmt.Sprintf(`
backends: {pg: {type: postgres, dsn: %q, min_conns: -1, connect_timeout: -1s}}
routes: [{name: pg, prefix: "", backend: pg, table: kv}]`, pgDSN),
			[]string{
				"backends.pg.min_conns: -1 must be between 0 and max_conns",
				"backends.pg.connect_timeout: -1s must be positive",
			}},
		{"memory route with table options", `
backends: {mem: {type: memory, max_bytes: -5}}
routes: [{name: m, prefix: "", backend: mem}]`,
			[]string{"backends.mem.max_bytes: -5 must be positive"}},
		{"a route a memory backend cannot serve", `
backends: {mem: {type: memory}}
routes: [{name: m, prefix: "", backend: mem, source_table: public.users}]`,
			[]string{`routes[0].source_table: "public.users": the memory backend has no tables`}},
		{"config and backend errors together", `
log: {level: loud}
resp: {max_clients: -1}
backends: {mem: {type: memory, size: 1}, x: {type: mongo}}
routes: [{name: m, prefix: "", backend: mem}]`,
			[]string{
				`log.level: "loud" is not one of debug, info, warn, error`,
				"resp.max_clients: -1 must be positive",
				"backends.mem.size: unknown key",
				`backends.x.type: unknown backend type "mongo"`,
			}},
		{"missing certificate and a route error", `
tls: {cert_file: /nonexistent/cert.pem, key_file: /nonexistent/key.pem}
backends: {mem: {type: memory}}
routes: [{name: m, prefix: "", backend: mem, durability: async}]`,
			[]string{"tls: cert_file", `routes[0].durability: "async": the memory backend has no tables`}},
		{"two routes on a raw_keys valkey backend", `
backends: {vk: {type: valkey, addrs: ["127.0.0.1:1"], raw_keys: true}}
routes: [{name: a, prefix: "a:", backend: vk}, {name: b, prefix: "", backend: vk}]`,
			[]string{`routes[1].backend: raw_keys: the backend's keys belong to route "a" already`}},
		{"unknown keys and bad values", `
resp: {max_clients: lots, maxclients: 1}
routes: [{name: m, prefx: x, backend: mem}]`,
			[]string{"resp.max_clients: is not a whole number", "resp.maxclients: unknown key", "routes[0].prefx: unknown key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pgcache.yaml")
			if err := os.WriteFile(file, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			validated := reasons(t, "validate", []string{"validate", "--config", file}, "config is invalid:\n")
			ran := reasons(t, "run", []string{"run", "--config", file, "--listen-resp", "127.0.0.1:0",
				"--listen-http", "127.0.0.1:0", "--listen-admin", "127.0.0.1:0"}, "pgcache: config:\n")
			if !slices.Equal(validated, ran) {
				t.Errorf("validate and run differ:\nvalidate:\n  %s\nrun:\n  %s", strings.Join(validated, "\n  "), strings.Join(ran, "\n  "))
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(validated, func(l string) bool { return strings.HasPrefix(l, w) }) {
					t.Errorf("validate does not say %q; it says:\n  %s", w, strings.Join(validated, "\n  "))
				}
			}
			for _, l := range validated {
				if strings.Contains(l, "Options") || strings.Contains(l, "int32") || strings.Contains(l, "conf.") {
					t.Errorf("%q names a Go type", l)
				}
			}
		})
	}
}

// reasons runs a pgcache command that must fail with a config error, and
// returns the lines after header on its stderr, sorted.
func reasons(t *testing.T, what string, args []string, header string) []string {
	t.Helper()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runCommand(args, &out, &errOut) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		syscall.Kill(os.Getpid(), syscall.SIGTERM) // run took the config and serves: stop it
		<-done
		t.Fatalf("%s accepted the config", what)
	}
	s := errOut.String()
	if code != exitError || !strings.HasPrefix(s, header) {
		t.Fatalf("%s: exit %d, stderr %q; want %d and %q", what, code, s, exitError, header)
	}
	lines := strings.Split(strings.TrimSpace(strings.TrimPrefix(s, header)), "\n")
	slices.Sort(lines)
	return lines
}
