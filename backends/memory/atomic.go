package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// Atomic runs (MULTI/EXEC, scripts) and the plain commands meet on striped
// key locks. Each stripe has a mutex and a sequence, odd while an atomic
// run holds the stripe:
//
//   - a plain write of a key holds its stripe's mutex while it writes, and
//     writes only while the sequence is even, so it never lands inside an
//     atomic run on that key; a batch of plain SETs (MSET, pipelined SETs)
//     begun while no run is under way takes none, and a run waits for such
//     batches before it takes its stripes (fastWrites);
//   - an atomic run takes each of its keys' stripes (in stripe order, so
//     two runs cannot deadlock) by making its sequence odd under the
//     mutex, which it lets go: the mutex is only ever held for a plain
//     write, so writers of one key queue on it as on any mutex, each woken
//     as the one before ends (a hot key's writers do not poll), and a
//     writer that finds a run's odd sequence waits, no longer than the
//     busy threshold past the run's start, while the run runs; the run
//     makes the sequences even again when it ends;
//   - a read takes no lock: it notes the sequences of its keys' stripes,
//     reads, and reads again if any sequence was odd or has moved. So a
//     reader sees all of a run's writes or none, an MGET of two keys a run
//     moves a value between included.
//
// A plain GET or SET pays a hash of its key and two uncontended atomic
// operations; a stripe shared by a running script and an unrelated key
// makes that key wait too, which 1024 stripes keep rare.
const nStripes = 1024

type keyLocks struct {
	// While no run is under way (active is 0) a read needs no stripe: it
	// reads, and it is done if still none is and none began (gen) since.
	active atomic.Int64  // runs under way
	gen    atomic.Uint64 // runs begun
	_      [48]byte
	// writing counts batches of plain writes under way that take no
	// stripe (fastWrites): a run waits for them after raising active. A
	// line of its own: every batch writes it, and every read loads the
	// counts above.
	writing atomic.Int64
	_       [56]byte
	seed    maphash.Seed
	stripes [nStripes]stripe
}

// quiet returns the count of runs begun when none is under way; ok is
// false while one is.
func (l *keyLocks) quiet() (gen uint64, ok bool) {
	if l.active.Load() != 0 {
		return 0, false
	}
	return l.gen.Load(), true
}

// fastWrites begins a batch of plain writes that need no stripe, and
// reports true, when no run is under way; fastDone must follow. Either the
// batch sees a run's active, and takes the stripes, or the run, which
// raises active before it looks, sees the batch and waits for it
// (Atomically): no plain write lands inside a run.
func (l *keyLocks) fastWrites() bool {
	if l == nil {
		return false
	}
	l.writing.Add(1)
	if l.active.Load() == 0 {
		return true
	}
	l.writing.Add(-1)
	return false
}

func (l *keyLocks) fastDone() { l.writing.Add(-1) }

// stillQuiet reports whether no run began since quiet returned gen and
// none is under way.
func (l *keyLocks) stillQuiet(gen uint64) bool {
	return l.active.Load() == 0 && l.gen.Load() == gen
}

type stripe struct {
	mu    sync.Mutex
	seq   atomic.Uint64             // odd while an atomic run holds the stripe
	since atomic.Int64              // when that run began (unix nanoseconds), 0: none
	busy  *backends.BusyThreshold   // the driver's: how long past since a request waits
	left  atomic.Pointer[leftWrite] // collection writes left for the holder (combine.go)
	_     [24]byte                  // a cache line each: stripes are written by different cores
}

func newKeyLocks(busy *backends.BusyThreshold) *keyLocks {
	l := &keyLocks{seed: maphash.MakeSeed()}
	for i := range l.stripes {
		l.stripes[i].busy = busy
	}
	return l
}

func (l *keyLocks) index(k string) int { return int(maphash.String(l.seed, k) % nStripes) }

// of returns k's stripe; nil for a store inside an atomic run, whose keys
// are held already.
func (l *keyLocks) of(k string) *stripe {
	if l == nil {
		return nil
	}
	return &l.stripes[l.index(k)]
}

// lock takes the stripe's mutex for a plain write once no atomic run
// holds the stripe, waiting for a run no longer than the busy threshold
// past its start.
func (st *stripe) lock() error {
	if st == nil {
		return nil
	}
	for {
		st.mu.Lock()
		if st.seq.Load()&1 == 0 {
			return nil
		}
		st.unlock()
		if err := st.wait(); err != nil {
			return err
		}
	}
}

// unlock lets the stripe go, once it has run the collection writes left
// with it (combine.go).
func (st *stripe) unlock() {
	if st == nil {
		return
	}
	st.mu.Unlock()
	if st.left.Load() != nil {
		st.serveLeft()
	}
}

