// Package backends defines the storage contract every pgcache route speaks
// and the registry through which storage drivers make themselves available.
//
// A Driver is one configured entry of the `backends:` section (an otter cache,
// a Valkey client, a PostgreSQL pool). A route opens a Backend on its driver:
// the memory driver hands out a namespace of its cache, the postgres driver a
// table. Routes, the RESP front and the HTTP front only ever see Backend.
package backends

import (
	"context"
	"time"
)

// Backend is the small set of operations every store can do. Keys and values
// passed in are borrowed for the duration of the call: a backend that keeps
// one must copy it. Values returned are the caller's to read and keep, never
// to modify: a backend may hand out the bytes it keeps (the memory backend,
// an L1 tier and the Valkey client cache do), and never modifies them
// afterwards.
//
// A present value is never nil: an empty value is a non-nil, zero-length
// slice, so nil can mean "absent" in MGet results.
type Backend interface {
	// Get returns the value of key; ok is false when the key is absent or expired.
	Get(ctx context.Context, key string) (val []byte, ok bool, err error)
	// MGet appends one entry per key to dst and returns it: the value, or nil
	// when the key is absent. It is one round trip for remote stores.
	MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error)
	// Set stores val under key as opts says. See SetOptions and SetResult.
	Set(ctx context.Context, key string, val []byte, opts SetOptions) (SetResult, error)
	// MSet stores every pair with no expiry, atomically where the store can.
	MSet(ctx context.Context, pairs []KV) error
	// Del removes the keys and returns how many existed.
	Del(ctx context.Context, keys []string) (int64, error)
	// Exists counts the keys that are present (a key named twice counts twice).
	Exists(ctx context.Context, keys []string) (int64, error)
	// Update runs a read-modify-write of key atomically with respect to
	// every other write of it (see Update): GETDEL, GETEX, INCRBY, EXPIRE
	// and every command like them. It returns Apply's error, if any, and
	// then changes nothing.
	Update(ctx context.Context, key string, u Update) error
	// TTL returns the remaining time to live of key, or TTLMissing / TTLPersistent.
	TTL(ctx context.Context, key string) (time.Duration, error)
	// Do runs op, a command on collections (hashes, sets, sorted sets,
	// lists: collections.go), on keys, atomically with respect to every
	// other write of them. It returns op's error (ErrWrongType, a
	// Refusal), and then writes nothing that Run would not have written
	// before failing.
	Do(ctx context.Context, keys []string, op Op) error
	// Close releases what the backend holds. The driver closes what they share.
	Close() error
}

// Remaining-time sentinels returned by Backend.TTL, as Redis's TTL replies.
const (
	TTLMissing    time.Duration = -2 // the key does not exist
	TTLPersistent time.Duration = -1 // the key exists and has no expiry
)

// TTLMode says how a write treats the key's expiry.
type TTLMode uint8

const (
	TTLNone     TTLMode = iota // no expiry: the key lives until deleted (SET's default)
	TTLKeep                    // keep the expiry the key has (KEEPTTL)
	TTLRelative                // expire D from now, by the store's clock
	TTLAt                      // expire at the absolute time At (EXAT, PXAT)
)

// TTL is an expiry request. Relative durations are turned into deadlines by
// the store itself (PostgreSQL uses its own clock), never by the caller.
type TTL struct {
	Mode TTLMode
	D    time.Duration // TTLRelative
	At   time.Time     // TTLAt
}

// Deadline turns a TTL into an absolute time by now; ok is false for
// TTLNone and TTLKeep.
func (t TTL) Deadline(now time.Time) (deadline time.Time, ok bool) {
	switch t.Mode {
	case TTLRelative:
		return now.Add(t.D), true
	case TTLAt:
		return t.At, true
	}
	return time.Time{}, false
}

// SetCond is the NX/XX condition of a SET.
type SetCond uint8

const (
	SetAlways    SetCond = iota
	SetIfAbsent          // NX: only when the key does not exist (an expired key does not)
	SetIfPresent         // XX: only when the key exists
)

// SetOptions are the options of Redis's SET.
type SetOptions struct {
	Cond SetCond
	TTL  TTL
	// Get asks for the old value in SetResult (SET … GET).
	Get bool
	// AskCreated asks for SetResult.Created. A store may have to do more
	// to say (PostgreSQL returns a row it does not otherwise), so the RESP
	// front asks only while notify-keyspace-events has n.
	AskCreated bool
}

// SetResult says what a Set did.
type SetResult struct {
	// Stored is false when the condition refused the write.
	Stored bool
	// Old and OldFound carry the previous value when SetOptions.Get was set.
	Old      []byte
	OldFound bool
	// Created says, when SetOptions.AskCreated was set, that the write made
	// a key that did not exist (or had expired): Redis's "new" keyspace
	// event. A store that cannot say (Valkey) leaves it false.
	Created bool
}

// ExpireCond is the NX/XX/GT/LT condition of EXPIRE (Redis 7).
type ExpireCond uint8

const (
	ExpireAlways    ExpireCond = iota
	ExpireIfNone               // NX: only when the key has no expiry
	ExpireIfSet                // XX: only when the key has an expiry
	ExpireIfGreater            // GT: only when the new expiry is later (no expiry counts as infinite)
	ExpireIfLess               // LT: only when the new expiry is sooner (no expiry counts as infinite)
)

// KV is one key and value of an MSet, and what MSet says of it.
type KV struct {
	Key string
	Val []byte
	// AskCreated asks for Created, as SetOptions.AskCreated does.
	AskCreated bool
	// Created says, when AskCreated was set, that the pair made a key that
	// did not exist, as SetResult.Created does; of a key named twice, only
	// the first pair can have made it.
	Created bool
}
