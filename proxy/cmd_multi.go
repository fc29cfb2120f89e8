package proxy

import (
	"context"
	"errors"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Transactions: MULTI queues, EXEC runs the queue as one atomic run of the
// route its keys are on (atomic.go), WATCH makes EXEC fail when a watched
// key was written since (see route.Watch).

const (
	errNestedMulti  = "ERR MULTI calls can not be nested"
	errExecNoMulti  = "ERR EXEC without MULTI"
	errDiscNoMulti  = "ERR DISCARD without MULTI"
	errWatchInMulti = "ERR WATCH inside MULTI is not allowed"
	errExecAbort    = "EXECABORT Transaction discarded because of previous errors."
)

// tx is a connection's transaction state.
type tx struct {
	multi      *multiState // inside MULTI; nil otherwise
	spareMulti *multiState // the last one, reused by the next MULTI
	watches    []watched   // WATCHed keys, until EXEC, DISCARD or UNWATCH
	atomicRuns             // EXEC's, a script's, MSETNX's: see atomic.go
	execing    *multiState // the transaction EXEC's run runs
	execFn     func()      // c.execQueued, bound once
}

type multiState struct {
	queued  []queued
	bytes   int  // of the queued arguments, bounded by the query limit
	aborted bool // a request was refused while queueing: EXECABORT

	bytesArena []byte   // the queued arguments' bytes (see own)
	argsArena  [][]byte // their slices
	keys       []string // EXEC's: the keys of the queued requests
}

type queued struct {
	cmd  *command
	args [][]byte // copies: the read buffer is reused
}

type watched struct {
	r    *route.Route
	key  string // as the route stores it
	mark route.Mark
	// value is a hash of what the key held at WATCH (0: absent), compared
	// in EXEC's atomic run with what it holds then: so a write made
	// anywhere (plain SQL, another Valkey client) aborts the EXEC, when it
	// changed the value. A collection's is aCollection: its members are
	// not read, so a write to it is seen by the marks alone (this
	// pgcache's writes, and the fences of others' that came before the
	// run).
	value uint64
}

// aCollection is the value of a watched key that held a hash, set, sorted
// set or list: fingerprints are 0 or odd.
const aCollection = 2

// MULTI
func cmdMulti(c *conn, _ [][]byte) {
	if c.multi != nil {
		c.writeError(errNestedMulti)
		return
	}
	c.multi, c.spareMulti = c.spareMulti, nil
	if c.multi == nil {
		c.multi = &multiState{}
	}
	c.writeOK()
}

// queue keeps a request for EXEC, answering +QUEUED.
func (c *conn) queue(cmd *command, args [][]byte) {
	m := c.multi
	n := 0
	for _, a := range args {
		n += len(a)
	}
	if limit := c.s.config().MaxQueryBytes; limit > 0 && int64(m.bytes+n) > limit {
		c.refuse("ERR transaction queue over the query buffer limit")
		return
	}
	m.bytes += n
	m.queued = append(m.queued, queued{cmd: cmd, args: m.own(args, n)})
	c.writeSimple("QUEUED")
}

// own copies a request's arguments (n bytes) into the transaction's
// arenas: the read buffer they are views of is reused. A full arena is
// replaced, never grown, so what was copied before stays where it is.
func (m *multiState) own(args [][]byte, n int) [][]byte {
	if cap(m.bytesArena)-len(m.bytesArena) < n {
		m.bytesArena = make([]byte, 0, max(n, 16<<10))
	}
	if cap(m.argsArena)-len(m.argsArena) < len(args) {
		m.argsArena = make([][]byte, 0, max(len(args), 256))
	}
	start := len(m.argsArena)
	for _, a := range args {
		off := len(m.bytesArena)
		m.bytesArena = append(m.bytesArena, a...)
		m.argsArena = append(m.argsArena, m.bytesArena[off:len(m.bytesArena):len(m.bytesArena)])
	}
	return m.argsArena[start:len(m.argsArena):len(m.argsArena)]
}

// endMulti ends the transaction (DISCARD).
func (c *conn) endMulti() {
	m := c.multi
	c.multi = nil
	c.recycle(m)
}

// recycle keeps m for the connection's next MULTI, once nothing refers to
// its arenas any more (EXEC has run, or DISCARD).
func (c *conn) recycle(m *multiState) {
	clear(m.queued)
	clear(m.argsArena)
	clear(m.keys)
	*m = multiState{queued: m.queued[:0], bytesArena: m.bytesArena[:0], argsArena: m.argsArena[:0], keys: m.keys[:0]}
	if cap(m.bytesArena) <= 1<<20 && cap(m.queued) <= 1<<12 {
		c.spareMulti = m
	}
}

// DISCARD
func cmdDiscard(c *conn, _ [][]byte) {
	if c.multi == nil {
		c.writeError(errDiscNoMulti)
		return
	}
	c.endMulti()
	c.unwatchAll()
	c.writeOK()
}

// WATCH key [key ...]
func cmdWatch(c *conn, args [][]byte) {
	if c.multi != nil {
		c.writeError(errWatchInMulti)
		return
	}
	for _, k := range args[1:] {
		r, stored := c.key(k)
		if r == nil {
			return
		}
		stored = strings.Clone(stored) // a view of the read buffer
		w := watched{r: r, key: stored, mark: r.Watch(c.ctx, stored)}
		c.watches = append(c.watches, w) // Unwatch is owed even if the read fails
		value, err := watchValue(c.ctx, r.Backend, stored)
		if err != nil {
			c.backendErr(r, err)
			return
		}
		c.watches[len(c.watches)-1].value = value
	}
	c.writeOK()
}

// UNWATCH
func cmdUnwatch(c *conn, _ [][]byte) {
	c.unwatchAll()
	c.writeOK()
}

func (c *conn) unwatchAll() {
	for _, w := range c.watches {
		w.r.Unwatch()
	}
	clear(c.watches)
	c.watches = c.watches[:0]
}

// watchValue is what watched.value holds for key: its string's
// fingerprint, or aCollection.
func watchValue(ctx context.Context, b backends.Backend, key string) (uint64, error) {
	v, ok, err := b.Get(ctx, key)
	if errors.Is(err, backends.ErrWrongType) {
		return aCollection, nil
	}
	return fingerprint(v, ok), err
}

func fingerprint(v []byte, ok bool) uint64 {
	if !ok {
		return 0
	}
	return xxhash.Sum64(v) | 1
}

// watchedChanged reports whether a watched key may have been written since
// WATCH; a key whose route a reload replaced counts as written. Before the
// run it asks the routes, after which the fences any write elsewhere
// raised have come (route.Changed); in the run, where no write can come
// between, writes through this pgcache (route.ChangedHere) and each value
// as the run reads it.
func (c *conn) watchedChanged(inRun bool) bool {
	for _, w := range c.watches {
		switch {
		case c.t.ByName(w.r.Name) != w.r:
			return true
		case !inRun && w.r.Changed(w.key, w.mark):
			return true
		case inRun && w.r.ChangedHere(w.key, w.mark):
			return true
		case inRun:
			if v, err := watchValue(c.ctx, c.viewOf(w.r).Backend, w.key); err != nil || v != w.value {
				return true
			}
		}
	}
	return false
}

// EXEC
func cmdExec(c *conn, _ [][]byte) {
	m := c.multi
	if m == nil {
		c.writeError(errExecNoMulti)
		return
	}
	c.multi = nil
	defer c.recycle(m)
	defer c.unwatchAll()
	if m.aborted {
		c.writeError(errExecAbort)
		return
	}
	var r *route.Route
	keys, bad := m.keys[:0], ""
	for _, q := range m.queued {
		if r, keys, bad = c.routeOf(r, keys, q.cmd, q.args); bad != "" {
			c.writeError(bad)
			return
		}
	}
	if c.watchedChanged(false) {
		c.writeNullArray()
		return
	}
	if r != nil {
		keys = c.watchedOn(r, keys)
	}
	m.keys = keys // the buffer for the next EXEC; the run borrows them
	if c.execFn == nil {
		c.execFn = c.execQueued
	}
	c.execing = m
	c.atomically(r, keys, readsOnly(m.queued), c.execFn)
	c.execing = nil
}

// readsOnly reports whether every queued request only reads.
func readsOnly(reqs []queued) bool {
	for _, q := range reqs {
		if q.cmd.kind != kindRead {
			return false
		}
	}
	return true
}

// execQueued is EXEC's run: the queued requests of c.execing, once no
// watched key has changed.
func (c *conn) execQueued() {
	if c.watchedChanged(true) {
		c.writeNullArray()
		return
	}
	m := c.execing
	c.writeArray(len(m.queued))
	for _, q := range m.queued {
		c.exec(q.cmd, q.args)
	}
}

// watchedOn adds the keys watched on route r to keys: the run reads them.
func (c *conn) watchedOn(r *route.Route, keys []string) []string {
	for _, w := range c.watches {
		if w.r == r {
			keys = append(keys, w.key)
		}
	}
	return keys
}
