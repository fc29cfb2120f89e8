package valkey

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"
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

// Get returns the value of key, from the client cache when it is on.
func (s *Store) Get(ctx context.Context, key string) ([]byte, bool, error) {
	cctx, done, c, err := s.d.begin(ctx, "get")
	if err != nil {
		return nil, false, err
	}
	defer done()
	k := s.key(key)
	if s.d.cache != nil {
		res := c.DoCache(cctx, c.B().Get().Key(k).Cache(), s.d.cache.ttl)
		if !errors.Is(res.Error(), errRefetch) {
			s.d.stats.cached(res.IsCacheHit())
			return s.value(ctx, "get", res, true)
		}
		s.d.stats.refetches.Add(1)
	}
	return s.value(ctx, "get", c.Do(cctx, c.B().Get().Key(k).Build()), false)
}

// MGet appends the value of each key, or nil, to dst.
func (s *Store) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	if len(keys) == 0 {
		return dst, nil
	}
	cctx, done, c, err := s.d.begin(ctx, "mget")
	if err != nil {
		return dst, err
	}
	defer done()
	ks := s.keys(keys)
	if s.d.cache != nil {
		msgs, err := s.mgetCached(cctx, c, ks)
		if !errors.Is(err, errRefetch) {
			return s.appendValues(ctx, dst, msgs, err, true)
		}
		s.d.stats.refetches.Add(1)
	}
	msgs, err := s.mget(cctx, c, ks)
	return s.appendValues(ctx, dst, msgs, err, false)
}

// mgetCached reads keys through the client cache: one MGET of the missing
// keys on a standalone server, one cached GET per key in a cluster.
func (s *Store) mgetCached(ctx context.Context, c *client, keys []string) ([]valkey.ValkeyMessage, error) {
	if !c.cluster {
		msgs, err := c.DoCache(ctx, c.B().Mget().Key(keys...).Cache(), s.d.cache.ttl).ToArray()
		for i := range msgs {
			s.d.stats.cached(msgs[i].IsCacheHit())
		}
		return msgs, err
	}
	cmds := make([]valkey.CacheableTTL, len(keys))
	for i, k := range keys {
		cmds[i] = valkey.CT(c.B().Get().Key(k).Cache(), s.d.cache.ttl)
	}
	return s.messages(c.DoMultiCache(ctx, cmds...), true)
}

// mget reads keys uncached.
func (s *Store) mget(ctx context.Context, c *client, keys []string) ([]valkey.ValkeyMessage, error) {
	if !c.cluster {
		return c.Do(ctx, c.B().Mget().Key(keys...).Build()).ToArray()
	}
	cmds := make(valkey.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = c.B().Get().Key(k).Build()
	}
	return s.messages(c.DoMulti(ctx, cmds...), false)
}

// messages collects the replies of single-key reads, failing on the first
// error (a nil reply is not one).
func (s *Store) messages(results []valkey.ValkeyResult, cached bool) ([]valkey.ValkeyMessage, error) {
	msgs := make([]valkey.ValkeyMessage, len(results))
	for i, r := range results {
		m, err := r.ToMessage()
		if err != nil && !valkey.IsValkeyNil(err) {
			return nil, err
		}
		if cached {
			s.d.stats.cached(r.IsCacheHit())
		}
		msgs[i] = m
	}
	return msgs, nil
}

