package backendtest

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/glob"
)

// The keyspace capabilities every key-value store has (see
// backends/keyspace.go). Subtests share the store with the others: scans
// match their own keys only, and the flush runs last.
func runKeyspace(t *testing.T, open func(t *testing.T) backends.Backend) {
	runSubtests(t, open, []subtest{
		{"Scan", testScan},
		{"ScanUnknownCursor", testScanUnknownCursor},
		{"ScanUnderWrites", testScanUnderWrites},
		{"Copy", testCopy},
		{"CopyKeepsDeadline", testCopyKeepsDeadline},
		{"ExpireTime", testExpireTime},
		{"RandomKey", testRandomKey},
		{"Flush", testFlush},
	})
}

func capability[T any](t *testing.T, b backends.Backend) T {
	t.Helper()
	c, ok := backends.As[T](b)
	if !ok {
		var zero T
		t.Fatalf("the backend has no %T", &zero)
	}
	return c
}

// scanAll runs a whole scan of the keys matching match and returns them as
// a set, with how often each came back.
func scanAll(t *testing.T, b backends.Backend, match string, count int) map[string]int {
	t.Helper()
	return scanFrom(t, b, 0, match, count)
}

// scanFrom is scanAll from cursor cur on.
func scanFrom(t *testing.T, b backends.Backend, cur uint64, match string, count int) map[string]int {
	t.Helper()
	sc := capability[backends.Scanner](t, b)
	got := map[string]int{}
	for pages := 0; ; pages++ {
		if pages > 100_000 {
			t.Fatal("the scan does not end")
		}
		next, keys, err := sc.Scan(ctx(t), cur, match, count)
		noErr(t, err)
		if next > backends.MaxCursor {
			t.Fatalf("cursor %d > MaxCursor", next)
		}
		for _, k := range keys {
			if !backends.Match(match, k) {
				t.Fatalf("Scan MATCH %q returned %q", match, k)
			}
			got[k]++
		}
		if next == 0 {
			return got
		}
		cur = next
	}
}

func testScan(t *testing.T, b backends.Backend) {
	prefix := key(t, "")
	var want []string
	for i := range 25 {
		k := fmt.Sprintf("%sk%02d", prefix, i)
		set(t, b, k, "v", backends.SetOptions{})
		want = append(want, k)
	}
	set(t, b, prefix+"gone", "v", backends.SetOptions{TTL: rel(time.Millisecond)})
	time.Sleep(5 * time.Millisecond)
	wantScanned(t, b, prefix, want, 1, 3, 10, 1000)
	// A narrower pattern: the keys k1x.
	got := scanAll(t, b, glob.Escape(prefix)+"k1?", 4)
	if len(got) != 10 {
		t.Fatalf("MATCH k1? found %d keys: %v", len(got), got)
	}
}

// wantScanned fails unless a whole scan of the keys under prefix, with
// each count, returns want (sorted).
func wantScanned(t *testing.T, b backends.Backend, prefix string, want []string, counts ...int) {
	t.Helper()
	for _, count := range counts {
		keys := slices.Sorted(maps.Keys(scanAll(t, b, glob.Escape(prefix)+"*", count)))
		if !slices.Equal(keys, want) {
			t.Fatalf("COUNT %d: scanned %q, want %q", count, keys, want)
		}
	}
}

// A cursor the store never gave is no error, and the scan from it ends.
// Which keys it returns is the store's to say (Redis's is undefined; the
// memory and PostgreSQL stores start over).
func testScanUnknownCursor(t *testing.T, b backends.Backend) {
	prefix := key(t, "")
	for i := range 5 {
		set(t, b, fmt.Sprintf("%s%d", prefix, i), "v", backends.SetOptions{})
	}
	for _, cur := range []uint64{123456789, 1<<52 + 12345, backends.MaxCursor} {
		scanFrom(t, b, cur, glob.Escape(prefix)+"*", 2)
	}
}

// Keys present for the whole scan come back, while others are written and
// deleted all along.
func testScanUnderWrites(t *testing.T, b backends.Backend) {
	prefix := key(t, "")
	var stable []string
	for i := range 200 {
		k := fmt.Sprintf("%sstable%03d", prefix, i)
		stable = append(stable, k)
		set(t, b, k, "v", backends.SetOptions{})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("%schurn%d", prefix, i%300)
			if _, err := b.Set(ctx(t), k, []byte("v"), backends.SetOptions{}); err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				if _, err := b.Del(ctx(t), []string{fmt.Sprintf("%schurn%d", prefix, (i+150)%300)}); err != nil {
					t.Error(err)
					return
				}
			}
			writes.Add(1)
		}
	}()
	stopWriter := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriter() // also when the scan fails the test
	got := scanAll(t, b, glob.Escape(prefix)+"*", 7)
	stopWriter()
	for _, k := range stable {
		if got[k] == 0 {
			t.Fatalf("%s, present all along, was not returned (%d writes during the scan)", k, writes.Load())
		}
	}
}

