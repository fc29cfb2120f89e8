package proxy

import (
	"context"
	"math"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Key commands.

// DEL key [key ...]
// UNLINK key [key ...] (the same here: no backend frees memory lazily)
func cmdDel(c *conn, args [][]byte) {
	if n, ok := c.count(args[1:], backends.Backend.Del); ok {
		if n > 0 { // which keys were there, the stores do not say: each named
			for _, k := range args[1:] {
				c.keyEvent(notifyGeneric, "del", k)
			}
		}
		c.writeInt(n)
	}
}

// EXISTS key [key ...]
func cmdExists(c *conn, args [][]byte) {
	if n, ok := c.count(args[1:], backends.Backend.Exists); ok {
		c.writeInt(n)
	}
}

// EXPIRE key seconds [NX|XX|GT|LT]
func cmdExpire(c *conn, args [][]byte) { expire(c, args, 1000, "expire", false) }

// PEXPIRE key milliseconds [NX|XX|GT|LT]
func cmdPExpire(c *conn, args [][]byte) { expire(c, args, 1, "pexpire", false) }

// EXPIREAT key unix-time-seconds [NX|XX|GT|LT]
func cmdExpireAt(c *conn, args [][]byte) { expire(c, args, 1000, "expireat", true) }

// PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]
func cmdPExpireAt(c *conn, args [][]byte) { expire(c, args, 1, "pexpireat", true) }

// expire is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT (abs: the time is a
// unix time, not one from now), with the checks of Redis 7's
// expireGenericCommand in its order: options, the number, its overflow,
// then the key. A time not in the future deletes the key.
func expire(c *conn, args [][]byte, msPerUnit int64, name string, abs bool) {
	cond, xxLT, bad := parseExpireCond(args[3:])
	if bad != "" {
		c.writeError(bad)
		return
	}
	when, ok := parseInt(args[2])
	if !ok {
		c.writeError(errNotInteger)
		return
	}
	if when > math.MaxInt64/msPerUnit || when < math.MinInt64/msPerUnit {
		c.writeError(errExpireTime(name))
		return
	}
	when *= msPerUnit
	now := time.Now()
	if !abs && when > math.MaxInt64-now.UnixMilli() {
		c.writeError(errExpireTime(name))
		return
	}
	r, k := c.key(args[1])
	if r == nil {
		return
	}
	if xxLT {
		// XX with LT: the backend's LT counts no expiry as infinite, so a
		// key without one would pass; XX says it must not. A PERSIST racing
		// between the two calls can still slip through: a narrow window,
		// for an option pair few use.
		d, err := r.Backend.TTL(c.ctx, k)
		if err != nil {
			c.backendErr(r, err)
			return
		}
		if d < 0 {
			c.writeInt(0)
			return
		}
	}
	t := relTTL(when, now)
	if abs {
		t = atTTL(max(when, 0)) // any past time deletes; 1970 is one time.Time holds
	}
	changed, err := backends.DoExpire(c.ctx, r.Backend, k, t, cond)
	if changed {
		c.keyEvent(notifyGeneric, "expire", args[1])
	}
	c.writeBool(r, changed, err)
}

// parseExpireCond reads EXPIRE's options as Redis 7 does. xxLT reports XX
// with LT, which backends.ExpireCond cannot say in one value; XX with GT is
// GT, which already needs an expiry.
func parseExpireCond(opts [][]byte) (cond backends.ExpireCond, xxLT bool, bad string) {
	var nx, xx, gt, lt bool
	for _, o := range opts {
		switch {
		case is(o, "nx"):
			nx = true
		case is(o, "xx"):
			xx = true
		case is(o, "gt"):
			gt = true
		case is(o, "lt"):
			lt = true
		default:
			return 0, false, "ERR Unsupported option " + string(clip(o, len(o)))
		}
	}
	switch {
	case nx && (xx || gt || lt):
		return 0, false, errExpireNXOthers
	case gt && lt:
		return 0, false, errExpireGTLT
	case nx:
		return backends.ExpireIfNone, false, ""
	case gt:
		return backends.ExpireIfGreater, false, ""
	case lt:
		return backends.ExpireIfLess, xx, ""
	case xx:
		return backends.ExpireIfSet, false, ""
	}
	return backends.ExpireAlways, false, ""
}

// TTL key
func cmdTTL(c *conn, args [][]byte) { ttl(c, args[1], false, false) }

// PTTL key
func cmdPTTL(c *conn, args [][]byte) { ttl(c, args[1], true, false) }

// ttl answers TTL, PTTL, EXPIRETIME and PEXPIRETIME as Redis's
// ttlGenericCommand does: -2 for a missing key, -1 for one without
// expiry, else the time left (abs: the deadline, as a unix time) in
// milliseconds (ms), or in seconds rounded to the nearest.
func ttl(c *conn, key []byte, ms, abs bool) {
	r, k := c.key(key)
	if r == nil {
		return
	}
	t, err := keyTime(c.ctx, r.Backend, k, abs)
	switch {
	case err != nil:
		c.backendErr(r, err)
	case t < 0, ms:
		c.writeInt(t)
	default:
		c.writeInt((t + 500) / 1000)
	}
}

// keyTime is the time left of key k in milliseconds (abs: its deadline as
// a unix time in milliseconds), or TTLMissing (-2) or TTLPersistent (-1).
// A store that cannot say a deadline exactly (a table route) gives it
// from its TTL.
func keyTime(ctx context.Context, b backends.Backend, k string, abs bool) (int64, error) {
	if abs {
		if et, ok := backends.As[backends.ExpireTimer](b); ok {
			return et.ExpireTime(ctx, k)
		}
	}
	d, err := b.TTL(ctx, k)
	switch {
	case err != nil, d == backends.TTLMissing, d == backends.TTLPersistent:
		return int64(d), err
	case abs:
		return time.Now().Add(max(d, 0)).UnixMilli(), nil
	}
	return int64(max(d, 0) / time.Millisecond), nil
}

// PERSIST key
func cmdPersist(c *conn, args [][]byte) {
	r, k := c.key(args[1])
	if r == nil {
		return
	}
	changed, err := backends.DoExpire(c.ctx, r.Backend, k, backends.TTL{Mode: backends.TTLNone}, backends.ExpireAlways)
	if changed {
		c.keyEvent(notifyGeneric, "persist", args[1])
	}
	c.writeBool(r, changed, err)
}

// writeBool answers 1 or 0 for a change that was made or not.
func (c *conn) writeBool(r *route.Route, changed bool, err error) {
	switch {
	case err != nil:
		c.backendErr(r, err)
	case changed:
		c.writeInt(1)
	default:
		c.writeInt(0)
	}
}
