// Package memory is the in-process backend: one otter/v2 cache per driver,
// bounded by bytes, with a per-entry expiry. Routes that share a driver share
// its byte budget; each route is a namespace of its own.
package memory

import (
	"context"
	"math"
	"strconv"
	"sync"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/cursor"
	"github.com/pgcache/pgcache/internal/decode"
	"github.com/pgcache/pgcache/internal/sweep"
)

// TypeName is the `type:` of this backend in the config.
const TypeName = "memory"

// DefaultMaxBytes bounds a memory backend whose config does not say.
const DefaultMaxBytes = 256 << 20

// entryOverhead approximates what one entry costs beyond its key and value
// (otter's node, the key header, the item): it keeps many tiny entries from
// slipping past max_bytes.
const entryOverhead = 96

func init() {
	backends.Register(TypeName, New)
	backends.RegisterRouteCheck(TypeName, checkRoutes)
}

// Options are the memory backend's config.
type Options struct {
	// MaxBytes bounds keys plus values plus per-entry overhead. Default 256MiB.
	MaxBytes decode.ByteSize `mapstructure:"max_bytes"`
}

// New builds a memory driver from its config options, decoded strictly.
var New = backends.Decoded(fromOptions)

// fromOptions builds a driver from decoded options.
func fromOptions(name string, o Options, env backends.Env) (*Driver, error) {
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxBytes < 0 {
		return nil, errMaxBytes(o.MaxBytes)
	}
	return NewDriver(name, int64(o.MaxBytes), WithBusyThreshold(env.Busy), WithEncodings(env.Encodings)), nil
}

type errMaxBytes decode.ByteSize

func (e errMaxBytes) Error() string {
	return "max_bytes: " + strconv.FormatInt(int64(e), 10) + " must be positive"
}

// cache is one route's otter cache. Keys are plain strings: otter hashes a
// string key faster than a {namespace, key} struct, and a route's
// keys need no namespace when the route has its cache to itself.
type cache = otter.Cache[string, *item]

// Driver is a byte budget shared by the routes that open it: each route
// has an otter cache of its own, and the budget is split evenly between
// the routes open at the time (rebalanced when one opens or closes).
type Driver struct {
	name     string
	maxBytes int64
	busy     *backends.BusyThreshold // how long a request waits for an atomic run (atomic.go)
	enc      *backends.Encodings     // encoding thresholds (coll.go)

	clock *otter.CoarseClock // otter's, read by sweeps (see package sweep)

	mu     sync.Mutex
	routes map[string]*routeCache // by route name: a reload reopens the same cache
}

type routeCache struct {
	c     *cache
	sweep *sweep.Sweeper[*item]
	locks *keyLocks // atomic runs against plain commands, see atomic.go
	notes *notifier // expiries and evictions, for CLIENT TRACKING (notify.go)
	refs  int       // open Stores: a reload opens the new before it closes the old
	// The route's scans and copies outlive a reload, as its keys do.
	cursors *cursor.Table[*scan]
	moves   sync.Mutex
}

func newRouteCache(maxBytes int64, clock otter.Clock, busy *backends.BusyThreshold) *routeCache {
	notes := newNotifier()
	c := newCache(maxBytes, clock, notes.deleted)
	notes.c = c
	return &routeCache{c: c, sweep: sweep.Start(c, func(it *item) int64 { return it.exp }),
		locks: newKeyLocks(busy), notes: notes, cursors: newCursors()}
}

// drop empties and stops the cache.
func (rc *routeCache) drop() {
	rc.cursors.Close()
	rc.sweep.Stop()
	rc.c.InvalidateAll()
	rc.c.StopAllGoroutines()
	rc.notes.close()
}

// NewDriver returns a memory driver bounded by maxBytes.
func NewDriver(name string, maxBytes int64, opts ...DriverOption) *Driver {
	d := &Driver{name: name, maxBytes: maxBytes, routes: map[string]*routeCache{},
		clock: sweep.NewClock()}
	for _, o := range opts {
		o(d)
	}
	return d
}

// DriverOption sets what a driver takes from the server it serves, not
// from its config.
type DriverOption func(*Driver)

// WithEncodings makes the driver's stores report OBJECT ENCODING by e
// (the server's thresholds, which CONFIG SET changes).
func WithEncodings(e *backends.Encodings) DriverOption {
	return func(d *Driver) { d.enc = e }
}