func testCopy(t *testing.T, b backends.Backend) {
	cp := capability[backends.Copier](t, b)
	src, dst := key(t, "src"), key(t, "dst")
	copyKey := func(o backends.CopyOptions) backends.CopyResult {
		t.Helper()
		r, err := cp.Copy(ctx(t), src, dst, o)
		noErr(t, err)
		return r
	}
	if r := copyKey(backends.CopyOptions{Move: true}); r != backends.CopyNoSource {
		t.Fatalf("move of a missing key = %d, want CopyNoSource", r)
	}
	set(t, b, src, "one", backends.SetOptions{})
	if r := copyKey(backends.CopyOptions{}); r != backends.Copied {
		t.Fatalf("copy = %d, want Copied", r)
	}
	wantGet(t, b, src, "one", true)
	wantGet(t, b, dst, "one", true)
	set(t, b, src, "two", backends.SetOptions{})
	if r := copyKey(backends.CopyOptions{}); r != backends.CopyDstExists {
		t.Fatalf("copy onto an existing key = %d, want CopyDstExists", r)
	}
	if r := copyKey(backends.CopyOptions{Move: true}); r != backends.CopyDstExists {
		t.Fatalf("RENAMENX onto an existing key = %d, want CopyDstExists", r)
	}
	wantGet(t, b, dst, "one", true)
	wantGet(t, b, src, "two", true)
	if r := copyKey(backends.CopyOptions{Replace: true, Move: true}); r != backends.Copied {
		t.Fatalf("RENAME = %d, want Copied", r)
	}
	wantGet(t, b, dst, "two", true)
	wantGet(t, b, src, "", false)
	// An expired dst does not exist.
	set(t, b, src, "three", backends.SetOptions{})
	set(t, b, dst, "old", backends.SetOptions{TTL: rel(time.Millisecond)})
	time.Sleep(5 * time.Millisecond)
	if r := copyKey(backends.CopyOptions{Move: true}); r != backends.Copied {
		t.Fatalf("RENAMENX onto an expired key = %d, want Copied", r)
	}
	wantGet(t, b, dst, "three", true)
	if d := ttl(t, b, dst); d != backends.TTLPersistent {
		t.Fatalf("TTL after a copy of a key without one = %v", d)
	}
}

// A copy keeps src's deadline, not a fresh lifetime.
func testCopyKeepsDeadline(t *testing.T, b backends.Backend) {
	cp := capability[backends.Copier](t, b)
	src, dst := key(t, "src"), key(t, "dst")
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	set(t, b, src, "v", backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLAt, At: at}})
	set(t, b, dst, "persistent", backends.SetOptions{})
	r, err := cp.Copy(ctx(t), src, dst, backends.CopyOptions{Replace: true})
	noErr(t, err)
	if r != backends.Copied {
		t.Fatalf("COPY REPLACE = %d", r)
	}
	et := capability[backends.ExpireTimer](t, b)
	for _, k := range []string{src, dst} {
		ms, err := et.ExpireTime(ctx(t), k)
		noErr(t, err)
		if ms != at.UnixMilli() {
			t.Fatalf("deadline of %s = %d, want %d", k, ms, at.UnixMilli())
		}
	}
}

func testExpireTime(t *testing.T, b backends.Backend) {
	et := capability[backends.ExpireTimer](t, b)
	k := key(t, "k")
	get := func() int64 {
		t.Helper()
		ms, err := et.ExpireTime(ctx(t), k)
		noErr(t, err)
		return ms
	}
	if ms := get(); ms != int64(backends.TTLMissing) {
		t.Fatalf("missing key: %d, want -2", ms)
	}
	set(t, b, k, "v", backends.SetOptions{})
	if ms := get(); ms != int64(backends.TTLPersistent) {
		t.Fatalf("key without expiry: %d, want -1", ms)
	}
	at := time.UnixMilli(4102444800123) // 2100
	if !expire(t, b, k, backends.TTL{Mode: backends.TTLAt, At: at}, backends.ExpireAlways) {
		t.Fatal("PEXPIREAT did not change the key")
	}
	if ms := get(); ms != at.UnixMilli() {
		t.Fatalf("PEXPIRETIME = %d, want %d", ms, at.UnixMilli())
	}
}

func testRandomKey(t *testing.T, b backends.Backend) {
	rk := capability[backends.RandomKeyer](t, b)
	set(t, b, key(t, "k"), "v", backends.SetOptions{})
	for range 5 {
		k, ok, err := rk.RandomKey(ctx(t))
		noErr(t, err)
		if !ok {
			t.Fatal("RandomKey found no key in a store that has one")
		}
		if exists(t, b, k) != 1 {
			t.Fatalf("RandomKey returned %q, which does not exist", k)
		}
	}
}

func testFlush(t *testing.T, b backends.Backend) {
	fl := capability[backends.Flusher](t, b)
	keys := []string{key(t, "a"), key(t, "b"), key(t, "c")}
	for _, k := range keys {
		set(t, b, k, "v", backends.SetOptions{})
	}
	wantGet(t, b, keys[0], "v", true) // an L1 in front holds it now
	noErr(t, fl.Flush(ctx(t)))
	if n := exists(t, b, keys...); n != 0 {
		t.Fatalf("%d keys left after Flush", n)
	}
	wantGet(t, b, keys[0], "", false)
	if got := scanAll(t, b, "", 100); len(got) != 0 {
		t.Fatalf("keys left after Flush: %v", got)
	}
	if rk, ok := backends.As[backends.RandomKeyer](b); ok {
		if k, ok, err := rk.RandomKey(ctx(t)); err != nil || ok {
			t.Fatalf("RandomKey after Flush = %q, %v, %v", k, ok, err)
		}
	}
	set(t, b, keys[0], "again", backends.SetOptions{})
	wantGet(t, b, keys[0], "again", true)
}
