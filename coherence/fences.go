// Package coherence keeps in-process (L1) caches correct when many pgcache
// instances and plain SQL write to the same PostgreSQL tables. It is the
// whole protocol but for its leaf, package fence (tokens, the key buckets,
// the fence key), which a backend's own cache shares: the triggers and the
// fence log (attach.go, with the C trigger in pgext/), the relay that
// publishes the log over NOTIFY (relay.go), the payload it publishes
// (payload.go), the listener that records it (listener.go), the attach
// policy of a route (policy.go) and the tier that checks it (tier.go).
//
// Row triggers log invalidation fences that the relay publishes over
// LISTEN/NOTIFY; every instance records each fence it receives in a
// Fences; and an L1 entry is stored, and later served, only if no fence for
// its key, its table or the whole cache was recorded after the read that
// produced it began.
//
// # The invariant
//
// Fences keeps one global sequence (a fence.Keys). Recording a fence takes
// the next value and raises, to at least that value, the sequence of the
// fence's scope: one of a fixed array of key buckets (chosen by hashing
// table and key), the table, or everything. A read token is the global
// sequence read before the backend is read. An entry filled under token T
// is valid while
//
//	max(bucket(key), table, all) <= T
//
// # The late-fill race, once
//
// Reader R misses key k and takes token T=10. It SELECTs k and gets v1.
// Writer W commits k=v2; the trigger's NOTIFY reaches this instance, which
// records fence 11 on k's bucket. R now tries to store v1: the bucket says
// 11 > 10, so the fill is dropped and v1 is returned to R's caller only. Had
// the fence arrived after R stored v1, the entry would carry T=10 and the
// next read would find the bucket at 11 and refuse it: the check runs on
// every hit, not only at fill time, so no ordering between a fill and an
// eviction can leave v1 served. A fence recorded before the token (seq <= T)
// was for a write that committed before the token was taken, so the SELECT
// that followed saw it.
package coherence

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgcache/pgcache/coherence/fence"
	"github.com/pgcache/pgcache/internal/subs"
)

// DefaultBuckets is the number of key buckets: 256Ki sequences, 2 MiB. A
// fence also drops the entries of the other keys in its bucket; with 64Ki
// buckets over the coherence bench's 60,000 rows that was about one more
// key per write (hit ratio 0.969 at 1,100 UPDATE/s), with 256Ki about a
// quarter of one (0.977 / 0.980, same runs).
const DefaultBuckets = 1 << 18

// Fences records fences and answers whether a read token is still valid.
type Fences struct {
	keys fence.Keys // the sequence and the key buckets
	all  atomic.Uint64

	mu     sync.Mutex
	tables map[string]*Table

	// online is false while fences may be missed (the LISTEN connection is
	// down, or not yet proven): the L1 tiers neither serve nor fill.
	online atomic.Bool

	// proven is a unix time in nanoseconds before which every fence logged
	// has been received (see Listener.Proven).
	proven atomic.Int64

	watchers subs.Set[watcher] // the tiers told of the listener's fences (notify.go)

	// WATCH after this instance's own write (AwaitOwnWrite): own holds,
	// per bucket, when this instance last wrote a key of it, and heard the
	// time before which every fence committed has been recorded, as the
	// relay's drains tell it (heardThrough; zero until one has). Both are
	// nanoseconds since epoch.
	epoch time.Time
	own   [ownBuckets]atomic.Int64
	heard atomic.Uint64

	Stats Stats
}

// ownBuckets is the number of buckets of Fences.own: two keys that share
// one only make a WATCH wait for the other's fence too.
const ownBuckets = 1 << 14

// OwnWriteWait bounds how long WATCH waits for the fence of this
// instance's own write (AwaitOwnWrite); the relay drains every few
// milliseconds.
const OwnWriteWait = 250 * time.Millisecond

// Stats count fences by kind. Each is monotonic.
type Stats struct {
	KeyFences   atomic.Int64 // fences on one key
	TableFences atomic.Int64 // fences on a whole table (TRUNCATE, an oversized batch)
	AllFences   atomic.Int64 // whole-cache fences (every (re)connect of the listener)
}

// NewFences returns a Fences with n key buckets (rounded up to a power of
// two; DefaultBuckets when n <= 0). It starts offline.
func NewFences(n int) *Fences {
	if n <= 0 {
		n = DefaultBuckets
	}
	f := &Fences{tables: map[string]*Table{}, epoch: time.Now()}
	f.keys.Init(n)
	return f
}

// Token returns a read token. Take it before reading the backend.
func (f *Fences) Token() fence.Token { return f.keys.Token() }

// Hash is a key's bucket hash within a table; compute it once per request.
func (f *Fences) Hash(table, key string) uint64 { return f.keys.Hash(table, key) }

