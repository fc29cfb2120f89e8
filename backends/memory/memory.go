// Package memory is the in-process backend: one otter/v2 cache per driver,
// bounded by bytes, with a per-entry expiry. Routes that share a driver share
// its byte budget; each route is a namespace of its own.
package memory

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/maypok86/otter/v2"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/decode"
)

// TypeName is the `type:` of this backend in the config.
const TypeName = "memory"

// DefaultMaxBytes bounds a memory backend whose config does not say.
const DefaultMaxBytes = 256 << 20

// entryOverhead approximates what one entry costs beyond its key and value
// (otter's node, the key header, the item): it keeps many tiny entries from
// slipping past max_bytes.
const entryOverhead = 96

func init() { backends.Register(TypeName, New) }

// Options are the memory backend's config.
type Options struct {
	// MaxBytes bounds keys plus values plus per-entry overhead. Default 256MiB.
	MaxBytes decode.ByteSize `mapstructure:"max_bytes"`
}

// New builds a memory driver.
func New(_ context.Context, name string, options map[string]any, _ *zap.Logger) (backends.Driver, error) {
	var o Options
	if err := decode.Strict(options, &o); err != nil {
		return nil, err
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxBytes < 0 {
		return nil, errMaxBytes(o.MaxBytes)
	}
	return NewDriver(name, int64(o.MaxBytes)), nil
}

type errMaxBytes decode.ByteSize

func (e errMaxBytes) Error() string {
	return "max_bytes: " + strconv.FormatInt(int64(e), 10) + " must be positive"
}

// key is a route's namespace plus the key: routes sharing a cache never see
// each other's keys, and no key is ever concatenated (no allocation on Get).
type key struct {
	ns  uint32
	key string
}

// item is a stored value. exp is a unix time in nanoseconds, 0 for none.
type item struct {
	val []byte
	exp int64
}

func (it item) live(now int64) bool { return it.exp == 0 || it.exp > now }

// Driver is one otter cache.
type Driver struct {
	name  string
	cache *otter.Cache[key, item]

	mu         sync.Mutex
	namespaces map[string]uint32 // route name -> namespace, stable across reloads
}

// NewDriver returns a memory driver bounded by maxBytes.
func NewDriver(name string, maxBytes int64) *Driver {
	return &Driver{
		name:       name,
		namespaces: map[string]uint32{},
		cache: otter.Must(&otter.Options[key, item]{
			MaximumWeight:    uint64(maxBytes),
			Weigher:          weigh,
			ExpiryCalculator: expiry{},
		}),
	}
}

func weigh(k key, it item) uint32 {
	w := uint64(len(k.key)) + uint64(len(it.val)) + entryOverhead
	return uint32(min(w, math.MaxUint32))
}

// expiry tells otter the deadline each item carries, so expired entries
// free their memory; reads still check the deadline themselves, to the
// nanosecond.
type expiry struct{}

const never = time.Duration(math.MaxInt64)

func remaining(it item) time.Duration {
	if it.exp == 0 {
		return never
	}
	return max(time.Duration(it.exp-time.Now().UnixNano()), 0)
}

func (expiry) ExpireAfterCreate(e otter.Entry[key, item]) time.Duration { return remaining(e.Value) }
func (expiry) ExpireAfterUpdate(e otter.Entry[key, item], _ item) time.Duration {
	return remaining(e.Value)
}
func (expiry) ExpireAfterRead(e otter.Entry[key, item]) time.Duration { return e.ExpiresAfter() }

// Open returns a namespace of the cache for one route.
func (d *Driver) Open(_ context.Context, spec backends.RouteSpec) (backends.Backend, error) {
	if err := refuse(spec); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ns, ok := d.namespaces[spec.Name]
	if !ok {
		ns = uint32(len(d.namespaces) + 1)
		d.namespaces[spec.Name] = ns
	}
	return &Store{c: d.cache, ns: ns, shared: func() bool { return d.sharedNS() }}, nil
}

// sharedNS reports whether more than one route has opened the cache.
func (d *Driver) sharedNS() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.namespaces) > 1
}

func refuse(spec backends.RouteSpec) error {
	for field, v := range map[string]string{
		"table": spec.Table, "durability": spec.Durability, "key_type": spec.KeyType,
		"source_table": spec.SourceTable, "attach": spec.Attach,
	} {
		if v != "" {
			return &backends.SpecError{Field: field, Value: v, Reason: "the memory backend has no tables"}
		}
	}
	return nil
}

// Close stops the cache's goroutines and drops its entries.
func (d *Driver) Close() error {
	d.cache.InvalidateAll()
	d.cache.StopAllGoroutines()
	return nil
}

// Info reports the cache's size for INFO.
func (d *Driver) Info(context.Context) [][2]string {
	return [][2]string{
		{"backend_" + d.name + "_entries", strconv.Itoa(d.cache.EstimatedSize())},
		{"backend_" + d.name + "_used_bytes", strconv.FormatUint(d.cache.WeightedSize(), 10)},
		{"backend_" + d.name + "_max_bytes", strconv.FormatUint(d.cache.GetMaximum(), 10)},
	}
}

var (
	_ backends.Driver      = (*Driver)(nil)
	_ backends.InfoSection = (*Driver)(nil)
)
