package proxy

import (
	"time"

	"github.com/pgcache/pgcache/conf"
)

// Config tunes the RESP server. Every field is used as it is given: the
// defaults are conf's (conf/defaults.go), which also refuses a limit that
// is not positive, and ConfigOf takes them from a loaded config. Each field
// names the setting it comes from; the setting's doc states its default.
type Config struct {
	// MaxClients (resp.max_clients) is how many clients may be connected
	// at once; the next one is told "-ERR max number of clients reached"
	// and closed.
	MaxClients int
	// MaxBulkBytes (resp.max_bulk_bytes) bounds one argument of a request;
	// a longer one is a protocol error ("invalid bulk length"). When every
	// route has a MaxValueBytes the largest of them lowers it further,
	// since nothing longer could be stored.
	MaxBulkBytes int64
	// MaxInlineBytes (resp.max_inline_bytes) bounds an inline request
	// line, and the count lines of a multibulk request.
	MaxInlineBytes int
	// MaxMultibulkLen (resp.max_multibulk_len) bounds the number of
	// arguments of a request.
	MaxMultibulkLen int
	// MaxQueryBytes (resp.max_query_bytes) bounds one whole request; a
	// client sending a longer one is disconnected, as Redis does.
	MaxQueryBytes int64
	// OutputBufferLimit (resp.output_buffer_limit) bounds the reply bytes a
	// client has not taken yet: a client over it is disconnected, so one
	// that never reads cannot make the server hold its replies. It must be
	// larger than the largest value clients read.
	OutputBufferLimit int64
	// IdleTimeout (resp.idle_timeout) closes a client that sent nothing for
	// this long; 0 never does (Redis's `timeout 0`).
	IdleTimeout time.Duration
	// WriteTimeout (resp.write_timeout) closes a client that takes longer
	// than this to accept a batch of replies; 0 sets no limit (the output
	// limit still holds).
	WriteTimeout time.Duration
	// Version is pgcache's version, reported by INFO as pgcache_version.
	Version string
	// BlockPoll is how often a blocked command checks that its client is
	// still there, and runs again on a route that reports no changes; 0:
	// 100 ms. Not a setting: a test's.
	BlockPoll time.Duration
}

// ConfigOf is the RESP front's part of a loaded config, for pgcache
// version.
func ConfigOf(r conf.RESP, version string) Config {
	return Config{
		MaxClients:        r.MaxClients,
		MaxBulkBytes:      int64(r.MaxBulkBytes),
		MaxInlineBytes:    int(r.MaxInlineBytes),
		MaxMultibulkLen:   r.MaxMultibulkLen,
		MaxQueryBytes:     int64(r.MaxQueryBytes),
		OutputBufferLimit: int64(r.OutputBufferLimit),
		IdleTimeout:       time.Duration(r.IdleTimeout),
		WriteTimeout:      time.Duration(r.WriteTimeout),
		Version:           version,
	}
}
