package proxy

import (
	"math"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// String commands. Each follows Redis 7's order of checks (syntax, then
// arguments, then the key), so a request that is wrong in two ways gets the
// error Redis would give.

// GET key
func cmdGet(c *conn, args [][]byte) {
	r, k := c.key(args[1])
	if r == nil {
		return
	}
	v, ok, err := r.Backend.Get(c.ctx, k)
	c.writeValue(r, v, ok, err)
}

// withString answers a command about the string at key (OBJECT
// ENCODING, MEMORY USAGE): fn with its value, the null reply when it is
// absent, or the store's error.
func (c *conn) withString(key []byte, fn func(v []byte)) {
	r, k := c.key(key)
	if r == nil {
		return
	}
	v, ok, err := r.Backend.Get(c.ctx, k)
	if err != nil || !ok {
		c.writeValue(r, v, ok, err)
		return
	}
	fn(v)
}

// writeValue answers a read of one value.
func (c *conn) writeValue(r *route.Route, v []byte, ok bool, err error) {
	switch {
	case err != nil:
		c.backendErr(r, err)
	case !ok:
		c.writeNull()
	default:
		c.writeBulk(v)
	}
}

// SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]
func cmdSet(c *conn, args [][]byte) {
	o, ttl, bad := parseStrOpts(args[3:], "set")
	if bad != "" {
		c.writeError(bad)
		return
	}
	opts := backends.SetOptions{Get: o.get, TTL: ttl}
	switch {
	case o.nx:
		opts.Cond = backends.SetIfAbsent
	case o.xx:
		opts.Cond = backends.SetIfPresent
	}
	c.set(args[1], args[2], opts, false)
}

// set stores a value and answers as SET does, or SETNX (1 or 0) when asInt.
func (c *conn) set(key, val []byte, opts backends.SetOptions, asInt bool) {
	r, k := c.key(key)
	if r == nil {
		return
	}
	opts.AskCreated = c.wantsNew()
	res, err := r.Backend.Set(c.ctx, k, val, opts)
	if err == nil && res.Stored {
		c.newKey(res.Created, key)
		c.keyEvent(notifyString, "set", key)
		if opts.TTL.Mode == backends.TTLRelative || opts.TTL.Mode == backends.TTLAt {
			c.keyEvent(notifyGeneric, "expire", key)
		}
	}
	switch {
	case err != nil:
		c.backendErr(r, err)
	case asInt && res.Stored:
		c.writeInt(1)
	case asInt:
		c.writeInt(0)
	case opts.Get:
		c.writeValue(r, res.Old, res.OldFound, nil)
	case !res.Stored:
		c.writeNull()
	default:
		c.writeOK()
	}
}

// SETEX key seconds value
func cmdSetEx(c *conn, args [][]byte) { setEx(c, args, unitEX, "setex") }

// PSETEX key milliseconds value
func cmdPSetEx(c *conn, args [][]byte) { setEx(c, args, unitPX, "psetex") }

func setEx(c *conn, args [][]byte, u expireUnit, name string) {
	ttl, bad := expiryTTL(args[2], u, name)
	if bad != "" {
		c.writeError(bad)
		return
	}
	c.set(args[1], args[3], backends.SetOptions{TTL: ttl}, false)
}

// SETNX key value
func cmdSetNX(c *conn, args [][]byte) {
	c.set(args[1], args[2], backends.SetOptions{Cond: backends.SetIfAbsent}, true)
}

// GETDEL key
func cmdGetDel(c *conn, args [][]byte) {
	r, k := c.key(args[1])
	if r == nil {
		return
	}
	v, ok, err := backends.DoGetDel(c.ctx, r.Backend, k)
	c.writeValue(r, v, ok, err)
}

// GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]
func cmdGetEx(c *conn, args [][]byte) {
	_, ttl, bad := parseStrOpts(args[2:], "getex")
	if bad == errSyntax {
		c.writeError(bad)
		return
	}
	r, k := c.key(args[1])
	if r == nil {
		return
	}
	if bad != "" {
		// Redis answers nil for a missing key before it looks at the expiry.
		n, err := r.Backend.Exists(c.ctx, c.oneKey(k))
		switch {
		case err != nil:
			c.backendErr(r, err)
		case n == 0:
			c.writeNull()
		default:
			c.writeError(bad)
		}
		return
	}
	v, found, err := backends.DoGetEx(c.ctx, r.Backend, k, ttl)
	c.writeValue(r, v, found, err)
}

// MGET key [key ...]
func cmdMGet(c *conn, args [][]byte) {
	vals, ok := c.mget(args[1:])
	if !ok {
		return
	}
	c.writeArray(len(vals))
	for _, v := range vals {
		if v == nil {
			c.writeNull()
		} else {
			c.writeBulk(v)
		}
	}
	c.clearScratch()
}

// MSET key value [key value ...]
func cmdMSet(c *conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.writeError(errArity("mset"))
		return
	}
	var made []bool // by pair, when asked
	if c.wantsNew() {
		made = make([]bool, len(args)/2)
	}
	if c.mset(args[1:], made) {
		for i := 1; i < len(args); i += 2 {
			c.newKey(made != nil && made[i/2], args[i])
			c.keyEvent(notifyString, "set", args[i])
		}
		c.writeOK()
	}
}

