package server

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pgcache/pgcache/conf"
)

// rule is what a reload does with one setting of conf.Config.
type rule struct {
	// reload: the new value is swapped in. Otherwise a reload that changes
	// the setting is refused: restart pgcache to change it.
	reload bool
	// moot, for a setting that needs a restart, says when a change to it
	// does not matter (nil: it always does).
	moot func(old, cfg *conf.Config) bool
}

var (
	reloads = rule{reload: true}
	restart = rule{}
)

// settings says, for every setting of conf.Config by its path, whether a
// reload may change it. A setting missing here is refused like a restart
// one, and TestEverySettingIsDeclared fails until it is added: a new field
// does not start reloading by accident.
var settings = map[string]rule{
	// Listeners are opened once and stay open across reloads.
	"listen.resp":      restart,
	"listen.http":      restart,
	"listen.admin":     restart,
	"listen.resp_unix": restart,
	"listen.resp_unix_mode": {moot: func(_, cfg *conf.Config) bool {
		return cfg.Listen.RESPUnix == "" // no socket: no mode to keep
	}},
	// The logger is built once, before anything else.
	"log.level":  restart,
	"log.format": restart,
	// Read at the swap, and again at shutdown.
	"shutdown_timeout": reloads,
	// The RESP front takes a new Config at the swap (proxy.SetConfig).
	"resp.max_clients":         reloads,
	"resp.max_bulk_bytes":      reloads,
	"resp.max_inline_bytes":    reloads,
	"resp.max_multibulk_len":   reloads,
	"resp.max_query_bytes":     reloads,
	"resp.output_buffer_limit": reloads,
	"resp.idle_timeout":        reloads,
	"resp.write_timeout":       reloads,
	// fasthttp reads its limits while it serves: they cannot change under it.
	"http.max_body_bytes":   restart,
	"http.read_timeout":     restart,
	"http.write_timeout":    restart,
	"http.idle_timeout":     restart,
	"http.max_conns":        restart,
	"http.max_header_bytes": restart,
	// What a reload is for: built anew next to the running ones (build.go).
	"backends": reloads,
	"routes":   reloads,
	// Credentials are swapped at the swap.
	"auth.requirepass": reloads,
	"auth.users":       reloads,
	"auth.http_token":  reloads,
	// A listener is TLS or not for its life; the certificate behind it is
	// read again on every reload, which is how it is renewed.
	"tls.cert_file": {moot: func(old, cfg *conf.Config) bool {
		return old.TLS.On() == cfg.TLS.On()
	}},
	"tls.key_file":       reloads,
	"tls.client_ca_file": reloads,
	"tls.fronts":         restart,
	"insecure":           reloads,
}

// fixed refuses a reload from old to cfg that changes a setting not
// declared reloadable in settings, naming each with both values.
func fixed(old, cfg *conf.Config) error {
	var errs conf.Errors
	walkSettings(reflect.ValueOf(old).Elem(), reflect.ValueOf(cfg).Elem(), "", func(path string, a, b reflect.Value) {
		if reflect.DeepEqual(a.Interface(), b.Interface()) {
			return
		}
		r := settings[path]
		if r.reload || (r.moot != nil && r.moot(old, cfg)) {
			return
		}
		errs = append(errs, fmt.Sprintf("config reload not supported for %s (%q -> %q): restart pgcache", path, fmt.Sprint(a), fmt.Sprint(b)))
	})
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// walkSettings calls fn with every setting of two configs side by side: a
// field that is not a struct, named by the path of its koanf keys.
func walkSettings(a, b reflect.Value, prefix string, fn func(path string, a, b reflect.Value)) {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
		if key == "" || !f.IsExported() {
			continue
		}
		path := prefix + key
		if f.Type.Kind() == reflect.Struct {
			walkSettings(a.Field(i), b.Field(i), path+".", fn)
			continue
		}
		fn(path, a.Field(i), b.Field(i))
	}
}
