package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/conf"
)

// Check runs every check of cfg that needs no network: what `pgcache
// validate` does. They are the checks every start and reload runs before it
// opens a route (prepare), so a config Check passes is refused by neither
// for a reason Check could have given, and Check gives every reason at
// once, one per line, each starting with the path of the setting.
func Check(ctx context.Context, cfg *conf.Config, log *zap.Logger) error {
	p, err := prepare(ctx, cfg, nil, backends.Env{Log: log})
	if err != nil {
		return err
	}
	closeDrivers(p.drivers, log)
	return nil
}

// prepared is what a config builds before any route is opened.
type prepared struct {
	drivers map[string]backends.Driver
	tls     *tls.Config // nil when TLS is off
}

// closeNotIn closes the drivers p made, leaving those it took from prev.
func (p *prepared) closeNotIn(prev *generation, log *zap.Logger) {
	for name, d := range p.drivers {
		if prev == nil || prev.drivers[name] != d {
			if err := d.Close(); err != nil {
				log.Warn("closing backend", zap.String("backend", name), zap.Error(err))
			}
		}
	}
}

// connectNew has every driver p made, new or with changed options, show
// that it reaches its store (backends.Checker), each within its own
// timeouts (connect_timeout, command_timeout), all at once. A reload calls
// it before it opens a route: a config whose new database or Valkey cannot
// be reached is refused with the reason, and the running one goes on,
// rather than swapped in to answer "unavailable". The drivers kept from
// prev are not asked: the config does not change them.
func (p *prepared) connectNew(ctx context.Context, prev *generation) error {
	var (
		mu   sync.Mutex
		errs conf.Errors
		wg   sync.WaitGroup
	)
	for _, name := range sortedNames(p.drivers) {
		d := p.drivers[name]
		c, ok := d.(backends.Checker)
		if !ok || (prev != nil && prev.drivers[name] == d) {
			continue
		}
		wg.Go(func() {
			if err := c.Check(ctx); err != nil {
				mu.Lock()
				errs = append(errs, "backends."+name+": cannot serve: "+strings.Join(strings.Fields(err.Error()), " "))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		slices.Sort(errs)
		return errs
	}
	return nil
}

// prepare checks cfg as far as it can without the network, and makes its
// drivers, taking from prev those whose options are unchanged:
//
//   - the config's own validation (conf.Config.Validate);
//   - the certificate files;
//   - each backend's options, by building its driver (factories do not
//     block on the network);
//   - each route's options, by asking its backend's type (backends.RouteCheck).
//
// It goes on past a failed check, and returns every reason as conf.Errors.
// On error it has closed the drivers it made. env is the server's (build).
func prepare(ctx context.Context, cfg *conf.Config, prev *generation, env backends.Env) (*prepared, error) {
	var errs conf.Errors
	if err := cfg.Validate(); err != nil {
		errs = addLines(errs, "", err)
	}
	tlsCfg, err := loadCerts(cfg)
	if err != nil {
		errs = addLines(errs, "", err)
	}
	drivers, made := map[string]backends.Driver{}, map[string]backends.Driver{}
	for _, name := range sortedNames(cfg.Backends) {
		if prev != nil && prev.drivers[name] != nil && reflect.DeepEqual(prev.cfg.Backends[name], cfg.Backends[name]) {
			drivers[name] = prev.drivers[name]
			continue
		}
		typ, _ := cfg.Backends[name]["type"].(string)
		if _, err := backends.Lookup(typ); err != nil {
			continue // Validate named it
		}
		d, err := newDriver(ctx, name, cfg.Backends[name], env)
		if err != nil {
			errs = addLines(errs, "backends."+name, err)
			continue
		}
		drivers[name], made[name] = d, d
	}
	errs = append(errs, checkRoutes(cfg)...)
	if len(errs) > 0 {
		closeDrivers(made, env.Log)
		return nil, errs
	}
	return &prepared{drivers: drivers, tls: tlsCfg}, nil
}

// checkRoutes asks each backend's type about the routes cfg opens on it
// (backends.RouteCheck): it needs the type only, so the routes of a backend
// whose own options are wrong are checked too.
func checkRoutes(cfg *conf.Config) conf.Errors {
	type onBackend struct {
		index []int
		specs []backends.RouteSpec
	}
	by := map[string]*onBackend{}
	for i, rc := range cfg.Routes {
		if cfg.Backends[rc.Backend] == nil {
			continue // Validate named it
		}
		o := by[rc.Backend]
		if o == nil {
			o = &onBackend{}
			by[rc.Backend] = o
		}
		o.index = append(o.index, i)
		o.specs = append(o.specs, routeSpec(rc))
	}
	found := make([]error, len(cfg.Routes))
	for _, name := range sortedNames(by) {
		typ, _ := cfg.Backends[name]["type"].(string)
		check := backends.LookupRouteCheck(typ)
		if check == nil {
			continue // an unknown type (Validate named it), or one that checks at Open
		}
		o := by[name]
		for j, err := range check(options(cfg.Backends[name]), o.specs) {
			found[o.index[j]] = err
		}
	}
	// In the config's order, whichever backend a route is on.
	var errs conf.Errors
	for i, err := range found {
		if err != nil {
			errs = addLines(errs, fmt.Sprintf("routes[%d]", i), err)
		}
	}
	return errs
}

// routeSpec is what a route tells its driver.
func routeSpec(rc conf.Route) backends.RouteSpec {
	return backends.RouteSpec{
		Name:        rc.Name,
		Table:       rc.Table,
		Durability:  rc.Durability,
		KeyType:     rc.KeyType,
		SourceTable: rc.SourceTable,
		Writable:    rc.Writable,
	}
}

// addLines adds each line of err under path: `path.field: reason` for a
// line that starts with a field name, as backend errors do, else
// `path: line`.
func addLines(errs conf.Errors, path string, err error) conf.Errors {
	for _, line := range strings.Split(strings.TrimSpace(err.Error()), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case path == "":
			errs = append(errs, line)
		case fieldFirst.MatchString(line):
			errs = append(errs, path+"."+line)
		default:
			errs = append(errs, path+": "+line)
		}
	}
	return errs
}

// fieldFirst matches a line that starts with a setting's path:
// "max_conns: …", "tls.ca_file: …", "addrs[0]: …".
var fieldFirst = regexp.MustCompile(`^[a-z_][a-z0-9_]*(?:\[\d+\]|\.[a-z_][a-z0-9_]*)*: `)
