package coll

import (
	"math/big"
	"strings"
)

// HINCRBYFLOAT computes as Redis 7.0 does on x86-64: in C's long double,
// the x87 80-bit format (a 64-bit significand, exponents down to 2^-16445
// and up to 2^16383), read by strtold and written by "%.17Lf" with its
// trailing zeros cut (ld2string's LD_STR_HUMAN). A float64 would not
// answer the same: 1.1 plus 2.2 is 3.3000000000000003 in float64 and 3.3
// in long double. So ld keeps the number exactly and every step rounds as
// the x87 unit does (to nearest, ties to even).
//
// (INCRBYFLOAT on strings does the same in Redis; the repository's
// backends.IncrByFloat formats float64's shortest form instead.)

// ld is a long double: (-1)^neg × m × 2^e, or an infinity. Its zero value
// is 0.
type ld struct {
	neg, inf bool
	m        uint64 // the significand; 0 for 0
	e        int
}

const (
	ldBits   = 64     // significand bits
	ldMinLSB = -16445 // the weight of the last bit of the smallest subnormal
	ldMaxTop = 16383  // the largest weight of a finite number's top bit
	// ldMaxChars is Redis's MAX_LONG_DOUBLE_CHARS: string2ld reads less.
	ldMaxChars = 5 * 1024
	// Decimal bounds that need no arithmetic: a number of d digits times
	// 10^x is at least 10^(d+x-1), above the largest long double when
	// d+x-1 > 4932, and below half the smallest subnormal (3.6e-4951)
	// when d+x < -4951.
	ldMaxDecTop = 4932
	ldMinDecTop = -4951
)

// ldRange is why a long double could not be made: it rounded to an
// infinity (overflow) or to zero (underflow), as strtold's ERANGE says.
type ldRange uint8

const (
	ldOK ldRange = iota
	ldOverflow
	ldUnderflow
)

// parseLD reads b as Redis's string2ld does (strtold on all of b): a
// decimal or a C99 hexadecimal float, "inf" or "infinity", with an optional
// sign, no spaces; not NaN, nor a number out of a long double's range
// (one that rounds to an infinity or to zero: strtold's ERANGE).
func parseLD(b []byte) (ld, bool) {
	if len(b) == 0 || len(b) >= ldMaxChars {
		return ld{}, false
	}
	s := string(b)
	var x ld
	switch s[0] {
	case '-':
		x.neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	if low := strings.ToLower(s); low == "inf" || low == "infinity" {
		x.inf = true
		return x, true
	}
	var (
		r   ldRange
		ok  bool
		abs ld
	)
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		abs, r, ok = parseHexLD(s[2:])
	default:
		var fast bool
		if abs, fast = parseDecFast(s); fast {
			r, ok = ldOK, true
		} else {
			abs, r, ok = parseDecLD(s)
		}
	}
	if !ok || r != ldOK {
		return ld{}, false
	}
	abs.neg = x.neg
	return abs, true
}

// parseDecLD reads digits [. digits] [e [sign] digits], one digit at least
// before the exponent.
func parseDecLD(s string) (ld, ldRange, bool) {
	n, trimmed, frac, exp, ok := scanLD(s, 10, 'e')
	if !ok || n.Sign() == 0 {
		return ld{}, ldOK, ok
	}
	// digits without their leading zeros are `trimmed` digits and stand
	// for n × 10^(exp - frac).
	x := exp - frac
	switch {
	case trimmed+x-1 > ldMaxDecTop:
		return ld{}, ldOverflow, true
	case trimmed+x < ldMinDecTop:
		return ld{}, ldUnderflow, true
	}
	den := big.NewInt(1)
	if x >= 0 {
		n.Mul(n, pow10(x))
	} else {
		den = pow10(-x)
	}
	v, r := roundLD(n, den, 0)
	return v, r, true
}

