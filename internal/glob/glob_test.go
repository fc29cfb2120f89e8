package glob

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		{"", "", true},
		{"*", "", false}, // KEYS and SCAN special-case "*" before matching
		{"", "a", false},
		{"*", "abc", true},
		{"a*", "a", true},
		{"a*", "abc", true},
		{"*c", "abc", true},
		{"*b*", "abc", true},
		{"*d*", "abc", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"h[ae]llo", "hello", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[b-a]llo", "hallo", true}, // a reversed range is swapped
		{"h[a-b]llo", "hcllo", false},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{`a\`, `a\`, true}, // a trailing backslash is itself
		{`[\]]`, "]", true},
		{"[abc", "b", true}, // an unclosed class runs to the end
		{"[abc", "bx", false},
		{"[]", "a", false},
		{"[^]", "a", true},
		{"[a-]", "]", true}, // the range a-] as Redis reads it
		{"**a", "xa", true},
		{"ab*c", "ab", false},
		{"user:*", "user:1", true},
		{"user:*", "users", false},
	} {
		if got := Match(tc.pattern, tc.key); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

// A pattern that makes a backtracking matcher exponential is linear here:
// the test finishes at all (a hang guard, not a speed claim).
func TestMatchBounded(t *testing.T) {
	key := strings.Repeat("a", 10000)
	done := make(chan bool)
	go func() { done <- Match("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", key) }()
	select {
	case got := <-done:
		if got {
			t.Fatal("matched a key without a b")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Match did not finish within 30s")
	}
}

// Random patterns and keys over a small alphabet, against a real
// redis-server's KEYS: the same keys must match.
func TestMatchLikeRedis(t *testing.T) {
	r := testenv.RedisFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(1, 2))
	const keyAlphabet = `ab-]\^[`
	const patAlphabet = `ab-]\^[*?`
	emptyKeyLikeRedis(t, ctx, r)
	var keys []string
	for range 60 {
		keys = append(keys, randString(rng, keyAlphabet, rng.IntN(5)+1))
	}
	for _, k := range keys {
		if _, err := r.Do(ctx, "SET", k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	for range 400 {
		pat := randString(rng, patAlphabet, rng.IntN(6)+1)
		if pat == "*" {
			continue // KEYS's special case
		}
		got, err := r.Do(ctx, "KEYS", pat)
		if err != nil {
			t.Fatal(err)
		}
		want := splitKeys(got)
		var ours []string
		for _, k := range keys {
			if Match(pat, k) && !slices.Contains(ours, k) {
				ours = append(ours, k)
			}
		}
		slices.Sort(ours)
		if !slices.Equal(ours, want) {
			t.Errorf("KEYS %q: redis %q, Match %q", pat, want, ours)
		}
	}
}

// emptyKeyLikeRedis checks which patterns match the empty key, alone in
// the server: testenv's Do cannot tell [""] from [], so the reply's array
// length is read off the wire.
func emptyKeyLikeRedis(t *testing.T, ctx context.Context, r *testenv.Redis) {
	if _, err := r.Do(ctx, "SET", "", "v"); err != nil {
		t.Fatal(err)
	}
	defer r.Do(ctx, "DEL", "")
	nc, err := net.DialTimeout("tcp", r.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(nc)
	for _, pat := range []string{"", "**", "***", "?", "[", "[^a]", "*a", "a*", `\`} {
		fmt.Fprintf(nc, "*2\r\n$4\r\nKEYS\r\n$%d\r\n%s\r\n", len(pat), pat)
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		for range 2 * n { // each element: $0 and an empty line
			br.ReadString('\n')
		}
		if got := Match(pat, ""); got != (n == 1) {
			t.Errorf("KEYS %q over the empty key: redis %d keys, Match %v", pat, n, got)
		}
	}
}

func randString(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// splitKeys reads the reply testenv's Do gives for an array of bulk
// strings: one element a line.
func splitKeys(reply string) []string {
	if reply == "" {
		return nil
	}
	out := strings.Split(reply, "\n")
	slices.Sort(out)
	return slices.Compact(out)
}

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
