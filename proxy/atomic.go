package proxy

import (
	"errors"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/snapshot"
	"github.com/pgcache/pgcache/route"
)

// Atomic runs: a body of ordinary handlers run over some keys as one
// atomic run of the one route those keys are on (backends.Atomic: striped
// key locks in memory, one PostgreSQL transaction, WATCH and MULTI/EXEC on
// Valkey; see docs/architecture.md, "Transactions, scripts, WATCH and the
// keyspace"). EXEC runs its queue so (cmd_multi.go), EVAL and FCALL a
// script (cmd_scripting.go), MSETNX its writes (cmd_strings.go). While the
// body runs, c.key resolves a key of that route to the run's view of it
// (viewOf), whose Backend is the run's tx and serves the run's keys only:
// a request inside EXEC is the same handler as outside.
//
// A handler that must run atomically resolves its keys, then runs:
//
//	r, keys, bad := c.routeOf(nil, nil, cmd, args) // bad: CROSSSLOT, no route
//	if bad != "" { c.writeError(bad); return }
//	c.atomically(r, keys, readOnly, body)

// Redis Cluster's text for keys that cannot be served together, which
// cluster-aware clients understand; here the keys are on two routes.
const errCrossSlot = "CROSSSLOT Keys in request don't hash to the same slot (pgcache: they are on different routes)"

// errNoAtomic answers a run on a route whose store runs none: it is no
// backends.Atomic, or says ErrUnsupported.
func errNoAtomic(r *route.Route) string {
	return "ERR route " + r.Name + " does not run transactions or scripts"
}

// atomicRuns is a connection's atomic run. The requests of a body run
// inside it, never in a run of their own, so a connection runs one at a
// time and keeps it.
type atomicRuns struct {
	held    *atomicRun // while a run's body runs: &running
	running atomicRun
}

// atomicRun is a route seen through an atomic run: handlers that resolve a
// key of route of get as instead, whose Backend is the run's tx.
//
// The function the backend runs (fn) is bound once: a transaction of a few
// SETs allocates nothing but what the SETs store.
type atomicRun struct {
	of   *route.Route
	as   route.Route                      // *of, with the run's tx as Backend
	body func()                           // what the run runs, writing its replies
	mark int                              // len(c.out) before the run's replies
	fn   func(txb backends.Backend) error // c.runAtomic
}

// routeOf adds the keys of one request of a run (by cmd's key spec) to
// keys, as their route stores them, and returns that route: r is the route
// of the run's keys so far, nil while it has none. A key of another route
// than r is refused (CROSSSLOT), as is one of no route or a bad movable
// spec (a script's numkeys); bad is the error reply.
func (c *conn) routeOf(r *route.Route, keys []string, cmd *command, args [][]byte) (_ *route.Route, _ []string, bad string) {
	var buf [8][]byte
	ks, bad := appendKeys(buf[:0], cmd, args)
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
	return r, keys, ""
}

// viewOf returns route r as a handler sees it: inside an atomic run of r,
// the run's view, whose Backend is the run's tx; r otherwise.
func (c *conn) viewOf(r *route.Route) *route.Route {
	if c.held != nil && c.held.of == r {
		return &c.held.as
	}
	return r
}

// atomically runs body as one atomic run of route r over keys (as r
// stores them), read-only or not, with the handlers' backend calls on r
// going to the run's tx; with no route (no keys), or inside a run already
// (a script's MSETNX: the run holds its keys), it just runs body. body
// writes its replies. A store that runs the body again (after a
// conflicting write) has the replies of the run before dropped.
//
// A body that only reads, on a store that reads many keys with their
// lifetimes in one call (backends.ExpiryReader: PostgreSQL, an L1 tier),
// runs on those values (snapshot.ReadOnly), taking no locks and fencing
// nothing: valkey-go's cached read is MULTI, PTTL, GET, EXEC.
//
// It reports whether the run committed, its replies those of body's last
// run; false when it answered an error of the run's instead.
func (c *conn) atomically(r *route.Route, keys []string, readOnly bool, body func()) bool {
	if r == nil || c.held != nil {
		body()
		return true
	}
	er, snap := backends.As[backends.ExpiryReader](r.Backend)
	snap = snap && readOnly
	a, ok := backends.As[backends.Atomic](r.Backend)
	if !ok && !snap {
		c.writeError(errNoAtomic(r))
		return false
	}
	run := &c.running
	if run.fn == nil {
		run.fn = c.runAtomic
	}
	mark := len(c.out)
	run.of, run.body, run.mark = r, body, mark
	c.holdOutput++ // the store may run body again: its replies stay in out
	defer func() { c.holdOutput-- }()
	var err error
	if snap {
		err = snapshot.ReadOnly(c.ctx, er, keys, run.fn)
		if errors.Is(err, snapshot.ErrCollection) && ok {
			err = a.Atomically(c.ctx, keys, run.fn) // the store's run loads it
		}
	} else {
		err = a.Atomically(c.ctx, keys, run.fn)
	}
	run.of, run.as, run.body = nil, route.Route{}, nil
	if err != nil {
		c.out = c.out[:mark]
		if errors.Is(err, backends.ErrUnsupported) {
			c.writeError(errNoAtomic(r))
			return false
		}
		c.backendErr(r, err)
		return false
	}
	return true
}

// runAtomic is what an atomic run runs with its tx: c.running's body, with
// the handlers' keys of its route resolved to the run's view of it.
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
