package valkey

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/snapshot"
)

// errCrossSlot is Redis Cluster's refusal of a transaction over keys of
// several hash slots, in its words: one node can only promise atomicity
// over its own keys. Keys that share a hash tag ("{user1}:a") share a slot.
var errCrossSlot = backends.Refusal("CROSSSLOT Keys in request don't hash to the same slot")

// Atomically runs fn on the declared keys as Redis clients make a
// transaction of a read-modify-write: on a connection of its own, WATCH the
// keys and read them, run fn on a copy (package snapshot), and write what
// it changed in MULTI/EXEC. EXEC fails when another client wrote a key
// after the WATCH, and the run starts over: fn may run more than once.
//
// The reads are pipelined commands, not one: another client may write
// between two of them, and fn would see a state the store never had. So an
// attempt always ends with an EXEC, empty when fn wrote nothing or failed:
// its success says no watched key changed since the WATCH, so what fn saw
// was the store as it was at that EXEC.
func (s *Store) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	if keys = snapshot.Unique(keys); len(keys) == 0 {
		return snapshot.Empty(fn)
	}
	_, done, c, err := s.d.begin(ctx, "atomic")
	if err != nil {
		return err
	}
	defer done()
	run := watchedRun{keys: keys, ks: s.keys(keys), fn: fn}
	if c.cluster && !oneSlot(c, run.ks) {
		return errCrossSlot
	}
	err = c.Dedicated(func(dc valkey.DedicatedClient) error {
		for range maxWatchRetries {
			done, err := s.atomicOnce(ctx, dc, &run)
			if err != nil || done {
				return err
			}
		}
		return errWatchContention
	})
	// Whether EXEC applied or not (a reply that timed out), this process
	// must read the keys from the server from now on.
	s.written(run.written...)
	if err != nil {
		return s.d.fail(ctx, "atomic", err)
	}
	if s.d.cache.listened() {
		s.confirmWatched(ctx, &run)
	}
	return run.fnErr
}

// confirmWatched makes a run's reads watched (notify.go): they were made
// on a dedicated connection the server does not track, so each key the
// run read and did not write is read again through the client cache,
// which the server tracks (a hit: an entry it tracks and has not
// invalidated yet). A later change is then reported. A value that differs
// from the run's (changed in between), a read that fails, or a collection
// read (the client cache holds strings only) marks the run's reads as not
// watched: its reader drops them.
func (s *Store) confirmWatched(ctx context.Context, run *watchedRun) {
	if run.state == nil {
		return // fn did not run
	}
	var keys []string
	var want [][]byte
	for i, k := range run.keys {
		if slices.Contains(run.written, run.ks[i]) {
			continue
		}
		if run.state[i].Type != backends.TypeNone {
			// A collection: the client cache reads strings only, so
			// nothing makes the server track it for this process.
			s.d.cache.unwatched(s.prefix, run.keys...)
			return
		}
		keys = append(keys, k)
		want = append(want, run.state[i].Val)
	}
	if len(keys) == 0 {
		return
	}
	got, err := s.MGet(ctx, keys, nil)
	if err != nil {
		s.d.cache.unwatched(s.prefix, run.keys...)
		return
	}
	for i := range keys {
		if (got[i] == nil) != (want[i] == nil) || !bytes.Equal(got[i], want[i]) {
			s.d.cache.unwatched(s.prefix, run.keys...)
			return
		}
	}
}

// watchedRun is one Atomically call: its keys as Unique returns them and
// as the server names them, fn with its last error, and the keys sent in
// an EXEC (of any attempt: fencing one more is harmless).
type watchedRun struct {
	keys, ks []string
	fn       func(tx backends.Backend) error
	fnErr    error
	written  []string
	state    []backends.Expiring // what the last attempt read, by keys
}

// oneSlot reports whether keys hash to one cluster slot.
func oneSlot(c *client, keys []string) bool {
	first := c.B().Get().Key(keys[0]).Build()
	for _, k := range keys[1:] {
		if cmd := c.B().Get().Key(k).Build(); cmd.Slot() != first.Slot() {
			return false
		}
	}
	return true
}

// atomicOnce is one attempt: WATCH and read (one round trip, and one
// more for the collections among the keys: load), fn, and MULTI, the
// writes, EXEC (one more); done is false when EXEC found a key changed.
// Each round trip has its own command timeout; fn is bounded by its
// caller (a script's limits).
func (s *Store) atomicOnce(ctx context.Context, dc valkey.DedicatedClient, run *watchedRun) (done bool, err error) {
	// Before the reads: a deadline in the copy is never later than the
	// key's, and a lifetime written back never longer than it was.
	start := time.Now()
	state, torn, err := s.load(ctx, dc, run.ks)
	if errors.Is(err, backends.ErrWrongType) {
		// A key the run cannot hold: it fails as fn would, without running.
		run.fnErr, run.state = err, nil
		return true, dc.Do(s.d.deadlines.Of(ctx), dc.B().Unwatch().Build()).Error()
	}
	if err != nil {
		return false, err
	}
	run.state = state
	var writes []snapshot.Write
	if !torn {
		writes, run.fnErr = snapshot.Run(s.d.enc, run.keys, state, start, run.fn)
	}
	cmds := valkey.Commands{dc.B().Multi().Build()}
	for _, w := range writes {
		k := s.key(w.Key)
		if w.Coll != nil {
			cmds = collWrites(cmds, dc, k, w, time.Since(start))
		} else {
			cmds = append(cmds, s.writeCmd(dc, k, w, time.Since(start)))
		}
		run.written = append(run.written, k)
	}
	cmds = append(cmds, dc.B().Exec().Build())
	res := dc.DoMulti(s.d.deadlines.Of(ctx), cmds...)
	exec := res[len(res)-1]
	replies, err := exec.ToArray()
	switch {
	case valkey.IsValkeyNil(err):
		return false, nil // a key changed since the WATCH: read again
	case err != nil:
		return false, err
	case torn:
		return false, nil // EXEC should have failed: read again all the same
	}
	for _, r := range replies {
		if err := r.Error(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// writeCmd is the command that makes key k what w says, elapsed after the
// load instant: lifetimes are sent relative, so they shrink by elapsed,
// except one fn kept, which KEEPTTL keeps exactly.
func (s *Store) writeCmd(dc valkey.DedicatedClient, k string, w snapshot.Write, elapsed time.Duration) valkey.Completed {
	if w.Val == nil {
		return dc.B().Del().Key(k).Build()
	}
	if w.TTLKept {
		return dc.B().Arbitrary("SET").Keys(k).Args(string(w.Val), "KEEPTTL").Build()
	}
	rem := w.TTL - elapsed
	switch {
	case w.TTL == backends.TTLPersistent && w.TTLOnly:
		return dc.B().Persist().Key(k).Build()
	case w.TTL == backends.TTLPersistent:
		return dc.B().Set().Key(k).Value(string(w.Val)).Build()
	case rem <= 0:
		return dc.B().Del().Key(k).Build() // its deadline passed during the run
	case w.TTLOnly:
		return dc.B().Pexpire().Key(k).Milliseconds(ceilMillis(rem)).Build()
	}
	return dc.B().Set().Key(k).Value(string(w.Val)).PxMilliseconds(ceilMillis(rem)).Build()
}

var _ backends.Atomic = (*Store)(nil)
