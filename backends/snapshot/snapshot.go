// Package snapshot runs an atomic run (backends.Atomic) of a remote store
// on a copy of the keys it declares.
//
// A store that cannot run a Backend's calls inside one of its own
// transactions (PostgreSQL would need a round trip per call with its rows
// locked; Valkey cannot read inside MULTI) reads the declared keys once,
// under whatever makes them stand still or tells it they moved (row locks,
// WATCH), and hands them to Run. Run copies them into a scratch memory
// store, runs fn there on a Backend that serves exactly those keys, and
// returns what the store must write so that it holds what fn left: only
// the keys whose value or lifetime changed. The store writes those in one
// transaction of its own, or reads and runs again when its keys changed
// meanwhile.
//
// Lifetimes are measured from the load instant, the caller's `start`: the
// instant the store's own clock read the remaining lifetimes it loads.
// A store whose writes take lifetimes from that same instant (PostgreSQL's
// now(), fixed for a transaction) writes back a key fn left untouched, or
// wrote with KEEPTTL, with exactly the deadline it had.
package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
)

// Unique returns keys sorted and without duplicates: the keys a store
// loads, in an order that is the same for every run that declares them.
func Unique(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}

// Write is one key the store must change.
type Write struct {
	Key string
	// Val is the key's new value; nil deletes the key.
	Val []byte
	// TTL is the new remaining lifetime measured from the load instant,
	// or TTLPersistent for none. It is positive: a key whose deadline
	// passed during the run is a deletion.
	TTL time.Duration
	// Existed is true when the key was present at the load: the store
	// changes what it read. A key absent then is created, and the store
	// must make sure no other client created it meanwhile.
	Existed bool
	// TTLOnly is true when the value is the one loaded and only the
	// lifetime changed (EXPIRE, PERSIST).
	TTLOnly bool
	// TTLKept is true when the value changed and the lifetime is the one
	// loaded (KEEPTTL, INCR): TTL is exactly the loaded one, and a store
	// that can keep a key's deadline as it is (SET … KEEPTTL) may.
	TTLKept bool
}

// loaded is a key as the store held it at the load.
type loaded struct {
	val []byte // nil: absent
	exp int64  // unix nanoseconds by the scratch's clock, 0 for none
}

// loadedMaps keeps Run's maps of the declared keys for reuse, those of at
// most maxPooledLoaded keys (emptying a map costs the size it grew to).
var loadedMaps = sync.Pool{New: func() any { return make(map[string]loaded) }}

const maxPooledLoaded = 64

// Run runs fn on a copy of keys and returns the writes that make the store
// hold what fn left, in the order of keys. keys must be as Unique returns
// them, and state holds one entry per key: the value (nil when absent) and
// the remaining lifetime (TTLPersistent for none) read at start. When fn
// fails, Run returns its error as it is and no writes.
func Run(keys []string, state []backends.Expiring, start time.Time, fn func(tx backends.Backend) error) ([]Write, error) {
	scratch := memory.NewScratch()
	defer scratch.Close()
	ctx := context.Background() // the scratch store never blocks
	base := start.UnixNano()
	was := loadedMaps.Get().(map[string]loaded)
	defer func() {
		if len(keys) <= maxPooledLoaded {
			clear(was)
			loadedMaps.Put(was)
		}
	}()
	for i, k := range keys {
		e := state[i]
		if e.Val == nil {
			was[k] = loaded{}
			continue
		}
		l := loaded{val: e.Val}
		ttl := backends.TTL{Mode: backends.TTLNone}
		if e.TTL != backends.TTLPersistent {
			// An absolute deadline, so the scratch keeps the exact one
			// (a relative TTL is taken from the scratch's own now).
			l.exp = base + int64(e.TTL)
			ttl = backends.TTL{Mode: backends.TTLAt, At: time.Unix(0, l.exp)}
		}
		was[k] = l
		// A deadline already past by the scratch's clock leaves the key
		// absent there: fn does not see it, and the diff deletes it.
		if _, err := scratch.Set(ctx, k, e.Val, backends.SetOptions{TTL: ttl}); err != nil {
			return nil, err
		}
	}
	if err := fn(&tx{s: scratch.Store, keys: was}); err != nil {
		return nil, err
	}
	var writes []Write
	for _, k := range keys {
		before := was[k]
		val, exp, ok := scratch.Peek(k)
		switch {
		case !ok && before.val == nil:
			continue
		case !ok:
			writes = append(writes, Write{Key: k, Existed: true})
			continue
		}
		sameVal := before.val != nil && bytes.Equal(val, before.val)
		if sameVal && exp == before.exp {
			continue
		}
		w := Write{Key: k, Val: val, TTL: backends.TTLPersistent, Existed: before.val != nil,
			TTLOnly: sameVal, TTLKept: before.val != nil && exp == before.exp}
		if exp != 0 {
			w.TTL = time.Duration(exp - base)
		}
		writes = append(writes, w)
	}
	return writes, nil
}

// Empty runs fn as a run that declares no keys (an EVAL of none) is run:
// on an empty copy, touching nothing of the store, which has no
// transaction to make.
func Empty(fn func(tx backends.Backend) error) error {
	_, err := Run(nil, nil, time.Now(), fn)
	return err
}

// ReadOnly runs fn, which only reads, on keys as er reads them in one call:
// a read-only transaction needs one moment of the store, not its locks (a
// table's one statement; an L1 tier's hits checked against the fences,
// its misses one statement). A write by fn is an error, and is not made.
func ReadOnly(ctx context.Context, er backends.ExpiryReader, keys []string, fn func(tx backends.Backend) error) error {
	keys = Unique(keys)
	start := time.Now() // before the read: a deadline in the copy is never later than the key's
	var state []backends.Expiring
	if len(keys) > 0 {
		var err error
		if state, err = er.MGetWithTTL(ctx, keys, nil); err != nil {
			return err
		}
	}
	writes, err := Run(keys, state, start, fn)
	if err != nil {
		return err
	}
	if len(writes) > 0 {
		return fmt.Errorf("snapshot: a read-only run wrote %d keys", len(writes))
	}
	return nil
}
