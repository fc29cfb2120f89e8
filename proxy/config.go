package proxy

import "time"

// Defaults, as Redis has them where Redis has the same knob.
const (
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
)

// Config tunes the RESP server. A zero field takes its default.
type Config struct {
	// MaxClients is how many clients may be connected at once; the next one
	// is told "-ERR max number of clients reached" and closed. Default 10000.
	MaxClients int
	// MaxBulkBytes bounds one argument of a request; a longer one is a
	// protocol error ("invalid bulk length"). When every route has a
	// MaxValueBytes the largest of them lowers it further, since nothing
	// longer could be stored. Default 512MiB.
	MaxBulkBytes int64
	// MaxInlineBytes bounds an inline request line, and the count lines of
	// a multibulk request. Default 64KiB.
	MaxInlineBytes int
	// MaxMultibulkLen bounds the number of arguments of a request.
	// Default 1048576.
	MaxMultibulkLen int
	// MaxQueryBytes bounds one whole request; a client sending a longer one
	// is disconnected, as Redis does. Default 1GiB.
	MaxQueryBytes int64
	// OutputBufferLimit bounds the reply bytes a client has not taken yet: a
	// client over it is disconnected, so one that never reads cannot make
	// the server hold its replies. It must be larger than the largest value
	// clients read. Default 64MiB.
	OutputBufferLimit int64
	// IdleTimeout closes a client that sent nothing for this long.
	// Default 0: never (Redis's `timeout 0`).
	IdleTimeout time.Duration
	// WriteTimeout closes a client that takes longer than this to accept a
	// batch of replies. Default 0: no limit (the output limit still holds).
	WriteTimeout time.Duration
	// Version is pgcache's version, reported by INFO as pgcache_version.
	Version string
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.MaxClients <= 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.MaxBulkBytes <= 0 {
		c.MaxBulkBytes = DefaultMaxBulkBytes
	}
	if c.MaxInlineBytes <= 0 {
		c.MaxInlineBytes = DefaultMaxInlineBytes
	}
	if c.MaxMultibulkLen <= 0 {
		c.MaxMultibulkLen = DefaultMaxMultibulkLen
	}
	if c.MaxQueryBytes <= 0 {
		c.MaxQueryBytes = DefaultMaxQueryBytes
	}
	if c.OutputBufferLimit <= 0 {
		c.OutputBufferLimit = DefaultOutputBufferLimit
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	return c
}
