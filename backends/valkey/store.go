package valkey

import (
	"context"
	"sync"
	"unsafe"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
)

// Store is one route's view of a valkey driver: its keys live under prefix
// (see Driver.Open).
//
// Writes fence their keys in the client cache once the server has replied,
// success or not (a write that timed out may still have been applied), so
// this process reads its own writes at once; see clientcache.go.
//
// In cluster mode a multi-key command is split into single-key commands
// sent together (DoMulti): still one round trip per node, no CROSSSLOT
// errors, but MSET is then not atomic across keys, as for the memory backend.
type Store struct {
	d      *Driver
	route  string
	prefix string
	once   sync.Once
}

func (s *Store) key(k string) string {
	if s.prefix == "" {
		return k
	}
	return s.prefix + k
}

func (s *Store) keys(ks []string) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = s.key(k)
	}
	return out
}

// written fences keys in the client cache after a write's reply.
func (s *Store) written(keys ...string) {
	if s.d.cache != nil {
		s.d.cache.fence(keys...)
	}
}

// Close releases the route's claim on the driver.
func (s *Store) Close() error {
	s.once.Do(func() { s.d.release(s.route) })
	return nil
}

// value reads a bulk string reply; a nil reply is an absent key.
func (s *Store) value(ctx context.Context, op string, res valkey.ValkeyResult, shared bool) ([]byte, bool, error) {
	m, err := res.ToMessage()
	if err != nil {
		if valkey.IsValkeyNil(err) {
			return nil, false, nil
		}
		return nil, false, s.d.fail(ctx, op, err)
	}
	v, ok, err := bytesOf(&m, shared)
	if err != nil {
		return nil, false, s.d.fail(ctx, op, err)
	}
	return v, ok, nil
}

// bytesOf returns a string reply as bytes the caller owns; a present empty
// value is a non-nil empty slice. A reply that came through the client
// cache shares its bytes with the cache, so it is copied. Any other reply
// is handed over as it is: valkey-go reads every bulk string into a buffer
// of its own (resp.go, readB) and keeps no reference to a reply it has
// returned, so the caller is its only holder.
func bytesOf(m *valkey.ValkeyMessage, shared bool) ([]byte, bool, error) {
	if m.IsNil() {
		return nil, false, nil
	}
	str, err := m.ToString()
	switch {
	case err != nil:
		return nil, false, err
	case len(str) == 0:
		return []byte{}, true, nil
	case shared:
		return []byte(str), true, nil
	}
	return unsafe.Slice(unsafe.StringData(str), len(str)), true, nil
}

var _ backends.Backend = (*Store)(nil)