// take holds the stripe for an atomic run: its sequence made odd under the
// mutex, once no plain write holds that and no other run the stripe.
func (st *stripe) take() error {
	for {
		st.mu.Lock()
		if st.seq.Load()&1 == 0 {
			st.seq.Add(1)
			st.unlock()
			return nil
		}
		st.unlock()
		if err := st.wait(); err != nil {
			return err
		}
	}
}

// release ends a run's hold: since cleared before the sequence is even,
// so the next run's start is not cleared with it.
func (st *stripe) release() {
	st.since.Store(0)
	st.seq.Add(1)
}

// wait blocks until no atomic run holds the stripe, or fails with ErrBusy
// once the run holding it has run past the threshold.
func (st *stripe) wait() error {
	pause := time.Microsecond
	for {
		if st.seq.Load()&1 == 0 {
			return nil
		}
		if since := st.since.Load(); since != 0 && time.Duration(time.Now().UnixNano()-since) > st.busy.Load() {
			return backends.ErrBusy
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// readBegin returns the stripe's sequence for a read, once no atomic run
// holds it.
func (st *stripe) readBegin() (uint64, error) {
	if st == nil {
		return 0, nil
	}
	for {
		seq := st.seq.Load()
		if seq&1 == 0 {
			return seq, nil
		}
		if err := st.wait(); err != nil {
			return 0, err
		}
	}
}

// readOK reports whether a read begun at seq saw no atomic run's writes.
func (st *stripe) readOK(seq uint64) bool { return st == nil || st.seq.Load() == seq }

// Atomically runs fn with keys' stripes held: fn's calls on tx see no
// other write of keys, and no reader sees some of its writes and not
// others. When fn fails, the keys it wrote get back what they held.
func (s *Store) Atomically(_ context.Context, keys []string, fn func(tx backends.Backend) error) error {
	if s.locks == nil { // a store without locks: a scratch store, or a run's
		return fn(s)
	}
	tx := s.newTx(keys)
	// Only once hold has let the stripes go: tx.idx is theirs, and the
	// next run to take tx reuses it. tx is fn's for the run only, so no
	// caller sees it again.
	defer func() { s.txs.Put(tx.reset()) }()
	return s.hold(keys, &tx.idx, func() error {
		err := fn(tx)
		if err != nil {
			tx.rollback()
		}
		return err
	})
}

// holding runs fn with keys' stripes held, as an atomic run holds them,
// but keeps no undo log: a command on several keys (SMOVE, SINTERSTORE)
// whose Run changes nothing once it can fail.
func (s *Store) holding(keys []string, fn func() error) error {
	var stack [8]int
	idx := stack[:0]
	return s.hold(keys, &idx, fn)
}

// hold takes the stripes of keys (their indexes, sorted, in *idx, a buffer
// to reuse), runs fn, and lets them go.
func (s *Store) hold(keys []string, idx *[]int, fn func() error) error {
	// Readers take the fast path no more once active is raised, and those
	// on it notice gen moved; both before the first write.
	s.locks.gen.Add(1)
	s.locks.active.Add(1)
	defer s.locks.active.Add(-1)
	for s.locks.writing.Load() != 0 { // plain writes that began before active rose
		runtime.Gosched()
	}
	ix := (*idx)[:0]
	for _, k := range keys {
		ix = append(ix, s.locks.index(k))
	}
	slices.Sort(ix)
	ix = slices.Compact(ix)
	*idx = ix
	for n, i := range ix {
		if err := s.locks.stripes[i].take(); err != nil {
			for _, j := range ix[:n] {
				s.locks.stripes[j].release()
			}
			return err
		}
	}
	now := time.Now().UnixNano()
	for _, i := range ix {
		s.locks.stripes[i].since.Store(now)
	}
	defer func() {
		for _, i := range ix {
			s.locks.stripes[i].release()
		}
	}()
	return fn()
}

// newTx returns a run's view of s over keys, from the store's pool: a run
// of a few keys would otherwise cost four allocations (the view, its
// store, the stripes, the undo log) before its first write.
func (s *Store) newTx(keys []string) *memTx {
	tx, _ := s.txs.Get().(*memTx)
	if tx == nil {
		tx = &memTx{Store: &Store{c: s.c, sweep: s.sweep, notes: s.notes, cursors: s.cursors, moves: s.moves, enc: s.enc}}
	}
	tx.declared = keys
	return tx
}

// memTx is an atomic run's view of a memory store: the run's keys only,
// with what each written key held kept until the run ends.
//
// A run declares a handful of keys, so both are slices scanned in order;
// keys are borrowed for the run, which is as long as the slices live.
type memTx struct {
	*Store
	declared []string
	undo     []saved // what each written key held before the run
	idx      []int   // the stripes the run holds, in order
	next     int     // where declares looks first
}

type saved struct {
	key string
	it  *item // nil: absent
}

// reset empties tx for the pool, dropping what it refers to; the slices of
// a large run are dropped too, so the pool keeps only small ones.
func (t *memTx) reset() *memTx {
	clear(t.undo)
	t.declared, t.undo, t.idx, t.next = nil, t.undo[:0], t.idx[:0], 0
	if cap(t.undo) > maxPooledKeys {
		t.undo = nil
	}
	if cap(t.idx) > maxPooledKeys {
		t.idx = nil
	}
	return t
}

const maxPooledKeys = 256

func (t *memTx) check(keys ...string) error {
	for _, k := range keys {
		if !t.declares(k) {
			return fmt.Errorf("%w: %q", backends.ErrUndeclaredKey, k)
		}
	}
	return nil
}

// declares reports whether the run declared k. A transaction declares its
// keys in the order its commands then write them, so the search starts
// where the last one ended: one comparison a key, not half the list.
func (t *memTx) declares(k string) bool {
	n := len(t.declared)
	for i := range n {
		j := t.next + i
		if j >= n {
			j -= n
		}
		if t.declared[j] == k {
			t.next = j + 1
			return true
		}
	}
	return false
}

// save keeps what k holds before the run first writes it, read without
// telling otter's policy.
func (t *memTx) save(keys ...string) {
	for _, k := range keys {
		if t.saved(k) {
			continue
		}
		var it *item
		if e, ok := t.c.GetEntryQuietly(k); ok {
			it = e.Value
		}
		t.undo = append(t.undo, saved{key: k, it: it})
	}
}

// saved reports whether the undo log has k already.
func (t *memTx) saved(k string) bool {
	for _, u := range t.undo {
		if u.key == k {
			return true
		}
	}
	return false
}

// rollback puts back what the run's keys held, the last written first.
func (t *memTx) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		u := t.undo[i]
		if u.it == nil {
			t.c.Invalidate(u.key)
		} else {
			t.c.Set(strings.Clone(u.key), u.it)
		}
	}
}

func (t *memTx) Get(ctx context.Context, k string) ([]byte, bool, error) {
	if err := t.check(k); err != nil {
		return nil, false, err
	}
	return t.Store.Get(ctx, k)
}

func (t *memTx) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	if err := t.check(keys...); err != nil {
		return dst, err
	}
	return t.Store.MGet(ctx, keys, dst)
}

