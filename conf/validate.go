package conf

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"

	"github.com/pgcache/pgcache/backends"
)

// Errors is every problem Validate found, one per line.
type Errors []string

func (e Errors) Error() string { return strings.Join(e, "\n") }

func (e *Errors) add(field, format string, args ...any) {
	*e = append(*e, field+": "+fmt.Sprintf(format, args...))
}

// maxUnixPath is the room in sockaddr_un.sun_path (Linux), less the NUL.
const maxUnixPath = 107

// routeName is what fits in a URL path segment without escaping.
var routeName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Validate checks what can be checked without building anything: addresses,
// names, references between routes and backends, limits. A backend's
// options, and the options a route gives its backend (table, durability,
// key_type, source_table), are the backend's to check: the server asks it
// before opening anything (server.Check, which `pgcache validate` runs).
func (c *Config) Validate() error {
	var errs Errors
	for _, l := range []struct{ field, addr string }{
		{"listen.resp", c.Listen.RESP}, {"listen.http", c.Listen.HTTP}, {"listen.admin", c.Listen.Admin},
	} {
		if l.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			errs.add(l.field, "%q is not host:port", l.addr)
		}
	}
	if c.Listen.RESP == "" && c.Listen.HTTP == "" && c.Listen.RESPUnix == "" {
		errs.add("listen", "both resp and http are off: nothing would be served")
	}
	if len(c.Listen.RESPUnix) > maxUnixPath {
		errs.add("listen.resp_unix", "%q is longer than %d bytes, the most a socket path may be", c.Listen.RESPUnix, maxUnixPath)
	}
	if c.Listen.RESPUnixMode&0o600 != 0o600 {
		errs.add("listen.resp_unix_mode", "%v must let the owner read and write (0600 at least)", c.Listen.RESPUnixMode)
	}
	if !oneOf(c.Log.Level, "debug", "info", "warn", "error") {
		errs.add("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	if !oneOf(c.Log.Format, "auto", "json", "console") {
		errs.add("log.format", "%q is not one of auto, json, console", c.Log.Format)
	}
	if c.ShutdownTimeout <= 0 {
		errs.add("shutdown_timeout", "%v must be positive", c.ShutdownTimeout)
	}
	c.validateLimits(&errs)
	c.validateSecurity(&errs)
	c.validateBackends(&errs)
	c.validateRoutes(&errs)
	if b := c.PubSub.Backend; b != "" {
		switch typ, _ := c.Backends[b]["type"].(string); {
		case c.Backends[b] == nil:
			errs.add("pubsub.backend", "%q is not a configured backend", b)
		case typ != "postgres" && typ != "valkey":
			errs.add("pubsub.backend", "%q is a %s backend: messages travel through a postgres or valkey one", b, typ)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func (c *Config) validateLimits(errs *Errors) {
	positive := func(field string, v int64) {
		if v <= 0 {
			errs.add(field, "%d must be positive", v)
		}
	}
	positive("resp.max_clients", int64(c.RESP.MaxClients))
	positive("resp.max_bulk_bytes", int64(c.RESP.MaxBulkBytes))
	positive("resp.max_inline_bytes", int64(c.RESP.MaxInlineBytes))
	positive("resp.max_multibulk_len", int64(c.RESP.MaxMultibulkLen))
	positive("resp.max_query_bytes", int64(c.RESP.MaxQueryBytes))
	positive("resp.output_buffer_limit", int64(c.RESP.OutputBufferLimit))
	positive("http.max_body_bytes", int64(c.HTTP.MaxBodyBytes))
	positive("http.max_conns", int64(c.HTTP.MaxConns))
	positive("http.max_header_bytes", int64(c.HTTP.MaxHeaderBytes))
	for field, d := range map[string]int64{
		"resp.idle_timeout": int64(c.RESP.IdleTimeout), "resp.write_timeout": int64(c.RESP.WriteTimeout),
		"http.read_timeout": int64(c.HTTP.ReadTimeout), "http.write_timeout": int64(c.HTTP.WriteTimeout),
		"http.idle_timeout": int64(c.HTTP.IdleTimeout),
	} {
		if d < 0 {
			errs.add(field, "must not be negative")
		}
	}
}

func (c *Config) validateBackends(errs *Errors) {
	for _, name := range sortedKeys(c.Backends) {
		field := "backends." + name
		typ, ok := c.Backends[name]["type"].(string)
		switch {
		case !ok || typ == "":
			errs.add(field+".type", "missing (one of %s)", strings.Join(backends.Types(), ", "))
		default:
			if _, err := backends.Lookup(typ); err != nil {
				errs.add(field+".type", "%v", err)
			}
		}
	}
}

func (c *Config) validateRoutes(errs *Errors) {
	if len(c.Routes) == 0 {
		errs.add("routes", "none configured: nothing would be served")
	}
	names := map[string]int{}
	prefixes := map[string]int{}
	for i, r := range c.Routes {
		field := fmt.Sprintf("routes[%d]", i)
		switch {
		case r.Name == "":
			errs.add(field+".name", "missing")
		case !routeName.MatchString(r.Name):
			errs.add(field+".name", "%q may hold only letters, digits, '_', '-' and '.'", r.Name)
		default:
			if j, dup := names[r.Name]; dup {
				errs.add(field+".name", "%q is already the name of routes[%d]", r.Name, j)
			}
			names[r.Name] = i
		}
		if r.Prefix != nil {
			if j, dup := prefixes[*r.Prefix]; dup {
				errs.add(field+".prefix", "%q is already the prefix of routes[%d]", *r.Prefix, j)
			}
			prefixes[*r.Prefix] = i
		}
		switch {
		case r.Backend == "":
			errs.add(field+".backend", "missing")
		case c.Backends[r.Backend] == nil:
			errs.add(field+".backend", "%q is not a configured backend (configured: %s)", r.Backend, strings.Join(sortedKeys(c.Backends), ", "))
		}
		if r.MaxValueBytes < 0 {
			errs.add(field+".max_value_bytes", "%d must not be negative", r.MaxValueBytes)
		}
		if r.Attach != "" && r.Attach != "auto" {
			errs.add(field+".attach", "%q is not auto (or leave it out)", r.Attach)
		}
		if r.Attach != "" && r.SourceTable == "" {
			errs.add(field+".attach", "only a source_table route is attached; a kv table gets its triggers when it has l1")
		}
		if r.L1 != nil {
			if r.L1.MaxBytes <= 0 {
				errs.add(field+".l1.max_bytes", "%d must be positive", r.L1.MaxBytes)
			}
			if r.L1.TTL < 0 {
				errs.add(field+".l1.ttl", "%v must not be negative", r.L1.TTL)
			}
			if r.Table == "" && r.SourceTable == "" {
				errs.add(field+".l1", "a coherent L1 needs a postgres table or source_table to fence it")
			}
		}
	}
}

func oneOf(s string, choices ...string) bool {
	for _, c := range choices {
		if s == c {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
