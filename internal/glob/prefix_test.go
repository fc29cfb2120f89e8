package glob

import "testing"

func TestLiteralPrefix(t *testing.T) {
	for _, tc := range []struct{ pattern, lit, rest string }{
		{"user:*", "user:", "*"},
		{"abc", "abc", ""},
		{`a\*b*`, "a*b", "*"},
		{"a?b", "a", "?b"},
		{"[ab]c", "", "[ab]c"},
		{`a\`, `a\`, ""},
	} {
		lit, rest := LiteralPrefix(tc.pattern)
		if lit != tc.lit || rest != tc.rest {
			t.Errorf("LiteralPrefix(%q) = %q, %q; want %q, %q", tc.pattern, lit, rest, tc.lit, tc.rest)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, s := range []string{"plain", `a*b?c[d]e\f`, ""} {
		if !Match(Escape(s), s) && s != "" {
			t.Errorf("Escape(%q) = %q does not match it", s, Escape(s))
		}
		if lit, rest := LiteralPrefix(Escape(s)); lit != s || rest != "" {
			t.Errorf("LiteralPrefix(Escape(%q)) = %q, %q", s, lit, rest)
		}
	}
	if Match(Escape("a*"), "ab") {
		t.Error(`Escape("a*") matches "ab"`)
	}
}
