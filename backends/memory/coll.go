package memory

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// Collections (hashes, sets, sorted sets, lists) live in the route's cache
// beside strings, under the same keys, bound and sweeper. A collection is a
// *collItem, whose head is an item's: the cache holds *item for both, and
// an item whose n is collMark is the head of a collItem. Strings keep their
// one pointerless allocation; a collection is an allocation with pointers,
// which the collector scans by its own type whatever pointer refers to it.
//
// A collection changes in place (ZADD is O(log N), not a copy): a write
// holds the key's stripe, as every write does, and the value's lock while
// Run changes it; a read holds the value's read lock while Run reads it,
// and notes the key's stripe sequence as a string read does, so a reader
// sees all of an atomic run or none of it. The head never changes: EXPIRE
// makes a new head over the same body, so an item's deadline is read
// without a lock, as a string's is.
//
// Atomic runs keep what they replace (a Put) to put it back when they
// fail, as they do for strings; an in-place change of a collection is not
// undone, as Redis keeps what a failed script wrote. (The RESP front's
// runs never fail after a write.)
type collItem struct {
	item // exp, and n == collMark
	body *collBody
}

// collBody is a collection and the lock of its in-place changes; the
// value itself is never replaced (a Put makes a new item).
type collBody struct {
	mu sync.RWMutex
	v  backends.Value

	// weighed is v's weight when the cache last weighed the item (weigh):
	// an in-place write that leaves the weight near it need not tell the
	// cache (doWrite).
	weighed atomic.Int64
}

// run runs op on v, b (when there is one) locked for a write or for a
// read. A panic in Run lets the lock go: the connection it ends does not
// take the key with it.
func (b *collBody) run(write bool, op backends.Op, v backends.View) error {
	switch {
	case b == nil:
	case write:
		b.mu.Lock()
		defer b.mu.Unlock()
	default:
		b.mu.RLock()
		defer b.mu.RUnlock()
	}
	return op.Run(v)
}

// runLocked runs op on v, then unlocks the bodies doMany locked, whether
// Run returns or panics.
func runLocked(locked []*collBody, op backends.Op, v backends.View) error {
	defer func() {
		for _, b := range locked {
			b.mu.Unlock()
		}
	}()
	return op.Run(v)
}

// collMark is the n of a collection's head: a string's length is never
// negative.
const collMark = -1

// collOverhead approximates a collection's head and body beyond its
// value's own weight.
const collOverhead = 64

func newCollItem(v backends.Value, exp int64) *item {
	ci := &collItem{item: item{exp: exp, n: collMark}, body: &collBody{v: v}}
	return &ci.item
}

// withExp returns a head with deadline exp over the same body.
func (it *item) withExp(exp int64) *item {
	ci := &collItem{item: item{exp: exp, n: collMark}, body: it.coll()}
	return &ci.item
}

// cloneColl returns a head with it's deadline over a copy of its value.
func (it *item) cloneColl() *item {
	b := it.coll()
	b.mu.RLock()
	v := b.v.Clone()
	b.mu.RUnlock()
	return newCollItem(v, it.exp)
}

// isColl reports whether it is a collection's head.
func (it *item) isColl() bool { return it.n == collMark }

// coll returns the body of a collection's head.
func (it *item) coll() *collBody { return (*collItem)(unsafe.Pointer(it)).body }

// typ is the type of value it holds.
func (it *item) typ() backends.Type {
	if it.isColl() {
		return it.coll().v.Type()
	}
	return backends.TypeString
}

// weight is what the bound counts for it beyond its key.
func (it *item) weight() uint64 {
	if it.isColl() {
		return uint64(it.coll().v.Weight()) + collOverhead
	}
	return uint64(it.n)
}

// Do runs op on its keys' values. One key: a read under the value's read
// lock, a write under the key's stripe and otter's compute. Several keys:
// with their stripes held, as an atomic run holds them.
//
// A Scratch has no stripes (its user is one run, usually), yet it answers
// as a Store does to writers on several goroutines: its writes of
// collections take turns (solo). Without that, a write of several keys
// would write back, after it let their values go, a value another write
// was changing, or put back a key another write had just replaced.
func (s *Store) Do(ctx context.Context, keys []string, op backends.Op) error {
	backends.ClearMarks(op)
	if s.solo != nil && op.Writes() != backends.ReadOnly {
		s.solo.Lock()
		defer s.solo.Unlock()
	}
	if len(keys) == 1 {
		if op.Writes() == backends.ReadOnly {
			return s.doRead(keys[0], op)
		}
		return s.doWrite(keys[0], op)
	}
	if s.locks == nil { // a run's view or a scratch store: the keys are held
		return s.doMany(keys, op)
	}
	return s.holding(keys, func() error { return s.doMany(keys, op) })
}

// DoSeq runs ops on key as one Do (backends.Sequencer): one lock, one
// lookup, each op on the value the one before left.
func (s *Store) DoSeq(ctx context.Context, key string, ops []backends.Op, errs []error) error {
	return s.Do(ctx, []string{key}, &backends.Seq{Ops: ops, Errs: errs})
}