func (s *Store) appendValues(ctx context.Context, dst [][]byte, msgs []valkey.ValkeyMessage, err error, shared bool) ([][]byte, error) {
	if err != nil {
		return dst, s.d.fail(ctx, "mget", err)
	}
	for i := range msgs {
		v, ok, err := bytesOf(&msgs[i], shared)
		if err != nil {
			return dst, s.d.fail(ctx, "mget", err)
		}
		if !ok {
			v = nil
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// Set stores val as opts says: one SET with NX/XX, GET, PX/PXAT/KEEPTTL.
func (s *Store) Set(ctx context.Context, key string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	cctx, done, c, err := s.d.begin(ctx, "set")
	if err != nil {
		return backends.SetResult{}, err
	}
	defer done()
	k := s.key(key)
	// The value is copied into a string: valkey-go may still be writing the
	// command after a call that timed out returns, while the caller's
	// buffer is only borrowed for the call.
	cmd := c.B().Arbitrary("SET").Keys(k).Args(string(val))
	switch opts.Cond {
	case backends.SetIfAbsent:
		cmd = cmd.Args("NX")
	case backends.SetIfPresent:
		cmd = cmd.Args("XX")
	}
	if opts.Get {
		cmd = cmd.Args("GET")
	}
	if opts.TTL.Mode == backends.TTLKeep {
		cmd = cmd.Args("KEEPTTL")
	} else if unit, n, ok := expiryArgs(opts.TTL); ok {
		cmd = cmd.Args(unit, n)
	}
	res := c.Do(cctx, cmd.Build())
	s.written(k)
	if !opts.Get {
		if err := res.Error(); err != nil {
			if valkey.IsValkeyNil(err) {
				return backends.SetResult{}, nil // NX or XX refused
			}
			return backends.SetResult{}, s.d.fail(ctx, "set", err)
		}
		return backends.SetResult{Stored: true}, nil
	}
	// SET … GET answers the old value; with NX or XX, whether it stored
	// follows from whether there was one.
	old, found, err := s.value(ctx, "set", res, false)
	if err != nil {
		return backends.SetResult{}, err
	}
	stored := true
	switch opts.Cond {
	case backends.SetIfAbsent:
		stored = !found
	case backends.SetIfPresent:
		stored = found
	}
	return backends.SetResult{Stored: stored, Old: old, OldFound: found}, nil
}

// expiryArgs turns a TTL into SET's or GETEX's PX or PXAT, in milliseconds.
// A relative TTL rounds up, so a positive one never becomes PX 0 (which the
// server refuses); a deadline not in the future becomes PXAT 1, which the
// server takes and which removes the key at once. ok is false for TTLNone
// and TTLKeep.
func expiryArgs(t backends.TTL) (unit, n string, ok bool) {
	switch t.Mode {
	case backends.TTLRelative:
		if t.D > 0 {
			return "PX", strconv.FormatInt(ceilMillis(t.D), 10), true
		}
		return "PXAT", "1", true
	case backends.TTLAt:
		return "PXAT", strconv.FormatInt(max(t.At.UnixMilli(), 1), 10), true
	}
	return "", "", false
}

func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// MSet stores every pair with no expiry: one MSET (atomic) on a standalone
// server, one SET per pair in a cluster.
func (s *Store) MSet(ctx context.Context, pairs []backends.KV) error {
	if len(pairs) == 0 {
		return nil
	}
	cctx, done, c, err := s.d.begin(ctx, "mset")
	if err != nil {
		return err
	}
	defer done()
	keys := make([]string, len(pairs))
	for i, p := range pairs {
		keys[i] = s.key(p.Key)
	}
	if !c.cluster {
		cmd := c.B().Arbitrary("MSET")
		for i, p := range pairs {
			cmd = cmd.Keys(keys[i]).Args(string(p.Val))
		}
		err = c.Do(cctx, cmd.Build()).Error()
	} else {
		cmds := make(valkey.Commands, len(pairs))
		for i, p := range pairs {
			cmds[i] = c.B().Set().Key(keys[i]).Value(string(p.Val)).Build()
		}
		err = firstError(c.DoMulti(cctx, cmds...))
	}
	s.written(keys...)
	if err != nil {
		return s.d.fail(ctx, "mset", err)
	}
	return nil
}

// Del removes keys and counts those that existed.
func (s *Store) Del(ctx context.Context, keys []string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	cctx, done, c, err := s.d.begin(ctx, "del")
	if err != nil {
		return 0, err
	}
	defer done()
	ks := s.keys(keys)
	var n int64
	if !c.cluster {
		n, err = c.Do(cctx, c.B().Del().Key(ks...).Build()).AsInt64()
	} else {
		cmds := make(valkey.Commands, len(ks))
		for i, k := range ks {
			cmds[i] = c.B().Del().Key(k).Build()
		}
		n, err = sum(c.DoMulti(cctx, cmds...))
	}
	s.written(ks...)
	if err != nil {
		return 0, s.d.fail(ctx, "del", err)
	}
	return n, nil
}

// Exists counts the keys that exist, a key named twice twice.
func (s *Store) Exists(ctx context.Context, keys []string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	cctx, done, c, err := s.d.begin(ctx, "exists")
	if err != nil {
		return 0, err
	}
	defer done()
	ks := s.keys(keys)
	var n int64
	if !c.cluster {
		n, err = c.Do(cctx, c.B().Exists().Key(ks...).Build()).AsInt64()
	} else {
		cmds := make(valkey.Commands, len(ks))
		for i, k := range ks {
			cmds[i] = c.B().Exists().Key(k).Build()
		}
		n, err = sum(c.DoMulti(cctx, cmds...))
	}
	if err != nil {
		return 0, s.d.fail(ctx, "exists", err)
	}
	return n, nil
}

// GetDel returns the value of key and removes it (GETDEL).
func (s *Store) GetDel(ctx context.Context, key string) ([]byte, bool, error) {
	cctx, done, c, err := s.d.begin(ctx, "getdel")
	if err != nil {
		return nil, false, err
	}
	defer done()
	k := s.key(key)
	res := c.Do(cctx, c.B().Getdel().Key(k).Build())
	s.written(k)
	return s.value(ctx, "getdel", res, false)
}

// GetEx returns the value of key and changes its expiry (GETEX); with
// TTLKeep it is a plain Get, through the client cache.
func (s *Store) GetEx(ctx context.Context, key string, ttl backends.TTL) ([]byte, bool, error) {
	if ttl.Mode == backends.TTLKeep {
		return s.Get(ctx, key)
	}
	cctx, done, c, err := s.d.begin(ctx, "getex")
	if err != nil {
		return nil, false, err
	}
	defer done()
	k := s.key(key)
	cmd := c.B().Arbitrary("GETEX").Keys(k)
	if unit, n, ok := expiryArgs(ttl); ok {
		cmd = cmd.Args(unit, n)
	} else {
		cmd = cmd.Args("PERSIST")
	}
	res := c.Do(cctx, cmd.Build())
	s.written(k)
	return s.value(ctx, "getex", res, false)
}

// IncrBy adds delta to the integer at key (INCRBY).
func (s *Store) IncrBy(ctx context.Context, key string, delta int64) (int64, error) {
	cctx, done, c, err := s.d.begin(ctx, "incrby")
	if err != nil {
		return 0, err
	}
	defer done()
	k := s.key(key)
	n, err := c.Do(cctx, c.B().Incrby().Key(k).Increment(delta).Build()).AsInt64()
	s.written(k)
	if err != nil {
		return 0, s.d.fail(ctx, "incrby", err)
	}
	return n, nil
}

// Expire changes the expiry of key: PEXPIRE or PEXPIREAT with NX/XX/GT/LT,
// or PERSIST for TTLNone.
func (s *Store) Expire(ctx context.Context, key string, ttl backends.TTL, cond backends.ExpireCond) (bool, error) {
	cctx, done, c, err := s.d.begin(ctx, "expire")
	if err != nil {
		return false, err
	}
	defer done()
	k := s.key(key)
	name, when := "PERSIST", ""
	switch ttl.Mode {
	case backends.TTLRelative:
		// Unlike SET, PEXPIRE takes 0 and negative times (the key goes).
		ms := ttl.D.Milliseconds()
		if ttl.D > 0 {
			ms = ceilMillis(ttl.D)
		}
		name, when = "PEXPIRE", strconv.FormatInt(ms, 10)
	case backends.TTLAt:
		name, when = "PEXPIREAT", strconv.FormatInt(ttl.At.UnixMilli(), 10)
	}
	cmd := c.B().Arbitrary(name).Keys(k)
	if when != "" {
		cmd = cmd.Args(when)
		if arg := expireCondArg[cond]; arg != "" {
			cmd = cmd.Args(arg)
		}
	}
	changed, err := c.Do(cctx, cmd.Build()).AsBool()
	s.written(k)
	if err != nil {
		return false, s.d.fail(ctx, "expire", err)
	}
	return changed, nil
}

var expireCondArg = [...]string{
	backends.ExpireAlways:    "",
	backends.ExpireIfNone:    "NX",
	backends.ExpireIfSet:     "XX",
	backends.ExpireIfGreater: "GT",
	backends.ExpireIfLess:    "LT",
}

// TTL returns the remaining time to live of key (PTTL).
func (s *Store) TTL(ctx context.Context, key string) (time.Duration, error) {
	cctx, done, c, err := s.d.begin(ctx, "ttl")
	if err != nil {
		return 0, err
	}
	defer done()
	ms, err := c.Do(cctx, c.B().Pttl().Key(s.key(key)).Build()).AsInt64()
	if err != nil {
		return 0, s.d.fail(ctx, "ttl", err)
	}
	switch ms {
	case -2:
		return backends.TTLMissing, nil
	case -1:
		return backends.TTLPersistent, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
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

func firstError(results []valkey.ValkeyResult) error {
	for _, r := range results {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

func sum(results []valkey.ValkeyResult) (int64, error) {
	var n int64
	for _, r := range results {
		v, err := r.AsInt64()
		if err != nil {
			return 0, err
		}
		n += v
	}
	return n, nil
}

var _ backends.Backend = (*Store)(nil)
