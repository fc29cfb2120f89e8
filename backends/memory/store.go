package memory

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/cursor"
	"github.com/pgcache/pgcache/internal/otterread"
	"github.com/pgcache/pgcache/internal/sweep"
)

// Store is one route's cache of a memory driver.
//
// Reads check each item's deadline against the clock themselves; otter's own
// expiry only frees the memory. Every read-modify-write runs inside otter's
// Compute, under the lock of the key's bucket, so concurrent INCRs lose
// nothing and SET NX has exactly one winner.
type Store struct {
	c       *cache
	sweep   *sweep.Sweeper[*item] // told of every item written with a deadline
	locks   *keyLocks             // nil inside an atomic run (see atomic.go)
	notes   *notifier             // the route's expiries and evictions (notify.go)
	cursors *cursor.Table[*scan]  // the route's scans under way (keyspace.go)
	moves   *sync.Mutex           // serialises the route's copies (keyspace.go)
	enc     *backends.Encodings   // the server's encoding thresholds (OBJECT ENCODING); nil: Redis's
	solo    *sync.Mutex           // a Scratch's: serialises its writes of collections (coll.go); nil otherwise
	release func()
	closed  sync.Once
	txs     sync.Pool // of *memTx: atomic runs' views (atomic.go)

	// reads is MGet's reads, (*Store).mget, which it calls between its look
	// at the atomic runs and its check that none wrote meanwhile. A field,
	// so that a test can wrap it and run an atomic run right there
	// (atomic_test.go, readsThen) without a hook checked on every MGet.
	// Open sets it; a store inside a run (no locks) never calls it.
	reads func(s *Store, keys []string, dst [][]byte) [][]byte
}

// k is a key for a lookup: borrowed keys are fine, otter keeps none.
func (s *Store) k(k string) string { return k }

// owned is a key the cache may keep: keys passed in are borrowed, and otter
// keeps the key a write is called with.
func (s *Store) owned(k string) string { return strings.Clone(k) }

func now() int64 { return time.Now().UnixNano() }

// deadline turns a TTL into an item's exp, given the old item's exp for TTLKeep.
func deadline(t backends.TTL, oldExp int64, n int64) int64 {
	switch t.Mode {
	case backends.TTLKeep:
		return oldExp
	case backends.TTLRelative:
		return n + int64(t.D)
	case backends.TTLAt:
		return t.At.UnixNano()
	}
	return 0
}

// put is a compute's write of val with ttl where old was (live or not): a
// deadline not in the future removes the key; wrote gets the deadline.
func put(old *item, live bool, val []byte, ttl backends.TTL, n int64, wrote *int64) (*item, otter.ComputeOp) {
	var oldExp int64
	if live {
		oldExp = old.exp
	}
	exp := deadline(ttl, oldExp, n)
	if exp != 0 && exp <= n {
		return old, otter.InvalidateOp
	}
	*wrote = exp
	return newItem(val, exp), otter.WriteOp
}

// wrote tells the sweeper of an item written with deadline exp (none: 0).
func (s *Store) wrote(exp int64) {
	if exp != 0 {
		s.sweep.Wrote(exp)
	}
}

// get looks k up; otter's policy hears of one read in otterread.Rate.
func (s *Store) get(k string) (*item, bool) { return otterread.Get(s.c, k) }

// Get returns the value of a live key.
func (s *Store) Get(_ context.Context, k string) ([]byte, bool, error) {
	it, found, err := s.read(k)
	switch {
	case err != nil || !found:
		return nil, false, err
	case !it.alive():
		s.expired(k)
		return nil, false, nil
	case it.isColl():
		return nil, false, backends.ErrWrongType
	}
	return it.val(), true, nil
}

// read looks k up as of one moment: while no atomic run is under way, as
// it is; otherwise between two reads of its stripe's sequence, again if a
// run wrote meanwhile.
func (s *Store) read(k string) (*item, bool, error) {
	if s.locks != nil {
		if gen, ok := s.locks.quiet(); ok {
			it, found := s.get(s.k(k))
			if s.locks.stillQuiet(gen) {
				return it, found, nil
			}
		}
	}
	st := s.locks.of(k)
	for {
		seq, err := st.readBegin()
		if err != nil {
			return nil, false, err
		}
		if it, found := s.get(s.k(k)); st.readOK(seq) {
			return it, found, nil
		}
		// an atomic run wrote meanwhile
	}
}

