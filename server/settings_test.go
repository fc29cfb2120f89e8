package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/proxy"
)

// Every setting of conf.Config is declared reloadable or not in the
// settings table: a field added to the config without a decision fails
// here, instead of starting to reload (or being refused) by accident.
func TestEverySettingIsDeclared(t *testing.T) {
	var cfg conf.Config
	v := reflect.ValueOf(&cfg).Elem()
	seen := map[string]bool{}
	walkSettings(v, v, "", func(path string, _, _ reflect.Value) {
		seen[path] = true
		if _, ok := proxy.ReloadOf(path); !ok {
			t.Errorf("setting %s is neither reloadable nor refused: declare it in the settings table (proxy/settings.go)", path)
		}
	})
	if len(seen) < 30 {
		t.Fatalf("walked %d settings; the walk misses fields", len(seen))
	}
	for _, path := range proxy.SettingPaths() {
		if !seen[path] {
			t.Errorf("the settings table declares %s, which is not a setting of conf.Config", path)
		}
	}
}

// A setting not declared reloadable is refused: the default is a restart.
func TestUndeclaredSettingIsRefused(t *testing.T) {
	old := &conf.Config{}
	old.RESP.MaxClients = 10
	cfg := *old
	cfg.RESP.MaxClients = 20
	if err := fixed(old, &cfg); err != nil {
		t.Fatalf("resp.max_clients is declared reloadable, but: %v", err)
	}
	undeclared := func(path string) (proxy.Reload, bool) {
		if path == "resp.max_clients" {
			return proxy.Reload{}, false
		}
		return proxy.ReloadOf(path)
	}
	err := fixedBy(old, &cfg, undeclared)
	if want := `config reload not supported for resp.max_clients ("10" -> "20"): restart pgcache`; err == nil || err.Error() != want {
		t.Fatalf("an undeclared setting changed: %v, want %q", err, want)
	}
}

// The two conditional restarts: the socket mode matters only with a
// socket, and the certificate only when TLS goes on or off.
func TestConditionalSettings(t *testing.T) {
	old := &conf.Config{}
	old.Listen.RESPUnixMode = 0o660
	cfg := *old
	cfg.Listen.RESPUnixMode = 0o600
	if err := fixed(old, &cfg); err != nil {
		t.Errorf("mode without a socket: %v", err)
	}
	old.Listen.RESPUnix, cfg.Listen.RESPUnix = "/tmp/s", "/tmp/s"
	if err := fixed(old, &cfg); err == nil || !strings.Contains(err.Error(), "listen.resp_unix_mode") {
		t.Errorf("mode of a socket: %v", err)
	}
	old, cfg2 := &conf.Config{}, conf.Config{}
	old.TLS.CertFile, cfg2.TLS.CertFile = "a.pem", "b.pem"
	if err := fixed(old, &cfg2); err != nil {
		t.Errorf("a renewed certificate at a new path: %v", err)
	}
	cfg2.TLS.CertFile = ""
	if err := fixed(old, &cfg2); err == nil || !strings.Contains(err.Error(), "tls.cert_file") {
		t.Errorf("TLS turned off: %v", err)
	}
}
