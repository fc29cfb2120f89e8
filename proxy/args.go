package proxy

import (
	"math"
	"time"
	"unsafe"

	"github.com/pgcache/pgcache/backends"
)

// bstr views b as a string without copying. The string lives only as long
// as b's contents: it is for map lookups and for keys lent to a backend for
// one call (backends copy what they keep), never for keeping.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// is reports whether arg is the lowercase word w, ignoring ASCII case, as
// Redis's strcasecmp compares options.
func is(arg []byte, w string) bool {
	if len(arg) != len(w) {
		return false
	}
	for i := range len(w) {
		c := arg[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// parseInt reads an integer argument as Redis's string2ll does.
func parseInt(b []byte) (int64, bool) { return backends.ParseInt(b) }

// maxDeadline is the latest expiry pgcache hands a backend: the last instant
// time.Time.UnixNano can represent, in 2262. Redis accepts later ones; a key
// given one here lives until then, which no one will tell apart.
var maxDeadline = time.Unix(0, math.MaxInt64)

// relTTL is an expiry ms milliseconds after now. Far-off ones are clamped to
// maxDeadline, and any past one (which deletes the key) to one millisecond
// ago, so no backend has to add durations that overflow.
func relTTL(ms int64, now time.Time) backends.TTL {
	if ms < 0 {
		ms = -1
	}
	if limit := int64(maxDeadline.Sub(now) / time.Millisecond); ms >= limit {
		return backends.TTL{Mode: backends.TTLAt, At: maxDeadline}
	}
	return backends.TTL{Mode: backends.TTLRelative, D: time.Duration(ms) * time.Millisecond}
}

// atTTL is an expiry at the unix time ms, in milliseconds (positive: Redis
// refuses the rest), clamped to maxDeadline.
func atTTL(ms int64) backends.TTL {
	if ms >= maxDeadline.UnixMilli() {
		return backends.TTL{Mode: backends.TTLAt, At: maxDeadline}
	}
	return backends.TTL{Mode: backends.TTLAt, At: time.UnixMilli(ms)}
}

// expireUnit is how a SET or GETEX expiry is given.
type expireUnit uint8

const (
	noExpire expireUnit = iota
	unitEX              // seconds from now
	unitPX              // milliseconds from now
	unitEXAT            // unix time in seconds
	unitPXAT            // unix time in milliseconds
)

// strOpts are the options of SET and GETEX.
type strOpts struct {
	forSet                        bool
	nx, xx, get, keepTTL, persist bool
	unit                          expireUnit
	expire                        []byte
}

// parseStrOpts reads SET's options (cmd "set") or GETEX's, accepting and
// refusing exactly the combinations Redis 7's parseExtendedStringArguments
// does: an option that conflicts with one already given is a syntax error,
// but repeating one is not (EX 10 EX 20 means EX 20). It returns the expiry
// they ask for (strOpts.ttl), or the error reply: errSyntax, which Redis
// answers before anything else, or the expiry's.
func parseStrOpts(args [][]byte, cmd string) (strOpts, backends.TTL, string) {
	forSet := cmd == "set"
	o := strOpts{forSet: forSet}
	for j := 0; j < len(args); j++ {
		a := args[j]
		hasNext := j+1 < len(args)
		noTTL := o.unit == noExpire
		switch {
		case forSet && is(a, "nx") && !o.xx:
			o.nx = true
		case forSet && is(a, "xx") && !o.nx:
			o.xx = true
		case forSet && is(a, "get"):
			o.get = true
		case forSet && is(a, "keepttl") && noTTL:
			o.keepTTL = true
		case !forSet && is(a, "persist") && noTTL:
			o.persist = true
		case is(a, "ex") && o.expireAllowed(unitEX) && hasNext,
			is(a, "px") && o.expireAllowed(unitPX) && hasNext,
			is(a, "exat") && o.expireAllowed(unitEXAT) && hasNext,
			is(a, "pxat") && o.expireAllowed(unitPXAT) && hasNext:
			o.unit = unitOf(a)
			o.expire = args[j+1]
			j++
		default:
			return o, backends.TTL{}, errSyntax
		}
	}
	ttl, bad := o.ttl(cmd)
	return o, ttl, bad
}

// expireAllowed: an expiry may follow no KEEPTTL or PERSIST, and no expiry
// of another unit.
func (o *strOpts) expireAllowed(u expireUnit) bool {
	return !o.keepTTL && !o.persist && (o.unit == noExpire || o.unit == u)
}

func unitOf(a []byte) expireUnit {
	switch {
	case is(a, "ex"):
		return unitEX
	case is(a, "px"):
		return unitPX
	case is(a, "exat"):
		return unitEXAT
	}
	return unitPXAT
}

// ttl is the expiry the options ask for, or the error reply: an expiry
// option as Redis's getExpireMillisecondsOrReply checks it (cmd names the
// command in the reply); KEEPTTL keeps the key's, PERSIST removes it; with
// none of them SET removes it and GETEX keeps it.
func (o *strOpts) ttl(cmd string) (backends.TTL, string) {
	switch {
	case o.unit != noExpire:
		return expiryTTL(o.expire, o.unit, cmd)
	case o.keepTTL, !o.forSet && !o.persist:
		return backends.TTL{Mode: backends.TTLKeep}, ""
	}
	return backends.TTL{Mode: backends.TTLNone}, ""
}

func expiryTTL(arg []byte, u expireUnit, cmd string) (backends.TTL, string) {
	ms, ok := parseInt(arg)
	if !ok {
		return backends.TTL{}, errNotInteger
	}
	seconds := u == unitEX || u == unitEXAT
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		return backends.TTL{}, errExpireTime(cmd)
	}
	if seconds {
		ms *= 1000
	}
	if u == unitEXAT || u == unitPXAT {
		return atTTL(ms), ""
	}
	now := time.Now()
	if ms > math.MaxInt64-now.UnixMilli() {
		return backends.TTL{}, errExpireTime(cmd) // Redis's deadline would overflow
	}
	return relTTL(ms, now), ""
}
