package conf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	_ "github.com/pgcache/pgcache/backends/standard"
	"github.com/pgcache/pgcache/internal/decode"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pgcache.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func noEnv() []string { return nil }

func TestEmbeddedDefault(t *testing.T) {
	cfg, err := Load(Source{Environ: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen.RESP != "127.0.0.1:6379" || cfg.Listen.HTTP != "127.0.0.1:8080" || cfg.Listen.Admin != "127.0.0.1:2019" {
		t.Fatalf("listen = %+v", cfg.Listen)
	}
	if len(cfg.Routes) != 1 || cfg.Routes[0].Name != "memory" || cfg.Routes[0].Prefix == nil || *cfg.Routes[0].Prefix != "" {
		t.Fatalf("routes = %+v", cfg.Routes)
	}
	if cfg.Backends["mem"]["type"] != "memory" {
		t.Fatalf("backends = %+v", cfg.Backends)
	}
	if cfg.RESP.MaxBulkBytes != 512<<20 || cfg.RESP.MaxInlineBytes != 64<<10 || time.Duration(cfg.ShutdownTimeout) != 30*time.Second {
		t.Fatalf("limits = %+v, shutdown %v", cfg.RESP, cfg.ShutdownTimeout)
	}
}

func TestExampleValidates(t *testing.T) {
	if _, err := Load(Source{File: "pgcache.example.yaml", Environ: noEnv}); err != nil {
		t.Fatalf("the example config does not validate:\n%v", err)
	}
}

func TestLayers(t *testing.T) {
	file := writeFile(t, `
listen:
  resp: 127.0.0.1:7000
  http: 127.0.0.1:7001
log:
  level: warn
resp:
  max_clients: 5
`)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	AddFlags(fs)
	if err := fs.Parse([]string{"--listen-http", "127.0.0.1:9001", "--log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(Source{File: file, Flags: fs, Environ: func() []string {
		return []string{"PGCACHE_LISTEN__HTTP=127.0.0.1:8001", "PGCACHE_RESP__MAX_CLIENTS=7", "OTHER=1"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, got, want string }{
		{"file", cfg.Listen.RESP, "127.0.0.1:7000"},
		{"flag over env over file", cfg.Listen.HTTP, "127.0.0.1:9001"},
		{"flag over file", cfg.Log.Level, "debug"},
		{"default kept under unset flag", cfg.Listen.Admin, "127.0.0.1:2019"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if cfg.RESP.MaxClients != 7 {
		t.Errorf("env over file: max_clients = %d, want 7", cfg.RESP.MaxClients)
	}
}

func TestSizesAndDurations(t *testing.T) {
	cfg, err := Load(Source{File: writeFile(t, `
resp:
  max_bulk_bytes: 1MiB
  idle_timeout: 90s
`), Environ: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RESP.MaxBulkBytes != decode.ByteSize(1<<20) || time.Duration(cfg.RESP.IdleTimeout) != 90*time.Second {
		t.Fatalf("got %v, %v", cfg.RESP.MaxBulkBytes, cfg.RESP.IdleTimeout)
	}
}

// Every validation error names the field and the value.
func TestValidationErrors(t *testing.T) {
	const routes = `
backends:
  mem: {type: memory}
routes:
  - {name: memory, prefix: "", backend: mem}
`
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown top-level key", "listn: {resp: x}\n" + routes, []string{`listn`}},
		{"unknown nested key", "listen: {rsp: 127.0.0.1:1}\n" + routes, []string{`rsp`}},
		{"unknown route key", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: mem, tabel: x}]", []string{`tabel`}},
		{"bad address", "listen: {resp: nope}\n" + routes, []string{`listen.resp: "nope" is not host:port`}},
		{"nothing served", "listen: {resp: '', http: ''}\n" + routes, []string{`listen: both resp and http are off`}},
		{"bad level", "log: {level: loud}\n" + routes, []string{`log.level: "loud"`}},
		{"bad format", "log: {format: xml}\n" + routes, []string{`log.format: "xml"`}},
		{"bad size", "resp: {max_bulk_bytes: huge}\n" + routes, []string{`huge`}},
		{"bad duration", "resp: {idle_timeout: soon}\n" + routes, []string{`soon`}},
		{"duration without unit", "resp: {idle_timeout: 30}\n" + routes, []string{`with a unit`}},
		{"zero limit", "resp: {max_clients: 0}\n" + routes, []string{`resp.max_clients: 0 must be positive`}},
		{"negative timeout", "http: {read_timeout: -1s}\n" + routes, []string{`http.read_timeout: must not be negative`}},
		{"zero shutdown", "shutdown_timeout: 0s\n" + routes, []string{`shutdown_timeout: 0s must be positive`}},
		{"missing type", "backends: {mem: {max_bytes: 1MiB}}\nroutes: [{name: a, backend: mem}]", []string{`backends.mem.type: missing`}},
		{"unknown type", "backends: {mem: {type: memcache}}\nroutes: [{name: a, backend: mem}]", []string{`backends.mem.type: unknown backend type "memcache"`}},
		{"no routes", "backends: {mem: {type: memory}}", []string{`routes: none configured`}},
		{"missing name", "backends: {mem: {type: memory}}\nroutes: [{backend: mem}]", []string{`routes[0].name: missing`}},
		{"bad name", "backends: {mem: {type: memory}}\nroutes: [{name: 'a/b', backend: mem}]", []string{`routes[0].name: "a/b"`}},
		{"duplicate name", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: mem}, {name: a, backend: mem}]", []string{`routes[1].name: "a" is already the name of routes[0]`}},
		{"duplicate prefix", "backends: {mem: {type: memory}}\nroutes: [{name: a, prefix: 'x:', backend: mem}, {name: b, prefix: 'x:', backend: mem}]", []string{`routes[1].prefix: "x:" is already the prefix of routes[0]`}},
		{"missing backend", "backends: {mem: {type: memory}}\nroutes: [{name: a}]", []string{`routes[0].backend: missing`}},
		{"unknown backend", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: pgx}]", []string{`routes[0].backend: "pgx" is not a configured backend`}},
		{"negative max value", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: mem, max_value_bytes: -1}]", []string{`routes[0].max_value_bytes: -1`}},
		{"bad attach", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: mem, source_table: public.u, attach: always}]", []string{`routes[0].attach: "always"`}},
		{"attach on kv", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: mem, table: t, attach: auto}]", []string{`routes[0].attach: only a source_table`}},
		{"l1 without size", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: mem, table: t, l1: {ttl: 5s}}]", []string{`routes[0].l1.max_bytes: 0 must be positive`}},
		{"l1 without a table", "backends: {mem: {type: memory}}\nroutes: [{name: a, backend: mem, l1: {max_bytes: 1MiB}}]", []string{`routes[0].l1: a coherent L1 needs`}},
		{"several at once", "log: {level: x, format: y}\n" + routes, []string{`log.level`, `log.format`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Source{File: writeFile(t, tc.yaml), Environ: noEnv})
			if err == nil {
				t.Fatalf("config accepted, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(Source{File: "/nonexistent/pgcache.yaml", Environ: noEnv})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/pgcache.yaml") {
		t.Fatalf("err = %v", err)
	}
}

func TestRedacted(t *testing.T) {
	cfg, err := Load(Source{File: writeFile(t, `
backends:
  mem: {type: memory}
  pg: {type: memory, dsn: "postgres://app:s3cret@127.0.0.1/app?sslmode=disable", password: hunter2}
routes: [{name: a, prefix: "", backend: mem}]
`), Environ: noEnv})
	if err == nil {
		// memory refuses dsn/password only when built; conf does not know backend options.
		out, err := cfg.Redacted()
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"s3cret", "hunter2"} {
			if strings.Contains(string(out), secret) {
				t.Fatalf("redacted config shows %q:\n%s", secret, out)
			}
		}
		if !strings.Contains(string(out), "postgres://app:REDACTED@127.0.0.1/app") {
			t.Fatalf("dsn not redacted as expected:\n%s", out)
		}
		return
	}
	t.Fatal(err)
}