// updateColl runs an Update of a key that holds a collection, inside
// Update's compute: an expiry change (EXPIRE, PERSIST) applies to any key;
// every other Update reads a string and fails with ErrWrongType.
func (s *Store) updateColl(old *item, n int64, u backends.Update, wrote *int64, err *error) (*item, otter.ComputeOp) {
	e, ok := backends.Native(u).(*backends.Expire)
	if !ok {
		*err = backends.ErrWrongType
		return old, otter.CancelOp
	}
	cur := backends.Current{Val: empty, TTL: backends.TTLPersistent}
	if old.exp != 0 {
		cur.TTL = time.Duration(old.exp - n)
	}
	var ch backends.Change
	if ch, *err = e.Apply(cur); *err != nil || ch.Kind == backends.Keep {
		return old, otter.CancelOp
	}
	if ch.Kind == backends.Delete {
		return old, otter.InvalidateOp
	}
	exp := deadline(ch.TTL, old.exp, n)
	if exp != 0 && exp <= n {
		return old, otter.InvalidateOp
	}
	*wrote = exp
	return old.withExp(exp), otter.WriteOp
}

// oneView serves one key's value to an Op's Run.
type oneView struct {
	limits *coll.Limits
	val    backends.Value // nil: absent, or a string
	str    bool           // the key holds a string
	put    bool           // Run replaced the value
}

func (v *oneView) Get(_ int, want backends.Type) (backends.Value, error) {
	switch {
	case v.str:
		return nil, backends.ErrWrongType
	case v.val == nil || v.val.Len() == 0:
		return nil, nil
	case want != backends.TypeNone && v.val.Type() != want:
		return nil, backends.ErrWrongType
	}
	return v.val, nil
}

func (v *oneView) Put(_ int, val backends.Value) { v.val, v.str, v.put = val, false, true }

func (v *oneView) Type(int) backends.Type {
	switch {
	case v.str:
		return backends.TypeString
	case v.val == nil || v.val.Len() == 0:
		return backends.TypeNone
	}
	return v.val.Type()
}

func (v *oneView) Limits() *coll.Limits { return v.limits }

// oneCall is the state of one doRead or doWrite, pooled: Run takes the
// View as an interface and otter's Compute a function, so a View or a
// closure made for each call would be allocations of every command.
type oneCall struct {
	s         *Store
	op        backends.Op
	now       int64 // the clock, read once on the first item with a deadline
	v         oneView
	err       error
	ran       *item                                                // the item whose value Run changed in place, before write
	ranAbsent bool                                                 // Run ran on the key absent, before write
	compute   func(old *item, found bool) (*item, otter.ComputeOp) // write, bound once
}

var oneCalls = sync.Pool{New: func() any {
	c := new(oneCall)
	c.compute = c.write
	return c
}}

func (s *Store) oneCall(op backends.Op) *oneCall {
	c := oneCalls.Get().(*oneCall)
	c.s, c.op, c.v = s, op, oneView{limits: s.enc.Load()}
	return c
}

func (c *oneCall) release() {
	c.s, c.op, c.now, c.v, c.err, c.ran, c.ranAbsent = nil, nil, 0, oneView{}, nil, nil, false
	oneCalls.Put(c)
}

// live is it.live at the call's time: the clock is read once, and not at
// all while the items met have no deadline (a read of it is not cheap on
// every machine).
func (c *oneCall) live(it *item) bool {
	if it.exp == 0 {
		return true
	}
	if c.now == 0 {
		c.now = now()
	}
	return it.exp > c.now
}

// doRead runs a read-only op on k's value, again if an atomic run wrote k
// meanwhile.
func (s *Store) doRead(k string, op backends.Op) error {
	st := s.locks.of(k)
	c := s.oneCall(op)
	defer c.release()
	for {
		seq, err := st.readBegin()
		if err != nil {
			return err
		}
		c.v = oneView{limits: c.v.limits}
		it, ok := s.get(s.k(k))
		var body *collBody
		if ok && it.alive() {
			if it.isColl() {
				body = it.coll()
				c.v.val = body.v
			} else {
				c.v.str = true
			}
		} else if ok {
			s.expired(k)
		}
		err = body.run(false, op, &c.v)
		if st.readOK(seq) {
			return err
		}
	}
}

// doWrite runs op on k's value with k's stripe held: no other write of k
// comes between its read and its write.
//
// Run goes first outside the cache (a compute is most of what a small
// write costs) on an absent key, and on a live collection, which it
// changes in place; when what Run did needs nothing of the cache (no value
// made, none emptied, the weight within reweighSlack of what the cache
// counts) that is all. Otherwise, or on a string or an expired item, Run's
// outcome goes through otter's compute (write), which runs Run there
// unless it ran on that very state: an item evicted while Run changed its
// value is run on again, as it is now.
func (s *Store) doWrite(k string, op backends.Op) error {
	if st := s.locks.of(k); st != nil {
		if ran, err := st.lockOr(s, k, op); ran || err != nil {
			return err
		}
		defer st.unlock()
	}
	return s.write(k, op)
}

