package valkey

import (
	"context"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
)

// Set stores val as opts says: one SET with NX/XX, GET, PX/PXAT/KEEPTTL.
// It does not say whether it made the key (SetResult.Created), nor does
// MSet: the reply does not tell.
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
	old, found, err := s.value(ctx, "set", res)
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
	return s.countKeys(ctx, "del", keys, func(c *client, ks ...string) valkey.Completed {
		return c.B().Del().Key(ks...).Build()
	}, true)
}

// Update runs the updates Valkey has a command for as that command, and
// any other as a watched read and a MULTI/EXEC write (updateWatched).
func (s *Store) Update(ctx context.Context, key string, u backends.Update) error {
	return backends.RunUpdate(ctx, s, key, u, s.updateWatched)
}

// GetDel returns the value of key and removes it (GETDEL).
func (s *Store) GetDel(ctx context.Context, key string) ([]byte, bool, error) {
	res, err := one(ctx, s, "getdel", key, true, func(c *client, k string) valkey.Completed {
		return c.B().Getdel().Key(k).Build()
	}, reply)
	if err != nil {
		return nil, false, err
	}
	return s.value(ctx, "getdel", res)
}

// GetEx returns the value of key and changes its expiry (GETEX); with
// TTLKeep it is a plain Get, through the client cache.
func (s *Store) GetEx(ctx context.Context, key string, ttl backends.TTL) ([]byte, bool, error) {
	if ttl.Mode == backends.TTLKeep {
		return s.Get(ctx, key)
	}
	res, err := one(ctx, s, "getex", key, true, func(c *client, k string) valkey.Completed {
		cmd := c.B().Arbitrary("GETEX").Keys(k)
		if unit, n, ok := expiryArgs(ttl); ok {
			return cmd.Args(unit, n).Build()
		}
		return cmd.Args("PERSIST").Build()
	}, reply)
	if err != nil {
		return nil, false, err
	}
	return s.value(ctx, "getex", res)
}

// IncrBy adds delta to the integer at key (INCRBY).
func (s *Store) IncrBy(ctx context.Context, key string, delta int64) (int64, bool, error) {
	n, err := one(ctx, s, "incrby", key, true, func(c *client, k string) valkey.Completed {
		return c.B().Incrby().Key(k).Increment(delta).Build()
	}, valkey.ValkeyResult.AsInt64)
	return n, false, err // INCRBY does not say whether it made the key
}

// Expire changes the expiry of key: PEXPIRE or PEXPIREAT with NX/XX/GT/LT,
// or PERSIST for TTLNone.
func (s *Store) Expire(ctx context.Context, key string, ttl backends.TTL, cond backends.ExpireCond) (bool, error) {
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
	return one(ctx, s, "expire", key, true, func(c *client, k string) valkey.Completed {
		cmd := c.B().Arbitrary(name).Keys(k)
		if when != "" {
			cmd = cmd.Args(when)
			if arg := expireCondArg[cond]; arg != "" {
				cmd = cmd.Args(arg)
			}
		}
		return cmd.Build()
	}, valkey.ValkeyResult.AsBool)
}

var expireCondArg = [...]string{
	backends.ExpireAlways:    "",
	backends.ExpireIfNone:    "NX",
	backends.ExpireIfSet:     "XX",
	backends.ExpireIfGreater: "GT",
	backends.ExpireIfLess:    "LT",
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

var (
	_ backends.NativeGetDel = (*Store)(nil)
	_ backends.NativeGetEx  = (*Store)(nil)
	_ backends.NativeIncrBy = (*Store)(nil)
	_ backends.NativeExpire = (*Store)(nil)
)