// INCR key
func cmdIncr(c *conn, args [][]byte) { c.incr(args[1], 1) }

// DECR key
func cmdDecr(c *conn, args [][]byte) { c.incr(args[1], -1) }

// INCRBY key increment
func cmdIncrBy(c *conn, args [][]byte) {
	n, ok := parseInt(args[2])
	if !ok {
		c.writeError(errNotInteger)
		return
	}
	c.incr(args[1], n)
}

// DECRBY key decrement
func cmdDecrBy(c *conn, args [][]byte) {
	n, ok := parseInt(args[2])
	switch {
	case !ok:
		c.writeError(errNotInteger)
	case n == math.MinInt64:
		c.writeError(errDecrOverflow) // -n does not exist
	default:
		c.incr(args[1], -n)
	}
}

func (c *conn) incr(key []byte, delta int64) {
	r, k := c.key(key)
	if r == nil {
		return
	}
	u := backends.IncrBy{Delta: delta}
	if err := r.Backend.Update(c.ctx, k, &u); err != nil {
		c.backendErr(r, err)
		return
	}
	c.newKey(u.Created, key)
	c.keyEvent(notifyString, "incrby", key)
	c.writeInt(u.Result)
}

// maxValue bounds a value an update builds on route r: the route's
// max_value_bytes, or else the largest bulk a client may send
// (proto-max-bulk-len in Redis).
func (c *conn) maxValue(r *route.Route) int64 {
	if r.MaxValueBytes > 0 {
		return r.MaxValueBytes
	}
	return c.s.config().MaxBulkBytes
}

// update runs u on route r's key k; it answers a failure and returns false.
func (c *conn) update(r *route.Route, k string, u backends.Update) bool {
	if err := r.Backend.Update(c.ctx, k, u); err != nil {
		c.backendErr(r, err)
		return false
	}
	return true
}

// APPEND key value
func cmdAppend(c *conn, args [][]byte) {
	r, k := c.key(args[1])
	if r == nil {
		return
	}
	u := &backends.Append{Suffix: args[2], Max: c.maxValue(r)}
	if c.update(r, k, u) {
		c.newKey(u.Created, args[1])
		c.keyEvent(notifyString, "append", args[1])
		c.writeInt(u.Length)
	}
}

// SETRANGE key offset value
func cmdSetRange(c *conn, args [][]byte) {
	off, ok := parseInt(args[2])
	switch {
	case !ok:
		c.writeError(errNotInteger)
		return
	case off < 0:
		c.writeError("ERR offset is out of range")
		return
	}
	r, k := c.key(args[1])
	if r == nil {
		return
	}
	u := &backends.SetRange{Offset: off, Val: args[3], Max: c.maxValue(r)}
	if c.update(r, k, u) {
		c.newKey(u.Created, args[1])
		c.writeInt(u.Length)
	}
}

// INCRBYFLOAT key increment
func cmdIncrByFloat(c *conn, args [][]byte) {
	d, ok := backends.ParseFloat(args[2])
	if !ok {
		c.writeError("ERR value is not a valid float")
		return
	}
	r, k := c.key(args[1])
	if r == nil {
		return
	}
	u := &backends.IncrByFloat{Delta: d}
	if c.update(r, k, u) {
		c.newKey(u.Created, args[1])
		c.writeBulk(u.Result)
	}
}

