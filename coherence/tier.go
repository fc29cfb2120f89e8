package coherence

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/coherence/fence"
	"github.com/pgcache/pgcache/internal/otterread"
	"github.com/pgcache/pgcache/internal/sweep"
)

// L1 is the options of an in-process tier in front of a fenced backend.
type L1 struct {
	// MaxBytes bounds the tier (keys + values + overhead).
	MaxBytes int64
	// TTL bounds how long an entry is kept; 0: as long as the row's own
	// expiry allows. Fences, not the TTL, keep entries correct.
	TTL time.Duration
	// Refresh reads again, right after its fence, a row another writer
	// changed while L1 held it (see refresh.go).
	Refresh bool
}

// TierStats count what the tier did. Each is monotonic.
type TierStats struct {
	Hits        atomic.Int64 // reads served from L1
	Misses      atomic.Int64 // reads that went to the backend while online
	Bypassed    atomic.Int64 // reads that went to the backend because fences may be missed
	FillsStored atomic.Int64 // backend reads stored in L1
	FillsFenced atomic.Int64 // backend reads not stored: a fence came after their token
	Coalesced   atomic.Int64 // reads that waited for another read of the same key
	Stale       atomic.Int64 // entries found fenced on a hit and dropped
	Refreshed   atomic.Int64 // rows read again after a fence dropped their entry (L1.Refresh)
}

// Tier is a coherent L1 in front of a backend: a backends.Backend itself.
// Reads are served from an otter cache while every fence is being received;
// misses take a read token, load once per key however many ask, and fill
// only if no fence came after the token. Writes go to the backend and then
// fence the key locally, so this instance reads its own writes at once;
// the trigger's notification fences every other instance.
type Tier struct {
	route   string
	prepare func(ctx context.Context) error // see Coordinator.AddTier
	closed  atomic.Bool

	// Backend is the store behind the tier. Operations that neither read
	// through L1 nor write (Exists, TTL) go to it as they are.
	backends.Backend

	fenced backends.Fenced
	expiry backends.ExpiryReader // nil: entries live for L1.TTL
	f      *Fences
	table  *Table
	ttl    time.Duration
	cache  *otter.Cache[string, entry]
	clock  *otter.CoarseClock // otter's, read by sweeps

	// written are the collections this tier wrote, by the reads since
	// (coll.go).
	written *otter.Cache[string, int32]
	sweep   *sweep.Sweeper[entry]

	refresh *refresher // nil: L1.Refresh off

	mu      sync.Mutex
	flights map[string]*flight
	running map[uint64]int // bucket hashes of the keys of atomic runs in flight: no fills

	Stats TierStats
}

// entry is a cached value with the token it was read under and its key's
// bucket hash, so a hit can check it against the fences, and its deadline
// (unix nanoseconds, 0 for none): the row's own expiry or the tier's TTL,
// whichever comes first. row is the row's own deadline (0: none), which
// MGetWithTTL answers.
type entry struct {
	val  []byte
	coll backends.Value // a collection (coll.go); val is nil then
	tok  fence.Token
	h    uint64
	exp  int64
	row  int64
}

// ttl is the row's remaining lifetime at now, as the backend would say.
func (e entry) ttl(now int64) time.Duration {
	if e.row == 0 {
		return backends.TTLPersistent
	}
	return time.Duration(e.row - now)
}

// expiring is the entry as a read with its lifetime answers it.
func (e entry) expiring(now int64) backends.Expiring {
	if e.coll != nil {
		return backends.Expiring{TTL: e.ttl(now), Type: e.coll.Type()}
	}
	return backends.Expiring{Val: e.val, TTL: e.ttl(now)}
}

func (e entry) usable(t *Tier, now int64) bool {
	return (e.exp == 0 || e.exp > now) && t.f.Valid(e.tok, t.table, e.h)
}

// entryOverhead approximates an entry's cost beyond key and value.
const entryOverhead = 96

