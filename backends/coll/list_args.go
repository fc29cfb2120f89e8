package coll

import (
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// Argument parsing the list commands need, as Redis 7.0 parses: integers
// as string2ll does, timeouts as getTimeoutFromObjectOrReply does. The
// number helpers are not list-specific (BZPOPMIN parses the same timeout):
// they belong in a shared file once the types are merged.

// longStrSize is Redis's LONG_STR_SIZE: a longer argument is no integer.
const longStrSize = 21

// parseLong reads an integer as Redis's string2ll: an optional '-', no
// '+', no leading zeros, no spaces, within int64.
func parseLong(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) >= longStrSize {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true // -(1<<63) wraps to MinInt64, as wanted
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// longArg is getLongFromObjectOrReply: an integer, or Redis's error.
func longArg(b []byte) (int64, error) {
	n, ok := parseLong(b)
	if !ok {
		return 0, errNotInteger
	}
	return n, nil
}

// rangeArg is getRangeLongFromObjectOrReply with a message: an integer in
// [lo, hi], or msg when it is not one or is out of that range (Redis uses
// the one message for both).
func rangeArg(b []byte, lo, hi int64, msg backends.Refusal) (int64, error) {
	n, ok := parseLong(b)
	if !ok || n < lo || n > hi {
		return 0, msg
	}
	return n, nil
}

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: a longer argument is
// no number.
const maxLongDoubleChars = 5 * 1024

var (
	errTimeoutNotFloat = backends.Refusal("ERR timeout is not a float or out of range")
	errTimeoutNegative = backends.Refusal("ERR timeout is negative")
)

// parseTimeout reads a blocking command's timeout in seconds as Redis 7.0
// does: strtold's syntax (decimal or hexadecimal, inf; no spaces, no nan),
// the value as an x87 long double (a 64-bit mantissa), ceil(value*1000)
// milliseconds converted to a long long, where anything out of its range
// (inf, 1e20) becomes LLONG_MIN and so is "negative". 0 is forever; so is
// a timeout too large for a Duration (Redis's absolute deadline overflows,
// and it never fires).
func parseTimeout(b []byte) (time.Duration, error) {
	ms, err := timeoutMillis(b)
	if err != nil {
		return 0, err
	}
	if ms < 0 {
		return 0, errTimeoutNegative
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return 0, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// timeoutMillis is ceil(seconds*1000) as a long long, math.MinInt64 when
// out of range (x86's conversion of an out-of-range long double).
func timeoutMillis(b []byte) (int64, error) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars {
		return 0, errTimeoutNotFloat
	}
	s := string(b)
	body := s
	if body[0] == '+' || body[0] == '-' {
		body = body[1:]
	}
	if is([]byte(body), "inf") || is([]byte(body), "infinity") {
		return math.MinInt64, nil
	}
	if !strtoldSyntax(body) {
		return 0, errTimeoutNotFloat
	}
	f, _, err := big.ParseFloat(s, 0, 64, big.ToNearestEven)
	if err != nil || f.IsInf() {
		return 0, errTimeoutNotFloat
	}
	if f.Sign() == 0 && strings.ContainsAny(mantissa(body), "123456789abcdefABCDEF") {
		return 0, errTimeoutNotFloat // underflowed to 0: strtold's ERANGE
	}
	if f.Sign() != 0 {
		// strtold's range: above LDBL_MAX it fails with HUGE_VAL, below
		// the smallest denormal it fails with 0 (both refused by Redis).
		if e := f.MantExp(nil); e > 16384 || e < -16444 {
			return 0, errTimeoutNotFloat
		}
	}
	f.Mul(f, big.NewFloat(1000).SetPrec(64))
	i, acc := f.Int(nil) // truncated toward zero
	if acc == big.Below {
		i.Add(i, big.NewInt(1)) // ceil of a positive non-integer
	}
	if !i.IsInt64() {
		return math.MinInt64, nil
	}
	return i.Int64(), nil
}

// mantissa is s (a number strtoldSyntax accepts) without its exponent.
func mantissa(s string) string {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		if i := strings.IndexAny(s, "pP"); i >= 0 {
			return s[2:i]
		}
		return s[2:]
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		return s[:i]
	}
	return s
}

// strtoldSyntax reports whether s (its sign removed) is a whole number as
// strtold reads one: decimal digits with an optional point and e exponent,
// or 0x hexadecimal digits with an optional point and p exponent, at least
// one mantissa digit.
func strtoldSyntax(s string) bool {
	digit := func(c byte) bool { return '0' <= c && c <= '9' }
	mant, exp := digit, byte('e')
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
		mant = func(c byte) bool { return digit(c) || ('a' <= c|0x20 && c|0x20 <= 'f') }
		exp = 'p'
	}
	i, n := 0, 0
	for i < len(s) && mant(s[i]) {
		i, n = i+1, n+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && mant(s[i]) {
			i, n = i+1, n+1
		}
	}
	if n == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i]|0x20 != exp {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if !digit(s[i]) {
			return false
		}
	}
	return true
}

// End is a list's end: LEFT (the head, index 0) or RIGHT (the tail).
type End uint8

const (
	Left  End = iota // the head: LPUSH, LPOP, LEFT
	Right            // the tail: RPUSH, RPOP, RIGHT
)

// String is the end's name as LMOVE takes it.
func (e End) String() string {
	if e == Left {
		return "left"
	}
	return "right"
}

// endArg reads LEFT or RIGHT, any case.
func endArg(b []byte) (End, error) {
	switch {
	case is(b, "left"):
		return Left, nil
	case is(b, "right"):
		return Right, nil
	}
	return 0, errSyntax
}

// arityError is Redis's error for a wrong number of arguments, for the
// commands whose arity depends on their options.
func arityError(name []byte) error {
	return backends.Refusal("ERR wrong number of arguments for '" + lower(name) + "' command")
}
