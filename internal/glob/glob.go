// Package glob matches keys against Redis's glob-style patterns (KEYS,
// SCAN MATCH, CONFIG GET), with Redis's rules, quirks included, and in
// time bounded by len(pattern)·len(key): no backtracking blow-up.
//
// The rules are those of Redis's stringmatchlen (src/util.c, 7.0):
//
//   - `*` matches any run of bytes, `?` any one byte.
//   - `[abc]`, `[a-z]` (a reversed range `[z-a]` is the same range),
//     `[^…]` negates; `\x` in a class is x itself; `]` right after `[` or
//     `[^` closes an empty class, which matches nothing (`[^]` anything).
//     An unterminated class `[abc` is a class of what follows `[`.
//   - `\x` outside a class is x itself; a `\` at the end of the pattern is
//     a literal backslash.
//   - Every token but `*` matches exactly one byte, so an empty key
//     matches only the empty pattern: Redis's KEYS and SCAN skip matching
//     for the pattern `*` alone, which is how they return the empty key
//     (MatchesAll).
//   - Ranges compare bytes as C's signed char on x86-64, the platform
//     Redis is measured on: `[a-\xff]` is the range -1..97, so it holds
//     0xff and the bytes 0x00-0x61, not 0x62-0xfe.
//   - With nocase, literals and range ends compare in lower case (ASCII
//     only, C's tolower); a `\x` inside a class stays case-sensitive.
//   - A pattern with more than 1000 runs of `*` that are followed by
//     something else matches no key: Redis stops its recursion there
//     (the CVE-2022-36021 guard).
//
// Redis recurses at each `*`; this package compiles the pattern into
// one-byte tokens and stars and matches with the classic greedy algorithm
// that keeps one backtrack point, the last star: when a token fails, the
// last star takes one more byte and matching resumes after it. Because
// every other token takes exactly one byte, a leftmost match of the
// pattern before the last star is as good as any, so nothing before it
// needs trying again.
package glob

// maxStarRuns is Redis's nesting limit: a match that must go through more
// runs of stars than this fails.
const maxStarRuns = 1000

// Pattern is a compiled pattern. It is immutable and safe for concurrent
// use.
type Pattern struct {
	src       string
	tokens    []token
	nocase    bool
	all       bool // the pattern is exactly "*"
	tooNested bool // more than maxStarRuns runs of stars before another token
}

type tokenKind uint8

const (
	tokStar  tokenKind = iota // a run of one or more `*`
	tokByte                   // one byte; with nocase, its lower case
	tokAny                    // `?`
	tokClass                  // `[…]`, a set of bytes
)

type token struct {
	kind  tokenKind
	b     byte
	class *[4]uint64 // the bytes a class matches, negation applied
}

// Compile parses pattern. Every byte string is a valid pattern.
func Compile(pattern string, nocase bool) *Pattern {
	p := &Pattern{src: pattern, nocase: nocase, all: pattern == "*"}
	runs := 0
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			if n := len(p.tokens); n > 0 && p.tokens[n-1].kind == tokStar {
				continue // `**` is `*`
			}
			p.tokens = append(p.tokens, token{kind: tokStar})
		case '?':
			p.tokens = append(p.tokens, token{kind: tokAny})
		case '[':
			var set *[4]uint64
			set, i = parseClass(pattern, i+1, nocase)
			p.tokens = append(p.tokens, token{kind: tokClass, class: set})
		case '\\':
			if i+1 < len(pattern) {
				i++
			}
			p.tokens = append(p.tokens, literal(pattern[i], nocase))
		default:
			p.tokens = append(p.tokens, literal(c, nocase))
		}
	}
	for i, t := range p.tokens {
		if t.kind == tokStar && i+1 < len(p.tokens) {
			runs++
		}
	}
	p.tooNested = runs > maxStarRuns
	return p
}

func literal(c byte, nocase bool) token {
	if nocase {
		c = lower(c)
	}
	return token{kind: tokByte, b: c}
}

