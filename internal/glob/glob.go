// Package glob matches keys against the glob patterns of Redis's KEYS,
// SCAN … MATCH and friends, with the semantics of Redis 7's stringmatchlen
// (case-sensitive): `*` any run of bytes, `?` one byte, `[abc]`, `[^abc]`
// and `[a-z]` (a reversed range is swapped) one byte of a class, and `\x`
// the byte x. A `[` never closed runs to the end of the pattern, and a `\`
// at the end of a pattern is itself.
//
// Redis backtracks into every `*` recursively; a pattern like
// `*a*a*a*a*a*a*a*a*b` against a long key of a's is exponential there
// without its guards. Match instead keeps only the last `*` it passed
// (a later star can absorb anything an earlier one could), so its time is
// at most len(pattern) × len(key) steps, whatever the pattern.
package glob

// Match reports whether key matches pattern as Redis's stringmatchlen does.
// As there, the empty key matches only the empty pattern: KEYS and SCAN
// treat a pattern of exactly "*" as "everything" before they match.
func Match(pattern, key string) bool {
	if len(key) == 0 {
		return len(pattern) == 0
	}
	p, s := 0, 0
	// The last star passed: the pattern position after it, and the key
	// position it has absorbed up to. starP < 0: none yet.
	starP, starS := -1, 0
	for s < len(key) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true // a trailing star takes the rest
				}
				starP, starS = p, s
				continue
			}
			if next, ok := one(pattern, p, key[s]); ok {
				p, s = next, s+1
				continue
			}
		}
		// A mismatch, or pattern left over before the key ends: let the
		// last star take one more byte and try again from after it.
		if starP < 0 {
			return false
		}
		starS++
		p, s = starP, starS
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// one matches the single-byte token at pattern[p] (not a star) against c,
// returning the position after the token.
func one(pattern string, p int, c byte) (next int, ok bool) {
	switch pattern[p] {
	case '?':
		return p + 1, true
	case '[':
		return class(pattern, p+1, c)
	case '\\':
		if p+1 < len(pattern) {
			p++
		}
	}
	return p + 1, pattern[p] == c
}

// class matches c against the class that starts at pattern[p] (after the
// '['), and returns the position after its ']' (or the pattern's end).
func class(pattern string, p int, c byte) (next int, ok bool) {
	not := p < len(pattern) && pattern[p] == '^'
	if not {
		p++
	}
	match := false
	for {
		switch {
		case p >= len(pattern):
			return len(pattern), match != not
		case pattern[p] == '\\' && p+1 < len(pattern):
			p++
			if pattern[p] == c {
				match = true
			}
		case pattern[p] == ']':
			return p + 1, match != not
		case p+2 < len(pattern) && pattern[p+1] == '-':
			lo, hi := pattern[p], pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if lo <= c && c <= hi {
				match = true
			}
			p += 2
		case pattern[p] == c:
			match = true
		}
		p++
	}
}

// LiteralPrefix splits pattern into the bytes every matching key starts
// with (escapes resolved) and the pattern that matches the rest of the key.
// For "user:\*x*" it returns "user:*x" and "*".
func LiteralPrefix(pattern string) (literal, rest string) {
	var b []byte
	p := 0
	for p < len(pattern) {
		switch pattern[p] {
		case '*', '?', '[':
			return string(b), pattern[p:]
		case '\\':
			if p+1 < len(pattern) {
				p++
			}
		}
		b = append(b, pattern[p])
		p++
	}
	return string(b), ""
}

// Escape returns a pattern that matches exactly s.
func Escape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if special(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+n)
	for i := 0; i < len(s); i++ {
		if special(s[i]) {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}

func special(c byte) bool { return c == '*' || c == '?' || c == '[' || c == ']' || c == '\\' }
