// Package backendtest is the conformance suite for backends.Backend: every
// store (memory, Valkey, each PostgreSQL durability) runs it, so they answer
// the same commands the same way. The expected results are Redis's.
package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/pgcache/pgcache/backends"
)

// Run runs the suite. open returns a fresh, empty Backend for each subtest
// (or one whose keys the subtest can't collide with: every subtest uses keys
// unique to it).
//
// Every update then runs a second time through the backend's generic
// read-modify-write (subtests under "Generic/"), where a backend that runs
// GETDEL or INCRBY natively would otherwise never run its generic path.
//
// Then collections (coll.go): every command on hashes, sets, sorted sets
// and lists through Do, and their keys through the other methods; their
// scripts run again under "Generic/", each Op's type hidden, so a store
// that has statements of its own for some commands runs its generic path
// too.
func Run(t *testing.T, open func(t *testing.T) backends.Backend, opts ...Option) {
	o := newOptions(opts)
	run(t, open)
	t.Run("Created", func(t *testing.T) { testCreated(t, open(t), o) })
	t.Run("Keyspace", func(t *testing.T) { runKeyspace(t, open) })
	t.Run("Collections", func(t *testing.T) { runCollections(t, open, o) })
	t.Run("Generic", func(t *testing.T) {
		generic := func(t *testing.T) backends.Backend { return genericOnly{open(t)} }
		run(t, generic)
		t.Run("Collections", func(t *testing.T) { runScripts(t, generic, true, o) })
	})
}

// Option tells Run and RunAtomic what a store does where the contract
// lets stores differ.
type Option func(*options)

type options struct {
	inPlaceKept      bool
	encodingFromSize bool
	passes           bool
}

// PassesCommands says that the store passes commands to a server that has
// them (Valkey), which does not say which keys a command emptied or made
// (backends.MarkEmptied, MarkCreated; SetResult.Created…): the store says
// none, except of the updates it runs itself (APPEND, through Apply).
func PassesCommands() Option { return func(o *options) { o.passes = true } }

// EncodingFromSize says that OBJECT ENCODING of a collection reports its
// encoding for the size it has now, where Redis 7 never converts a value
// back to a small one: a store that rebuilds values from their members
// alone (PostgreSQL's rows, and an L1 tier's copies of them), which
// docs/architecture.md names. The script that checks Redis's way is not
// run on it.
func EncodingFromSize() Option { return func(o *options) { o.encodingFromSize = true } }

func newOptions(opts []Option) *options {
	o := &options{}
	for _, f := range opts {
		f(o)
	}
	return o
}

// InPlaceKept says that an atomic run that fails keeps the changes it made
// in place to collections that existed before it (as Redis keeps what a
// failed script wrote: the memory store), where the other stores write
// none of its writes. What it created or replaced is still undone.
func InPlaceKept() Option { return func(o *options) { o.inPlaceKept = true } }

func run(t *testing.T, open func(t *testing.T) backends.Backend) {
	runSubtests(t, open, []subtest{
		{"GetSet", testGetSet},
		{"Bytes", testBytes},
		{"SetConditions", testSetConditions},
		{"SetGet", testSetGet},
		{"SetTTL", testSetTTL},
		{"KeepTTL", testKeepTTL},
		{"SetPastDeadline", testSetPastDeadline},
		{"Expiry", testExpiry},
		{"MGetMSet", testMGetMSet},
		{"DelExists", testDelExists},
		{"GetDel", testGetDel},
		{"GetEx", testGetEx},
		{"IncrBy", testIncrBy},
		{"IncrByErrors", testIncrByErrors},
		{"Expire", testExpire},
		{"ExpireConditions", testExpireConditions},
		{"Persist", testPersist},
		{"BorrowedKeys", testBorrowedKeys},
		{"Update", testUpdate},
		{"UpdateConcurrent", testUpdateConcurrent},
	})
}

// subtest is a case of a suite: its name, and its test of a store.
type subtest struct {
	name string
	fn   func(t *testing.T, b backends.Backend)
}