// WithBusyThreshold makes the driver's stores fail a request with
// backends.ErrBusy once the atomic run holding its key has run for longer
// than b (the server's busy-reply-threshold, which CONFIG SET changes).
// Without it, or with nil: backends.DefaultBusyThreshold.
func WithBusyThreshold(b *backends.BusyThreshold) DriverOption {
	return func(d *Driver) { d.busy = b }
}

// newCache makes a route's cache; deleted hears of every removal (see
// notify.go).
func newCache(maxBytes int64, clock otter.Clock, deleted func(otter.DeletionEvent[string, *item])) *cache {
	return otter.Must(&otter.Options[string, *item]{
		MaximumWeight: uint64(maxBytes),
		Weigher:       weigh,
		// No ExpiryCalculator: reads check each item's deadline, and the
		// route's sweeper frees expired items (see package sweep).
		Clock:            clock,
		Executor:         inline,
		OnAtomicDeletion: deleted,
	})
}

// inline runs otter's maintenance on the goroutine that wrote. By default
// otter starts a goroutine for it after most writes; with one client
// sending a SET at a time that was a goroutine start, a thread wake-up and
// a futex per SET, a large part of what a SET cost the server
// (docs/performance.md). Nothing here calls the cache from a Compute function or from a
// deletion callback, which is what an inline executor forbids.
func inline(fn func()) { fn() }

func weigh(k string, it *item) uint32 {
	if it.isColl() {
		b := it.coll()
		b.weighed.Store(b.v.Weight())
	}
	w := uint64(len(k)) + it.weight() + entryOverhead
	return uint32(min(w, math.MaxUint32))
}

// Open returns the route's cache, creating it on first use; the same
// route name reopened (a reload) finds its keys again.
func (d *Driver) Open(_ context.Context, spec backends.RouteSpec) (backends.Backend, error) {
	if err := refuse(spec); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rc, ok := d.routes[spec.Name]
	if !ok {
		rc = newRouteCache(d.maxBytes, d.clock, d.busy)
		d.routes[spec.Name] = rc
		d.rebalanceLocked()
	}
	rc.refs++
	return &Store{c: rc.c, sweep: rc.sweep, locks: rc.locks, notes: rc.notes, cursors: rc.cursors, moves: &rc.moves,
		enc: d.enc, release: func() { d.release(spec.Name, rc) }, reads: (*Store).mget}, nil
}

// release drops a route's cache when its last Store closes.
func (d *Driver) release(name string, rc *routeCache) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rc.refs--; rc.refs > 0 || d.routes[name] != rc {
		return
	}
	delete(d.routes, name)
	rc.drop()
	d.rebalanceLocked()
}

// rebalanceLocked splits the budget evenly between the open routes.
func (d *Driver) rebalanceLocked() {
	if len(d.routes) == 0 {
		return
	}
	share := uint64(d.maxBytes) / uint64(len(d.routes))
	for _, rc := range d.routes {
		rc.c.SetMaximum(share)
	}
}

// checkRoutes refuses the table options, which only postgres has
// (backends.RouteCheck).
func checkRoutes(_ map[string]any, specs []backends.RouteSpec) []error {
	errs := make([]error, len(specs))
	for i, s := range specs {
		errs[i] = refuse(s)
	}
	return errs
}

func refuse(spec backends.RouteSpec) error { return backends.RefuseTables(spec, TypeName) }

// Close stops every route's cache and drops its entries.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, rc := range d.routes {
		rc.drop()
		delete(d.routes, name)
	}
	d.clock.Stop()
	return nil
}

// Info reports the driver's size for INFO.
func (d *Driver) Info(context.Context) [][2]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var entries int
	var used uint64
	var expired int64
	for _, rc := range d.routes {
		entries += rc.c.EstimatedSize()
		used += rc.c.WeightedSize()
		expired += rc.sweep.Freed()
	}
	return [][2]string{
		{"backend_" + d.name + "_entries", strconv.Itoa(entries)},
		{"backend_" + d.name + "_used_bytes", strconv.FormatUint(used, 10)},
		{"backend_" + d.name + "_max_bytes", strconv.FormatInt(d.maxBytes, 10)},
		// as Redis's expired_keys, but only what the sweepers of the open
		// routes freed: an expired key overwritten first is not counted
		{"backend_" + d.name + "_expired_keys", strconv.FormatInt(expired, 10)},
	}
}

var (
	_ backends.Driver      = (*Driver)(nil)
	_ backends.InfoSection = (*Driver)(nil)
	_ backends.RouteCheck  = checkRoutes
)
