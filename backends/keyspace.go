package backends

import (
	"context"
	"sync/atomic"

	"github.com/pgcache/pgcache/internal/glob"
)

// Keyspace capabilities: optional, found with As. The key-value stores
// (memory, Valkey, PostgreSQL kv tables) have them; a table route (the rows
// of a source_table) has none of them, so SCAN, KEYS, RANDOMKEY and the
// flushes pass it by and never list nor delete its rows, and RENAME and
// COPY refuse it.

// MaxCursor is the largest cursor a Scanner hands out: 2^53-1, so that a
// client that parses cursors as a float64 (JavaScript) loses nothing, and
// so that the RESP front can put a route number beside it in one int64.
const MaxCursor = 1<<53 - 1

// Scanner lists a store's keys a page at a time, as Redis's SCAN does.
type Scanner interface {
	// Scan returns keys of the store that match match (a glob over the
	// store's keys as Match reads it; "" for every key), looking at about
	// count keys, and the cursor of the next page: 0 when the scan is done.
	// Cursor 0 starts a scan. Every key present from a scan's start to its
	// end is returned at least once; a key may be returned more than once,
	// and a key written or deleted during the scan may or may not be. next
	// is at most MaxCursor. A cursor the store does not know (made up, or
	// forgotten: see package cursor) is no error, and a scan from it ends;
	// which keys it returns is the store's to say, as it is Redis's (the
	// memory and PostgreSQL stores start over).
	Scan(ctx context.Context, cursor uint64, match string, count int) (next uint64, keys []string, err error)
}

// Flusher removes every key a store owns (FLUSHDB, FLUSHALL). A wrapper
// that keeps keys of its own (an L1 tier) implements it to drop them too.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Copier copies a key, value and expiry, to another key of the same store
// (RENAME, RENAMENX, COPY): atomically where the store can. src and dst
// differ.
type Copier interface {
	Copy(ctx context.Context, src, dst string, opts CopyOptions) (CopyResult, error)
}

// CopyOptions say what a Copy does beside writing dst.
type CopyOptions struct {
	// Replace overwrites dst when it exists (RENAME, COPY … REPLACE);
	// otherwise an existing dst refuses the copy (RENAMENX, COPY).
	Replace bool
	// Move removes src once copied (RENAME, RENAMENX).
	Move bool
}

// CopyResult says what a Copy did.
type CopyResult uint8

const (
	Copied        CopyResult = iota // dst now holds src's value and expiry
	CopyNoSource                    // src does not exist: nothing done
	CopyDstExists                   // dst exists and Replace is false: nothing done
)

// ExpireTimer is a store that can say a key's deadline exactly
// (EXPIRETIME, PEXPIRETIME); without it the deadline is TTL's from now.
type ExpireTimer interface {
	// ExpireTime returns the key's deadline in unix milliseconds, or
	// TTLMissing (-2) / TTLPersistent (-1) as PEXPIRETIME answers.
	ExpireTime(ctx context.Context, key string) (int64, error)
}

// RandomKeyer picks a key of a store at random (RANDOMKEY); ok is false
// when the store has none.
type RandomKeyer interface {
	RandomKey(ctx context.Context) (key string, ok bool, err error)
}

// Match reports whether key matches the glob pattern as Redis's KEYS and
// SCAN … MATCH read it, except that the pattern "*" (and "") matches every
// key, the empty one included, as KEYS and SCAN special-case it. Every
// store and the RESP front match through here.
func Match(pattern, key string) bool {
	if pattern == "" || pattern == "*" {
		return true
	}
	return compiled(pattern).Match(key)
}

// lastPattern keeps the pattern compiled last: a scan matches every key of
// a store against one pattern.
var lastPattern atomic.Pointer[glob.Pattern]

func compiled(pattern string) *glob.Pattern {
	if p := lastPattern.Load(); p != nil && p.String() == pattern {
		return p
	}
	p := glob.Compile(pattern, false)
	lastPattern.Store(p)
	return p
}
