package glob

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
