package glob

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/internal/testenv"
)

// redisKeys are the keys TestMatchesRedis stores: the keys of the case
// table and bytes that exercise classes, escapes and signed ranges.
var redisKeys = []string{
	"", "a", "A", "b", "ab", "abc", "aXc", "ac", "abbbc", "abbbcd", "acb", "aXbYc",
	"a*c", "a?c", "a[c", "a]c", `a\c`, "a-c", "*", "?", "[", "]", "-", "^", `\`, "_", "`",
	"hello", "hallo", "hillo", "hbllo", "hcllo", "hllo", "heeeello", "HELLO",
	"[a]", "a]", "xa]", "x", "bx", "bc", "aaaa", "aaaab", "aaaaaaab", "z", "Z",
	"\x00", "\x01", "\x02", "\x7f", "\x80", "\x81", "\x82", "\x90", "\xfe", "\xff", "a\xffb",
	"foo\x00bar", "key:1", "key:10", "Key:2", "user:{42}:name", "line\nbreak",
}

// TestMatchesRedis compares Match with redis-server's KEYS: every pattern
// of the case table and random patterns over the bytes that mean
// something in a pattern, on redisKeys.
func TestMatchesRedis(t *testing.T) {
	srv := testenv.RedisFor(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true})
	defer rc.Close()
	for _, k := range redisKeys {
		if err := rc.Set(ctx, k, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	patterns := []string{"*", "**"}
	for _, tc := range cases {
		patterns = append(patterns, tc.pattern)
	}
	const alphabet = "ab*?[]^-\\xA\xff\x80\x01"
	rng := rand.New(rand.NewPCG(17, 18))
	for range 400 {
		b := make([]byte, 1+rng.IntN(7))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		patterns = append(patterns, string(b))
	}
	for _, pattern := range patterns {
		want, err := rc.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatalf("KEYS %q: %v", pattern, err)
		}
		p := Compile(pattern, false)
		var got []string
		for _, k := range redisKeys {
			if p.MatchesAll() || p.Match(k) {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("KEYS %q:\n got  %q\n want %q (redis-server)", pattern, got, want)
		}
	}
	// CONFIG GET matches parameter names with nocase.
	for _, pattern := range []string{"MAXMEMORY*", "Port", "[M]axmemory-policy", "p[O]rt", "*-Max-*"} {
		reply, err := rc.ConfigGet(ctx, pattern).Result()
		if err != nil {
			t.Fatalf("CONFIG GET %q: %v", pattern, err)
		}
		p := Compile(pattern, true)
		for name := range reply {
			if !p.Match(name) {
				t.Errorf("CONFIG GET %q returned %q, which nocase Match rejects", pattern, name)
			}
		}
		if len(reply) == 0 {
			t.Errorf("CONFIG GET %q returned nothing", pattern)
		}
	}
}