// MGet appends the value of each key, or nil, to dst.
func (s *Store) MGet(_ context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	if s.locks == nil {
		return s.mget(keys, dst), nil
	}
	if gen, ok := s.locks.quiet(); ok {
		base := len(dst)
		dst = s.reads(s, keys, dst)
		if s.locks.stillQuiet(gen) {
			return dst, nil
		}
		dst = dst[:base]
	}
	// Note every key's stripe sequence, read, and read again if an atomic
	// run wrote any of them meanwhile: the values are one moment's.
	var stack [64]uint64
	seqs := stack[:0]
	if len(keys) > len(stack) {
		seqs = make([]uint64, 0, len(keys))
	}
	base := len(dst)
again:
	seqs = seqs[:0]
	for _, k := range keys {
		seq, err := s.locks.of(k).readBegin()
		if err != nil {
			return dst[:base], err
		}
		seqs = append(seqs, seq)
	}
	dst = s.reads(s, keys, dst[:base])
	for i, k := range keys {
		if !s.locks.of(k).readOK(seqs[i]) {
			goto again
		}
	}
	return dst, nil
}

// mget is MGet's reads.
func (s *Store) mget(keys []string, dst [][]byte) [][]byte {
	var n int64 // the clock, read once the first item with a deadline is found
	for _, k := range keys {
		it, ok := s.get(s.k(k))
		if ok && it.exp != 0 && n == 0 {
			n = now()
		}
		if !ok || !it.live(n) {
			if ok {
				s.expired(k)
			}
			dst = append(dst, nil)
			continue
		}
		if it.isColl() { // MGET answers nil for a key of another type
			dst = append(dst, nil)
			continue
		}
		dst = append(dst, it.val())
	}
	return dst
}

// Set stores val as opts says.
func (s *Store) Set(_ context.Context, k string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	st := s.locks.of(k)
	if err := st.lock(); err != nil {
		return backends.SetResult{}, err
	}
	res, _, err := s.set(k, val, opts)
	st.unlock()
	return res, err
}

// set is Set with the key's stripe held. It returns the item k held
// before (nil: none), which an atomic run keeps to roll back to. SET … GET
// of a key that holds a collection fails with ErrWrongType and changes
// nothing; a plain SET replaces whatever the key held.
func (s *Store) set(k string, val []byte, opts backends.SetOptions) (backends.SetResult, *item, error) {
	if opts.Cond == backends.SetAlways && !opts.Get && opts.TTL.Mode != backends.TTLKeep {
		var exp int64
		res := backends.SetResult{Stored: true}
		if opts.TTL.Mode != backends.TTLNone {
			n := now()
			if exp = deadline(opts.TTL, 0, n); exp <= n {
				// a deadline already past: stored, and gone at once
				prev, _ := s.c.Invalidate(s.k(k))
				res.Created = opts.AskCreated && madeOver(prev)
				return res, prev, nil
			}
		}
		prev, fresh := s.c.Set(s.owned(k), newItem(val, exp))
		s.wrote(exp)
		if fresh {
			prev = nil
		}
		res.Created = opts.AskCreated && madeOver(prev)
		return res, prev, nil
	}
	n := now()
	var res backends.SetResult
	var wrote int64
	var prev *item
	var err error
	s.c.Compute(s.owned(k), func(old *item, found bool) (*item, otter.ComputeOp) {
		if found {
			prev = old
		}
		live := found && old.live(n)
		if opts.Get && live && old.isColl() {
			err = backends.ErrWrongType
			return old, otter.CancelOp
		}
		if opts.Get && live {
			res.Old, res.OldFound = old.val(), true
		}
		if (opts.Cond == backends.SetIfAbsent && live) || (opts.Cond == backends.SetIfPresent && !live) {
			return old, otter.CancelOp
		}
		res.Stored, res.Created = true, opts.AskCreated && !live
		return put(old, live, val, opts.TTL, n, &wrote)
	})
	s.wrote(wrote)
	return res, prev, err
}

// madeOver reports whether a write over prev, what the key held (nil:
// nothing), made the key: prev is none or had expired. The clock is read
// only for a prev with a deadline, and only when asked (AskCreated).
func madeOver(prev *item) bool { return prev == nil || !prev.alive() }

