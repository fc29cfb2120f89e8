package backendtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// Collections and the keyspace capabilities: COPY and RENAME, SCAN, FLUSH.

// testCollCopy: COPY and RENAME of collections: the copy has the value and
// deadline, and changes apart from the source.
func testCollCopy(t *testing.T, b backends.Backend) {
	cp := capability[backends.Copier](t, b)
	copyKey := func(src, dst string, o backends.CopyOptions) backends.CopyResult {
		t.Helper()
		r, err := cp.Copy(ctx(t), src, dst, o)
		noErr(t, err)
		return r
	}
	for _, f := range fillers {
		ks := func(name string) string { return tagged(t, f.typ.String()+"-"+name) }
		src, dst := ks("src"), ks("dst")
		f.fillKey(t, b, src)
		at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		expire(t, b, src, backends.TTL{Mode: backends.TTLAt, At: at}, backends.ExpireAlways)
		if r := copyKey(src, dst, backends.CopyOptions{}); r != backends.Copied {
			t.Fatalf("COPY of a %s = %d", f.typ, r)
		}
		ab := f.contentsOf("a", "b")
		f.wantContents(t, b, dst, ab)
		wantType(t, b, dst, f.typ)
		if et, ok := backends.As[backends.ExpireTimer](b); ok {
			ms, err := et.ExpireTime(ctx(t), dst)
			noErr(t, err)
			if ms != at.UnixMilli() {
				t.Fatalf("deadline of the copy of a %s = %d, want %d", f.typ, ms, at.UnixMilli())
			}
		}
		// They change apart.
		exec(t, b, fmt.Sprintf(f.add, dst))
		f.wantContents(t, b, src, ab)
		f.wantContents(t, b, dst, f.contentsOf("a", "b", "c"))
		exec(t, b, fmt.Sprintf(f.add, src))
		expect(t, b, fmt.Sprintf(map[backends.Type]string{
			backends.TypeHash: "HDEL %s a", backends.TypeSet: "SREM %s a",
			backends.TypeZSet: "ZREM %s a", backends.TypeList: "LREM %s 0 a",
		}[f.typ], dst), ":1")
		f.wantContents(t, b, src, f.contentsOf("a", "b", "c"))

		if r := copyKey(src, dst, backends.CopyOptions{}); r != backends.CopyDstExists {
			t.Fatalf("COPY of a %s onto a key = %d, want CopyDstExists", f.typ, r)
		}
		// Over a string, with REPLACE.
		str := ks("str")
		set(t, b, str, "v", backends.SetOptions{})
		if r := copyKey(src, str, backends.CopyOptions{Replace: true}); r != backends.Copied {
			t.Fatalf("COPY REPLACE of a %s over a string = %d", f.typ, r)
		}
		wantType(t, b, str, f.typ)
		f.wantContents(t, b, str, f.contentsOf("a", "b", "c"))

		// RENAME: the source is gone, the destination's old value too.
		if r := copyKey(src, dst, backends.CopyOptions{Replace: true, Move: true}); r != backends.Copied {
			t.Fatalf("RENAME of a %s = %d", f.typ, r)
		}
		if n := exists(t, b, src); n != 0 {
			t.Fatalf("the source of a RENAME of a %s exists", f.typ)
		}
		f.wantContents(t, b, dst, f.contentsOf("a", "b", "c"))
		f.wantMadeAnew(t, b, src)

		// RENAME of a string over a collection; then a collection
		// written there starts from nothing.
		set(t, b, src, "s", backends.SetOptions{})
		if r := copyKey(src, dst, backends.CopyOptions{Replace: true, Move: true}); r != backends.Copied {
			t.Fatalf("RENAME of a string over a %s = %d", f.typ, r)
		}
		wantGet(t, b, dst, "s", true)
		del(t, b, dst)
		f.wantMadeAnew(t, b, dst)

		// RENAMENX of a collection.
		nx := ks("nx")
		if r := copyKey(dst, nx, backends.CopyOptions{Move: true}); r != backends.Copied {
			t.Fatalf("RENAMENX of a %s = %d", f.typ, r)
		}
		f.wantContents(t, b, nx, f.contentsOf("c"))
	}
}

// testCollScan: SCAN lists keys of every type.
func testCollScan(t *testing.T, b backends.Backend) {
	prefix := key(t, "")
	want := []string{prefix + "str"}
	set(t, b, want[0], "v", backends.SetOptions{})
	for _, f := range fillers {
		k := prefix + f.typ.String()
		f.fillKey(t, b, k)
		want = append(want, k)
	}
	slices.Sort(want)
	wantScanned(t, b, prefix, want, 1, 3, 100)
}

// testCollFlush: FLUSH removes collections, from a cache in front too.
func testCollFlush(t *testing.T, b backends.Backend) {
	fl := capability[backends.Flusher](t, b)
	var keys []string
	for _, f := range fillers {
		k := tagged(t, f.typ.String())
		f.fillKey(t, b, k)
		f.contents(t, b, k) // a cache in front holds it now
		keys = append(keys, k)
	}
	noErr(t, fl.Flush(ctx(t)))
	if n := exists(t, b, keys...); n != 0 {
		t.Fatalf("%d collections left after Flush", n)
	}
	for i, f := range fillers {
		f.wantMadeAnew(t, b, keys[i])
	}
}
