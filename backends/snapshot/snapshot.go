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
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
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
	// Val is the key's new value when it holds a string; nil deletes the
	// key, unless Coll is set.
	Val []byte
	// Coll is the key's collection when it holds one after the run.
	Coll backends.Value
	// Journal, with Coll, says the run changed the loaded collection in
	// place, touching only these members (or All of them); nil with Coll:
	// the collection is new (or replaced what the key held) and is
	// written whole.
	Journal *coll.Journal
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
	val  []byte         // nil: absent, or a collection
	coll backends.Value // the collection, changed in place by the run
	j    *coll.Journal  // what the run changed of coll
	exp  int64          // unix nanoseconds by the scratch's clock, 0 for none
}

func (l loaded) found() bool { return l.val != nil || l.coll != nil }

// loadedMaps keeps Run's maps of the declared keys for reuse, those of at
// most maxPooledLoaded keys (emptying a map costs the size it grew to).
var loadedMaps = sync.Pool{New: func() any { return make(map[string]loaded) }}

const maxPooledLoaded = 64

// Run runs fn on a copy of keys and returns the writes that make the store
// hold what fn left, in the order of keys. keys must be as Unique returns
// them, and state holds one entry per key: the value (nil when absent), or
// the whole collection, and the remaining lifetime (TTLPersistent for
// none) read at start. The run changes the collections of state in place
// (a store loads them fresh for it); a Write's Journal says what it
// changed. When fn fails, Run returns its error as it is and no writes.
// OBJECT ENCODING in fn reports collections by enc (nil: Redis's
// defaults), the thresholds of the server the store belongs to.
func Run(enc *backends.Encodings, keys []string, state []backends.Expiring, start time.Time, fn func(tx backends.Backend) error) ([]Write, error) {
	scratch := memory.NewScratch(enc)
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
		if !e.Found() {
			was[k] = loaded{}
			continue
		}
		var l loaded
		if e.TTL != backends.TTLPersistent {
			// An absolute deadline, so the scratch keeps the exact one
			// (a relative TTL is taken from the scratch's own now).
			l.exp = base + int64(e.TTL)
		}
		if e.Coll != nil {
			l.coll, l.j = e.Coll, &coll.Journal{}
			coll.Record(e.Coll, l.j)
			was[k] = l
			// A deadline already past leaves the key absent there, as below.
			if l.exp == 0 || l.exp > time.Now().UnixNano() {
				scratch.LoadColl(k, e.Coll, l.exp)
			}
			continue
		}
		l.val = e.Val
		ttl := backends.TTL{Mode: backends.TTLNone}
		if l.exp != 0 {
			ttl = backends.TTL{Mode: backends.TTLAt, At: time.Unix(0, l.exp)}
		}
		was[k] = l
		// A deadline already past by the scratch's clock leaves the key
		// absent there: fn does not see it, and the diff deletes it.
		if _, err := scratch.Set(ctx, k, e.Val, backends.SetOptions{TTL: ttl}); err != nil {
			return nil, err
		}
	}
	err := fn(&tx{s: scratch.Store, keys: was})
	for _, k := range keys {
		if l := was[k]; l.coll != nil {
			coll.Record(l.coll, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	var writes []Write
	for _, k := range keys {
		if w, ok := diff(scratch, k, was[k], base); ok {
			writes = append(writes, w)
		}
	}
	return writes, nil
}

// diff says what the store must write so that k holds what the scratch
// does, given what it held at the load; ok is false when nothing changed.
func diff(scratch *memory.Scratch, k string, before loaded, base int64) (Write, bool) {
	w := Write{Key: k, TTL: backends.TTLPersistent, Existed: before.found()}
	var exp int64
	if c, cexp, ok := scratch.PeekColl(k); ok {
		w.Coll, exp = c, cexp
		if c == before.coll { // the loaded one, changed in place or not
			changed := before.j.All || len(before.j.Members) > 0
			if !changed && exp == before.exp {
				return w, false
			}
			w.Journal, w.TTLOnly, w.TTLKept = before.j, !changed, changed && exp == before.exp
		}
	} else if val, vexp, ok := scratch.Peek(k); ok {
		sameVal := before.val != nil && bytes.Equal(val, before.val)
		if sameVal && vexp == before.exp {
			return w, false
		}
		w.Val, exp = val, vexp
		w.TTLOnly, w.TTLKept = sameVal, before.val != nil && vexp == before.exp
	} else {
		return Write{Key: k, Existed: true}, before.found() // a deletion, if there was anything
	}
	if exp != 0 {
		w.TTL = time.Duration(exp - base)
	}
	return w, true
}

// Empty runs fn as a run that declares no keys (an EVAL of none) is run:
// on an empty copy, touching nothing of the store, which has no
// transaction to make.
func Empty(fn func(tx backends.Backend) error) error {
	_, err := Run(nil, nil, nil, time.Now(), fn)
	return err
}

// ErrCollection is ReadOnly's refusal of a key that holds a collection its
// reader did not load whole (a reader of strings says only its type): the
// run needs the store's own atomic run, which loads it.
var ErrCollection = errors.New("snapshot: a key holds a collection the read did not load")

// ReadOnly runs fn, which only reads, on keys as er reads them in one call:
// a read-only transaction needs one moment of the store, not its locks (a
// table's one statement; an L1 tier's hits checked against the fences,
// its misses one statement). A write by fn is an error, and is not made.
// A key that holds a collection the read did not load is ErrCollection,
// before fn runs.
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
	for _, e := range state {
		if e.Type != backends.TypeNone && e.Coll == nil {
			return ErrCollection
		}
	}
	writes, err := Run(nil, keys, state, start, fn)
	if err != nil {
		return err
	}
	if len(writes) > 0 {
		return fmt.Errorf("snapshot: a read-only run wrote %d keys", len(writes))
	}
	return nil
}