// MSet stores every pair with no expiry, and says which made their key
// where asked. It is not atomic across keys: a reader may see some pairs
// before others.
func (s *Store) MSet(_ context.Context, pairs []backends.KV) error {
	if s.locks.fastWrites() {
		defer s.locks.fastDone()
		for i := range pairs {
			p := &pairs[i]
			if prev, fresh := s.c.Set(s.owned(p.Key), newItem(p.Val, 0)); p.AskCreated {
				p.Created = fresh || madeOver(prev)
			}
		}
		return nil
	}
	for i := range pairs {
		p := &pairs[i]
		st := s.locks.of(p.Key)
		if err := st.lock(); err != nil {
			return err
		}
		if prev, fresh := s.c.Set(s.owned(p.Key), newItem(p.Val, 0)); p.AskCreated {
			p.Created = fresh || madeOver(prev)
		}
		st.unlock()
	}
	return nil
}

// Del removes the keys and counts the live ones.
func (s *Store) Del(_ context.Context, keys []string) (int64, error) {
	n, count := now(), int64(0)
	for _, k := range keys {
		st := s.locks.of(k)
		if err := st.lock(); err != nil {
			return count, err
		}
		if it, ok := s.c.Invalidate(s.k(k)); ok && it.live(n) {
			count++
		}
		st.unlock()
	}
	return count, nil
}

// Exists counts the live keys.
func (s *Store) Exists(_ context.Context, keys []string) (int64, error) {
	n, count := now(), int64(0)
	for _, k := range keys {
		st := s.locks.of(k)
		seq, err := st.readBegin()
		if err != nil {
			return 0, err
		}
		it, ok := s.c.GetIfPresent(s.k(k))
		if !st.readOK(seq) {
			return s.Exists(context.Background(), keys) // an atomic run wrote: again
		}
		if ok && it.live(n) {
			count++
		}
	}
	return count, nil
}

// Update runs u inside otter's compute, under the lock of the key's
// bucket: no other write of the key comes between its read and its write.
func (s *Store) Update(_ context.Context, k string, u backends.Update) error {
	st := s.locks.of(k)
	if err := st.lock(); err != nil {
		return err
	}
	defer st.unlock()
	n := now()
	var wrote int64
	var err error
	// owned: a write stores the key it was called with, not the entry's.
	s.c.Compute(s.owned(k), func(old *item, found bool) (*item, otter.ComputeOp) {
		cur := backends.Current{TTL: backends.TTLPersistent}
		live := found && old.live(n)
		if live && old.isColl() {
			return s.updateColl(old, n, u, &wrote, &err)
		}
		if live {
			cur.Val = old.val()
			if old.exp != 0 {
				cur.TTL = time.Duration(old.exp - n)
			}
		}
		var ch backends.Change
		ch, err = u.Apply(cur)
		switch {
		case err != nil || ch.Kind == backends.Keep:
			if found && !live {
				return old, otter.InvalidateOp // expired: free it while here
			}
			return old, otter.CancelOp
		case ch.Kind == backends.Delete:
			return old, otter.InvalidateOp
		}
		return put(old, live, ch.Val, ch.TTL, n, &wrote)
	})
	s.wrote(wrote)
	return err
}

// TTL returns the remaining lifetime of k.
func (s *Store) TTL(_ context.Context, k string) (time.Duration, error) {
	st := s.locks.of(k)
	var it *item
	var ok bool
	for {
		seq, err := st.readBegin()
		if err != nil {
			return 0, err
		}
		it, ok = s.c.GetIfPresent(s.k(k))
		if st.readOK(seq) {
			break
		}
	}
	n := now()
	switch {
	case !ok || !it.live(n):
		return backends.TTLMissing, nil
	case it.exp == 0:
		return backends.TTLPersistent, nil
	}
	return time.Duration(it.exp - n), nil
}

// Len counts the route's keys, as otter estimates (expired entries not
// yet removed included).
func (s *Store) Len(context.Context) (int64, error) {
	return int64(s.c.EstimatedSize()), nil
}

// Close releases the route's cache: the last Store of a route drops it. A
// reload opens the new route table before it closes the old one, so a
// route that stays keeps its keys.
func (s *Store) Close() error {
	s.closed.Do(s.release)
	return nil
}

var (
	_ backends.Backend = (*Store)(nil)
	_ backends.Sizer   = (*Store)(nil)
)
