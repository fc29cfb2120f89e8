package valkey

import (
	"context"
	"errors"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
)

// Get returns the value of key, from the client cache when it is on.
func (s *Store) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if s.d.cache != nil {
		var buf [keyBuf]byte
		if m, ok := s.d.cache.hit(s.lookupKey(buf[:], key), time.Now().UnixMilli()); ok {
			s.d.stats.cached(true)
			return s.message(ctx, "get", &m)
		}
	}
	return s.getThrough(ctx, key)
}

// getThrough is Get past the client cache's own hits: through valkey-go,
// with DoCache when the client cache is on. BenchmarkClientCacheHit calls
// it as the alternative to those hits.
func (s *Store) getThrough(ctx context.Context, key string) ([]byte, bool, error) {
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
			return s.value(ctx, "get", res)
		}
		s.d.stats.refetches.Add(1)
		s.d.cache.unwatched(s.prefix, key) // see notify.go
	}
	return s.value(ctx, "get", c.Do(cctx, c.B().Get().Key(k).Build()))
}

// MGet appends the value of each key, or nil, to dst.
func (s *Store) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	if len(keys) == 0 {
		return dst, nil
	}
	if s.d.cache != nil {
		if out, ok := s.mgetHits(keys, dst); ok {
			return out, nil
		}
	}
	return s.mgetThrough(ctx, keys, dst)
}

// mgetThrough is MGet past the client cache's own hits (see getThrough).
func (s *Store) mgetThrough(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	cctx, done, c, err := s.d.begin(ctx, "mget")
	if err != nil {
		return dst, err
	}
	defer done()
	ks := s.keys(keys)
	if s.d.cache != nil {
		msgs, err := s.mgetCached(cctx, c, ks)
		if !errors.Is(err, errRefetch) {
			return s.appendValues(ctx, dst, msgs, err)
		}
		s.d.stats.refetches.Add(1)
		s.d.cache.unwatched(s.prefix, keys...)
	}
	msgs, err := s.mget(cctx, c, ks)
	return s.appendValues(ctx, dst, msgs, err)
}

// mgetHits appends the values of keys if every one is a client-cache hit
// (see clientCache.hit); otherwise it appends nothing, and the keys are
// read as one MGET.
func (s *Store) mgetHits(keys []string, dst [][]byte) ([][]byte, bool) {
	var buf [keyBuf]byte
	ms := time.Now().UnixMilli()
	n := len(dst)
	for _, k := range keys {
		m, ok := s.d.cache.hit(s.lookupKey(buf[:], k), ms)
		if !ok {
			return dst[:n], false
		}
		v, present, err := bytesOf(&m)
		if err != nil {
			return dst[:n], false
		}
		if !present {
			v = nil
		}
		dst = append(dst, v)
	}
	s.d.stats.hits.Add(int64(len(keys)))
	return dst, true
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
// error. A nil reply is not one, and neither is WRONGTYPE: MGET answers nil
// for a key that does not hold a string, and so must GETs standing in for it.
func (s *Store) messages(results []valkey.ValkeyResult, cached bool) ([]valkey.ValkeyMessage, error) {
	msgs := make([]valkey.ValkeyMessage, len(results))
	for i, r := range results {
		m, err := r.ToMessage()
		if err != nil && !valkey.IsValkeyNil(err) && !wrongType(err) {
			return nil, err
		}
		if cached {
			s.d.stats.cached(r.IsCacheHit())
		}
		msgs[i] = m
	}
	return msgs, nil
}

func (s *Store) appendValues(ctx context.Context, dst [][]byte, msgs []valkey.ValkeyMessage, err error) ([][]byte, error) {
	if err != nil {
		return dst, s.d.fail(ctx, "mget", err)
	}
	for i := range msgs {
		v, ok, err := bytesOf(&msgs[i])
		if err != nil && !wrongType(err) {
			return dst, s.d.fail(ctx, "mget", err)
		}
		if !ok {
			v = nil
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// Exists counts the keys that exist, a key named twice twice.
func (s *Store) Exists(ctx context.Context, keys []string) (int64, error) {
	s.d.cache.unwatched(s.prefix, keys...) // uncached: see notify.go
	return s.countKeys(ctx, "exists", keys, func(c *client, ks ...string) valkey.Completed {
		return c.B().Exists().Key(ks...).Build()
	}, false)
}

// countKeys runs a command that takes keys and answers how many it
// counted (EXISTS, DEL): one command standalone; in a cluster, where keys
// may live on different nodes, one per key in one round trip, summed.
// written marks the keys written, as every write does.
func (s *Store) countKeys(ctx context.Context, op string, keys []string, build func(c *client, ks ...string) valkey.Completed, written bool) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	cctx, done, c, err := s.d.begin(ctx, op)
	if err != nil {
		return 0, err
	}
	defer done()
	ks := s.keys(keys)
	var n int64
	if !c.cluster {
		n, err = c.Do(cctx, build(c, ks...)).AsInt64()
	} else {
		cmds := make(valkey.Commands, len(ks))
		for i, k := range ks {
			cmds[i] = build(c, k)
		}
		n, err = sum(c.DoMulti(cctx, cmds...))
	}
	if written {
		s.written(ks...)
	}
	if err != nil {
		return 0, s.d.fail(ctx, op, err)
	}
	return n, nil
}

// TTL returns the remaining time to live of key (PTTL).
func (s *Store) TTL(ctx context.Context, key string) (time.Duration, error) {
	s.d.cache.unwatched(s.prefix, key) // uncached: see notify.go
	ms, err := one(ctx, s, "ttl", key, false, func(c *client, k string) valkey.Completed {
		return c.B().Pttl().Key(k).Build()
	}, valkey.ValkeyResult.AsInt64)
	if err != nil {
		return 0, err
	}
	switch ms {
	case -2:
		return backends.TTLMissing, nil
	case -1:
		return backends.TTLPersistent, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}
