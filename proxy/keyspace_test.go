package proxy

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// The keyspace commands against a real redis-server: the same bytes back,
// for everything whose answer does not depend on hash order (SCAN and KEYS
// are compared as sets below).
func TestKeyspaceCompareWithRedis(t *testing.T) {
	ts := startServer(t, Config{})
	redisAddr := startRedis(t)
	ours, theirs := dial(t, ts.addr), dial(t, redisAddr)
	for _, cmd := range [][]string{
		// EXPIREAT, PEXPIREAT, EXPIRETIME, PEXPIRETIME
		{"SET", "a1", "v"}, {"EXPIRETIME", "a1"}, {"PEXPIRETIME", "a1"}, {"EXPIRETIME", "nosuch"},
		{"PEXPIRETIME", "nosuch"}, {"EXPIREAT", "a1", "4102444800"}, {"EXPIRETIME", "a1"},
		{"PEXPIRETIME", "a1"}, {"PEXPIREAT", "a1", "4102444800123"}, {"PEXPIRETIME", "a1"},
		{"EXPIRETIME", "a1"}, {"PEXPIREAT", "a1", "4102444800499"}, {"EXPIRETIME", "a1"},
		{"PEXPIREAT", "a1", "4102444800500"}, {"EXPIRETIME", "a1"},
		{"EXPIREAT", "a1", "4102444900", "NX"}, {"EXPIREAT", "a1", "4102444900", "XX"}, {"EXPIRETIME", "a1"},
		{"EXPIREAT", "a1", "4102444800", "GT"}, {"EXPIREAT", "a1", "4102445000", "GT"}, {"EXPIRETIME", "a1"},
		{"EXPIREAT", "a1", "4102446000", "LT"}, {"EXPIREAT", "a1", "4102444000", "LT"}, {"EXPIRETIME", "a1"},
		{"EXPIREAT", "a1", "10", "NX", "XX"}, {"EXPIREAT", "a1", "10", "GT", "LT"}, {"EXPIREAT", "a1", "10", "FOO"},
		{"EXPIREAT", "a1", "abc"}, {"EXPIREAT", "a1", "9223372036854775807"},
		{"EXPIREAT", "a1", "-9223372036854775807"},
		// (PEXPIREAT past 2262 is clamped to 2262: PEXPIRETIME differs there.)
		{"SET", "a2", "v"}, {"EXPIREAT", "a2", "4102444800", "XX"},
		{"EXPIREAT", "a2", "4102444800", "GT"}, {"EXPIREAT", "a2", "4102444800", "XX", "LT"},
		{"EXPIREAT", "a2", "4102444800", "LT"}, {"EXPIRETIME", "a2"},
		{"EXPIREAT", "a2", "1"}, {"EXISTS", "a2"}, {"SET", "a3", "v"}, {"PEXPIREAT", "a3", "-5"},
		{"EXISTS", "a3"}, {"EXPIREAT", "nosuch", "4102444800"}, {"SET", "a4", "v", "EX", "100"},
		{"EXPIREAT", "a4", "1", "GT"}, {"EXISTS", "a4"}, {"EXPIREAT", "a4", "1", "LT"}, {"EXISTS", "a4"},
		{"EXPIREAT", "a1"}, {"EXPIRETIME"}, {"PEXPIRETIME", "a", "b"},
		// TYPE, TOUCH
		{"SET", "t1", "v"}, {"TYPE", "t1"}, {"TYPE", "nosuch"}, {"TYPE"}, {"TOUCH", "t1", "t1", "nosuch"},
		{"TOUCH", "nosuch"}, {"TOUCH"},
		// RENAME, RENAMENX
		{"SET", "r1", "one"}, {"PEXPIREAT", "r1", "4102444800123"}, {"RENAME", "r1", "r2"}, {"GET", "r1"},
		{"GET", "r2"}, {"PEXPIRETIME", "r2"}, {"RENAME", "r1", "r2"}, {"RENAME", "r2", "r2"},
		{"RENAME", "nosuch", "nosuch"}, {"SET", "r3", "three"}, {"RENAME", "r3", "r2"}, {"GET", "r2"},
		{"PEXPIRETIME", "r2"}, {"SET", "r4", "four"}, {"RENAMENX", "r4", "r2"}, {"RENAMENX", "r4", "r5"},
		{"GET", "r5"}, {"RENAMENX", "r5", "r5"}, {"RENAMENX", "nosuch", "r9"}, {"RENAMENX", "nosuch", "nosuch"},
		{"RENAME", "r1"}, {"RENAME", "a", "b", "c"}, {"RENAMENX", "a"},
		// COPY
		{"SET", "c1", "one"}, {"PEXPIREAT", "c1", "4102444800123"}, {"COPY", "c1", "c2"}, {"GET", "c2"},
		{"PEXPIRETIME", "c2"}, {"COPY", "c1", "c2"}, {"SET", "c1", "uno"}, {"COPY", "c1", "c2", "REPLACE"},
		{"GET", "c2"}, {"PEXPIRETIME", "c2"}, {"COPY", "c1", "c1"}, {"COPY", "nosuch", "c3"},
		{"COPY", "nosuch", "nosuch"}, {"COPY", "c1", "c3", "DB", "0"}, {"GET", "c3"},
		{"COPY", "c1", "c4", "DB", "99"}, {"COPY", "c1", "c4", "DB", "x"}, {"COPY", "c1", "c4", "DB"},
		{"COPY", "c1", "c4", "FOO"}, {"COPY", "c1", "c4", "replace", "db", "0"},
		{"COPY", "c1", "c4", "DB", "99999999999"}, {"COPY", "c1", "c1", "FOO"}, {"COPY", "c1"},
		// SCAN's and KEYS's errors
		{"SCAN", "x"}, {"SCAN", " 0"}, {"SCAN", "0x"}, {"SCAN", "18446744073709551616"}, {"SCAN", "+"},
		{"SCAN", "0", "COUNT", "0"}, {"SCAN", "0", "COUNT", "-1"}, {"SCAN", "0", "COUNT", "x"},
		{"SCAN", "0", "COUNT"}, {"SCAN", "0", "MATCH"}, {"SCAN", "0", "FOO", "bar"}, {"SCAN", "x", "COUNT", "0"},
		{"SCAN", "0", "TYPE", "list"}, {"SCAN", "0", "TYPE", "nosuchtype"}, {"SCAN"}, {"KEYS"}, {"KEYS", "a", "b"},
		{"KEYS", "nosuch*"},
		// FLUSHDB, FLUSHALL, RANDOMKEY
		{"FLUSHDB", "x"}, {"FLUSHDB", "SYNC", "ASYNC"}, {"FLUSHALL", "x"}, {"FLUSHDB", "async"},
		{"DBSIZE"}, {"RANDOMKEY"}, {"SCAN", "0"}, {"KEYS", "*"}, {"SET", "f1", "v"}, {"RANDOMKEY"},
		{"FLUSHALL", "SYNC"}, {"EXISTS", "f1"}, {"FLUSHALL"}, {"FLUSHDB"}, {"RANDOMKEY", "x"},
	} {
		want, got := theirs.do(cmd...), ours.do(cmd...)
		if got != want {
			t.Errorf("%q:\n got %q\nwant %q", cmd, got, want)
		}
	}
}