// NewTier wraps b, which must be backends.Fenced, with an L1 of opts
// checked against f.
func NewTier(b backends.Backend, f *Fences, opts L1) (*Tier, error) {
	fenced, ok := backends.As[backends.Fenced](b)
	if !ok {
		return nil, fmt.Errorf("l1: the backend publishes no fences (only PostgreSQL tables do)")
	}
	if opts.MaxBytes <= 0 {
		return nil, fmt.Errorf("l1: max_bytes must be positive")
	}
	t := &Tier{
		Backend: b,
		fenced:  fenced,
		f:       f,
		table:   f.Table(fenced.FenceTable()),
		ttl:     opts.TTL,
		flights: map[string]*flight{},
		running: map[uint64]int{},
		clock:   sweep.NewClock(),
	}
	t.expiry, _ = backends.As[backends.ExpiryReader](b)
	t.cache = otter.Must(&otter.Options[string, entry]{
		MaximumWeight: uint64(opts.MaxBytes),
		Weigher: func(k string, e entry) uint32 {
			w := uint64(len(k) + len(e.val) + entryOverhead)
			if e.coll != nil {
				w += uint64(e.coll.Weight())
			}
			return uint32(min(w, math.MaxUint32))
		},
		// No ExpiryCalculator: hits check each entry's deadline, and the
		// sweeper frees expired entries (see package sweep).
		Clock: t.clock,
	})
	t.written = otter.Must(&otter.Options[string, int32]{
		MaximumSize: maxWritten,
		Executor:    func(fn func()) { fn() }, // a write's bookkeeping on its own goroutine, no goroutine started
	})
	t.sweep = sweep.Start(t.cache, func(e entry) int64 { return e.exp })
	if opts.Refresh {
		t.startRefresh()
	}
	return t, nil
}

// hash returns the bucket hash of a route key, as its fences name it.
func (t *Tier) hash(key string) (uint64, error) {
	fk, err := t.fenced.FenceKey(key)
	if err != nil {
		return 0, err
	}
	return t.f.Hash(t.table.Name, fk), nil
}

// Get serves key from L1 when it is there and unfenced, else loads it.
func (t *Tier) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if !t.f.Online() {
		t.Stats.Bypassed.Add(1)
		return t.Backend.Get(ctx, key)
	}
	if e, ok := otterread.Get(t.cache, key); ok {
		if e.usable(t, time.Now().UnixNano()) {
			t.Stats.Hits.Add(1)
			if e.coll != nil {
				return nil, false, backends.ErrWrongType
			}
			return e.val, true, nil
		}
		t.Stats.Stale.Add(1)
	}
	h, err := t.hash(key)
	if err != nil {
		// A key the fences cannot name (or a bad one: the backend says
		// so) is read from the backend and never cached.
		t.Stats.Bypassed.Add(1)
		return t.Backend.Get(ctx, key)
	}
	t.Stats.Misses.Add(1)
	return t.load(ctx, key, h)
}

// flight is one backend read that concurrent misses of a key share.
type flight struct {
	done chan struct{}
	tok  fence.Token
	val  []byte
	ok   bool
	err  error
}

