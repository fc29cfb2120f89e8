// Package route maps keys to the backends that store them. A Table is one
// immutable set of routes, built from config; the Router holds the current
// Table and swaps it on reload. The RESP and HTTP fronts share one Router, so
// a key written over one is read back over the other.
package route

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// Route is a named rule: which keys it owns and which backend stores them.
type Route struct {
	// Name names the route in HTTP paths (/{name}/get?id=…) and metrics.
	Name string
	// Prefixes are the route's RESP namespaces: keys starting with one belong
	// to the route, and the backend stores them without it. "" is the
	// catch-all. A route with none is reached over HTTP only.
	Prefixes []string
	// BackendName is the configured backend the route stores in, for errors
	// ("backend pg unavailable") and INFO.
	BackendName string
	// Backend stores the route's keys; it is instrumented (metrics, value
	// size limit) by NewTable.
	Backend backends.Backend
	// MaxValueBytes bounds a value written through the route; 0 is no bound.
	MaxValueBytes int64
	// Canon, when set, rewrites a key to the one spelling of it the backend
	// stores and caches it under: a table row named as 42, [42] or "42" is
	// one row, and one L1 entry. It returns a key it cannot read as it is
	// (the backend refuses it with the reason).
	Canon func(key string) string

	raw    backends.Backend // the backend as opened, closed when the table retires
	watch  *watchTable      // WATCH's versions of the route's keys (watch.go)
	notify *notifier        // the serving Router's, told of writes (notify.go)
}

// Table is one immutable set of routes.
type Table struct {
	routes   []*Route          // config order
	byName   map[string]*Route // HTTP
	prefixed []prefixed        // by prefix, longest first; the catch-all last

	refs      atomic.Int64
	retiring  atomic.Bool
	drained   chan struct{}
	drainOnce sync.Once
	// releaseFn is t.release bound once, so Acquire hands it out without
	// allocating a method value per request.
	releaseFn func()
	unfollow  func() // the Follower's stop, under Router.follow (notify.go)
}

type prefixed struct {
	prefix string
	route  *Route
}

// NewTable builds a table and instruments each route's backend with m
// (which may be nil). Names must be unique, and so must prefixes.
func NewTable(routes []*Route, m *Metrics) (*Table, error) {
	t := &Table{byName: make(map[string]*Route, len(routes)), drained: make(chan struct{})}
	t.releaseFn = t.release
	prefixes := map[string]string{}
	for _, r := range routes {
		if _, dup := t.byName[r.Name]; dup {
			return nil, fmt.Errorf("route %q is defined twice", r.Name)
		}
		for _, p := range r.Prefixes {
			if other, dup := prefixes[p]; dup {
				return nil, fmt.Errorf("routes %q and %q have the same prefix %q", other, r.Name, p)
			}
			prefixes[p] = r.Name
			t.prefixed = append(t.prefixed, prefixed{prefix: p, route: r})
		}
		t.byName[r.Name] = r
		t.routes = append(t.routes, r)
		r.raw = r.Backend
		r.watch = newWatchTable()
		r.Backend = instrument(r, m)
	}
	sort.SliceStable(t.prefixed, func(i, j int) bool {
		return len(t.prefixed[i].prefix) > len(t.prefixed[j].prefix)
	})
	return t, nil
}

// Routes returns the routes in config order.
func (t *Table) Routes() []*Route { return t.routes }

// ByName returns the route an HTTP path names, or nil.
func (t *Table) ByName(name string) *Route { return t.byName[name] }

// ForKey returns the route owning a RESP key by the longest matching prefix,
// and the key as the backend stores it (without the prefix, in the route's
// canonical spelling). The route is nil when no prefix matches and there is
// no catch-all, and for a CRUD: key of a table no route serves
// (backends.CRUDMark): that is no other route's key.
//
// A linear scan: tables have a handful of routes, and it allocates nothing
// (but a table route's Canon, for a key spelled as JSON).
func (t *Table) ForKey(key string) (*Route, string) {
	for _, p := range t.prefixed {
		if strings.HasPrefix(key, p.prefix) {
			if len(p.prefix) < len(backends.CRUDMark) && strings.HasPrefix(key, backends.CRUDMark) {
				return nil, key
			}
			k := key[len(p.prefix):]
			if p.route.Canon != nil {
				k = p.route.Canon(k)
			}
			return p.route, k
		}
	}
	return nil, key
}

// ErrCRUDKey refuses a CRUD: key given by name to a catch-all route (HTTP):
// over RESP such a key is a table route's or no route's, so the catch-all
// never stores one.
var ErrCRUDKey = errors.New("a CRUD: key names a row of a table route, and no route serves that table")

// Key returns id as r's backend stores it, for a key given to r by name
// (the HTTP API): in r's canonical spelling, or ErrCRUDKey for a CRUD: key
// on a catch-all route.
func (r *Route) Key(id string) (string, error) {
	if strings.HasPrefix(id, backends.CRUDMark) && r.catchAll() {
		return "", ErrCRUDKey
	}
	if r.Canon != nil {
		id = r.Canon(id)
	}
	return id, nil
}

func (r *Route) catchAll() bool {
	for _, p := range r.Prefixes {
		if p == "" {
			return true
		}
	}
	return false
}

// release ends one use of the table.
func (t *Table) release() {
	if t.refs.Add(-1) == 0 && t.retiring.Load() {
		t.signalDrained()
	}
}

func (t *Table) signalDrained() { t.drainOnce.Do(func() { close(t.drained) }) }

// Close closes every route's backend. Call it on a table that is no longer
// in a Router (Router.Swap does this after in-flight requests end).
func (t *Table) Close() error {
	var first error
	for _, r := range t.routes {
		if err := r.raw.Close(); err != nil && first == nil {
			first = fmt.Errorf("route %s: close: %w", r.Name, err)
		}
	}
	return first
}

// Router holds the current table.
type Router struct {
	cur    atomic.Pointer[Table]
	notify notifier
	follow sync.Mutex // orders the Follower's Follow and stop calls (notify.go)
}

// NewRouter returns a router serving t.
func NewRouter(t *Table) *Router {
	r := &Router{}
	r.attach(t)
	r.cur.Store(t)
	return r
}

// Current returns the table for a quick look that does not call a backend
// (listing routes, /config).
func (r *Router) Current() *Table { return r.cur.Load() }

// Acquire returns the current table and holds it open until the returned
// release is called: a swap waits for it before closing the old backends.
// Fronts acquire once per request or per pipelined batch.
func (r *Router) Acquire() (*Table, func()) {
	for {
		t := r.cur.Load()
		t.refs.Add(1)
		if r.cur.Load() == t {
			return t, t.releaseFn
		}
		t.release() // swapped while we took it: take the new one
	}
}

// Swap makes next current, waits (up to ctx) for requests on the old table
// to finish, and returns the old table for the caller to close.
func (r *Router) Swap(ctx context.Context, next *Table) (*Table, error) {
	r.attach(next)
	old := r.cur.Swap(next)
	old.retiring.Store(true)
	if old.refs.Load() == 0 {
		old.signalDrained()
	}
	defer r.retired(old)
	select {
	case <-old.drained:
		return old, nil
	case <-ctx.Done():
		return old, fmt.Errorf("old routes still busy after %v: %w", since(ctx), ctx.Err())
	}
}

func since(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d).Abs()
	}
	return 0
}