// GETSET key value
func cmdGetSet(c *conn, args [][]byte) {
	c.set(args[1], args[2], backends.SetOptions{Get: true}, false)
}

// value reads key's value (nil when absent) for a command that answers
// from it; ok is false when it answered an error instead.
func (c *conn) value(key []byte) (v []byte, ok bool) {
	r, k := c.key(key)
	if r == nil {
		return nil, false
	}
	v, _, err := r.Backend.Get(c.ctx, k)
	if err != nil {
		c.backendErr(r, err)
		return nil, false
	}
	return v, true
}

// STRLEN key
func cmdStrLen(c *conn, args [][]byte) {
	if v, ok := c.value(args[1]); ok {
		c.writeInt(int64(len(v)))
	}
}

// GETRANGE key start end
// SUBSTR key start end
func cmdGetRange(c *conn, args [][]byte) {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.writeError(errNotInteger)
		return
	}
	if v, ok := c.value(args[1]); ok {
		c.writeBulk(substr(v, start, end))
	}
}

// substr is GETRANGE's slice of v, by Redis's rules for negative and
// out-of-range indexes.
func substr(v []byte, start, end int64) []byte {
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		return []byte{}
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return []byte{}
	}
	return v[start : end+1]
}

// MSETNX key value [key value ...]
//
// All or nothing, as one atomic run of the keys' route: keys on two routes
// are refused before anything is written. Every key it stores it made:
// none existed.
func cmdMSetNX(c *conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.writeError(errArity("msetnx"))
		return
	}
	r, keys, bad := c.routeOf(nil, nil, commands["msetnx"], args)
	if bad != "" {
		c.writeError(bad)
		return
	}
	stored := false
	committed := c.atomically(r, keys, false, func() {
		stored = false
		tx := c.viewOf(r)
		n, err := tx.Backend.Exists(c.ctx, keys)
		if err != nil {
			c.backendErr(r, err)
			return
		}
		if n > 0 {
			c.writeInt(0)
			return
		}
		pairs := make([]backends.KV, 0, len(keys))
		for i, k := range keys {
			pairs = append(pairs, backends.KV{Key: k, Val: args[2+2*i]})
		}
		if err := tx.Backend.MSet(c.ctx, pairs); err != nil {
			c.backendErr(r, err)
			return
		}
		stored = true
		c.writeInt(1)
	})
	if committed && stored {
		for i := 1; i < len(args); i += 2 {
			c.newKey(true, args[i])
		}
	}
}

const (
	errBitOffset = "ERR bit offset is not an integer or out of range"
	errBitValue  = "ERR bit is not an integer or out of range"
)

// bitOffset reads a SETBIT/GETBIT offset: not negative, and its byte
// within the largest value the route may hold.
func (c *conn) bitOffset(arg []byte, r *route.Route) (int64, bool) {
	off, ok := parseInt(arg)
	if !ok || off < 0 || off>>3 >= c.maxValue(r) {
		c.writeError(errBitOffset)
		return 0, false
	}
	return off, true
}

// SETBIT key offset value
func cmdSetBit(c *conn, args [][]byte) {
	r, k := c.key(args[1])
	if r == nil {
		return
	}
	off, ok := c.bitOffset(args[2], r)
	if !ok {
		return
	}
	bit, ok := parseInt(args[3])
	if !ok || (bit != 0 && bit != 1) {
		c.writeError(errBitValue)
		return
	}
	u := &backends.SetBit{Offset: off, Bit: byte(bit), Max: c.maxValue(r)}
	if c.update(r, k, u) {
		c.newKey(u.Created, args[1])
		c.writeInt(int64(u.Old))
	}
}

// GETBIT key offset
func cmdGetBit(c *conn, args [][]byte) {
	r, _ := c.t.ForKey(bstr(args[1]))
	if r == nil {
		c.writeError(errNoRoute(args[1]))
		return
	}
	off, ok := c.bitOffset(args[2], r)
	if !ok {
		return
	}
	v, ok := c.value(args[1])
	if !ok {
		return
	}
	var bit int64
	if i := off >> 3; i < int64(len(v)) && v[i]&(1<<(7-uint(off&7))) != 0 {
		bit = 1
	}
	c.writeInt(bit)
}