// scanAll runs SCAN to its end with the given options and returns every
// key it returned, and how many times.
func scanAll(t *testing.T, c *rawClient, opts ...string) map[string]int {
	t.Helper()
	got := map[string]int{}
	cur := "0"
	for pages := 0; ; pages++ {
		if pages > 100_000 {
			t.Fatal("the scan does not end")
		}
		next, keys := scanPage(t, c, append([]string{"SCAN", cur}, opts...)...)
		for _, k := range keys {
			got[k]++
		}
		if next == "0" {
			return got
		}
		cur = next
	}
}

// scanPage sends one SCAN and reads its reply.
func scanPage(t *testing.T, c *rawClient, cmd ...string) (next string, keys []string) {
	t.Helper()
	parts := bulkStrings(t, c.do(cmd...))
	if len(parts) < 1 {
		t.Fatalf("%q: no cursor", cmd)
	}
	if n, err := strconv.ParseUint(parts[0], 10, 64); err != nil || n > 1<<63-1 {
		t.Fatalf("%q: cursor %q is not a number below 2^63", cmd, parts[0])
	}
	return parts[0], parts[1:]
}

// bulkStrings reads the bulk strings of a reply, nested arrays flattened.
func bulkStrings(t *testing.T, reply string) []string {
	t.Helper()
	var out []string
	for rest := reply; rest != ""; {
		line, after, _ := strings.Cut(rest, "\r\n")
		rest = after
		switch line[0] {
		case '*':
		case '$':
			n, _ := strconv.Atoi(line[1:])
			out = append(out, rest[:n])
			rest = rest[n+2:]
		default:
			t.Fatalf("unexpected reply line %q in %q", line, reply)
		}
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// SCAN and KEYS over the three routes of the test server (catch-all, pg:,
// pg:x:) find the keys under their RESP names, with MATCH, COUNT and TYPE,
// as redis-server finds the same keys.
func TestScanAcrossRoutes(t *testing.T) {
	ts := startServer(t, Config{})
	redisAddr := startRedis(t)
	ours, theirs := dial(t, ts.addr), dial(t, redisAddr)
	var all []string
	for i := range 30 {
		for _, p := range []string{"", "pg:", "pg:x:", "user:", "pg:y"} {
			k := fmt.Sprintf("%sk%02d", p, i)
			all = append(all, k)
			for _, c := range []*rawClient{ours, theirs} {
				c.do("SET", k, "v")
			}
		}
	}
	slices.Sort(all)
	for _, opts := range [][]string{
		nil, {"COUNT", "1"}, {"COUNT", "7"}, {"COUNT", "1000"}, {"MATCH", "*"},
		{"MATCH", "pg:*"}, {"MATCH", "pg:x:*", "COUNT", "3"}, {"MATCH", "p*"}, {"MATCH", "pg:k1?"},
		{"MATCH", "*k2*"}, {"MATCH", "pg:?:k0*"}, {"MATCH", "user:k01"}, {"MATCH", "nosuch*"},
		{"MATCH", "pg:x"}, {"MATCH", "[pu]*k00"}, {"TYPE", "string"}, {"TYPE", "STRING", "MATCH", "u*"},
		{"TYPE", "hash"},
	} {
		got, want := sortedKeys(scanAll(t, ours, opts...)), sortedKeys(scanAll(t, theirs, opts...))
		if !slices.Equal(got, want) {
			t.Errorf("SCAN %q: got %d keys %q, redis %d keys %q", opts, len(got), got, len(want), want)
		}
	}
	for _, pat := range []string{"*", "pg:*", "pg:x:k0*", "*k1*", "user:k2?", "[^p]*", `pg\:x*`} {
		got := bulkStrings(t, ours.do("KEYS", pat))
		want := bulkStrings(t, theirs.do("KEYS", pat))
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("KEYS %q: got %q, redis %q", pat, got, want)
		}
	}
	if got := sortedKeys(scanAll(t, ours)); !slices.Equal(got, all) {
		t.Errorf("SCAN found %d keys, want %d", len(got), len(all))
	}
	if got := ours.do("DBSIZE"); got != ":150\r\n" {
		t.Errorf("DBSIZE = %q", got)
	}
	// A key of route postgres ("pg:") stored as "x:hidden" would be named
	// pg:x:hidden, which is route pgx's key: no client can reach it as
	// that, so it is not listed.
	if _, err := ts.backend("postgres").Set(context.Background(), "x:hidden", []byte("v"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, ours, "MATCH", "*hidden*"); len(got) != 0 {
		t.Errorf("a shadowed key is listed: %v", got)
	}
	// RANDOMKEY names keys that exist.
	for range 20 {
		k := bulkStrings(t, ours.do("RANDOMKEY"))
		if len(k) != 1 || ours.do("EXISTS", k[0]) != ":1\r\n" {
			t.Fatalf("RANDOMKEY = %q", k)
		}
	}
}

// RENAME and COPY within a route work under prefixes; across routes they
// are refused before anything is done.
func TestRenameAcrossRoutes(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	c.do("SET", "pg:a", "v")
	for _, cmd := range [][]string{{"RENAME", "pg:a", "b"}, {"RENAMENX", "pg:a", "pg:x:b"}, {"COPY", "b", "pg:a"}} {
		if got, want := c.do(cmd...), "-"+errCrossRoute+"\r\n"; got != want {
			t.Errorf("%q = %q, want %q", cmd, got, want)
		}
	}
	if got := c.do("RENAME", "pg:a", "pg:b"); got != "+OK\r\n" {
		t.Fatalf("RENAME within a route = %q", got)
	}
	if got := c.do("GET", "pg:b"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET after RENAME = %q", got)
	}
	if got := c.do("COPY", "pg:b", "pg:c"); got != ":1\r\n" {
		t.Fatalf("COPY within a route = %q", got)
	}
}

// Keys present for the whole scan are returned while other clients add and
// remove keys all along, across routes.
func TestScanUnderWrites(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	var stable []string
	for i := range 3000 {
		k := fmt.Sprintf("%sstable%d", []string{"", "pg:", "pg:x:"}[i%3], i)
		stable = append(stable, k)
	}
	for _, batch := range slices.Collect(slices.Chunk(stable, 500)) {
		args := []string{"MSET"}
		for _, k := range batch {
			args = append(args, k, "v")
		}
		c.do(args...)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wc := dial(t, ts.addr)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("%schurn%d-%d", []string{"", "pg:", "pg:x:"}[i%3], w, i%5000)
				if _, err := wc.try(encode("SET", k, "v")); err != nil {
					t.Error(err)
					return
				}
				if _, err := wc.try(encode("DEL", fmt.Sprintf("%schurn%d-%d", []string{"", "pg:", "pg:x:"}[(i+1)%3], w, (i+2500)%5000))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriters()
	for _, count := range []string{"5", "100"} {
		got := scanAll(t, c, "COUNT", count)
		for _, k := range stable {
			if got[k] == 0 {
				t.Fatalf("COUNT %s: %s, present for the whole scan, was not returned", count, k)
			}
		}
	}
	stopWriters()
}

// KEYS with a pattern that is exponential for a backtracking matcher, over
// 100,000 long keys, finishes: a hang guard of 30s, not a speed claim.
func TestKeysPathologicalPattern(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	long := strings.Repeat("a", 200)
	for i := 0; i < 100_000; i += 1000 {
		args := []string{"MSET"}
		for j := i; j < i+1000; j++ {
			args = append(args, fmt.Sprintf("%s%06d", long, j), "v")
		}
		c.do(args...)
	}
	c.do("SET", long+"b", "v")
	done := make(chan string, 1)
	go func() {
		r, err := c.try(encode("KEYS", "*a*a*a*a*a*a*a*a*b"))
		if err != nil {
			r = err.Error()
		}
		done <- r
	}()
	select {
	case got := <-done:
		if want := "*1\r\n$201\r\n" + long + "b\r\n"; got != want {
			t.Fatalf("KEYS = %.80q…, want the one key ending in b", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("KEYS with a pathological pattern did not finish within 30s")
	}
}