// runSubtests runs each test on a store open makes for it.
func runSubtests(t *testing.T, open func(t *testing.T) backends.Backend, tests []subtest) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// key makes a key unique to the running subtest.
func key(t *testing.T, name string) string {
	return fmt.Sprintf("%s/%s", t.Name(), name)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func set(t *testing.T, b backends.Backend, k, v string, opts backends.SetOptions) backends.SetResult {
	t.Helper()
	res, err := b.Set(ctx(t), k, []byte(v), opts)
	noErr(t, err)
	return res
}

func setBytes(t *testing.T, b backends.Backend, k string, v []byte) {
	t.Helper()
	_, err := b.Set(ctx(t), k, v, backends.SetOptions{})
	noErr(t, err)
}

func exists(t *testing.T, b backends.Backend, keys ...string) int64 {
	t.Helper()
	n, err := b.Exists(ctx(t), keys)
	noErr(t, err)
	return n
}

func del(t *testing.T, b backends.Backend, keys ...string) int64 {
	t.Helper()
	n, err := b.Del(ctx(t), keys)
	noErr(t, err)
	return n
}

func mget(t *testing.T, b backends.Backend, keys []string, dst [][]byte) [][]byte {
	t.Helper()
	vals, err := b.MGet(ctx(t), keys, dst)
	noErr(t, err)
	return vals
}

func mset(t *testing.T, b backends.Backend, pairs ...backends.KV) {
	t.Helper()
	noErr(t, b.MSet(ctx(t), pairs))
}

func incr(t *testing.T, b backends.Backend, k string, delta int64) int64 {
	t.Helper()
	n, err := backends.DoIncrBy(ctx(t), b, k, delta)
	noErr(t, err)
	return n
}

func expire(t *testing.T, b backends.Backend, k string, ttl backends.TTL, cond backends.ExpireCond) bool {
	t.Helper()
	ok, err := backends.DoExpire(ctx(t), b, k, ttl, cond)
	noErr(t, err)
	return ok
}

func wantGet(t *testing.T, b backends.Backend, k string, want string, wantOK bool) {
	t.Helper()
	got, ok, err := b.Get(ctx(t), k)
	if err != nil {
		t.Fatalf("Get(%q): %v", k, err)
	}
	if ok != wantOK || (ok && string(got) != want) {
		t.Fatalf("Get(%q) = %q, %v; want %q, %v", k, got, ok, want, wantOK)
	}
	if ok && got == nil {
		t.Fatalf("Get(%q) returned a nil slice for a present value", k)
	}
}

func ttl(t *testing.T, b backends.Backend, k string) time.Duration {
	t.Helper()
	d, err := b.TTL(ctx(t), k)
	noErr(t, err)
	return d
}

func rel(d time.Duration) backends.TTL { return backends.TTL{Mode: backends.TTLRelative, D: d} }

// eventually polls cond up to a bound: expiry is checked against the store's
// clock, which the test does not control.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not happen within 2s", what)
}

func testGetSet(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	wantGet(t, b, k, "", false)
	if res := set(t, b, k, "v1", backends.SetOptions{}); !res.Stored {
		t.Fatalf("Set stored=false")
	}
	wantGet(t, b, k, "v1", true)
	set(t, b, k, "v2", backends.SetOptions{})
	wantGet(t, b, k, "v2", true)
	if d := ttl(t, b, k); d != backends.TTLPersistent {
		t.Fatalf("TTL after plain SET = %v, want TTLPersistent", d)
	}
	if d := ttl(t, b, key(t, "absent")); d != backends.TTLMissing {
		t.Fatalf("TTL of absent key = %v, want TTLMissing", d)
	}
}

