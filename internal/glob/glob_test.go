package glob

import (
	"strconv"
	"strings"
	"testing"
)

// Redis's semantics, case by case; TestMatchesRedis checks the same
// cases against a real redis-server.
var cases = []struct {
	pattern, key string
	want         bool
}{
	{"", "", true},
	{"", "a", false},
	{"*", "", false}, // KEYS * returns "" only because it skips matching
	{"**", "", false},
	{"*", "abc", true},
	{"**", "abc", true},
	{"a*", "a", true},
	{"a*", "abc", true},
	{"*c", "abc", true},
	{"*c", "abd", false},
	{"a*c", "ac", true},
	{"a*c", "abbbc", true},
	{"a*c", "abbbcd", false},
	{"a*b*c", "aXbYc", true},
	{"a*b*c", "acb", false},
	{"*a*a*b", "aaaab", true},
	{"*a*a*b", "aaaa", false},
	{"?", "a", true},
	{"?", "", false},
	{"?", "ab", false},
	{"h?llo", "hello", true},
	{"h?llo", "hllo", false},
	{"h*llo", "hllo", true},
	{"h[ae]llo", "hallo", true},
	{"h[ae]llo", "hillo", false},
	{"h[^e]llo", "hallo", true},
	{"h[^e]llo", "hello", false},
	{"h[a-b]llo", "hbllo", true},
	{"h[a-b]llo", "hcllo", false},
	{"h[b-a]llo", "hallo", true}, // a reversed range is the same range
	{"[]", "a", false},           // `]` first closes an empty class
	{"[]a]", "a", false},         // ... and the rest is literal: `a]`
	{"[]a]", "a]", false},        // the empty class takes a byte
	{"[]a]", "xa]", false},
	{"[^]", "x", true},
	{"[^]a", "xa", true},
	{"[abc", "b", true}, // an unterminated class ends the pattern
	{"[abc", "bc", false},
	{"[abc", "", false},
	{"[", "[", false}, // an empty unterminated class
	{"[", "a", false},
	{"[^", "a", true},
	{"[a-", "-", true}, // `a-` at the end is not a range
	{"[a-", "b", false},
	{"[a-]", "b", false}, // the range a-] (93-97, reversed)...
	{"[a-]", "]", true},
	{"[a-]", "^", true},
	{"[a-]x", "x", true}, // ...leaves the class unterminated: x is in it
	{"[a-]x", "bx", false},
	{`[\]]`, "]", true},
	{`[\-]`, "-", true},
	{`[a\-z]`, "b", false},
	{`[\`, `\`, true}, // a backslash that ends the pattern in a class is itself
	{`\*`, "*", true},
	{`\*`, "a", false},
	{`\?`, "?", true},
	{`\[a]`, "[a]", true},
	{`a\`, `a\`, true}, // a backslash that ends the pattern is itself
	{`\`, `\`, true},
	{`\\`, `\`, true},
	{`\a`, "a", true},
	{"*[b]", "ab", true},
	{"A", "a", false},
	{"\xff", "\xff", true},
	{"[a-\xff]", "\xff", true},  // signed chars: -1..97
	{"[a-\xff]", "\x00", true},  //
	{"[a-\xff]", "a", true},     //
	{"[a-\xff]", "b", false},    //
	{"[a-\xff]", "\x80", false}, //
	{"[\x80-\x81]", "\x81", true},
	{"[\x01-\x81]", "\x90", true}, // -127..1
	{"[\x01-\x81]", "\x02", false},
	{"[\x01-\x81]", "\x80", false},
	{"foo\x00*", "foo\x00bar", true},
}

func TestMatch(t *testing.T) {
	for _, tc := range cases {
		if got := Match(tc.pattern, tc.key); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
		if got := Compile(tc.pattern, false).MatchBytes([]byte(tc.key)); got != tc.want {
			t.Errorf("MatchBytes(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
		if got := refMatch(tc.pattern, tc.key, false, 0); got != tc.want {
			t.Errorf("reference(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

func TestNoCase(t *testing.T) {
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		{"HeLLo", "hello", true},
		{"hello", "HELLO", true},
		{"h[A-C]llo", "hbllo", true},
		{"h[a-c]llo", "hBllo", true},
		{"h[^A]llo", "hallo", false},
		{"[Z-a]", "z", false}, // swapped, then lowered: z..a, empty
		{"[Z-a]", "_", false},
		{`[\A]`, "a", false}, // escaped in a class: exact
		{`[\A]`, "A", true},
		{`\A`, "a", true}, // escaped outside: nocase applies
		{"maxmemory*", "MaxMemory-Policy", true},
	} {
		if got := Compile(tc.pattern, true).Match(tc.key); got != tc.want {
			t.Errorf("nocase Match(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
		if got := refMatch(tc.pattern, tc.key, true, 0); got != tc.want {
			t.Errorf("nocase reference(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

func TestMatchesAll(t *testing.T) {
	for p, want := range map[string]bool{"*": true, "**": false, "": false, `\*`: false, "a*": false} {
		if got := Compile(p, false).MatchesAll(); got != want {
			t.Errorf("Compile(%q).MatchesAll() = %v, want %v", p, got, want)
		}
	}
}

// Redis gives up past 1000 nested stars: such a pattern matches nothing,
// even where it would.
func TestStarRunLimit(t *testing.T) {
	key := strings.Repeat("a", 1001) + "b"
	for _, tc := range []struct {
		pattern string
		want    bool
	}{
		{strings.Repeat("*a", 1000) + "*", true},
		{strings.Repeat("*a", 1000) + "b", true},
		{strings.Repeat("*a", 1001) + "b", false}, // 1001 star runs before a token
		{strings.Repeat("*a", 1000) + "**", true}, // a trailing star does not recurse
		{strings.Repeat("**a", 1000) + "b", true}, // `**` is one run
	} {
		if got := Match(tc.pattern, key); got != tc.want {
			t.Errorf("Match(%d-byte pattern %q…) = %v, want %v", len(tc.pattern), tc.pattern[:8], got, tc.want)
		}
	}
}

// FuzzMatch compares Match with the reference interpreter on short inputs
// (the reference backtracks without bound).
func FuzzMatch(f *testing.F) {
	for _, tc := range cases {
		f.Add(tc.pattern, tc.key, false)
	}
	f.Add("*a*a*b", "aaaaaaab", true)
	f.Add("[^a-c]*?", "dxyz", true)
	f.Fuzz(func(t *testing.T, pattern, key string, nocase bool) {
		if len(pattern) > 24 || len(key) > 24 {
			return
		}
		want := refMatch(pattern, key, nocase, 0)
		if got := Compile(pattern, nocase).Match(key); got != want {
			t.Fatalf("Compile(%q, %v).Match(%q) = %v, reference %v", pattern, nocase, key, got, want)
		}
	})
}

// refMatch is Redis's matching rules read straight off the raw pattern,
// recursing at every star with no shortcut: exponential, for short inputs
// only. It shares no code with the package.
func refMatch(p, s string, nocase bool, depth int) bool {
	if depth > 1000 {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for ; len(s) > 0; s = s[1:] {
				if refMatch(p[1:], s, nocase, depth+1) {
					return true
				}
			}
			return false
		case '?':
			p, s = p[1:], s[1:]
		case '[':
			var ok bool
			if ok, p = refClass(p[1:], s[0], nocase); !ok {
				return false
			}
			s = s[1:]
		default:
			if p[0] == '\\' && len(p) >= 2 {
				p = p[1:]
			}
			if refLower(int(int8(p[0])), nocase) != refLower(int(int8(s[0])), nocase) {
				return false
			}
			p, s = p[1:], s[1:]
		}
		if len(s) == 0 {
			p = strings.TrimLeft(p, "*")
		}
	}
	return len(p) == 0 && len(s) == 0
}

// refClass matches c against the class whose body starts p, and returns
// the pattern after the class.
func refClass(p string, c byte, nocase bool) (bool, string) {
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	ch := int(int8(c))
	match := false
	for {
		if len(p) >= 2 && p[0] == '\\' {
			match = match || p[1] == c
			p = p[2:]
			continue
		}
		if len(p) == 0 {
			break
		}
		if p[0] == ']' {
			p = p[1:]
			break
		}
		if len(p) >= 3 && p[1] == '-' {
			lo, hi := int(int8(p[0])), int(int8(p[2]))
			if lo > hi {
				lo, hi = hi, lo
			}
			lo, hi, x := refLower(lo, nocase), refLower(hi, nocase), refLower(ch, nocase)
			match = match || (x >= lo && x <= hi)
			p = p[3:]
			continue
		}
		match = match || refLower(int(int8(p[0])), nocase) == refLower(ch, nocase)
		p = p[1:]
	}
	return match != not, p
}

func refLower(c int, nocase bool) int {
	if nocase && c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// The pathological pattern costs about what a one-star scan costs: the
// issue's `*a*a*a*a*a*a*a*a*b` over keys of a's, where a matcher that
// retries every star is exponential in the stars.
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{100, 10000} {
		key := strings.Repeat("a", n)
		for _, pattern := range []string{"*", "*b", "*a*a*a*a*a*a*a*a*b", "*[a-c]*[a-c]*[^a]"} {
			p := Compile(pattern, false)
			b.Run(pattern+"/"+strconv.Itoa(n), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					p.Match(key)
				}
			})
		}
	}
}
