package coll

import (
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// Number parsing as Redis 7.0 does it: integers as string2ll (longArg),
// scores and weights through C's strtod (util.c string2d), the ends of a
// score range through strtod with its looser checks (t_zset.c
// zslParseRange), the timeouts of every blocking command through strtold
// (util.c string2ld), cursors through strtoul. Go's strconv reads a
// different language (no hexadecimal without an exponent, no "infinity"
// prefix rules, underscores), so the longest prefix C would read is found
// here, and only what C accepts reaches strconv.

// Kinds of number scanFloat finds.
const (
	numNone = iota
	numDec
	numHex
	numInf
	numNaN
)

func isSpace(c byte) bool { return c == ' ' || ('\t' <= c && c <= '\r') }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f') }

// hasWord reports whether s begins with the lowercase word w, in any case.
func hasWord(s []byte, w string) bool { return len(s) >= len(w) && is(s[:len(w)], w) }

// scanFloat finds the number C's strtod reads at the start of s (in the C
// locale): after white space, a sign, then "inf" or "infinity", "nan" or
// "nan(…)", a hexadecimal number ("0x", digits with an optional point, an
// optional binary exponent) or a decimal one (digits with an optional
// point, an optional exponent). It returns where the number starts (its
// sign included) and ends, and its kind; numNone when strtod converts
// nothing.
func scanFloat(s []byte) (start, end, kind int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	start = i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	rest := s[i:]
	switch {
	case hasWord(rest, "infinity"):
		return start, i + 8, numInf
	case hasWord(rest, "inf"):
		return start, i + 3, numInf
	case hasWord(rest, "nan"):
		j := i + 3
		if j < len(s) && s[j] == '(' {
			k := j + 1
			for k < len(s) && (isDigit(s[k]) || ('a' <= s[k]|0x20 && s[k]|0x20 <= 'z') || s[k] == '_') {
				k++
			}
			if k < len(s) && s[k] == ')' {
				j = k + 1
			}
		}
		return start, j, numNaN
	}
	if len(rest) >= 2 && rest[0] == '0' && rest[1]|0x20 == 'x' {
		if j, ok := scanMantissa(s, i+2, isHex); ok {
			return start, scanExponent(s, j, 'p'), numHex
		}
		// "0x" with no digit after it is the number 0, then an "x".
	}
	j, ok := scanMantissa(s, i, isDigit)
	if !ok {
		return 0, 0, numNone
	}
	return start, scanExponent(s, j, 'e'), numDec
}

// scanMantissa reads digits with at most one point from s[i:], at least
// one digit; it returns where they end.
func scanMantissa(s []byte, i int, digit func(byte) bool) (int, bool) {
	digits := 0
	for i < len(s) && digit(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && digit(s[j]) {
			j, digits = j+1, digits+1
		}
		if digits > 0 {
			i = j
		}
	}
	return i, digits > 0
}

// scanExponent reads an exponent (e or p, an optional sign, digits) at
// s[i:], if there is a whole one; it returns where the number ends.
func scanExponent(s []byte, i int, e byte) int {
	if i >= len(s) || s[i]|0x20 != e {
		return i
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	if j >= len(s) || !isDigit(s[j]) {
		return i
	}
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	return j
}

// hasNonZeroDigit reports whether a number's mantissa has a digit other
// than 0 (so a result of 0 is an underflow).
func hasNonZeroDigit(num []byte, hex bool) bool {
	if len(num) > 0 && (num[0] == '+' || num[0] == '-') {
		num = num[1:]
	}
	if hex {
		num = num[2:]
	}
	for _, c := range num {
		switch {
		case c == '.':
		case c|0x20 == 'e' && !hex, c|0x20 == 'p' && hex:
			return false
		case c != '0':
			return true
		}
	}
	return false
}

// strtod converts s as C's strtod does: the value, the bytes it read (0:
// none), and erange when the value overflowed to an infinity or
// underflowed to 0.
func strtod(s []byte) (f float64, n int, erange bool) {
	start, end, kind := scanFloat(s)
	num := s[start:end]
	neg := len(num) > 0 && num[0] == '-'
	switch kind {
	case numNone:
		return 0, 0, false
	case numInf:
		if neg {
			return math.Inf(-1), end, false
		}
		return math.Inf(1), end, false
	case numNaN:
		return math.NaN(), end, false
	}
	text := string(num)
	if kind == numHex && !hasExponent(num) {
		text += "p0"
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		// Only out of range can fail here: the syntax is C's and Go's both.
		return f, end, true
	}
	if f == 0 && hasNonZeroDigit(num, kind == numHex) {
		return f, end, true
	}
	return f, end, false
}

// hasExponent reports whether a hexadecimal number has its binary exponent.
func hasExponent(num []byte) bool {
	for _, c := range num {
		if c|0x20 == 'p' {
			return true
		}
	}
	return false
}

// cString is b up to its first NUL, as C reads an argument.
func cString(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// parseScore reads a score, an increment or a weight as Redis's string2d:
// all of the argument, no leading space, no NaN, no overflow or underflow
// to 0 ("inf" is fine).
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isSpace(b[0]) {
		return 0, false
	}
	f, n, erange := strtod(b)
	if n != len(b) || erange || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// parseScoreBound reads one end of a score range as zslParseRange does:
// "(" makes it exclusive; the rest is read by strtod as a C string, which
// must be all number (leading space and an empty string, which is 0, are
// fine; NaN is not).
func parseScoreBound(b []byte) (f float64, excl, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		b, excl = b[1:], true
	}
	b = cString(b)
	f, n, _ := strtod(b)
	if n != len(b) || math.IsNaN(f) {
		return 0, false, false
	}
	return f, excl, true
}

// parseScoreRange reads ZRANGEBYSCORE's min and max.
func parseScoreRange(min, max []byte) (ScoreRange, error) {
	var r ScoreRange
	var okMin, okMax bool
	r.Min, r.MinEx, okMin = parseScoreBound(min)
	r.Max, r.MaxEx, okMax = parseScoreBound(max)
	if !okMin || !okMax {
		return ScoreRange{}, errMinMaxFloat
	}
	return r, nil
}

// parseLexBound reads one end of a lex range as zslParseLexRangeItem: "-"
// or "+" alone (as C strings), or "(" or "[" and a member.
func parseLexBound(b []byte) (LexBound, bool) {
	if len(b) == 0 {
		return LexBound{}, false
	}
	switch b[0] {
	case '-', '+':
		if len(b) > 1 && b[1] != 0 {
			return LexBound{}, false
		}
		inf := int8(1)
		if b[0] == '-' {
			inf = -1
		}
		return LexBound{Excl: true, Inf: inf}, true
	case '(':
		return LexBound{Member: string(b[1:]), Excl: true}, true
	case '[':
		return LexBound{Member: string(b[1:])}, true
	}
	return LexBound{}, false
}

// parseLexRange reads ZRANGEBYLEX's min and max.
func parseLexRange(min, max []byte) (LexRange, error) {
	lo, okMin := parseLexBound(min)
	hi, okMax := parseLexBound(max)
	if !okMin || !okMax {
		return LexRange{}, errMinMaxLex
	}
	return LexRange{Min: lo, Max: hi}, nil
}

// Long double's range (x87's 80-bit format: 64-bit mantissa, exponents to
// 2^16383), in big.Float's terms (mantissa in [0.5, 1)).
const (
	ldMantBits = 64
	ldMaxExp   = 16384
	ldMinExp   = -16445 // below the smallest subnormal: strtold gives 0
)

// parseTimeout reads a blocking command's timeout in seconds as Redis's
// getTimeoutFromObjectOrReply: strtold (string2ld's checks), times 1000,
// rounded up to a millisecond, and converted to a long long, which on
// x86-64 turns anything out of its range, infinities included, into its
// most negative value: "timeout is negative". 0 is no timeout.
func parseTimeout(b []byte) (time.Duration, error) {
	const maxChars = 5 * 1024 // MAX_LONG_DOUBLE_CHARS
	if len(b) == 0 || len(b) >= maxChars || isSpace(b[0]) {
		return 0, errTimeout
	}
	start, end, kind := scanFloat(b)
	if end != len(b) || kind == numNone || kind == numNaN {
		return 0, errTimeout
	}
	if kind == numInf {
		return 0, errTimeoutNeg
	}
	num := b[start:end]
	text := string(num)
	if kind == numHex && !hasExponent(num) {
		text += "p0"
	}
	v, _, err := big.ParseFloat(text, 0, ldMantBits, big.ToNearestEven)
	if err != nil {
		return 0, errTimeout
	}
	if v.Sign() != 0 {
		exp := v.MantExp(nil)
		if exp > ldMaxExp {
			return 0, errTimeout // overflows: HUGE_VAL, ERANGE
		}
		if exp < ldMinExp {
			return 0, errTimeout // underflows to 0, ERANGE
		}
	}
	ms := new(big.Float).SetPrec(ldMantBits).Mul(v, big.NewFloat(1000))
	i, acc := ms.Int(nil) // toward zero
	if acc == big.Below {
		i.Add(i, big.NewInt(1)) // ceil of a positive fraction
	}
	if !i.IsInt64() || i.Int64() < 0 {
		return 0, errTimeoutNeg
	}
	n := i.Int64()
	if n > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64), nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// parseCursor reads a SCAN cursor as Redis's strtoul: decimal, an optional
// sign (a negative one wraps around), as a C string; the empty string is 0;
// no leading space, nothing after, no overflow.
func parseCursor(b []byte) (uint64, error) {
	if len(b) > 0 && isSpace(b[0]) {
		return 0, errCursor
	}
	b = cString(b)
	if len(b) == 0 {
		return 0, nil
	}
	neg := false
	digits := b
	if digits[0] == '+' || digits[0] == '-' {
		neg, digits = digits[0] == '-', digits[1:]
	}
	if len(digits) == 0 {
		return 0, errCursor
	}
	var n uint64
	for _, c := range digits {
		if !isDigit(c) {
			return 0, errCursor
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, errCursor
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, nil
}

// longArg is getLongFromObjectOrReply: an integer as string2ll reads one
// (backends.ParseInt), or Redis's error.
func longArg(b []byte) (int64, error) {
	n, ok := backends.ParseInt(b)
	if !ok {
		return 0, errNotInteger
	}
	return n, nil
}

// countArg reads the count LPOP, SPOP and ZPOPMIN may take: at least 0.
func countArg(b []byte) (int64, error) { return rangeArg(b, 0, maxLong, errNotPositive) }

// optionalCount reads the count SPOP, SRANDMEMBER and ZPOPMIN may take
// after their key (args[2]) with read; given is false without one, and a
// further argument is a syntax error.
func optionalCount(args [][]byte, read func([]byte) (int64, error)) (n int64, given bool, err error) {
	switch {
	case len(args) > 3:
		return 0, false, errSyntax
	case len(args) == 3:
		n, err = read(args[2])
		return n, err == nil, err
	}
	return 0, false, nil
}

// rangeArg is getRangeLongFromObjectOrReply with a message: an integer in
// [lo, hi], or msg when it is not one or is out of that range (Redis uses
// the one message for both).
func rangeArg(b []byte, lo, hi int64, msg backends.Refusal) (int64, error) {
	n, ok := backends.ParseInt(b)
	if !ok || n < lo || n > hi {
		return 0, msg
	}
	return n, nil
}