func testBytes(t *testing.T, b backends.Backend) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, tc := range []struct {
		name string
		val  []byte
	}{
		{"empty", []byte{}},
		{"nul", []byte{0}},
		{"all256", all},
		{"invalid-utf8", []byte{0xff, 0xfe, 0xc3, 0x28}},
		{"large", bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16)},
	} {
		k := key(t, tc.name)
		setBytes(t, b, k, tc.val)
		got, ok, err := b.Get(ctx(t), k)
		if err != nil || !ok || got == nil || !bytes.Equal(got, tc.val) {
			t.Fatalf("%s: Get = %d bytes, ok=%v, nil=%v, err=%v; want %d bytes", tc.name, len(got), ok, got == nil, err, len(tc.val))
		}
	}
	// The caller's buffer is borrowed: changing it after Set changes nothing stored.
	buf := []byte("original")
	k := key(t, "borrowed")
	setBytes(t, b, k, buf)
	copy(buf, "XXXXXXXX")
	wantGet(t, b, k, "original", true)
}

func testSetConditions(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	if res := set(t, b, k, "x", backends.SetOptions{Cond: backends.SetIfPresent}); res.Stored {
		t.Fatalf("SET XX on absent key stored")
	}
	wantGet(t, b, k, "", false)
	if res := set(t, b, k, "a", backends.SetOptions{Cond: backends.SetIfAbsent}); !res.Stored {
		t.Fatalf("SET NX on absent key not stored")
	}
	if res := set(t, b, k, "b", backends.SetOptions{Cond: backends.SetIfAbsent}); res.Stored {
		t.Fatalf("SET NX on present key stored")
	}
	wantGet(t, b, k, "a", true)
	if res := set(t, b, k, "c", backends.SetOptions{Cond: backends.SetIfPresent}); !res.Stored {
		t.Fatalf("SET XX on present key not stored")
	}
	wantGet(t, b, k, "c", true)

	// An expired key is absent: SET NX takes it over, SET XX refuses it.
	e := key(t, "expired")
	set(t, b, e, "old", backends.SetOptions{TTL: rel(50 * time.Millisecond)})
	eventually(t, "expiry", func() bool { _, ok, _ := b.Get(ctx(t), e); return !ok })
	if res := set(t, b, e, "x", backends.SetOptions{Cond: backends.SetIfPresent}); res.Stored {
		t.Fatalf("SET XX on expired key stored")
	}
	if res := set(t, b, e, "new", backends.SetOptions{Cond: backends.SetIfAbsent}); !res.Stored {
		t.Fatalf("SET NX did not take over an expired key")
	}
	wantGet(t, b, e, "new", true)
	if d := ttl(t, b, e); d != backends.TTLPersistent {
		t.Fatalf("TTL after SET NX over an expired key = %v, want persistent", d)
	}
}

func testSetGet(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	res := set(t, b, k, "v1", backends.SetOptions{Get: true})
	if !res.Stored || res.OldFound || res.Old != nil {
		t.Fatalf("SET GET on absent key = %+v", res)
	}
	res = set(t, b, k, "v2", backends.SetOptions{Get: true})
	if !res.Stored || !res.OldFound || string(res.Old) != "v1" {
		t.Fatalf("SET GET = %+v, want old v1", res)
	}
	// NX with GET (Redis 7): refused, and the old value comes back.
	res = set(t, b, k, "v3", backends.SetOptions{Get: true, Cond: backends.SetIfAbsent})
	if res.Stored || !res.OldFound || string(res.Old) != "v2" {
		t.Fatalf("SET NX GET on present key = %+v, want not stored, old v2", res)
	}
	res = set(t, b, key(t, "absent"), "v", backends.SetOptions{Get: true, Cond: backends.SetIfPresent})
	if res.Stored || res.OldFound {
		t.Fatalf("SET XX GET on absent key = %+v", res)
	}
	// An empty old value is found, and not nil.
	e := key(t, "empty")
	set(t, b, e, "", backends.SetOptions{})
	res = set(t, b, e, "x", backends.SetOptions{Get: true})
	if !res.OldFound || res.Old == nil || len(res.Old) != 0 {
		t.Fatalf("SET GET over an empty value = %+v", res)
	}
}

