package conf

import (
	"strings"
	"testing"
)

const oneRoute = `
backends: {mem: {type: memory}}
routes: [{name: memory, prefix: "", backend: mem}]
`

func TestSecurityValidation(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // "" entries: the config is valid
	}{
		{"loopback without auth", "listen: {resp: '127.0.0.1:6379', http: '[::1]:8080', admin: 'localhost:2019'}", nil},
		{"all interfaces without auth", "listen: {resp: '0.0.0.0:6379', http: ':8080', admin: '10.0.0.1:2019'}", []string{
			`listen.resp: "0.0.0.0:6379" is not a loopback address and auth is off: set auth.requirepass or auth.users, or insecure: true`,
			`listen.http: ":8080" is not a loopback address and auth is off`,
			`listen.admin: "10.0.0.1:2019" is not a loopback address`,
		}},
		{"a host name is not loopback", "listen: {resp: 'cache.internal:6379'}", []string{`listen.resp: "cache.internal:6379" is not a loopback address`}},
		{"insecure", "insecure: true\nlisten: {resp: '0.0.0.0:6379', http: ':8080'}", nil},
		{"requirepass", "auth: {requirepass: x}\nlisten: {resp: '0.0.0.0:6379', http: ':8080', admin: ':2019'}", nil},
		{"users", "auth: {users: [{name: a, password: x}]}\nlisten: {resp: '0.0.0.0:6379'}", nil},
		{"http token covers HTTP only", "auth: {http_token: t}\nlisten: {resp: '0.0.0.0:6379', http: ':8080'}", []string{`listen.resp: "0.0.0.0:6379"`}},
		{"user without name or password", "auth: {users: [{password: x}, {name: b}]}", []string{`auth.users[0].name: missing`, `auth.users[1].password: missing`}},
		{"user name with a space", "auth: {users: [{name: 'a b', password: x}]}", []string{`auth.users[0].name: "a b" may hold only printable characters`}},
		{"duplicate user", "auth: {users: [{name: a, password: x}, {name: a, password: y}]}", []string{`auth.users[1].name: "a" is already the name of auth.users[0]`}},
		{"default twice", "auth: {requirepass: p, users: [{name: default, password: x}]}", []string{`auth.users[0].name: "default" is the user auth.requirepass sets`}},
		{"default as a user", "auth: {users: [{name: default, password: x}]}", nil},
		{"cert without key", "tls: {cert_file: c.pem}", []string{`tls.key_file: missing: tls.cert_file "c.pem" needs its key`}},
		{"key without cert", "tls: {key_file: k.pem}", []string{`tls.cert_file: missing`}},
		{"client ca alone", "tls: {client_ca_file: ca.pem}", []string{`tls: client_ca_file and fronts need tls.cert_file and tls.key_file`}},
		{"unknown front", "tls: {cert_file: c, key_file: k, fronts: [resp, smtp]}", []string{`tls.fronts[1]: "smtp" is not one of resp, http, admin`}},
		{"socket path too long", "listen: {resp_unix: /" + strings.Repeat("s", 120) + "}", []string{`listen.resp_unix: "/sss`, `longer than 107 bytes`}},
		{"socket mode", "listen: {resp_unix: /tmp/p.sock, resp_unix_mode: '0440'}", []string{`listen.resp_unix_mode: 0440 must let the owner read and write`}},
		{"socket mode not octal", "listen: {resp_unix_mode: '0999'}", []string{`"0999" is not a permission mode`}},
		{"socket alone serves", "listen: {resp: '', http: '', resp_unix: /tmp/p.sock}", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Source{File: writeFile(t, tc.yaml+oneRoute), Environ: noEnv})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSecurityDefaults(t *testing.T) {
	cfg, err := Load(Source{File: writeFile(t, "tls: {cert_file: c.pem, key_file: k.pem}\nlisten: {resp_unix_mode: 0600}"+oneRoute), Environ: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.TLS.Fronts, ","); got != "resp,http" {
		t.Errorf("tls.fronts = %q, want resp,http", got)
	}
	if !cfg.TLS.Serves(FrontRESP) || cfg.TLS.Serves(FrontAdmin) {
		t.Errorf("Serves: resp %v, admin %v", cfg.TLS.Serves(FrontRESP), cfg.TLS.Serves(FrontAdmin))
	}
	// An unquoted 0600 is octal to YAML already.
	if cfg.Listen.RESPUnixMode != 0o600 {
		t.Errorf("resp_unix_mode = %v, want 0600", cfg.Listen.RESPUnixMode)
	}
	def, err := Load(Source{Environ: func() []string { return []string{"PGCACHE_LISTEN__RESP_UNIX_MODE=0640"} }})
	if err != nil {
		t.Fatal(err)
	}
	if def.Listen.RESPUnixMode != 0o640 || def.Auth.RESPAuth() || def.Auth.HTTPAuth() || def.Insecure {
		t.Errorf("defaults: mode %v, auth %+v, insecure %v", def.Listen.RESPUnixMode, def.Auth, def.Insecure)
	}
}

// A config posted to /load is read like a file, under the same
// environment; JSON is YAML too, so /config's output loads back.
func TestLoadBytes(t *testing.T) {
	env := func() []string { return []string{"PGCACHE_LISTEN__RESP=127.0.0.1:7000"} }
	cfg, err := Load(Source{Bytes: []byte("auth: {requirepass: pw}\nlisten: {resp: '0.0.0.0:1'}" + oneRoute), Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen.RESP != "127.0.0.1:7000" || cfg.Auth.RequirePass != "pw" {
		t.Fatalf("listen.resp %q, requirepass %q", cfg.Listen.RESP, cfg.Auth.RequirePass)
	}
	js, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(Source{Bytes: js, Environ: noEnv})
	if err != nil {
		t.Fatalf("the JSON of /config does not load back: %v\n%s", err, js)
	}
	if back.Listen.RESPUnixMode != cfg.Listen.RESPUnixMode || back.Auth.RequirePass != "REDACTED" {
		t.Errorf("loaded back: mode %v, requirepass %q", back.Listen.RESPUnixMode, back.Auth.RequirePass)
	}
	if _, err := Load(Source{Bytes: []byte("routes: ["), Environ: noEnv}); err == nil || !strings.HasPrefix(err.Error(), "config: ") {
		t.Errorf("bad YAML: %v", err)
	}
	// Decode leaves validation to whoever runs the config.
	if _, err := Decode(Source{Bytes: []byte("routes: [{name: a, backend: nope}]"), Environ: noEnv}); err != nil {
		t.Errorf("Decode validated: %v", err)
	}
}

func TestRedactedAuth(t *testing.T) {
	cfg, err := Load(Source{File: writeFile(t, `
auth:
  requirepass: rp-secret
  users: [{name: alice, password: alice-secret}]
  http_token: tok-secret
`+oneRoute), Environ: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"rp-secret", "alice-secret", "tok-secret"} {
		if strings.Contains(string(out), secret) {
			t.Errorf("/config shows %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(string(out), `"alice"`) {
		t.Errorf("user names are not secrets:\n%s", out)
	}
}