// parseHexLD reads what follows "0x": hex digits [. hex digits] [p [sign]
// digits], one hex digit at least.
func parseHexLD(s string) (ld, ldRange, bool) {
	n, _, frac, exp, ok := scanLD(s, 16, 'p')
	if !ok || n.Sign() == 0 {
		return ld{}, ldOK, ok
	}
	e := exp - 4*frac
	top := n.BitLen() - 1 + e
	switch {
	case top > ldMaxTop+1:
		return ld{}, ldOverflow, true
	case top < ldMinLSB-2:
		return ld{}, ldUnderflow, true
	}
	v, r := roundLD(n, big.NewInt(1), e)
	return v, r, true
}

// scanLD reads the whole of s as digits of base [. digits] [x [sign]
// digits], x the exponent's letter (e, or p after hexadecimal digits) in
// either case, one digit at least before the exponent. It returns the
// number the digits spell without the point (n, nil when not ok), how
// many digits that is without its leading zeros, how many of them followed
// the point, and the exponent.
func scanLD(s string, base int, x byte) (n *big.Int, digits, frac, exp int, ok bool) {
	mant, fr, rest, ok := scanDigits(s, base)
	if !ok {
		return nil, 0, 0, 0, false
	}
	if rest != "" {
		if rest[0]|0x20 != x {
			return nil, 0, 0, 0, false
		}
		if exp, ok = ldExponent(rest[1:]); !ok {
			return nil, 0, 0, 0, false
		}
	}
	n, digits = digitsInt(mant+fr, base)
	return n, digits, len(fr), exp, true
}

// scanDigits splits s into the digits before and after a point, and what
// follows them; ok is false when there is no digit.
func scanDigits(s string, base int) (mant, frac, rest string, ok bool) {
	i := 0
	for i < len(s) && ldDigit(s[i], base) {
		i++
	}
	mant, s = s[:i], s[i:]
	if s != "" && s[0] == '.' {
		i = 1
		for i < len(s) && ldDigit(s[i], base) {
			i++
		}
		frac, s = s[1:i], s[i:]
	}
	return mant, frac, s, mant != "" || frac != ""
}

// ldExponent reads [sign] digits, the whole of s; an exponent too large
// to matter is clamped (the number is out of range either way).
func ldExponent(s string) (int, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	e := 0
	for i := range len(s) {
		if !ldDigit(s[i], 10) {
			return 0, false
		}
		if e < 1_000_000 {
			e = e*10 + int(s[i]-'0')
		}
	}
	if neg {
		e = -e
	}
	return e, true
}

func ldDigit(c byte, base int) bool {
	switch {
	case '0' <= c && c <= '9':
		return true
	case base == 16:
		c |= 0x20
		return 'a' <= c && c <= 'f'
	}
	return false
}

// digitsInt is the number the digits spell, and how many digits it has
// without its leading zeros.
func digitsInt(digits string, base int) (*big.Int, int) {
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return new(big.Int), 0
	}
	n, _ := new(big.Int).SetString(digits, base)
	return n, len(digits)
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// roundLD rounds num/den × 2^e (num > 0) to a long double, to nearest with
// ties to even: 64 significant bits, fewer below 2^-16382 where the last
// bit weighs 2^-16445.
func roundLD(num, den *big.Int, e int) (ld, ldRange) {
	// top is the weight of the quotient's top bit: floor(log2(num/den)) + e.
	top := num.BitLen() - den.BitLen()
	if cmpShifted(num, den, top) < 0 {
		top--
	}
	top += e
	lsb := max(top-(ldBits-1), ldMinLSB)
	// q, rem = num × 2^(e-lsb) / den.
	n, d := new(big.Int).Set(num), new(big.Int).Set(den)
	if s := e - lsb; s >= 0 {
		n.Lsh(n, uint(s))
	} else {
		d.Lsh(d, uint(-s))
	}
	q, rem := new(big.Int).QuoRem(n, d, new(big.Int))
	switch c := rem.Lsh(rem, 1).Cmp(d); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		q.Add(q, big.NewInt(1))
	}
	if q.BitLen() > ldBits { // rounded up to 2^64
		q.Rsh(q, 1)
		lsb++
	}
	switch {
	case q.Sign() == 0:
		return ld{}, ldUnderflow
	case q.BitLen()-1+lsb > ldMaxTop:
		return ld{inf: true}, ldOverflow
	}
	return ld{m: q.Uint64(), e: lsb}, ldOK
}