func testSetTTL(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	set(t, b, k, "v", backends.SetOptions{TTL: rel(100 * time.Second)})
	if d := ttl(t, b, k); d <= 90*time.Second || d > 100*time.Second {
		t.Fatalf("TTL after EX 100 = %v", d)
	}
	at := time.Now().Add(200 * time.Second)
	set(t, b, k, "v", backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLAt, At: at}})
	if d := ttl(t, b, k); d <= 190*time.Second || d > 201*time.Second {
		t.Fatalf("TTL after PXAT +200s = %v", d)
	}
	// A plain SET clears the expiry.
	set(t, b, k, "v", backends.SetOptions{})
	if d := ttl(t, b, k); d != backends.TTLPersistent {
		t.Fatalf("TTL after plain SET = %v, want persistent", d)
	}
}

func testKeepTTL(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	set(t, b, k, "v1", backends.SetOptions{TTL: rel(100 * time.Second)})
	set(t, b, k, "v2", backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLKeep}})
	wantGet(t, b, k, "v2", true)
	if d := ttl(t, b, k); d <= 90*time.Second || d > 100*time.Second {
		t.Fatalf("TTL after SET KEEPTTL = %v, want about 100s", d)
	}
	n := key(t, "new")
	set(t, b, n, "v", backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLKeep}})
	if d := ttl(t, b, n); d != backends.TTLPersistent {
		t.Fatalf("TTL after SET KEEPTTL on a new key = %v, want persistent", d)
	}
}

func testSetPastDeadline(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	set(t, b, k, "old", backends.SetOptions{})
	res := set(t, b, k, "v", backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLAt, At: time.Now().Add(-time.Hour)}})
	if !res.Stored {
		t.Fatalf("SET PXAT in the past: stored=false")
	}
	wantGet(t, b, k, "", false)
}

func testExpiry(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	set(t, b, k, "v", backends.SetOptions{TTL: rel(50 * time.Millisecond)})
	eventually(t, "expiry", func() bool {
		_, ok, err := b.Get(ctx(t), k)
		return err == nil && !ok
	})
	if d := ttl(t, b, k); d != backends.TTLMissing {
		t.Fatalf("TTL of expired key = %v", d)
	}
	if n := exists(t, b, k); n != 0 {
		t.Fatalf("EXISTS of expired key = %d", n)
	}
	vals := mget(t, b, []string{k}, nil)
	if len(vals) != 1 || vals[0] != nil {
		t.Fatalf("MGET of expired key = %q", vals)
	}
	if n := del(t, b, k); n != 0 {
		t.Fatalf("DEL of expired key = %d, want 0", n)
	}
}

func testMGetMSet(t *testing.T, b backends.Backend) {
	k1, k2, k3 := key(t, "a"), key(t, "b"), key(t, "c")
	mset(t, b, backends.KV{Key: k1, Val: []byte("1")}, backends.KV{Key: k2, Val: []byte{}})
	got := mget(t, b, []string{k1, k3, k2, k1}, nil)
	if len(got) != 4 || string(got[0]) != "1" || got[1] != nil || got[2] == nil || len(got[2]) != 0 || string(got[3]) != "1" {
		t.Fatalf("MGET = %q (nil: %v %v %v %v)", got, got[0] == nil, got[1] == nil, got[2] == nil, got[3] == nil)
	}
	// MGet appends to dst.
	dst := [][]byte{[]byte("keep")}
	dst = mget(t, b, []string{k1}, dst)
	if len(dst) != 2 || string(dst[0]) != "keep" || string(dst[1]) != "1" {
		t.Fatalf("MGET with dst = %q", dst)
	}
	// MSET clears expiries.
	set(t, b, k1, "x", backends.SetOptions{TTL: rel(100 * time.Second)})
	mset(t, b, backends.KV{Key: k1, Val: []byte("y")})
	if d := ttl(t, b, k1); d != backends.TTLPersistent {
		t.Fatalf("TTL after MSET = %v", d)
	}
	if got := mget(t, b, nil, nil); len(got) != 0 {
		t.Fatalf("MGET of no keys = %q", got)
	}
}