// write is doWrite's write, k's stripe held.
func (s *Store) write(k string, op backends.Op) error {
	c := s.oneCall(op)
	defer c.release()
	switch it, ok := s.get(s.k(k)); {
	case !ok: // absent: a Run that makes nothing (a pop, a removal) needs no compute
		c.err = op.Run(&c.v)
		if !c.v.put {
			return c.err
		}
		c.ranAbsent = true
	case it.isColl() && c.live(it):
		body := it.coll()
		c.v.val = body.v
		c.err = body.run(true, op, &c.v)
		c.ran = it
		if c.err != nil && !c.v.put || !c.v.put && body.v.Len() > 0 && !reweigh(body) {
			if cur, ok := s.get(s.k(k)); ok && cur == it { // not evicted meanwhile
				return c.err
			}
		}
	}
	s.c.Compute(s.owned(k), c.compute)
	return c.err
}

// reweighSlack is how far a collection's weight may move from what the
// cache counts before an in-place write weighs it again: a sixteenth of
// it, and never less than this. The bound so counts at least 15/16 of a
// collection's weight, less this.
const reweighSlack = 64

// reweigh reports whether body's weight has moved past the slack.
func reweigh(body *collBody) bool {
	w, at := body.v.Weight(), body.weighed.Load()
	return max(w-at, at-w) > max(reweighSlack, at/16)
}

// write is doWrite's compute: Run on the live value (unless it ran on it
// already), and what otter is to do with the entry after it.
func (c *oneCall) write(old *item, found bool) (*item, otter.ComputeOp) {
	live := found && c.live(old)
	v := &c.v
	var body *collBody
	if live && old.isColl() {
		body = old.coll()
	}
	if ranOn := c.ran != nil && c.ran == old || c.ranAbsent && !found; !ranOn {
		*v = oneView{limits: v.limits}
		switch {
		case body != nil:
			v.val = body.v
		case live:
			v.str = true
		}
		c.err = body.run(true, c.op, v)
	}
	switch {
	case c.err != nil && !v.put:
		if found && !live {
			return old, otter.InvalidateOp
		}
		return old, otter.CancelOp
	case v.put && (v.val == nil || v.val.Len() == 0):
		if live {
			backends.MarkEmptied(c.op, 0)
		}
		if found {
			return old, otter.InvalidateOp
		}
		return old, otter.CancelOp
	case v.put:
		if !live {
			backends.MarkCreated(c.op, 0)
		}
		return newCollItem(v.val, 0), otter.WriteOp
	case body == nil: // absent, and Run made nothing
		if found && !live {
			return old, otter.InvalidateOp
		}
		return old, otter.CancelOp
	case body.v.Len() == 0:
		backends.MarkEmptied(c.op, 0)
		return old, otter.InvalidateOp
	}
	return old, otter.WriteOp // changed in place, or not: weighed again either way
}

// doMany runs op over several keys whose stripes are held (or a store with
// none): their values are read, locked, run on and written back.
func (s *Store) doMany(keys []string, op backends.Op) error {
	n := now()
	view := coll.NewSlots(keys, s.enc.Load())
	items := make([]*item, view.Len())
	seen := make([]bool, view.Len())
	var locked []*collBody
	for i, k := range keys {
		slot := view.Slot(i)
		if seen[slot] {
			continue
		}
		seen[slot] = true
		it, ok := s.c.GetIfPresent(s.k(k))
		if !ok || !it.live(n) {
			continue
		}
		items[slot] = it
		if !it.isColl() {
			view.Load(slot, nil, true)
			continue
		}
		body := it.coll()
		if !lockedAlready(locked, body) {
			body.mu.Lock()
			locked = append(locked, body)
		}
		view.Load(slot, body.v, false)
	}
	err := runLocked(locked, op, view)
	if op.Writes() == backends.ReadOnly {
		return err
	}
	written := keys
	if op.Writes() == backends.WritesFirst {
		written = keys[:1]
	}
	clear(seen)
	for i, k := range written {
		slot := view.Slot(i)
		if seen[slot] {
			continue
		}
		seen[slot] = true
		v, replaced := view.Value(slot)
		old := items[slot]
		switch {
		case replaced && v == nil:
			if old != nil {
				s.c.Invalidate(s.k(k))
				backends.MarkEmptied(op, i)
			}
		case replaced:
			s.c.Set(s.owned(k), newCollItem(v, 0))
			if old == nil { // absent, or expired
				backends.MarkCreated(op, i)
			}
		case old == nil || !old.isColl():
			// nothing there, or a string Run did not replace
		case v == nil:
			s.c.Invalidate(s.k(k))
			backends.MarkEmptied(op, i)
		default:
			s.c.Set(s.owned(k), old) // changed in place: weighed again
		}
	}
	return err
}

func lockedAlready(locked []*collBody, b *collBody) bool {
	for _, l := range locked {
		if l == b {
			return true
		}
	}
	return false
}
