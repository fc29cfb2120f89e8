package conf

import (
	"time"

	"github.com/pgcache/pgcache/backends/memory"
	"github.com/pgcache/pgcache/httpapi"
	"github.com/pgcache/pgcache/internal/decode"
	"github.com/pgcache/pgcache/proxy"
)

// Defaults. Every field of Config not set by the file, the environment or a
// flag takes its value from here (setDefaults), and each field's doc comment
// names its default. A limit the RESP or HTTP front also applies to a zero
// field is that package's own exported default, written once there.
const (
	DefaultRESPAddr  = "127.0.0.1:6379"
	DefaultHTTPAddr  = "127.0.0.1:8080"
	DefaultAdminAddr = "127.0.0.1:2019" // Caddy's admin port, and its habit of loopback only
	DefaultUnixMode  = 0o660            // owner and group may connect to listen.resp_unix

	DefaultLogLevel  = "info"
	DefaultLogFormat = "auto"

	DefaultShutdownTimeout = 30 * time.Second

	// RESP limits: the proxy's defaults (Redis's own where Redis has one).
	DefaultMaxClients        = proxy.DefaultMaxClients
	DefaultMaxBulkBytes      = proxy.DefaultMaxBulkBytes
	DefaultMaxInlineBytes    = proxy.DefaultMaxInlineBytes
	DefaultMaxMultibulkLen   = proxy.DefaultMaxMultibulkLen
	DefaultMaxQueryBytes     = proxy.DefaultMaxQueryBytes
	DefaultOutputBufferLimit = proxy.DefaultOutputBufferLimit
	// The proxy takes a zero timeout as none, so these two are config's:
	// Redis's timeout 0 (idle clients stay), and a bound on a client that
	// does not read its replies.
	DefaultIdleTimeout  = 0
	DefaultWriteTimeout = 30 * time.Second

	// HTTP limits: the data API's defaults.
	DefaultHTTPMaxBodyBytes = httpapi.DefaultMaxBodyBytes
	DefaultHTTPReadTimeout  = httpapi.DefaultReadTimeout
	DefaultHTTPWriteTimeout = httpapi.DefaultWriteTimeout
	DefaultHTTPIdleTimeout  = httpapi.DefaultIdleTimeout
	DefaultHTTPMaxConns     = httpapi.DefaultMaxConns
	DefaultHTTPMaxHeader    = httpapi.DefaultReadBufferSize

	// The embedded default: one memory backend and one catch-all route, so
	// `pgcache run` works on a bare machine.
	DefaultBackendName = "mem"
	DefaultRouteName   = "memory"
)

// defaultRoutes are used when the config names no backends and no routes.
func defaultRoutes(c *Config) {
	c.Backends = map[string]map[string]any{
		DefaultBackendName: {"type": memory.TypeName, "max_bytes": decode.ByteSize(memory.DefaultMaxBytes).String()},
	}
	empty := ""
	c.Routes = []Route{{Name: DefaultRouteName, Prefix: &empty, Backend: DefaultBackendName}}
}

// defaultsMap is the base layer koanf loads before the file: every scalar
// setting, so environment variables and flags have a key to override.
func defaultsMap() map[string]any {
	return map[string]any{
		"listen": map[string]any{
			"resp":  DefaultRESPAddr,
			"http":  DefaultHTTPAddr,
			"admin": DefaultAdminAddr,
			// A string: a number here would be read back in decimal.
			"resp_unix_mode": decode.FileMode(DefaultUnixMode).String(),
		},
		"log": map[string]any{
			"level":  DefaultLogLevel,
			"format": DefaultLogFormat,
		},
		"shutdown_timeout": DefaultShutdownTimeout.String(),
		"resp": map[string]any{
			"max_clients":         DefaultMaxClients,
			"max_bulk_bytes":      DefaultMaxBulkBytes,
			"max_inline_bytes":    DefaultMaxInlineBytes,
			"max_multibulk_len":   DefaultMaxMultibulkLen,
			"max_query_bytes":     DefaultMaxQueryBytes,
			"output_buffer_limit": DefaultOutputBufferLimit,
			"idle_timeout":        time.Duration(DefaultIdleTimeout).String(),
			"write_timeout":       DefaultWriteTimeout.String(),
		},
		"http": map[string]any{
			"max_body_bytes":   DefaultHTTPMaxBodyBytes,
			"read_timeout":     DefaultHTTPReadTimeout.String(),
			"write_timeout":    DefaultHTTPWriteTimeout.String(),
			"idle_timeout":     DefaultHTTPIdleTimeout.String(),
			"max_conns":        DefaultHTTPMaxConns,
			"max_header_bytes": DefaultHTTPMaxHeader,
		},
	}
}
