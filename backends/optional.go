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

// CollLoader is a Backend that reads a key whole with its remaining
// lifetime, collections included, for a cache in front of it (an L1
// tier): Coll is the collection when it has at most max members; a larger
// one comes back with its Type alone, and a string as Val.
type CollLoader interface {
	LoadColl(ctx context.Context, key string, max int) (Expiring, error)
}

// Rows is a Backend whose values are rows of a table as JSON objects,
// which the hash commands read as hashes of their columns (HGET user:42
// name): RowHash returns how a cache in front of it (an L1 tier) runs such
// a read on a row it holds.
type Rows interface {
	RowHash() func(row []byte, found bool, op Op) error
}

// Expiring is a value read with its remaining lifetime (TTLPersistent for
// none). A nil Val means the key holds no string: it is absent, or Type
// says what it holds.
type Expiring struct {
	Val []byte
	TTL time.Duration
	// Type is the type of a key that holds a collection (TypeHash…);
	// TypeNone for a string or an absent key.
	Type Type
	// Coll is the collection, when the reader loaded it whole (an atomic
	// run's load does; a read of strings does not).
	Coll Value
}

// Found reports whether the key exists.
func (e Expiring) Found() bool { return e.Val != nil || e.Type != TypeNone }

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
// so WATCH can see them: a token for key, and later whether key may have
// changed since. When it cannot be sure (fences may have been missed), it
// says changed. WatchToken may wait (until ctx ends) for news of a write
// made before it, so that the write does not count as one after it.
type Watchable interface {
	WatchToken(ctx context.Context, key string) uint64
	ChangedSince(key string, tok uint64) bool
}

// Notifier is a Backend that reports every change to its keys that was
// not made through its own methods: the memory store's expiries and
// evictions, an L1 tier's fences (plain SQL, other pgcache instances), a
// Valkey client cache's invalidations (other Valkey clients). The RESP
// front feeds them to CLIENT TRACKING. A key of a backend that is not a
// Notifier, or not Watching, may change where pgcache does not see it, so
// a tracking client is told to drop it right after the read that served
// it.
type Notifier interface {
	// Notify calls fn for each change from now on, until cancel is
	// called. fn runs on the notifier's goroutine and must not block; it
	// runs after the change is visible to this process's reads (after an
	// L1 tier has recorded the fence), so a read that starts after fn
	// returned sees the change.
	Notify(fn func(Outside)) (cancel func())
	// Watching reports whether changes are being received now. It is
	// false while a source is lost (the LISTEN connection down, the Valkey
	// connection gone): an Outside with Lost was sent when it went false.
	Watching() bool
}

// ExpiryNotifier is a Backend that deletes expired keys in the background
// and can say which: Redis's "expired" keyspace event. It reports them
// only, not every change (a Notifier does that); the memory store, whose
// expiries CLIENT TRACKING must hear of too, reports them as a Notifier.
type ExpiryNotifier interface {
	// NotifyExpired calls fn with keys (as the backend stores them)
	// deleted because their deadline passed, each once, after the
	// deletion, from now on until cancel. While anyone is subscribed the
	// backend looks for expired keys close to their deadlines, which costs
	// it more: subscribe only while someone wants them. fn runs on the
	// backend's goroutine and must not block.
	NotifyExpired(fn func(keys []string)) (cancel func())
}

// UnwatchedReads is a Notifier that serves some reads it will not report
// the later changes of: Valkey answers a refetch, PTTL, EXISTS, or an atomic
// run's read it could not confirm on connections the server does not
// track. A reader that must hear of every change of what it read (CLIENT
// TRACKING) takes a ReadToken before it reads and asks Unwatched after:
// when the answer is yes it drops what it read, as from a backend that is
// no Notifier. The answer may be yes for a read that was watched (another
// reader's unwatched read of a key that hashes alike, meanwhile), never no
// for one that was not. An atomic run's reads are answered for once
// Atomically has returned.
type UnwatchedReads interface {
	// ReadToken is taken before a read.
	ReadToken() uint64
	// Unwatched reports whether a read of key (as the route stores it)
	// may have been served unwatched since tok.
	Unwatched(key string, tok uint64) bool
}

// Outside is one report of a Notifier: a change made outside its methods.
type Outside struct {
	// Keys changed, as the backend stores them (a route's key without the
	// route's prefix). Nil when All is set.
	Keys []string
	// All: any key may have changed (a table fence, a whole-cache fence,
	// a flush from elsewhere).
	All bool
	// Lost: changes may be missed from now until Watching is true again;
	// implies All.
	Lost bool
	// Source names where the change came from, for metrics: "postgres",
	// "valkey", "expiry", "eviction".
	Source string
	// At is when the change was committed at its source, when known
	// (PostgreSQL's clock for a fence); zero otherwise.
	At time.Time
}

// Sequencer is a Backend that runs a pipelined run of Ops on one key in
// one call, as Do would run each alone, in order, with no other client's
// write of the key between them; errs[i] gets ops[i]'s error. The error it
// returns is the call's (the store failed): every op's. The ops need not
// say which keys they made or emptied (MarkCreated): the RESP front sends
// runs this way only while keyspace events are off. It sends a client's
// pipelined commands on one key this way, so a run of sixteen LPUSHes
// takes the key's lock, looks it up and is measured once (memory), or is
// one round trip and one commit (PostgreSQL).
type Sequencer interface {
	DoSeq(ctx context.Context, key string, ops []Op, errs []error) error
}

// Seq is a run of Ops on one key as one Op, for a Sequencer whose Do can
// run it: Run runs each in turn on the View, keeping each one's error
// (and Run may be called again, as any Op's, each op starting over).
type Seq struct {
	Ops  []Op
	Errs []error
}

func (s *Seq) Name() string { return "seq" }

func (s *Seq) Writes() Writes {
	for _, op := range s.Ops {
		if op.Writes() != ReadOnly {
			return WritesAll
		}
	}
	return ReadOnly
}

func (s *Seq) Run(v View) error {
	for i, op := range s.Ops {
		s.Errs[i] = op.Run(v)
	}
	return nil
}
