package server

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/proxy"
)

// Which settings a reload may change is the settings table's to say, with
// CONFIG GET and SET (proxy/settings.go, proxy.ReloadOf): each setting is
// declared there once. A setting the table does not declare is refused
// like a restart one, and TestEverySettingIsDeclared fails until it is
// declared: a new field does not start reloading by accident.

// fixed refuses a reload from old to cfg that changes a setting the table
// does not declare reloadable, naming each with both values.
func fixed(old, cfg *conf.Config) error { return fixedBy(old, cfg, proxy.ReloadOf) }

// fixedBy is fixed with the rules reloadOf gives.
func fixedBy(old, cfg *conf.Config, reloadOf func(path string) (proxy.Reload, bool)) error {
	var errs conf.Errors
	walkSettings(reflect.ValueOf(old).Elem(), reflect.ValueOf(cfg).Elem(), "", func(path string, a, b reflect.Value) {
		if reflect.DeepEqual(a.Interface(), b.Interface()) {
			return
		}
		r, _ := reloadOf(path)
		if r.Live || (r.Moot != nil && r.Moot(old, cfg)) {
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