// parseClass reads a class whose body starts at pattern[i] (after `[`),
// and returns its byte set and the index of its last byte: the closing
// `]`, or the pattern's last byte when there is none.
func parseClass(pattern string, i int, nocase bool) (*[4]uint64, int) {
	var set [4]uint64
	add := func(c byte) { set[c>>6] |= 1 << (c & 63) }
	negate := i < len(pattern) && pattern[i] == '^'
	if negate {
		i++
	}
	for ; ; i++ {
		rest := len(pattern) - i
		if rest >= 2 && pattern[i] == '\\' {
			i++
			add(pattern[i]) // escaped: exact, even with nocase
			continue
		}
		if rest > 0 && pattern[i] == ']' {
			break
		}
		if rest <= 0 {
			i = len(pattern) - 1 // unterminated: the class ends the pattern
			break
		}
		if rest >= 3 && pattern[i+1] == '-' {
			addRange(&set, pattern[i], pattern[i+2], nocase)
			i += 2
			continue
		}
		c := pattern[i]
		add(c)
		if nocase {
			for b := 0; b < 256; b++ {
				if lower(byte(b)) == lower(c) {
					add(byte(b))
				}
			}
		}
	}
	if negate {
		for k := range set {
			set[k] = ^set[k]
		}
	}
	return &set, i
}

// addRange adds the range lo-hi as Redis compares it: bytes as signed
// chars, the ends swapped when reversed, then (nocase) lowered, the byte
// too.
func addRange(set *[4]uint64, lo, hi byte, nocase bool) {
	start, end := int(int8(lo)), int(int8(hi))
	if start > end {
		start, end = end, start
	}
	if nocase {
		start, end = lowerInt(start), lowerInt(end)
	}
	for b := 0; b < 256; b++ {
		c := int(int8(b))
		if nocase {
			c = lowerInt(c)
		}
		if c >= start && c <= end {
			set[b>>6] |= 1 << (b & 63)
		}
	}
}

// matches reports whether the one-byte token t takes c.
func (t *token) matches(c byte, nocase bool) bool {
	switch t.kind {
	case tokByte:
		if nocase {
			c = lower(c)
		}
		return c == t.b
	case tokAny:
		return true
	default: // tokClass
		return t.class[c>>6]&(1<<(c&63)) != 0
	}
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func lowerInt(c int) int {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// MatchesAll reports whether the pattern is `*` alone, which Redis's KEYS
// and SCAN MATCH do not match at all: they take every key, the empty one
// included (Match("*", "") is false, as in Redis's matcher).
func (p *Pattern) MatchesAll() bool { return p.all }

// String is the pattern as given to Compile.
func (p *Pattern) String() string { return p.src }

// Match reports whether s matches the pattern.
func (p *Pattern) Match(s string) bool { return match(p, s) }

// MatchBytes is Match for a key held as bytes.
func (p *Pattern) MatchBytes(s []byte) bool { return match(p, s) }

// Match reports whether s matches pattern, case-sensitively.
func Match(pattern, s string) bool { return Compile(pattern, false).Match(s) }

func match[S string | []byte](p *Pattern, s S) bool {
	toks := p.tokens
	if len(s) == 0 {
		// Redis's loop runs only while both remain: an empty key matches
		// only an empty pattern, `*` included.
		return len(toks) == 0
	}
	if p.tooNested {
		return false
	}
	ti, si := 0, 0
	star, starS := -1, 0 // the last star's token and the byte it stops before
	for si < len(s) {
		if ti < len(toks) {
			t := &toks[ti]
			if t.kind == tokStar {
				if ti == len(toks)-1 {
					return true // a trailing star takes the rest
				}
				star, starS = ti, si
				ti++
				continue
			}
			if t.matches(s[si], p.nocase) {
				ti++
				si++
				continue
			}
		}
		if star < 0 {
			return false
		}
		// Backtrack: the last star takes one more byte, and then every
		// byte the token after it cannot take.
		starS++
		for next := &toks[star+1]; starS < len(s) && !next.matches(s[starS], p.nocase); {
			starS++
		}
		si = starS
		ti = star + 1
	}
	for ti < len(toks) && toks[ti].kind == tokStar {
		ti++
	}
	return ti == len(toks)
}
