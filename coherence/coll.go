package coherence

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/otterread"
)

// Collections in the tier. A collection is cached whole, as a string's
// value is, under the same fences: a read of one key runs on the cached
// copy, which never changes (a write goes to the backend and drops it); a
// miss reads the collection whole (backends.CollLoader) when it has at most
// MaxCollection members, and fills as a string's miss does (the token taken
// before the read, the fill dropped if the key was fenced since); a larger
// collection is read from the backend every time, as are reads of several
// keys. A write runs on the backend, then fences the keys it may have
// written, as a string's write does.
//
// A collection this tier wrote is read from the backend, not loaded, until
// the loadAfter-th read since the write: a key written as often as it is
// read (a rate limiter's ZADD and ZCARD, a queue's pushes and LRANGE)
// would otherwise be read whole after every write, for one range of it. A
// key written once and then read (a session's hash) is loaded by its
// second read.

// MaxCollection is the most members of a collection the tier keeps.
const MaxCollection = 10_000

// loadAfter is the read since the tier's last write of a collection that
// loads it; maxWritten bounds the collections the tier remembers writing
// (one it forgot is loaded by its next read, as before any write).
const (
	loadAfter  = 2
	maxWritten = 1 << 16
)

// Do runs a command on collections (see above).
func (t *Tier) Do(ctx context.Context, keys []string, op backends.Op) error {
	switch op.Writes() {
	case backends.WritesAll:
		err := t.Backend.Do(ctx, keys, op)
		t.wroteColl(op, err, keys)
		return err
	case backends.WritesFirst:
		err := t.Backend.Do(ctx, keys, op)
		t.wroteColl(op, err, keys[:1])
		return err
	}
	if rows, ok := backends.As[backends.Rows](t.Backend); ok && len(keys) == 1 {
		// A table route's row, read as a hash from the L1 as GET reads it.
		row, found, err := t.Get(ctx, keys[0])
		if err != nil {
			return err
		}
		return rows.RowHash()(row, found, op)
	}
	loader, ok := backends.As[backends.CollLoader](t.Backend)
	if len(keys) != 1 || !ok || !t.f.Online() {
		t.Stats.Bypassed.Add(int64(len(keys)))
		return t.Backend.Do(ctx, keys, op)
	}
	key := keys[0]
	if e, ok := otterread.Get(t.cache, key); ok {
		if e.usable(t, time.Now().UnixNano()) {
			t.Stats.Hits.Add(1)
			return op.Run(&cachedView{val: e.coll, str: e.coll == nil})
		}
		t.Stats.Stale.Add(1)
	}
	h, err := t.hash(key)
	if err != nil {
		t.Stats.Bypassed.Add(1)
		return t.Backend.Do(ctx, keys, op)
	}
	t.Stats.Misses.Add(1)
	if t.readSinceWrite(key) {
		return t.Backend.Do(ctx, keys, op)
	}
	tok := t.f.Token()
	got, err := loader.LoadColl(ctx, key, MaxCollection)
	switch {
	case err != nil:
		return err
	case got.Type != backends.TypeNone && got.Coll == nil: // too large to keep
		return t.Backend.Do(ctx, keys, op)
	case got.Coll != nil:
		t.fillEntry(strings.Clone(key), entry{coll: got.Coll, tok: tok, h: h}, got.TTL)
	case got.Val != nil:
		t.fill(strings.Clone(key), got.Val, tok, h, got.TTL)
	}
	return op.Run(&cachedView{val: got.Coll, str: got.Val != nil})
}

// wroteColl fences the keys a write of collections may have changed, and
// remembers them as written (see above): each of keys unless op ran
// without an error and says it left that one as it was (an SMOVE of a
// member the destination has), which a WATCH of it must not take for a
// change.
func (t *Tier) wroteColl(op backends.Op, err error, keys []string) {
	for i, k := range keys {
		if !leftAsItWas(op, err, i) {
			t.wroteKey(k)
		}
	}
}

// leftAsItWas reports whether op ran without an error and says it left
// its i-th key as it was.
func leftAsItWas(op backends.Op, err error, i int) bool {
	u, _ := op.(backends.Unchanging)
	return err == nil && u != nil && u.Unchanged(i)
}

// wroteKey fences key, which a write of collections changed, and
// remembers it as written.
func (t *Tier) wroteKey(key string) {
	t.invalidate(true, key)
	t.written.Set(strings.Clone(key), 0)
}

// DoSeq runs a pipelined run of commands on one key (backends.Sequencer).
// A run of writes goes to the backend in one call when it can take one
// (PostgreSQL sends it in one batch), and the key is fenced once after
// it, as after one write; a run with reads, which the L1 serves, runs
// each op as Do does.
func (t *Tier) DoSeq(ctx context.Context, key string, ops []backends.Op, errs []error) error {
	sq, ok := backends.As[backends.Sequencer](t.Backend)
	for _, op := range ops {
		ok = ok && op.Writes() != backends.ReadOnly
	}
	if !ok {
		for i, op := range ops {
			errs[i] = t.Do(ctx, []string{key}, op)
		}
		return nil
	}
	err := sq.DoSeq(ctx, key, ops, errs)
	for i, op := range ops {
		if !leftAsItWas(op, cmp.Or(err, errs[i]), 0) {
			t.wroteKey(key)
			break
		}
	}
	return err
}

// readSinceWrite counts a miss of key, and reports whether the tier wrote
// it less than loadAfter reads ago: the read goes to the backend.
func (t *Tier) readSinceWrite(key string) bool {
	n, ok := t.written.GetIfPresent(key)
	switch {
	case !ok:
		return false
	case n+1 >= loadAfter:
		t.written.Invalidate(key)
		return false
	}
	t.written.Set(strings.Clone(key), n+1)
	return true
}

// cachedView serves a read-only Op one key the tier holds (or read): a
// collection, a string, or nothing. Ops only read through it: the
// collection is shared by every reader of the entry.
type cachedView struct {
	val backends.Value
	str bool
}

func (v *cachedView) Get(_ int, want backends.Type) (backends.Value, error) {
	switch {
	case v.str:
		return nil, backends.ErrWrongType
	case v.val == nil:
		return nil, nil
	case want != backends.TypeNone && v.val.Type() != want:
		return nil, backends.ErrWrongType
	}
	return v.val, nil
}

// Put is never called: the tier runs read-only Ops alone.
func (v *cachedView) Put(int, backends.Value) {
	panic("coherence: a read-only Op wrote through the tier's view")
}

func (v *cachedView) Type(int) backends.Type {
	switch {
	case v.str:
		return backends.TypeString
	case v.val == nil:
		return backends.TypeNone
	}
	return v.val.Type()
}

var _ backends.View = (*cachedView)(nil)