// load reads key from the backend once for every concurrent miss.
//
// A miss joins a read in flight only if no fence for the key came after
// that read's token: otherwise the read may predate a write that committed
// before this miss began, and joining it could return a value older than
// one already fenced. Such a miss starts a read of its own.
func (t *Tier) load(ctx context.Context, key string, h uint64) ([]byte, bool, error) {
	t.mu.Lock()
	if fl, ok := t.flights[key]; ok && t.f.Valid(fl.tok, t.table, h) {
		t.mu.Unlock()
		t.Stats.Coalesced.Add(1)
		select {
		case <-fl.done:
			return fl.val, fl.ok, fl.err
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	owned := strings.Clone(key)
	fl := &flight{done: make(chan struct{}), tok: t.f.Token()}
	t.flights[owned] = fl
	t.mu.Unlock()

	// The read outlives a leader whose client went away: others may be
	// waiting on it, and the backend bounds it with its own timeouts.
	var ttl time.Duration
	if t.expiry != nil {
		fl.val, ttl, fl.ok, fl.err = t.expiry.GetWithTTL(context.WithoutCancel(ctx), owned)
	} else {
		fl.val, fl.ok, fl.err = t.Backend.Get(context.WithoutCancel(ctx), owned)
		ttl = backends.TTLPersistent
	}
	if fl.err == nil && fl.ok {
		t.fill(owned, fl.val, fl.tok, h, ttl)
	}

	t.mu.Lock()
	if t.flights[owned] == fl {
		delete(t.flights, owned)
	}
	t.mu.Unlock()
	close(fl.done)
	return fl.val, fl.ok, fl.err
}

// fill stores a value read under tok unless a fence has come since. A fence
// that comes after this check is caught by the check on every hit.
func (t *Tier) fill(key string, val []byte, tok fence.Token, h uint64, ttl time.Duration) {
	t.fillEntry(key, entry{val: val, tok: tok, h: h}, ttl)
}

// fillEntry is fill of an entry made of what was read (its value or
// collection, token and hash).
func (t *Tier) fillEntry(key string, e entry, ttl time.Duration) {
	tok, h := e.tok, e.h
	if !t.f.Valid(tok, t.table, h) || t.inRun(h) {
		t.Stats.FillsFenced.Add(1)
		return
	}
	// Never outlive the row's own remaining TTL, nor the tier's.
	life := t.ttl
	switch {
	case ttl == backends.TTLPersistent:
	case ttl <= 0:
		return // expiring now: nothing to keep
	case life == 0 || ttl < life:
		life = ttl
	}
	now := time.Now()
	if life > 0 {
		e.exp = now.Add(life).UnixNano()
	}
	if ttl != backends.TTLPersistent {
		e.row = now.Add(ttl).UnixNano()
	}
	t.cache.Set(key, e)
	if e.exp != 0 {
		t.sweep.Wrote(e.exp)
	}
	t.Stats.FillsStored.Add(1)
}

// MGet serves what it can from L1 and reads the rest in one backend call.
func (t *Tier) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	if !t.f.Online() {
		t.Stats.Bypassed.Add(int64(len(keys)))
		return t.Backend.MGet(ctx, keys, dst)
	}
	return mget(t, ctx, keys, dst,
		func(e entry, _ int64) []byte { return e.val },
		func(e backends.Expiring) []byte { return e.Val })
}

// MGetWithTTL is MGet with each value's remaining lifetime by the row's
// deadline (backends.ExpiryReader): the values of one moment, as MGet's,
// so a read-only transaction reads its keys with it and takes no lock.
func (t *Tier) MGetWithTTL(ctx context.Context, keys []string, dst []backends.Expiring) ([]backends.Expiring, error) {
	if !t.f.Online() {
		t.Stats.Bypassed.Add(int64(len(keys)))
		got, err := t.readMany(ctx, keys)
		return append(dst, got...), err
	}
	return mget(t, ctx, keys, dst,
		func(e entry, now int64) backends.Expiring { return e.expiring(now) },
		func(e backends.Expiring) backends.Expiring { return e })
}

// mget appends one V per key: hit's of an L1 entry, read's of what one
// backend call read for the misses. A hit fenced while the misses were
// read would mix two moments (an atomic run fences its keys before it
// commits), so then all keys are read again, in one call.
func mget[V any](t *Tier, ctx context.Context, keys []string, dst []V,
	hit func(e entry, now int64) V, read func(backends.Expiring) V) ([]V, error) {
	base := len(dst)
	now := time.Now().UnixNano()
	tok0 := t.f.Token()
	var missing []string
	var missingAt []int
	var stack [64]uint64
	hitHashes := stack[:0]
	var zero V
	for i, k := range keys {
		if e, ok := otterread.Get(t.cache, k); ok && e.usable(t, now) {
			t.Stats.Hits.Add(1)
			dst = append(dst, hit(e, now))
			hitHashes = append(hitHashes, e.h)
			continue
		}
		t.Stats.Misses.Add(1)
		dst = append(dst, zero)
		missing = append(missing, k)
		missingAt = append(missingAt, base+i)
	}
	if len(missing) == 0 {
		return dst, nil
	}
	tok := t.f.Token()
	got, err := t.readMany(ctx, missing)
	if err != nil {
		return dst[:base], err
	}
	for _, h := range hitHashes {
		if !t.f.Valid(tok0, t.table, h) {
			all, err := t.readMany(ctx, keys)
			if err != nil {
				return dst[:base], err
			}
			dst = dst[:base]
			for _, e := range all {
				dst = append(dst, read(e))
			}
			return dst, nil
		}
	}
	for i, e := range got {
		dst[missingAt[i]] = read(e)
		if e.Val == nil {
			continue
		}
		if h, err := t.hash(missing[i]); err == nil {
			t.fill(strings.Clone(missing[i]), e.Val, tok, h, e.TTL)
		}
	}
	return dst, nil
}

// GetWithTTL is MGetWithTTL of one key.
func (t *Tier) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	got, err := t.MGetWithTTL(ctx, []string{key}, nil)
	if err != nil {
		return nil, 0, false, err
	}
	return got[0].Val, got[0].TTL, got[0].Val != nil, nil
}

var _ backends.ExpiryReader = (*Tier)(nil)

// readMany reads keys in one backend call, with their remaining lifetimes
// when the backend has them (kv rows) and as rows that never expire when
// it has none (table rows).
func (t *Tier) readMany(ctx context.Context, keys []string) ([]backends.Expiring, error) {
	if t.expiry != nil {
		return t.expiry.MGetWithTTL(ctx, keys, nil)
	}
	vals, err := t.Backend.MGet(ctx, keys, nil)
	if err != nil {
		return nil, err
	}
	got := make([]backends.Expiring, len(vals))
	for i, v := range vals {
		got[i] = backends.Expiring{Val: v, TTL: backends.TTLPersistent}
	}
	return got, nil
}

