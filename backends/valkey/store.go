package valkey

import (
	"context"
	"strings"
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
// Collection commands are not split: see coll.go.
type Store struct {
	d      *Driver
	route  string
	prefix string
	once   sync.Once
	ks     keyspaceState // scan cursors (keyspace.go)
}

func (s *Store) key(k string) string {
	if s.prefix == "" {
		return k
	}
	return s.prefix + k
}

// keyBuf is the size of the stack buffer lookupKey names a key in.
const keyBuf = 128

// lookupKey is key as the server stores it, for a lookup that keeps
// nothing: with a prefix, named in buf when it fits (no allocation).
func (s *Store) lookupKey(buf []byte, k string) string {
	if s.prefix == "" || len(s.prefix)+len(k) > len(buf) {
		return s.key(k)
	}
	n := copy(buf, s.prefix)
	n += copy(buf[n:], k)
	return unsafe.String(&buf[0], n)
}

// keys names ks as the server stores them. With a prefix the names share
// one allocation; whatever keeps one (the client cache) copies it.
func (s *Store) keys(ks []string) []string {
	out := make([]string, len(ks))
	if s.prefix == "" {
		copy(out, ks)
		return out
	}
	n := 0
	for _, k := range ks {
		n += len(s.prefix) + len(k)
	}
	var b strings.Builder
	b.Grow(n)
	for _, k := range ks {
		b.WriteString(s.prefix)
		b.WriteString(k)
	}
	all, off := b.String(), 0
	for i, k := range ks {
		end := off + len(s.prefix) + len(k)
		out[i], off = all[off:end], end
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
func (s *Store) value(ctx context.Context, op string, res valkey.ValkeyResult) ([]byte, bool, error) {
	m, err := res.ToMessage()
	if err != nil {
		if valkey.IsValkeyNil(err) {
			return nil, false, nil
		}
		return nil, false, s.d.fail(ctx, op, err)
	}
	return s.message(ctx, op, &m)
}

// one runs the one command cmd makes of the name key is stored under, and
// reads its reply with as; an error is the backend's (fail, naming op).
// written marks the key written, as every write does.
func one[T any](ctx context.Context, s *Store, op, key string, written bool,
	cmd func(c *client, k string) valkey.Completed, as func(valkey.ValkeyResult) (T, error)) (T, error) {
	var zero T
	cctx, done, c, err := s.d.begin(ctx, op)
	if err != nil {
		return zero, err
	}
	defer done()
	k := s.key(key)
	v, err := as(c.Do(cctx, cmd(c, k)))
	if written {
		s.written(k)
	}
	if err != nil {
		return zero, s.d.fail(ctx, op, err)
	}
	return v, nil
}

// reply is one's as for a reply its caller reads itself.
func reply(r valkey.ValkeyResult) (valkey.ValkeyResult, error) { return r, nil }

// message is value for a reply already in hand.
func (s *Store) message(ctx context.Context, op string, m *valkey.ValkeyMessage) ([]byte, bool, error) {
	v, ok, err := bytesOf(m)
	if err != nil {
		return nil, false, s.d.fail(ctx, op, err)
	}
	return v, ok, nil
}

// bytesOf returns a string reply as bytes without copying them; a present
// empty value is a non-nil empty slice. A reply that came through the
// client cache shares its bytes with the cache, which is what the Backend
// contract allows (values are read-only to the caller) and what the memory
// backend does; Go strings are immutable, so nothing writes to them. Any
// other reply is the caller's alone: valkey-go reads every bulk string into
// a buffer of its own (resp.go, readB) and keeps no reference to a reply it
// has returned.
func bytesOf(m *valkey.ValkeyMessage) ([]byte, bool, error) {
	if m.IsNil() {
		return nil, false, nil
	}
	str, err := m.ToString()
	switch {
	case err != nil:
		return nil, false, err
	case len(str) == 0:
		return []byte{}, true, nil
	}
	return unsafe.Slice(unsafe.StringData(str), len(str)), true, nil
}

var _ backends.Backend = (*Store)(nil)