func (t *memTx) Exists(ctx context.Context, keys []string) (int64, error) {
	if err := t.check(keys...); err != nil {
		return 0, err
	}
	return t.Store.Exists(ctx, keys)
}

func (t *memTx) TTL(ctx context.Context, k string) (time.Duration, error) {
	if err := t.check(k); err != nil {
		return 0, err
	}
	return t.Store.TTL(ctx, k)
}

func (t *memTx) ExpireTime(ctx context.Context, k string) (int64, error) {
	if err := t.check(k); err != nil {
		return 0, err
	}
	return t.Store.ExpireTime(ctx, k)
}

func (t *memTx) Set(ctx context.Context, k string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	if err := t.check(k); err != nil {
		return backends.SetResult{}, err
	}
	// The write returns what k held: the undo log needs no read before it.
	res, prev, err := t.Store.set(k, val, opts)
	if err == nil && !t.saved(k) {
		t.undo = append(t.undo, saved{key: k, it: prev})
	}
	return res, err
}

func (t *memTx) MSet(ctx context.Context, pairs []backends.KV) error {
	for _, p := range pairs {
		if err := t.check(p.Key); err != nil {
			return err
		}
		t.save(p.Key)
	}
	return t.Store.MSet(ctx, pairs)
}

func (t *memTx) Del(ctx context.Context, keys []string) (int64, error) {
	if err := t.check(keys...); err != nil {
		return 0, err
	}
	t.save(keys...)
	return t.Store.Del(ctx, keys)
}

func (t *memTx) Update(ctx context.Context, k string, u backends.Update) error {
	if err := t.check(k); err != nil {
		return err
	}
	t.save(k)
	return t.Store.Update(ctx, k, u)
}

func (t *memTx) Copy(ctx context.Context, src, dst string, o backends.CopyOptions) (backends.CopyResult, error) {
	if err := t.check(src, dst); err != nil {
		return 0, err
	}
	t.save(src, dst)
	return t.Store.Copy(ctx, src, dst, o)
}

// A run's view has no keyspace-wide operations: a run holds its keys only.
func (t *memTx) Scan(context.Context, uint64, string, int) (uint64, []string, error) {
	return 0, nil, backends.ErrUndeclaredKey
}

func (t *memTx) Flush(context.Context) error { return backends.ErrUndeclaredKey }

func (t *memTx) RandomKey(context.Context) (string, bool, error) {
	return "", false, backends.ErrUndeclaredKey
}

var _ backends.Atomic = (*Store)(nil)

func (t *memTx) Do(ctx context.Context, keys []string, op backends.Op) error {
	if err := t.check(keys...); err != nil {
		return err
	}
	if op.Writes() != backends.ReadOnly {
		t.save(keys...) // what a Put replaces; a change in place is not undone (coll.go)
	}
	return t.Store.Do(ctx, keys, op)
}
