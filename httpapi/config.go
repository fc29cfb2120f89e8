package httpapi

import (
	"time"

	"github.com/pgcache/pgcache/conf"
)

// Config tunes the data API server. Every field is used as it is given:
// the defaults are conf's (conf/defaults.go), which also refuses a limit
// that is not positive, and ConfigOf takes them from a loaded config. Each
// field names the setting it comes from; the setting's doc states its
// default.
type Config struct {
	// MaxBodyBytes (http.max_body_bytes) bounds a request body; a larger
	// one is answered 413.
	MaxBodyBytes int64
	// ReadTimeout (http.read_timeout) bounds reading a request.
	ReadTimeout time.Duration
	// WriteTimeout (http.write_timeout) bounds writing a response.
	WriteTimeout time.Duration
	// IdleTimeout (http.idle_timeout) bounds the wait for the next request
	// on a keep-alive connection.
	IdleTimeout time.Duration
	// MaxConns (http.max_conns) bounds the connections served at once; one
	// more is answered 503 and closed.
	MaxConns int
	// ReadBufferSize (http.max_header_bytes) is the per-connection read
	// buffer and so the largest request line plus headers; a larger header
	// is answered 431.
	ReadBufferSize int
}

// ConfigOf is the data API's part of a loaded config.
func ConfigOf(h conf.HTTP) Config {
	return Config{
		MaxBodyBytes:   int64(h.MaxBodyBytes),
		ReadTimeout:    time.Duration(h.ReadTimeout),
		WriteTimeout:   time.Duration(h.WriteTimeout),
		IdleTimeout:    time.Duration(h.IdleTimeout),
		MaxConns:       h.MaxConns,
		ReadBufferSize: int(h.MaxHeaderBytes),
	}
}