func testDelExists(t *testing.T, b backends.Backend) {
	k1, k2, k3 := key(t, "a"), key(t, "b"), key(t, "c")
	set(t, b, k1, "1", backends.SetOptions{})
	set(t, b, k2, "2", backends.SetOptions{})
	if n := exists(t, b, k1, k2, k3, k1); n != 3 {
		t.Fatalf("EXISTS a b c a = %d, want 3", n)
	}
	if n := del(t, b, k1, k3); n != 1 {
		t.Fatalf("DEL a c = %d, want 1", n)
	}
	wantGet(t, b, k1, "", false)
	wantGet(t, b, k2, "2", true)
	if n := del(t, b, k1); n != 0 {
		t.Fatalf("second DEL = %d, want 0", n)
	}
}

func testGetDel(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	if _, ok := must2(t, func(ctx context.Context, k string) ([]byte, bool, error) { return backends.DoGetDel(ctx, b, k) }, k); ok {
		t.Fatalf("GETDEL of absent key found")
	}
	set(t, b, k, "v", backends.SetOptions{})
	if v, ok := must2(t, func(ctx context.Context, k string) ([]byte, bool, error) { return backends.DoGetDel(ctx, b, k) }, k); !ok || string(v) != "v" {
		t.Fatalf("GETDEL = %q, %v", v, ok)
	}
	wantGet(t, b, k, "", false)
}

func must2(t *testing.T, f func(context.Context, string) ([]byte, bool, error), k string) ([]byte, bool) {
	t.Helper()
	v, ok, err := f(ctx(t), k)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

func testGetEx(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	if _, ok, err := backends.DoGetEx(ctx(t), b, k, rel(time.Minute)); err != nil || ok {
		t.Fatalf("GETEX of absent key = %v, %v", ok, err)
	}
	set(t, b, k, "v", backends.SetOptions{})
	v, ok, err := backends.DoGetEx(ctx(t), b, k, rel(100*time.Second))
	if err != nil || !ok || string(v) != "v" {
		t.Fatalf("GETEX EX = %q, %v, %v", v, ok, err)
	}
	if d := ttl(t, b, k); d <= 90*time.Second || d > 100*time.Second {
		t.Fatalf("TTL after GETEX EX 100 = %v", d)
	}
	if _, _, err := backends.DoGetEx(ctx(t), b, k, backends.TTL{Mode: backends.TTLKeep}); err != nil {
		t.Fatal(err)
	}
	if d := ttl(t, b, k); d <= 90*time.Second {
		t.Fatalf("TTL after plain GETEX = %v, want unchanged", d)
	}
	if _, _, err := backends.DoGetEx(ctx(t), b, k, backends.TTL{Mode: backends.TTLNone}); err != nil {
		t.Fatal(err)
	}
	if d := ttl(t, b, k); d != backends.TTLPersistent {
		t.Fatalf("TTL after GETEX PERSIST = %v", d)
	}
	v, ok, err = backends.DoGetEx(ctx(t), b, k, backends.TTL{Mode: backends.TTLAt, At: time.Now().Add(-time.Second)})
	if err != nil || !ok || string(v) != "v" {
		t.Fatalf("GETEX PXAT past = %q, %v, %v; want the value", v, ok, err)
	}
	wantGet(t, b, k, "", false)
}

func testIncrBy(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	for i, want := range []int64{1, 2, 12, -88} {
		delta := []int64{1, 1, 10, -100}[i]
		if got := incr(t, b, k, delta); got != want {
			t.Fatalf("INCRBY %d = %d, want %d", delta, got, want)
		}
	}
	wantGet(t, b, k, "-88", true)

	// INCR keeps the expiry.
	set(t, b, k, "5", backends.SetOptions{TTL: rel(100 * time.Second)})
	if got := incr(t, b, k, 1); got != 6 {
		t.Fatalf("INCR = %d", got)
	}
	if d := ttl(t, b, k); d <= 90*time.Second {
		t.Fatalf("TTL after INCR = %v, want kept", d)
	}
	m := key(t, "max")
	set(t, b, m, strconv.FormatInt(math.MaxInt64-1, 10), backends.SetOptions{})
	if got := incr(t, b, m, 1); got != math.MaxInt64 {
		t.Fatalf("INCR to max = %d", got)
	}
	n := key(t, "min")
	set(t, b, n, strconv.FormatInt(math.MinInt64+1, 10), backends.SetOptions{})
	if got := incr(t, b, n, -1); got != math.MinInt64 {
		t.Fatalf("DECR to min = %d", got)
	}
	z := key(t, "zero")
	set(t, b, z, "0", backends.SetOptions{})
	if got := incr(t, b, z, 0); got != 0 {
		t.Fatalf("INCRBY 0 = %d", got)
	}
}

func testIncrByErrors(t *testing.T, b backends.Backend) {
	for _, tc := range []struct {
		name, val string
		delta     int64
		want      error
	}{
		{"text", "abc", 1, backends.ErrNotInteger},
		{"empty", "", 1, backends.ErrNotInteger},
		{"space", " 1", 1, backends.ErrNotInteger},
		{"plus", "+1", 1, backends.ErrNotInteger},
		{"leading-zero", "01", 1, backends.ErrNotInteger},
		{"float", "1.5", 1, backends.ErrNotInteger},
		{"too-big", "9223372036854775808", 1, backends.ErrNotInteger},
		{"overflow", strconv.FormatInt(math.MaxInt64, 10), 1, backends.ErrOverflow},
		{"underflow", strconv.FormatInt(math.MinInt64, 10), -1, backends.ErrOverflow},
	} {
		k := key(t, tc.name)
		set(t, b, k, tc.val, backends.SetOptions{})
		_, err := backends.DoIncrBy(ctx(t), b, k, tc.delta)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: INCRBY %d on %q = %v, want %v", tc.name, tc.delta, tc.val, err, tc.want)
		}
		wantGet(t, b, k, tc.val, true) // unchanged
	}
}

