package conf

import (
	"time"

	"github.com/pgcache/pgcache/backends/memory"
	"github.com/pgcache/pgcache/internal/decode"
)

// Defaults: the one place a setting of Config gets its default. Every field
// not set by the file, the environment or a flag takes its value from here
// (defaultsMap), and each field's doc comment names it. The fronts use the
// values they are given and fill in nothing. A backend's options are its
// driver's to default, as they are its to decode (memory.DefaultMaxBytes).
const (
	DefaultRESPAddr  = "127.0.0.1:6379"
	DefaultHTTPAddr  = "127.0.0.1:8080"
	DefaultAdminAddr = "127.0.0.1:2019" // Caddy's admin port, and its habit of loopback only
	DefaultUnixMode  = 0o660            // owner and group may connect to listen.resp_unix

	DefaultLogLevel  = "info"
	DefaultLogFormat = "auto"

	DefaultShutdownTimeout = 30 * time.Second

	// RESP limits, Redis's own where Redis has the same knob.

	// DefaultMaxClients is Redis's maxclients.
	DefaultMaxClients = 10000
	// DefaultMaxBulkBytes is Redis's proto-max-bulk-len.
	DefaultMaxBulkBytes = 512 << 20
	// DefaultMaxInlineBytes is Redis's PROTO_INLINE_MAX_SIZE. It bounds an
	// inline request and the count lines of a multibulk one.
	DefaultMaxInlineBytes = 64 << 10
	// DefaultMaxMultibulkLen bounds the number of arguments of a request.
	// Redis 7 accepts up to INT_MAX, but each argument costs pgcache a few
	// dozen bytes of bookkeeping however short it is, so this keeps the
	// limit Redis had until 6.2.
	DefaultMaxMultibulkLen = 1024 * 1024
	// DefaultMaxQueryBytes is Redis's client-query-buffer-limit: the most a
	// single request (all its arguments) may take.
	DefaultMaxQueryBytes = 1 << 30
	// DefaultOutputBufferLimit bounds the replies a client has not read yet.
	DefaultOutputBufferLimit = 64 << 20
	// DefaultIdleTimeout is Redis's timeout 0: idle clients stay.
	DefaultIdleTimeout = 0
	// DefaultWriteTimeout bounds a client that does not read its replies.
	DefaultWriteTimeout = 30 * time.Second

	// HTTP limits. fasthttp's own defaults leave timeouts unlimited, which
	// lets a client that never finishes its request hold a connection
	// forever.

	// DefaultHTTPMaxBodyBytes bounds a request body, that is a value
	// written with /set. A route's max_value_bytes may bound it further.
	DefaultHTTPMaxBodyBytes = 16 << 20
	// DefaultHTTPReadTimeout bounds reading one request, headers and body,
	// from its first byte.
	DefaultHTTPReadTimeout = 30 * time.Second
	// DefaultHTTPWriteTimeout bounds writing one response.
	DefaultHTTPWriteTimeout = 30 * time.Second
	// DefaultHTTPIdleTimeout bounds the wait for the next request on a
	// keep-alive connection.
	DefaultHTTPIdleTimeout = 120 * time.Second
	// DefaultHTTPMaxConns is Redis's default maxclients, for the same
	// reason: a sidecar serves a handful of local clients, and a runaway
	// one should not exhaust file descriptors.
	DefaultHTTPMaxConns = 10000
	// DefaultHTTPMaxHeader is the per-connection read buffer, which bounds
	// the request line plus headers (nginx's large_client_header_buffers
	// size). An mget of many keys needs more.
	DefaultHTTPMaxHeader = 8 << 10

	// The embedded default: one memory backend and one catch-all route, so
	// `pgcache run` works on a bare machine.
	DefaultBackendName = "mem"
	DefaultRouteName   = "memory"
)

// Default is the config of a bare `pgcache run`: every setting at its
// default and the embedded default route, whatever the environment says.
func Default() *Config {
	cfg, err := Decode(Source{Environ: func() []string { return nil }})
	if err != nil {
		panic("conf: the defaults do not decode: " + err.Error())
	}
	return cfg
}

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
