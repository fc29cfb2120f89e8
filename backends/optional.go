package backends

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Optional capabilities, found by type assertion on a Backend or a Driver.

// Sizer is a Backend that can count its keys cheaply (DBSIZE).
type Sizer interface {
	Len(ctx context.Context) (int64, error)
}

// Checker is a Driver or Backend that can tell whether it can serve now
// (/readyz). A nil error means ready.
type Checker interface {
	Check(ctx context.Context) error
}

// InfoSection is a Driver that adds lines to INFO: pairs of field and value,
// written as "field:value".
type InfoSection interface {
	Info(ctx context.Context) [][2]string
}

// Collector is a Driver with Prometheus metrics of its own (pool stats,
// table health). Its metrics carry a "backend" label with the driver name.
type Collector interface {
	Collectors() []prometheus.Collector
}

// Fenced is a Backend whose rows publish invalidation fences: a PostgreSQL
// table with pgcache's fence triggers. A coherent L1 tier needs it.
type Fenced interface {
	// FenceTable names the table as its triggers do ("schema.table").
	FenceTable() string
	// FenceKey renders a route key as the triggers publish it: a kv key as
	// it is; a table row's primary key as compact JSON (42, "a", [1,"b"]).
	FenceKey(key string) (string, error)
}

// ExpiryReader is a Backend that returns each value with its remaining
// lifetime by the store's clock (TTLPersistent for none), so a cache in
// front of it never keeps a value longer than the store does.
type ExpiryReader interface {
	GetWithTTL(ctx context.Context, key string) (val []byte, ttl time.Duration, ok bool, err error)
	// MGetWithTTL is GetWithTTL for many keys in one round trip: it appends
	// one entry per key to dst, with a nil Val when the key is absent.
	MGetWithTTL(ctx context.Context, keys []string, dst []Expiring) ([]Expiring, error)
}

// Expiring is a value read with its remaining lifetime (TTLPersistent for
// none); a nil Val means the key is absent.
type Expiring struct {
	Val []byte
	TTL time.Duration
}

// Wrapper is a Backend that wraps another (a route's metrics, an L1 tier).
type Wrapper interface {
	Unwrap() Backend
}

// As finds the capability T on b or, when b does not have it, on the
// backends it wraps, outermost first. A wrapper that must see a capability's
// calls (an L1 tier that drops what a flush removed) implements it itself,
// and is found first; one that need not is passed through.
func As[T any](b Backend) (T, bool) {
	for {
		if t, ok := b.(T); ok {
			return t, true
		}
		w, ok := b.(Wrapper)
		if !ok {
			var zero T
			return zero, false
		}
		b = w.Unwrap()
	}
}

// Atomic is a Backend that runs several operations as one (MULTI/EXEC, a
// script): while fn runs, no other client writes keys, and no other client
// sees some of fn's writes and not others. fn gets tx, a Backend on which
// it touches only keys (a store may refuse others with ErrUndeclaredKey);
// its calls on tx see its own writes. fn may run more than once (a store
// that retries after a conflict), so it keeps its results where each run
// overwrites them. When fn returns an error, Atomically returns it, and a
// store that can (PostgreSQL, Valkey) has written none of fn's writes.
//
// A wrapper must implement Atomic itself when it has to see the writes (an
// L1 tier fences the keys), and give fn a tx wrapped as it wraps.
type Atomic interface {
	Atomically(ctx context.Context, keys []string, fn func(tx Backend) error) error
}

// Watchable is a Backend that learns of writes made elsewhere (an L1
// tier's fences from PostgreSQL, a Valkey client cache's invalidations),
// so WATCH can see them: a token now, and later whether key may have
// changed since. When it cannot be sure (fences may have been missed), it
// says changed.
type Watchable interface {
	WatchToken() uint64
	ChangedSince(key string, tok uint64) bool
}

// SoleWriter is a Backend that only this process writes: every change to
// it goes through its methods (the memory store). The RESP front lets
// clients cache its keys (CLIENT TRACKING); a key of any other backend,
// which may change where pgcache does not see it, is invalidated right
// after the read that served it.
type SoleWriter interface {
	SoleWriter()
}