func testExpire(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	if ok := expire(t, b, k, rel(time.Minute), backends.ExpireAlways); ok {
		t.Fatalf("EXPIRE of absent key = true")
	}
	set(t, b, k, "v", backends.SetOptions{})
	if ok := expire(t, b, k, rel(100*time.Second), backends.ExpireAlways); !ok {
		t.Fatalf("EXPIRE = false")
	}
	if d := ttl(t, b, k); d <= 90*time.Second || d > 100*time.Second {
		t.Fatalf("TTL after EXPIRE 100 = %v", d)
	}
	if ok := expire(t, b, k, backends.TTL{Mode: backends.TTLAt, At: time.Now().Add(300 * time.Second)}, backends.ExpireAlways); !ok {
		t.Fatalf("EXPIRE at = false")
	}
	if d := ttl(t, b, k); d <= 290*time.Second {
		t.Fatalf("TTL after EXPIRE at +300s = %v", d)
	}
	// A deadline that is not in the future deletes the key.
	if ok := expire(t, b, k, rel(0), backends.ExpireAlways); !ok {
		t.Fatalf("EXPIRE 0 = false, want true")
	}
	wantGet(t, b, k, "", false)
	set(t, b, k, "v", backends.SetOptions{})
	if ok := expire(t, b, k, rel(-time.Second), backends.ExpireAlways); !ok {
		t.Fatalf("EXPIRE -1 = false, want true")
	}
	wantGet(t, b, k, "", false)
}

func testExpireConditions(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	set(t, b, k, "v", backends.SetOptions{})
	steps := []struct {
		cond backends.ExpireCond
		d    time.Duration
		want bool
	}{
		{backends.ExpireIfSet, 100 * time.Second, false},     // XX, no expiry yet
		{backends.ExpireIfGreater, 100 * time.Second, false}, // GT against infinite
		{backends.ExpireIfLess, 100 * time.Second, true},     // LT against infinite
		{backends.ExpireIfNone, 200 * time.Second, false},    // NX, has one now
		{backends.ExpireIfGreater, 50 * time.Second, false},
		{backends.ExpireIfGreater, 200 * time.Second, true},
		{backends.ExpireIfLess, 300 * time.Second, false},
		{backends.ExpireIfSet, 150 * time.Second, true},
	}
	for i, s := range steps {
		if got := expire(t, b, k, rel(s.d), s.cond); got != s.want {
			t.Fatalf("step %d: EXPIRE %v cond %d = %v, want %v", i, s.d, s.cond, got, s.want)
		}
	}
	if d := ttl(t, b, k); d <= 140*time.Second || d > 150*time.Second {
		t.Fatalf("TTL after the steps = %v, want about 150s", d)
	}
	n := key(t, "nx")
	set(t, b, n, "v", backends.SetOptions{})
	if got := expire(t, b, n, rel(100*time.Second), backends.ExpireIfNone); !got {
		t.Fatalf("EXPIRE NX on a key with no expiry = false")
	}
}

