package coll

import (
	"math/bits"
	"strconv"
)

// The long double's common cases without math/big: a decimal of at most
// 19 significant digits times 10^-19 to 10^19, a sum of two numbers whose
// exponents are at most 63 apart, and the text of a number below 2^64.
// Each computes in 128 or 192 fixed bits exactly what the math/big path
// computes (TestLDFastMatchesBig), with no allocation but the text.

// pow10u are 10^0 to 10^19, the powers of ten a uint64 holds.
var pow10u = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// u192 is a 192-bit unsigned number, its least significant word first.
type u192 [3]uint64

func (w *u192) bitLen() int {
	for i := 2; i >= 0; i-- {
		if w[i] != 0 {
			return 64*i + bits.Len64(w[i])
		}
	}
	return 0
}

// word returns the 64 bits of w from bit n up.
func (w *u192) word(n int) uint64 {
	q, r := n/64, uint(n%64)
	if q >= 3 {
		return 0
	}
	v := w[q] >> r
	if r > 0 && q+1 < 3 {
		v |= w[q+1] << (64 - r)
	}
	return v
}

func (w *u192) bit(n int) bool { return w.word(n)&1 == 1 }

// anyBelow reports whether any of the bits under bit n is set.
func (w *u192) anyBelow(n int) bool {
	q, r := n/64, uint(n%64)
	for i := 0; i < q && i < 3; i++ {
		if w[i] != 0 {
			return true
		}
	}
	return q < 3 && r > 0 && w[q]&(1<<r-1) != 0
}

// roundWords rounds w × 2^e, plus a little more when sticky, to a long
// double (as roundLD does); w is not zero.
func roundWords(w u192, e int, sticky bool) (ld, ldRange) {
	top := w.bitLen() - 1 + e
	lsb := max(top-(ldBits-1), ldMinLSB)
	var m uint64
	if shift := lsb - e; shift <= 0 {
		m = w[0] << uint(-shift) // w has at most 64+shift bits
	} else {
		m = w.word(shift)
		if w.bit(shift-1) && (sticky || w.anyBelow(shift-1) || m&1 == 1) {
			if m++; m == 0 { // rounded up to 2^64
				m, lsb = 1<<63, lsb+1
			}
		}
	}
	switch {
	case m == 0:
		return ld{}, ldUnderflow
	case bits.Len64(m)-1+lsb > ldMaxTop:
		return ld{inf: true}, ldOverflow
	}
	return ld{m: m, e: lsb}, ldOK
}

// parseDecFast reads what parseDecLD reads, when it is a common case;
// fast is false otherwise (for any input it does not read whole).
func parseDecFast(s string) (x ld, fast bool) {
	var m uint64
	digits, frac, i := 0, 0, 0
	seen := false
	take := func(c byte) bool {
		seen = true
		if m == 0 && c == '0' {
			return true // a leading zero
		}
		if digits == 19 {
			return false
		}
		m, digits = m*10+uint64(c-'0'), digits+1
		return true
	}
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		if !take(s[i]) {
			return ld{}, false
		}
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			if !take(s[i]) {
				return ld{}, false
			}
			frac++
		}
	}
	if !seen {
		return ld{}, false
	}
	exp := 0
	if i < len(s) {
		var ok bool
		if s[i] != 'e' && s[i] != 'E' {
			return ld{}, false
		}
		if exp, ok = ldExponent(s[i+1:]); !ok {
			return ld{}, false
		}
	}
	if m == 0 {
		return ld{}, true
	}
	x10 := exp - frac // the number is m × 10^x10
	var r ldRange
	switch {
	case x10 >= 0 && x10 < len(pow10u):
		hi, lo := bits.Mul64(m, pow10u[x10])
		x, r = roundWords(u192{lo, hi}, 0, false)
	case x10 < 0 && -x10 < len(pow10u):
		// m / d as a 192-bit fixed point number with 128 bits of
		// fraction: at least 64 significant bits, as m >= 1 > d/2^64.
		d := pow10u[-x10]
		q1, r1 := m/d, m%d
		q2, r2 := bits.Div64(r1, 0, d)
		q3, r3 := bits.Div64(r2, 0, d)
		x, r = roundWords(u192{q3, q2, q1}, -128, r3 != 0)
	default:
		return ld{}, false
	}
	return x, r == ldOK
}

// addFast is addLD for two numbers, neither 0, whose exponents are at most
// 63 apart: their exact sum fits 128 bits.
func addFast(x, y ld) (ld, ldRange, bool) {
	if x.e < y.e {
		x, y = y, x
	}
	d := x.e - y.e
	if d > 63 {
		return ld{}, ldOK, false
	}
	// x.m << d and y.m, on y's exponent.
	var ahi uint64
	if d > 0 {
		ahi = x.m >> (64 - uint(d))
	}
	alo := x.m << uint(d)
	var hi, lo uint64
	neg := x.neg
	switch {
	case x.neg == y.neg:
		var c uint64
		lo, c = bits.Add64(alo, y.m, 0)
		hi = ahi + c
	case ahi > 0 || alo >= y.m:
		var b uint64
		lo, b = bits.Sub64(alo, y.m, 0)
		hi = ahi - b
	default: // |y| > |x|
		lo, hi, neg = y.m-alo, 0, y.neg
	}
	if hi == 0 && lo == 0 {
		return ld{}, ldOK, true
	}
	v, r := roundWords(u192{lo, hi}, y.e, false)
	v.neg = neg
	return v, r, true
}

// textFast is text for a number below 2^64.
func (x ld) textFast() ([]byte, bool) {
	if x.m == 0 {
		return []byte{'0'}, true
	}
	if x.e >= 0 {
		if x.e >= 64 || bits.LeadingZeros64(x.m) < x.e {
			return nil, false
		}
		var out []byte
		if x.neg {
			out = append(out, '-')
		}
		return strconv.AppendUint(out, x.m<<uint(x.e), 10), true
	}
	// q = m × 10^17 / 2^k, rounded to nearest, ties to even.
	k := -x.e
	hi, lo := bits.Mul64(x.m, pow10u[17])
	n := u192{lo, hi}
	qlo, qhi := n.word(k), n.word(k+64)
	if n.bit(k-1) && (n.anyBelow(k-1) || qlo&1 == 1) {
		var c uint64
		qlo, c = bits.Add64(qlo, 1, 0)
		qhi += c
	}
	// q < 2^64 × 10^17 (the number is below 2^63): qhi < 10^17.
	whole, frac := bits.Div64(qhi, qlo, pow10u[17])
	out := make([]byte, 0, 40)
	if x.neg && (whole != 0 || frac != 0) {
		out = append(out, '-')
	}
	out = strconv.AppendUint(out, whole, 10)
	if frac != 0 {
		var f [17]byte
		for i := 16; i >= 0; i-- {
			f[i], frac = byte('0'+frac%10), frac/10
		}
		end := 17
		for f[end-1] == '0' {
			end--
		}
		out = append(append(out, '.'), f[:end]...)
	}
	return out, true
}