// cmpShifted compares num with den × 2^s.
func cmpShifted(num, den *big.Int, s int) int {
	if s >= 0 {
		return num.Cmp(new(big.Int).Lsh(den, uint(s)))
	}
	return new(big.Int).Lsh(num, uint(-s)).Cmp(den)
}

// addLD is x + y as the x87 unit adds them; an infinity is an overflow
// (HINCRBYFLOAT refuses both, so no NaN is ever made).
func addLD(x, y ld) (ld, bool) {
	switch {
	case x.inf || y.inf:
		return ld{inf: true}, false
	case x.m == 0:
		return y, true
	case y.m == 0:
		return x, true
	}
	if v, r, ok := addFast(x, y); ok {
		return v, r != ldOverflow
	}
	return addBig(x, y)
}

// addBig adds exactly, on the smaller exponent, then rounds.
func addBig(x, y ld) (ld, bool) {
	e := min(x.e, y.e)
	a := new(big.Int).Lsh(new(big.Int).SetUint64(x.m), uint(x.e-e))
	b := new(big.Int).Lsh(new(big.Int).SetUint64(y.m), uint(y.e-e))
	if x.neg {
		a.Neg(a)
	}
	if y.neg {
		b.Neg(b)
	}
	a.Add(a, b)
	if a.Sign() == 0 {
		return ld{}, true // +0, as round-to-nearest gives
	}
	neg := a.Sign() < 0
	v, r := roundLD(a.Abs(a), big.NewInt(1), e)
	v.neg = neg
	return v, r != ldOverflow
}

// text is x as ld2string writes it in LD_STR_HUMAN mode: "%.17Lf", then
// the trailing zeros of the fraction and a bare point cut, and "-0" made
// "0". x is finite.
func (x ld) text() []byte {
	if b, ok := x.textFast(); ok {
		return b
	}
	return x.textBig()
}

func (x ld) textBig() []byte {
	var digits string // the number × 10^17, rounded, without its sign
	m := new(big.Int).SetUint64(x.m)
	switch {
	case x.m == 0:
		digits = "0"
	case x.e >= 0:
		digits = m.Lsh(m, uint(x.e)).String() + "00000000000000000"
	default:
		n := m.Mul(m, pow10(17))
		d := new(big.Int).Lsh(big.NewInt(1), uint(-x.e))
		q, rem := n.QuoRem(n, d, new(big.Int))
		switch c := rem.Lsh(rem, 1).Cmp(d); {
		case c > 0, c == 0 && q.Bit(0) == 1:
			q.Add(q, big.NewInt(1))
		}
		digits = q.String()
	}
	return humanLD(x.neg, digits)
}

// humanLD writes a number from the digits of its value × 10^17: "%.17Lf"
// with the trailing zeros, a bare point and the sign of a zero cut.
func humanLD(neg bool, digits string) []byte {
	if len(digits) < 18 {
		digits = strings.Repeat("0", 18-len(digits)) + digits
	}
	whole, frac := digits[:len(digits)-17], strings.TrimRight(digits[len(digits)-17:], "0")
	out := make([]byte, 0, len(digits)+2)
	if neg && (whole != "0" || frac != "") {
		out = append(out, '-')
	}
	out = append(out, whole...)
	if frac != "" {
		out = append(append(out, '.'), frac...)
	}
	return out
}
