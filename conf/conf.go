// Package conf loads pgcache's configuration: a YAML file, then PGCACHE_*
// environment variables, then command-line flags, each layer over the one
// before and all over the defaults. Decoding is strict (an unknown key is an
// error) and validation names the field and the value it refuses.
package conf

import (
	"github.com/pgcache/pgcache/internal/decode"
)

// Config is the whole of pgcache's configuration.
type Config struct {
	// Listen holds the addresses pgcache serves on; "" turns a listener off.
	Listen Listen `koanf:"listen" json:"listen"`
	// Log configures logging.
	Log Log `koanf:"log" json:"log"`
	// ShutdownTimeout bounds how long SIGTERM waits for in-flight requests. Default 30s.
	ShutdownTimeout decode.Duration `koanf:"shutdown_timeout" json:"shutdown_timeout"`
	// RESP are the limits of the Redis protocol front.
	RESP RESP `koanf:"resp" json:"resp"`
	// HTTP are the limits of the HTTP data API.
	HTTP HTTP `koanf:"http" json:"http"`
	// Backends are the configured stores by name; each has a `type`
	// (memory, postgres, valkey) and that type's options.
	Backends map[string]map[string]any `koanf:"backends" json:"backends"`
	// Routes map keys to backends. With no backends and no routes, pgcache
	// runs one catch-all route "memory" on a 256MiB memory backend "mem".
	Routes []Route `koanf:"routes" json:"routes"`
	// Auth makes clients authenticate: AUTH over RESP, a bearer token over
	// HTTP (security.go). Off by default.
	Auth Auth `koanf:"auth" json:"auth"`
	// TLS serves the fronts it names over TLS (security.go). Off by default.
	TLS TLS `koanf:"tls" json:"tls"`
	// Insecure lets pgcache listen on an address other than loopback with
	// auth off. Default false: such a config is refused.
	Insecure bool `koanf:"insecure" json:"insecure"`
	// PubSub carries PUBLISH between the pgcache instances that share a
	// backend. Off by default: messages reach this process's subscribers.
	PubSub PubSub `koanf:"pubsub" json:"pubsub"`
}

// PubSub names the backend Publish/Subscribe messages travel through to
// the other pgcache instances: a postgres one (LISTEN/NOTIFY) or a valkey
// one (Valkey's own Pub/Sub).
type PubSub struct {
	// Backend is the name of a postgres or valkey backend; "" keeps
	// messages in this process. Default "".
	Backend string `koanf:"backend" json:"backend,omitempty"`
	// Prefix starts the Valkey channels the messages travel on. Default
	// "pgcache:pubsub:".
	Prefix string `koanf:"prefix" json:"prefix,omitempty"`
}

// Listen are the listen addresses.
type Listen struct {
	// RESP is the Redis protocol address. Default 127.0.0.1:6379.
	RESP string `koanf:"resp" json:"resp"`
	// HTTP is the data API address. Default 127.0.0.1:8080.
	HTTP string `koanf:"http" json:"http"`
	// Admin is the admin API address (/metrics, /healthz, /config). Default 127.0.0.1:2019.
	Admin string `koanf:"admin" json:"admin"`
	// RESPUnix is a Unix socket path RESP is also served on; "" none. Default "".
	RESPUnix string `koanf:"resp_unix" json:"resp_unix,omitempty"`
	// RESPUnixMode is the socket's permission mode, octal. Default "0660".
	RESPUnixMode decode.FileMode `koanf:"resp_unix_mode" json:"resp_unix_mode"`
}

// Log configures zap.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `koanf:"level" json:"level"`
	// Format is json, console, or auto: json, except console when the level
	// is debug and stderr is a terminal. Default auto.
	Format string `koanf:"format" json:"format"`
}

