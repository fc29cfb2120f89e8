package httpapi

import (
	"math"
	"time"
)

// Defaults of Config. fasthttp's own defaults leave timeouts unlimited, which
// lets a client that never finishes its request hold a connection forever.
const (
	// DefaultMaxBodyBytes bounds a request body, that is a value written with
	// /set. A route's max_value_bytes may bound it further.
	DefaultMaxBodyBytes = 16 << 20
	// DefaultReadTimeout bounds reading one request, headers and body, from
	// its first byte.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds writing one response.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout bounds the wait for the next request on a keep-alive
	// connection.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxConns is Redis's default maxclients, for the same reason: a
	// sidecar serves a handful of local clients, and a runaway one should
	// not exhaust file descriptors.
	DefaultMaxConns = 10000
	// DefaultReadBufferSize is the per-connection read buffer, which bounds
	// the request line plus headers (nginx's large_client_header_buffers
	// size). An mget of many keys needs more.
	DefaultReadBufferSize = 8 << 10
)

// Config tunes the data API server. A zero or negative field takes its default.
type Config struct {
	// MaxBodyBytes bounds a request body; a larger one is answered 413.
	// Default DefaultMaxBodyBytes (16MiB).
	MaxBodyBytes int64
	// ReadTimeout bounds reading a request. Default DefaultReadTimeout (30s).
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response. Default DefaultWriteTimeout (30s).
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a keep-alive
	// connection. Default DefaultIdleTimeout (120s).
	IdleTimeout time.Duration
	// MaxConns bounds the connections served at once; one more is answered
	// 503 and closed. Default DefaultMaxConns (10000).
	MaxConns int
	// ReadBufferSize is the per-connection read buffer and so the largest
	// request line plus headers; a larger header is answered 431.
	// Default DefaultReadBufferSize (8KiB).
	ReadBufferSize int
}

// withDefaults returns c with every unset field filled in.
func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	// fasthttp counts the body in an int.
	c.MaxBodyBytes = min(c.MaxBodyBytes, math.MaxInt)
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.ReadBufferSize <= 0 {
		c.ReadBufferSize = DefaultReadBufferSize
	}
	return c
}
