package backends

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/internal/decode"
)

// Driver is one configured backend: a cache, a client or a pool that routes
// open Backends on.
type Driver interface {
	// Open returns the Backend a route stores its keys in.
	Open(ctx context.Context, spec RouteSpec) (Backend, error)
	// Close releases the driver; it is called after every Backend opened on
	// it has been closed.
	Close() error
}

// RouteSpec is what a route tells its driver when it opens a Backend. A
// driver refuses the fields it does not understand, naming them.
type RouteSpec struct {
	Name        string // the route's name
	Table       string // kv table (postgres)
	Durability  string // unlogged | async | standard (postgres)
	KeyType     string // text | uuid | bigint (postgres kv)
	SourceTable string // schema.table of an existing table (postgres table rows)
	Writable    bool   // HSET may change a table row's columns (postgres table rows)
}

// Factory builds a driver from its options: the backend's entry of the
// config without `type`. It decodes them strictly (an unknown option is an
// error naming it) and should not block on the network: a store that is down
// at start makes its routes answer ErrUnavailable, not pgcache fail to start.
// env is what the server building it gives every driver.
type Factory func(ctx context.Context, name string, options map[string]any, env Env) (Driver, error)

// Env is what the server gives each driver it builds besides its options:
// what belongs to that server rather than to one backend.
type Env struct {
	// Log carries the backend's name already (a "backend" field): the
	// driver adds none of its own, and its errors do not name it either,
	// since whoever reports them does ("backend pg: …"). nil logs nothing.
	Log *zap.Logger
	// Busy is the server's busy-reply-threshold, for a driver whose stores
	// make a request wait for an atomic run (memory). nil: Redis's default.
	Busy *BusyThreshold
	// Encodings are the server's encoding thresholds, for a driver whose
	// stores report OBJECT ENCODING (memory). nil: Redis's defaults.
	Encodings *Encodings
}

// Decoded is the Factory of a driver type whose options decode into O:
// strictly (an unknown option is an error naming it), then build makes
// the driver from them.
func Decoded[O any, D Driver](build func(name string, o O, env Env) (D, error)) Factory {
	return func(_ context.Context, name string, options map[string]any, env Env) (Driver, error) {
		var o O
		if err := decode.Strict(options, &o); err != nil {
			return nil, err
		}
		d, err := build(name, o, env)
		if err != nil {
			return nil, err // not a nil *D in the interface
		}
		return d, nil
	}
}

// registry is what driver types register from init, by type name (their
// factories, their route checks). An empty name, a nil entry and a name
// registered twice panic: they are programmer errors.
type registry[T any] struct {
	fn, what string // the registering function and what it takes, for its panics
	mu       sync.RWMutex
	m        map[string]T
}

func newRegistry[T any](fn, what string) *registry[T] {
	return &registry[T]{fn: fn, what: what, m: map[string]T{}}
}

// add registers v under typeName; isNil says v is nil (which T cannot).
func (r *registry[T]) add(typeName string, v T, isNil bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch _, dup := r.m[typeName]; {
	case typeName == "":
		panic("backends: " + r.fn + " with an empty type name")
	case isNil:
		panic("backends: " + r.fn + " " + typeName + " with a nil " + r.what)
	case dup:
		panic("backends: " + r.fn + " called twice for type " + typeName)
	}
	r.m[typeName] = v
}

func (r *registry[T]) get(typeName string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[typeName]
	return v, ok
}

// names lists the registered type names, sorted.
func (r *registry[T]) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.m))
}

var factories = newRegistry[Factory]("Register", "factory")

// Register makes a driver type available to the config under typeName. It is
// meant to be called from init; an empty or duplicate name panics.
func Register(typeName string, f Factory) { factories.add(typeName, f, f == nil) }

// Lookup returns the factory registered under typeName.
func Lookup(typeName string) (Factory, error) {
	f, ok := factories.get(typeName)
	if !ok {
		return nil, fmt.Errorf("unknown backend type %q (known: %v)", typeName, factories.names())
	}
	return f, nil
}

// Types lists the registered driver types, sorted.
func Types() []string { return factories.names() }
