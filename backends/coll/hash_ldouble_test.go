package coll

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The long double's fast paths answer what its math/big paths answer.

func randomDecimal(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(3) == 0 {
		b.WriteByte('-')
	}
	digits := 1 + r.IntN(22)
	point := r.IntN(digits + 2)
	for i := range digits {
		if i == point {
			b.WriteByte('.')
		}
		if r.IntN(4) == 0 {
			b.WriteByte('0')
		} else {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	if r.IntN(3) == 0 {
		fmt.Fprintf(&b, "e%d", r.IntN(60)-30)
	}
	return b.String()
}

func randomLD(r *rand.Rand) ld {
	x := ld{neg: r.IntN(2) == 0, m: r.Uint64() >> r.IntN(64)}
	switch r.IntN(4) {
	case 0:
		x.e = r.IntN(40) - 20
	case 1:
		x.e = r.IntN(200) - 130
	case 2:
		x.e = r.IntN(32000) - 16400
	default:
		x.e = -r.IntN(70)
	}
	if x.m == 0 {
		x.m = 1
	}
	// Normalized as roundLD leaves a number: 64 bits unless subnormal.
	v, r2 := roundWords(u192{x.m}, x.e, false)
	if r2 != ldOK {
		return ld{m: 1}
	}
	v.neg = x.neg
	return v
}

func TestLDFastMatchesBig(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	fastParses, fastAdds, fastTexts := 0, 0, 0
	for range 200000 {
		s := randomDecimal(r)
		neg := strings.HasPrefix(s, "-")
		if fast, ok := parseDecFast(strings.TrimPrefix(s, "-")); ok {
			fastParses++
			slow, rng, ok := parseDecLD(strings.TrimPrefix(s, "-"))
			if !ok || rng != ldOK || slow != fast {
				t.Fatalf("parse %q: fast %+v, big %+v (%v %v)", s, fast, slow, ok, rng)
			}
		}
		if x, ok := parseLD([]byte(s)); ok && x.neg != neg && x.m != 0 {
			t.Fatalf("parse %q: sign %v", s, x.neg)
		}

		x, y := randomLD(r), randomLD(r)
		if r.IntN(3) == 0 {
			y.e = x.e + r.IntN(130) - 65
			y, _ = roundWords(u192{y.m}, y.e, false)
		}
		if fast, rng, ok := addFast(x, y); ok {
			fastAdds++
			slow, sok := addBig(x, y)
			if (rng != ldOverflow) != sok || sok && slow != fast {
				t.Fatalf("%+v + %+v: fast %+v %v, big %+v %v", x, y, fast, rng, slow, sok)
			}
		}

		if fast, ok := x.textFast(); ok {
			fastTexts++
			if slow := x.textBig(); string(slow) != string(fast) {
				t.Fatalf("text %+v: fast %s, big %s", x, fast, slow)
			}
		}
	}
	if fastParses < 50000 || fastAdds < 50000 || fastTexts < 50000 {
		t.Fatalf("fast paths taken %d, %d, %d times: the test does not test them", fastParses, fastAdds, fastTexts)
	}
}

// FuzzParseLD: any input parses or not without a panic, and what parses
// has a text, which parses again.
func FuzzParseLD(f *testing.F) {
	for _, s := range []string{"1.5", "-0", "0x1.8p3", "inf", "1e4932", "1e-4950", ".5", "5.", "1e", "0x", "nan", "12345678901234567890.123"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, ok := parseLD([]byte(s))
		if !ok || x.inf {
			return
		}
		txt := x.text()
		if _, ok := parseLD(txt); !ok {
			t.Fatalf("%q parses to %+v, whose text %q does not parse", s, x, txt)
		}
		body := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
		if fast, ok := parseDecFast(body); ok {
			if slow, rng, ok := parseDecLD(body); !ok || rng != ldOK || slow != fast {
				t.Fatalf("%q: fast %+v, big %+v", s, fast, slow)
			}
		}
	})
}
