package proxy

import (
	"errors"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/snapshot"
	"github.com/pgcache/pgcache/route"
)

// Transactions: MULTI queues, EXEC runs the queue as one atomic run of the
// route its keys are on (backends.Atomic: striped key locks in memory, one
// PostgreSQL transaction, WATCH and MULTI/EXEC on Valkey), WATCH makes
// EXEC fail when a watched key was written since (see route.Watch).

const (
	errNestedMulti  = "ERR MULTI calls can not be nested"
	errExecNoMulti  = "ERR EXEC without MULTI"
	errDiscNoMulti  = "ERR DISCARD without MULTI"
	errWatchInMulti = "ERR WATCH inside MULTI is not allowed"
	errExecAbort    = "EXECABORT Transaction discarded because of previous errors."
	// Redis Cluster's text for keys that cannot be served together, which
	// cluster-aware clients understand; here the keys are on two routes.
	errCrossSlot = "CROSSSLOT Keys in request don't hash to the same slot (pgcache: they are on different routes)"
)

// tx is a connection's transaction state.
type tx struct {
	multi      *multiState // inside MULTI; nil otherwise
	spareMulti *multiState // the last one, reused by the next MULTI
	watches    []watched   // WATCHed keys, until EXEC, DISCARD or UNWATCH
	held       *atomicRun  // while an EXEC or a script runs: &running
	running    atomicRun   // the connection's runs, one at a time
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
	// changed the value.
	value uint64
}

// atomicRun is a route seen through an atomic run: handlers that resolve a
// key of route of get as instead, whose Backend is the run's tx.
//
// A connection runs one at a time, so it keeps one, and the function the
// backend runs (fn) is bound once: a transaction of a few SETs allocates
// nothing but what the SETs store.
type atomicRun struct {
	of   *route.Route
	as   route.Route                      // *of, with the run's tx as Backend
	body func()                           // what the run runs, writing its replies
	mark int                              // len(c.out) before the run's replies
	fn   func(txb backends.Backend) error // c.runAtomic
}

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
		v, ok, err := r.Backend.Get(c.ctx, stored)
		if err != nil {
			c.backendErr(r, err)
			return
		}
		c.watches[len(c.watches)-1].value = fingerprint(v, ok)
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
			b := w.r.Backend
			if c.held != nil && c.held.of == w.r {
				b = c.held.as.Backend
			}
			v, ok, err := b.Get(c.ctx, w.key)
			if err != nil || fingerprint(v, ok) != w.value {
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
	r, keys, bad := c.routeOf(m.keys[:0], m.queued)
	if bad != "" {
		c.writeError(bad)
		return
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

// routeOf finds the one route the keys of the queued requests are on, and
// appends those keys as it stores them to keys; r is nil when no request
// has a key.
func (c *conn) routeOf(keys []string, reqs []queued) (r *route.Route, _ []string, bad string) {
	var buf [8][]byte
	for _, q := range reqs {
		ks, bad := appendKeys(buf[:0], q.cmd, q.args)
		if bad != "" {
			return nil, nil, bad
		}
		for _, k := range ks {
			rk, stored := c.t.ForKey(bstr(k))
			switch {
			case rk == nil:
				return nil, nil, errNoRoute(k)
			case r != nil && rk != r:
				return nil, nil, errCrossSlot
			}
			r = rk
			keys = append(keys, stored)
		}
	}
	return r, keys, ""
}

// keysOf returns the keys of a request by its command's key spec.
func keysOf(cmd *command, args [][]byte) ([][]byte, string) {
	return appendKeys(nil, cmd, args)
}

// appendKeys is keysOf appending to dst, which a command with movable keys
// does not use.
func appendKeys(dst [][]byte, cmd *command, args [][]byte) ([][]byte, string) {
	if cmd.movable != nil {
		return cmd.movable(args)
	}
	ks := cmd.keys
	if ks.first == 0 {
		return dst, ""
	}
	last := ks.last
	if last < 0 {
		last += len(args)
	}
	for i := ks.first; i <= last && i < len(args); i += ks.step {
		dst = append(dst, args[i])
	}
	return dst, ""
}

// atomically runs body as one atomic run of route r over keys, with the
// handlers' backend calls on r going to the run's tx; with no route it
// just runs body. body writes its replies. A store that runs the body
// again (after a conflicting write) has the replies of the run before
// dropped. A body that only reads, on a store that reads many keys with
// their lifetimes in one call (backends.ExpiryReader: PostgreSQL, an L1
// tier), runs on those values (snapshot.ReadOnly), taking no locks and
// fencing nothing: valkey-go's cached read is MULTI, PTTL, GET, EXEC.
func (c *conn) atomically(r *route.Route, keys []string, readOnly bool, body func()) {
	if r == nil || c.held != nil { // no keys, or inside EXEC's run, which holds them
		body()
		return
	}
	er, snap := backends.As[backends.ExpiryReader](r.Backend)
	snap = snap && readOnly
	a, ok := r.Backend.(backends.Atomic)
	if !ok && !snap {
		c.writeError("ERR route " + r.Name + " does not run transactions or scripts")
		return
	}
	run := &c.running
	if run.fn == nil {
		run.fn = c.runAtomic
	}
	mark := len(c.out)
	run.of, run.body, run.mark = r, body, mark
	c.holdOutput++
	defer func() { c.holdOutput-- }()
	var err error
	if snap {
		err = snapshot.ReadOnly(c.ctx, er, keys, run.fn)
	} else {
		err = a.Atomically(c.ctx, keys, run.fn)
	}
	run.of, run.as, run.body = nil, route.Route{}, nil
	if err != nil {
		c.out = c.out[:mark]
		if errors.Is(err, backends.ErrUnsupported) {
			c.writeError("ERR route " + r.Name + " does not run transactions or scripts")
			return
		}
		c.backendErr(r, err)
	}
}

// runAtomic is what an atomic run runs with its tx: c.running's body, with the
// handlers' keys of its route resolved to the run's view of it.
func (c *conn) runAtomic(txb backends.Backend) error {
	run := &c.running
	c.out = c.out[:run.mark]
	run.as = *run.of
	run.as.Backend = txb
	c.held = run
	defer func() { c.held = nil }()
	run.body()
	return nil
}