// invalidate fences keys this instance just wrote and drops their
// entries. changed is false when the write is known to have changed no row:
// no fence of it will come back, so WATCH need not wait for one
// (Fences.AwaitOwnWrite).
func (t *Tier) invalidate(changed bool, keys ...string) {
	for _, k := range keys {
		h, err := t.hash(k)
		switch {
		case err == nil && changed:
			t.f.FenceOwn(h)
		case err == nil:
			t.f.FenceHash(h)
		default:
			t.f.FenceTable(t.table.Name)
		}
		t.cache.Invalidate(k)
	}
}

// Set writes through and fences the key.
func (t *Tier) Set(ctx context.Context, key string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	res, err := t.Backend.Set(ctx, key, val, opts)
	t.invalidate(err != nil || res.Stored, key)
	return res, err
}

// MSet writes through and fences the keys.
func (t *Tier) MSet(ctx context.Context, pairs []backends.KV) error {
	defer func() {
		for _, p := range pairs {
			t.invalidate(true, p.Key)
		}
	}()
	return t.Backend.MSet(ctx, pairs)
}

// Del deletes through and fences the keys.
func (t *Tier) Del(ctx context.Context, keys []string) (int64, error) {
	n, err := t.Backend.Del(ctx, keys)
	t.invalidate(err != nil || n > 0, keys...)
	return n, err
}

// Atomically runs fn on the backend's atomic run, with the keys fenced
// before (no entry read before the run is served while it commits), not
// filled during, and fenced again after: so a reader of several keys gets
// all of the run's writes or none (see MGet).
func (t *Tier) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	a, ok := backends.As[backends.Atomic](t.Backend)
	if !ok {
		return backends.ErrUnsupported
	}
	hs := make([]uint64, 0, len(keys))
	for _, k := range keys {
		if h, err := t.hash(k); err == nil {
			hs = append(hs, h)
		}
	}
	t.mu.Lock()
	for _, h := range hs {
		t.running[h]++
	}
	t.mu.Unlock()
	t.invalidate(false, keys...)
	defer func() {
		t.invalidate(true, keys...)
		t.mu.Lock()
		for _, h := range hs {
			if t.running[h]--; t.running[h] == 0 {
				delete(t.running, h)
			}
		}
		t.mu.Unlock()
	}()
	return a.Atomically(ctx, keys, fn)
}

// inRun reports whether an atomic run on a key of bucket h is in flight.
func (t *Tier) inRun(h uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running[h] > 0
}

// WatchToken and ChangedSince let WATCH see the writes the tier's fences
// report: by any instance, and by plain SQL. While fences may be missed,
// every key may have changed. The token is taken once the fence of this
// instance's own last write of the key is back (Fences.AwaitOwnWrite):
// that write came before the WATCH and must not abort its EXEC.
func (t *Tier) WatchToken(ctx context.Context, key string) uint64 {
	if h, err := t.hash(key); err == nil {
		t.f.AwaitOwnWrite(ctx, h)
	}
	return uint64(t.f.Token())
}

func (t *Tier) ChangedSince(key string, tok uint64) bool {
	h, err := t.hash(key)
	return err != nil || !t.f.Online() || !t.f.Valid(fence.Token(tok), t.table, h)
}

// Update writes through and fences the key.
func (t *Tier) Update(ctx context.Context, key string, u backends.Update) error {
	defer t.invalidate(true, key)
	return t.Backend.Update(ctx, key, u)
}

// Unwrap returns the backend behind the tier.
func (t *Tier) Unwrap() backends.Backend { return t.Backend }

// Route names the route the tier serves ("" when made by NewTier directly).
func (t *Tier) Route() string { return t.route }

// Entries calls fn for each L1 entry that is still valid: the bench's
// stale-entry audit compares them with PostgreSQL.
func (t *Tier) Entries(fn func(key string, val []byte) bool) {
	now := time.Now().UnixNano()
	for k, e := range t.cache.All() {
		if e.coll == nil && e.usable(t, now) && !fn(k, e.val) {
			return
		}
	}
}

// Close drops the L1 and closes the backend.
func (t *Tier) Close() error {
	t.closed.Store(true)
	t.stopRefresh()
	t.sweep.Stop()
	t.cache.InvalidateAll()
	t.cache.StopAllGoroutines()
	t.clock.Stop()
	return t.Backend.Close()
}

var (
	_ backends.Backend   = (*Tier)(nil)
	_ backends.Wrapper   = (*Tier)(nil)
	_ backends.Atomic    = (*Tier)(nil)
	_ backends.Watchable = (*Tier)(nil)
	_ backends.Sequencer = (*Tier)(nil)
)
