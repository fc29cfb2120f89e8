package backends

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"go.uber.org/zap"
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

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a driver type available to the config under typeName. It is
// meant to be called from init; an empty or duplicate name panics.
func Register(typeName string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if typeName == "" {
		panic("backends: Register with an empty type name")
	}
	if f == nil {
		panic("backends: Register " + typeName + " with a nil factory")
	}
	if _, dup := registry[typeName]; dup {
		panic("backends: Register called twice for type " + typeName)
	}
	registry[typeName] = f
}

// Lookup returns the factory registered under typeName.
func Lookup(typeName string) (Factory, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	f, ok := registry[typeName]
	if !ok {
		return nil, fmt.Errorf("unknown backend type %q (known: %v)", typeName, typesLocked())
	}
	return f, nil
}

// Types lists the registered driver types, sorted.
func Types() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return typesLocked()
}

func typesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