// Valid reports whether data read under tok for the key with hash h in
// table is still current as far as this instance knows: online, and no
// fence for the key's bucket, the table or everything since tok. Four
// atomic loads: it runs on every L1 hit.
func (f *Fences) Valid(tok fence.Token, table *Table, h uint64) bool {
	t := uint64(tok)
	return f.online.Load() &&
		f.keys.Valid(tok, h) &&
		f.all.Load() <= t &&
		table.seq.Load() <= t
}

// Proven returns a time before which every fence logged in the database
// has been received here; zero until the first canary comes back.
func (f *Fences) Proven() time.Time {
	n := f.proven.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Online reports whether fences are being received.
func (f *Fences) Online() bool { return f.online.Load() }

// FenceKey records a fence for one key and returns its sequence.
func (f *Fences) FenceKey(table, key string) uint64 {
	return f.FenceHash(f.Hash(table, key))
}

// FenceHash records a fence for the key whose Hash is h.
func (f *Fences) FenceHash(h uint64) uint64 {
	s := f.keys.Fence(h)
	f.Stats.KeyFences.Add(1)
	return s
}

// FenceOwn records a fence for a key this instance has just written (its
// write returned), and when, for AwaitOwnWrite.
func (f *Fences) FenceOwn(h uint64) {
	f.FenceHash(h)
	f.own[h%ownBuckets].Store(f.since(time.Now()))
}

// AwaitOwnWrite returns once the fence of this instance's last write of
// the key whose Hash is h has come back through the log, so that a WATCH
// token taken next is not raised by that earlier write. It knows that
// from the drains that took the whole log (heardThrough): the active
// relay's instance from each of them, the others from the "s" of those
// that published fences; neither when the relay is a build without "s".
// It waits at most OwnWriteWait (a write that changed nothing is not
// waited for at all, see Tier.invalidate, but one whose change the tier
// cannot tell is: on a standby, if no other fence comes, for all of it);
// past it, the fence may still arrive after the token and abort an EXEC
// that no write came between. Waiting is always safe: WATCH takes effect
// when its token is taken.
func (f *Fences) AwaitOwnWrite(ctx context.Context, h uint64) {
	wrote := f.own[h%ownBuckets].Load()
	if wrote == 0 {
		return
	}
	var tick *time.Timer
	for start := time.Now(); ; {
		heard := int64(f.heard.Load())
		if heard >= wrote || heard == 0 || time.Since(start) > OwnWriteWait || !f.online.Load() {
			return
		}
		if tick == nil {
			tick = time.NewTimer(time.Millisecond)
			defer tick.Stop()
		} else {
			tick.Reset(time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// heardThrough notes that every fence committed before t has been
// recorded: a relay drained the whole log as of t (this instance's, or
// another's by its "s").
func (f *Fences) heardThrough(t time.Time) {
	if v := f.since(t); v > 0 {
		fence.Raise(&f.heard, uint64(v))
	}
}

func (f *Fences) since(t time.Time) int64 { return int64(t.Sub(f.epoch)) }

// FenceTable records a fence for every key of table.
func (f *Fences) FenceTable(table string) uint64 {
	s := f.keys.Next()
	fence.Raise(&f.Table(table).seq, s)
	f.Stats.TableFences.Add(1)
	return s
}

// FenceAll records a fence for every key.
func (f *Fences) FenceAll() uint64 {
	s := f.keys.Next()
	fence.Raise(&f.all, s)
	f.Stats.AllFences.Add(1)
	return s
}

// SetOnline marks fences as being received (true) or possibly missed
// (false). Going online records a whole-cache fence first, so nothing read
// while fences might have been lost is ever served or stored.
//
// Watchers (notify.go) hear of each change once it is made: Lost when
// fences go offline, and a whole-cache fence when they come back, which
// drops what a client read while they were offline.
func (f *Fences) SetOnline(on bool) {
	if on {
		f.FenceAll()
		if !f.online.Swap(true) {
			f.tell("", fenceNote{all: true})
		}
		return
	}
	if f.online.Swap(false) {
		f.tell("", fenceNote{all: true, lost: true})
	}
}

// Table is the fence scope of one table, as named in fences
// ("schema.table"). Tiers resolve theirs once, so a hit takes no lock.
type Table struct {
	Name string
	seq  atomic.Uint64
}

// Table returns the scope of the named table, creating it on first use.
func (f *Fences) Table(name string) *Table {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tables[name]
	if !ok {
		t = &Table{Name: name}
		f.tables[name] = t
	}
	return t
}

func floatBits(f float64) uint64 { return math.Float64bits(f) }

// QueueUsageValue reads ListenerStats.QueueUsage.
func QueueUsageValue(bits uint64) float64 { return math.Float64frombits(bits) }