func testPersist(t *testing.T, b backends.Backend) {
	k := key(t, "k")
	none := backends.TTL{Mode: backends.TTLNone}
	if ok := expire(t, b, k, none, backends.ExpireAlways); ok {
		t.Fatalf("PERSIST of absent key = true")
	}
	set(t, b, k, "v", backends.SetOptions{})
	if ok := expire(t, b, k, none, backends.ExpireAlways); ok {
		t.Fatalf("PERSIST of key without expiry = true")
	}
	set(t, b, k, "v", backends.SetOptions{TTL: rel(100 * time.Second)})
	if ok := expire(t, b, k, none, backends.ExpireAlways); !ok {
		t.Fatalf("PERSIST of key with expiry = false")
	}
	if d := ttl(t, b, k); d != backends.TTLPersistent {
		t.Fatalf("TTL after PERSIST = %v", d)
	}
	wantGet(t, b, k, "v", true)
}

// testBorrowedKeys passes every write a key that is a view of a buffer the
// caller reuses, as the fronts do with their read buffers, then overwrites
// the buffer: the key must still be found under its own name.
func testBorrowedKeys(t *testing.T, b backends.Backend) {
	ops := []struct {
		name string
		do   func(k string) error
	}{
		{"set", func(k string) error { _, err := b.Set(ctx(t), k, []byte("1"), backends.SetOptions{}); return err }},
		{"set-nx", func(k string) error {
			_, err := b.Set(ctx(t), k, []byte("1"), backends.SetOptions{Cond: backends.SetIfAbsent})
			return err
		}},
		{"set-get-keepttl", func(k string) error {
			_, err := b.Set(ctx(t), k, []byte("1"), backends.SetOptions{Get: true, TTL: backends.TTL{Mode: backends.TTLKeep}})
			return err
		}},
		{"mset", func(k string) error { return b.MSet(ctx(t), []backends.KV{{Key: k, Val: []byte("1")}}) }},
		{"incrby", func(k string) error { _, err := backends.DoIncrBy(ctx(t), b, k, 1); return err }},
		{"expire", func(k string) error {
			if _, err := b.Set(ctx(t), strings.Clone(k), []byte("1"), backends.SetOptions{}); err != nil {
				return err
			}
			_, err := backends.DoExpire(ctx(t), b, k, rel(time.Hour), backends.ExpireAlways)
			return err
		}},
		{"getex", func(k string) error {
			if _, err := b.Set(ctx(t), strings.Clone(k), []byte("1"), backends.SetOptions{}); err != nil {
				return err
			}
			_, _, err := backends.DoGetEx(ctx(t), b, k, rel(time.Hour))
			return err
		}},
		{"persist", func(k string) error {
			if _, err := b.Set(ctx(t), strings.Clone(k), []byte("1"), backends.SetOptions{TTL: rel(time.Hour)}); err != nil {
				return err
			}
			_, err := backends.DoExpire(ctx(t), b, k, backends.TTL{Mode: backends.TTLNone}, backends.ExpireAlways)
			return err
		}},
	}
	for _, op := range ops {
		name := key(t, op.name)
		buf := []byte(name)
		if err := op.do(unsafe.String(unsafe.SliceData(buf), len(buf))); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		for i := range buf {
			buf[i] = 'X'
		}
		if _, ok, err := b.Get(ctx(t), name); err != nil || !ok {
			t.Fatalf("%s: the key is gone once the caller reused its buffer (ok=%v, err=%v)", op.name, ok, err)
		}
	}
}
