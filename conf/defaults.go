package conf

import (
	"time"

	"github.com/pgcache/pgcache/internal/decode"
)

// Defaults. Every field of Config not set by the file, the environment or a
// flag takes its value from here (setDefaults), and each field's doc comment
// names its default.
const (
	DefaultRESPAddr  = "127.0.0.1:6379"
	DefaultHTTPAddr  = "127.0.0.1:8080"
	DefaultAdminAddr = "127.0.0.1:2019" // Caddy's admin port, and its habit of loopback only
	DefaultUnixMode  = 0o660            // owner and group may connect to listen.resp_unix

	DefaultLogLevel  = "info"
	DefaultLogFormat = "auto"

	DefaultShutdownTimeout = 30 * time.Second

	// RESP limits, Redis's own where Redis has one.
	DefaultMaxClients        = 10000     // Redis maxclients
	DefaultMaxBulkBytes      = 512 << 20 // Redis proto-max-bulk-len
	DefaultMaxInlineBytes    = 64 << 10  // Redis PROTO_INLINE_MAX_SIZE
	DefaultMaxMultibulkLen   = 1 << 20   // Redis: 1024*1024 arguments
	DefaultMaxQueryBytes     = 1 << 30   // Redis client-query-buffer-limit
	DefaultOutputBufferLimit = 64 << 20  // bytes of unsent replies before a client is dropped
	DefaultIdleTimeout       = 0         // Redis timeout 0: idle clients stay
	DefaultWriteTimeout      = 30 * time.Second

	// HTTP limits. fasthttp's own defaults are unlimited timeouts.
	DefaultHTTPMaxBodyBytes = 16 << 20
	DefaultHTTPReadTimeout  = 30 * time.Second
	DefaultHTTPWriteTimeout = 30 * time.Second
	DefaultHTTPIdleTimeout  = 120 * time.Second
	DefaultHTTPMaxConns     = 10000
	DefaultHTTPMaxHeader    = 8 << 10

	// The embedded default: one memory backend and one catch-all route, so
	// `pgcache run` works on a bare machine.
	DefaultBackendName = "mem"
	DefaultRouteName   = "memory"
	DefaultMemoryBytes = "256MiB"
)

// defaultRoutes are used when the config names no backends and no routes.
func defaultRoutes(c *Config) {
	c.Backends = map[string]map[string]any{
		DefaultBackendName: {"type": "memory", "max_bytes": DefaultMemoryBytes},
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