// RESP are the Redis protocol front's limits.
type RESP struct {
	// MaxClients refuses connections past this many. Default 10000.
	MaxClients int `koanf:"max_clients" json:"max_clients"`
	// MaxBulkBytes bounds one argument. Default 512MiB (Redis's proto-max-bulk-len).
	MaxBulkBytes decode.ByteSize `koanf:"max_bulk_bytes" json:"max_bulk_bytes"`
	// MaxInlineBytes bounds an inline (telnet-style) command. Default 64KiB.
	MaxInlineBytes decode.ByteSize `koanf:"max_inline_bytes" json:"max_inline_bytes"`
	// MaxMultibulkLen bounds the arguments of one command. Default 1048576.
	MaxMultibulkLen int `koanf:"max_multibulk_len" json:"max_multibulk_len"`
	// MaxQueryBytes bounds one whole request; a client past it is closed
	// (Redis's client-query-buffer-limit). Default 1GiB.
	MaxQueryBytes decode.ByteSize `koanf:"max_query_bytes" json:"max_query_bytes"`
	// OutputBufferLimit drops a client whose unsent replies pass it. Default 64MiB.
	OutputBufferLimit decode.ByteSize `koanf:"output_buffer_limit" json:"output_buffer_limit"`
	// IdleTimeout closes a client idle this long; 0 never does. Default 0.
	IdleTimeout decode.Duration `koanf:"idle_timeout" json:"idle_timeout"`
	// WriteTimeout drops a client that does not take a reply this long. Default 30s.
	WriteTimeout decode.Duration `koanf:"write_timeout" json:"write_timeout"`
}

// HTTP are the data API's limits.
type HTTP struct {
	// MaxBodyBytes bounds a request body (413 past it). Default 16MiB.
	MaxBodyBytes decode.ByteSize `koanf:"max_body_bytes" json:"max_body_bytes"`
	// ReadTimeout bounds reading one request. Default 30s.
	ReadTimeout decode.Duration `koanf:"read_timeout" json:"read_timeout"`
	// WriteTimeout bounds writing one response. Default 30s.
	WriteTimeout decode.Duration `koanf:"write_timeout" json:"write_timeout"`
	// IdleTimeout closes a keep-alive connection idle this long. Default 120s.
	IdleTimeout decode.Duration `koanf:"idle_timeout" json:"idle_timeout"`
	// MaxConns bounds concurrent connections. Default 10000.
	MaxConns int `koanf:"max_conns" json:"max_conns"`
	// MaxHeaderBytes bounds the request line plus headers (431 past it). Default 8KiB.
	MaxHeaderBytes decode.ByteSize `koanf:"max_header_bytes" json:"max_header_bytes"`
}

// Route is one entry of `routes:`.
type Route struct {
	// Name names the route in HTTP paths (/{name}/get) and metrics. Required.
	Name string `koanf:"name" json:"name"`
	// Prefix is the RESP key prefix the route owns; "" is the catch-all.
	// Absent: the route is reached over HTTP (and CRUD: keys for table routes) only.
	Prefix *string `koanf:"prefix" json:"prefix,omitempty"`
	// Backend names an entry of `backends:`. Required.
	Backend string `koanf:"backend" json:"backend"`
	// MaxValueBytes bounds a value written through the route; 0: the RESP
	// and HTTP limits only.
	MaxValueBytes decode.ByteSize `koanf:"max_value_bytes" json:"max_value_bytes,omitempty"`

	// Table is a kv table (postgres): created if absent.
	Table string `koanf:"table" json:"table,omitempty"`
	// Durability of a kv table: unlogged, async or standard (postgres). Default standard.
	Durability string `koanf:"durability" json:"durability,omitempty"`
	// KeyType of a kv table: text, uuid or bigint (postgres). Default text.
	KeyType string `koanf:"key_type" json:"key_type,omitempty"`
	// SourceTable is schema.table of an existing table served by primary key (postgres).
	SourceTable string `koanf:"source_table" json:"source_table,omitempty"`
	// Writable lets HSET change a source_table row's columns (an UPDATE of
	// them). Default false: HSET of a row is refused.
	Writable bool `koanf:"writable" json:"writable,omitempty"`
	// Attach, for a source_table with l1: "auto" installs the fence triggers
	// at start (as `pgcache attach` does); "" expects them installed.
	Attach string `koanf:"attach" json:"attach,omitempty"`
	// L1 puts a coherent in-process tier in front of a postgres route.
	L1 *L1 `koanf:"l1" json:"l1,omitempty"`
}

// L1 is a route's coherent in-process tier.
type L1 struct {
	// MaxBytes bounds the tier. Required.
	MaxBytes decode.ByteSize `koanf:"max_bytes" json:"max_bytes"`
	// TTL bounds how long an entry stays; 0 keeps it while the row's own
	// expiry allows. Fences, not the TTL, keep entries correct. Default 0.
	TTL decode.Duration `koanf:"ttl" json:"ttl,omitempty"`
	// Refresh reads again, right after its fence, a row another writer
	// changed while the tier held it, so its next reader finds it cached.
	// Default false.
	Refresh bool `koanf:"refresh" json:"refresh,omitempty"`
}
