package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

func collOp(t *testing.T, p coll.Parser, args ...string) coll.Command {
	t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	op, err := p(b)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// reply keeps a reply's scalars.
type reply struct {
	n    int64
	bulk string
	null bool
}

func (r *reply) RESP3() bool      { return false }
func (r *reply) Int(n int64)      { r.n = n }
func (r *reply) Bulk(b []byte)    { r.bulk = string(b) }
func (r *reply) Status(string)    {}
func (r *reply) Null()            { r.null = true }
func (r *reply) NullArray()       { r.null = true }
func (r *reply) Array(int)        {}
func (r *reply) Map(int)          {}
func (r *reply) Set(int)          {}
func (r *reply) Double(f float64) {}

func do(t *testing.T, s *KV, p coll.Parser, args ...string) (reply, error) {
	t.Helper()
	op := collOp(t, p, args...)
	var keys []string
	for _, at := range op.Request().KeyAt {
		keys = append(keys, args[at])
	}
	err := s.Do(testCtx(t), keys, op)
	var r reply
	if err == nil {
		op.Reply(&r)
	}
	return r, err
}

func items(t *testing.T, s *KV, key string) int64 {
	return queryInt(t, fmt.Sprintf("SELECT count(*) FROM %s WHERE key = $1", itemsTable(s.table).ident()), key)
}

// A read of several keys indexes them as the command names them, not in
// the order the load sorts them: SDIFF of a missing key first is empty
// (it answered set1 - set2, the keys sorted).
func TestCollectionsReadKeyOrder(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	do(t, s, coll.ParseSAdd, "sadd", "set1", "a", "b", "c")
	do(t, s, coll.ParseSAdd, "sadd", "set2", "b", "c", "d")
	for _, tc := range []struct {
		keys []string
		want int
	}{
		{[]string{"set3", "set2", "set1"}, 0},
		{[]string{"set2", "set1", "set3"}, 1}, // d
		{[]string{"set1", "set2"}, 1},         // a
	} {
		op := collOp(t, coll.ParseSetOp, append([]string{"sdiff"}, tc.keys...)...)
		if err := s.Do(testCtx(t), tc.keys, op); err != nil {
			t.Fatal(err)
		}
		var r members
		op.Reply(&r)
		if r.n != tc.want {
			t.Errorf("SDIFF %q answered %d members, want %d", tc.keys, r.n, tc.want)
		}
	}
}

// members counts the members of a set reply.
type members struct {
	reply
	n int
}

func (r *members) Bulk([]byte) { r.n++ }

// Collections beside strings in a kv table, through the generic path: a
// hash's row and items, WRONGTYPE both ways, a SET that replaces a hash
// and takes its items, EXPIRE, COPY and RENAME with the items, a flush.
func TestCollectionsKV(t *testing.T) {
	d := newDriver(t, Options{})
	s := openKV(t, d, uniqueTable(t), DurabilityStandard, "")
	ctx := testCtx(t)

	if r, err := do(t, s, coll.ParseHSet, "hset", "h", "a", "1", "b", "2"); err != nil || r.n != 2 {
		t.Fatalf("HSET h a 1 b 2 = %+v, %v", r, err)
	}
	if r, err := do(t, s, coll.ParseHSet, "hset", "h", "a", "3", "c", "4"); err != nil || r.n != 1 {
		t.Fatalf("HSET h a 3 c 4 = %+v, %v", r, err)
	}
	if r, _ := do(t, s, coll.ParseHGet, "hget", "h", "a"); r.bulk != "3" {
		t.Fatalf("HGET h a = %+v", r)
	}
	if r, _ := do(t, s, coll.ParseHGet, "hget", "h", "zz"); !r.null {
		t.Fatalf("HGET h zz = %+v", r)
	}
	if n := items(t, s, "h"); n != 3 {
		t.Fatalf("h has %d items, want 3", n)
	}
	if _, _, err := s.Get(ctx, "h"); !errors.Is(err, backends.ErrWrongType) {
		t.Fatalf("GET h: %v, want WRONGTYPE", err)
	}
	if vals, err := s.MGet(ctx, []string{"h", "h"}, nil); err != nil || vals[0] != nil {
		t.Fatalf("MGET h h = %q, %v", vals, err)
	}
	if _, err := backends.DoIncrBy(ctx, s, "h", 1); !errors.Is(err, backends.ErrWrongType) {
		t.Fatalf("INCR h: %v", err)
	}
	if _, _, err := backends.DoGetDel(ctx, s, "h"); !errors.Is(err, backends.ErrWrongType) {
		t.Fatalf("GETDEL h: %v", err)
	}
	if _, err := s.Set(ctx, "h", []byte("x"), backends.SetOptions{Get: true}); !errors.Is(err, backends.ErrWrongType) {
		t.Fatalf("SET h x GET: %v", err)
	}
	s.Set(ctx, "str", []byte("v"), backends.SetOptions{})
	if _, err := do(t, s, coll.ParseHSet, "hset", "str", "f", "v"); !errors.Is(err, backends.ErrWrongType) {
		t.Fatalf("HSET of a string: %v", err)
	}

	// EXPIRE of a collection, and the change in place keeps it.
	if ok, err := backends.DoExpire(ctx, s, "h", backends.TTL{Mode: backends.TTLRelative, D: time.Hour}, backends.ExpireAlways); !ok || err != nil {
		t.Fatalf("EXPIRE h: %v %v", ok, err)
	}
	do(t, s, coll.ParseHSet, "hset", "h", "d", "5")
	if ttl, _ := s.TTL(ctx, "h"); ttl <= 0 {
		t.Fatalf("TTL h after HSET = %v", ttl)
	}

	// COPY and RENAME carry the items; the copy changes apart.
	if res, err := s.Copy(ctx, "h", "h2", backends.CopyOptions{}); err != nil || res != backends.Copied {
		t.Fatalf("COPY h h2 = %v, %v", res, err)
	}
	do(t, s, coll.ParseHSet, "hset", "h2", "a", "copy")
	if r, _ := do(t, s, coll.ParseHGet, "hget", "h", "a"); r.bulk != "3" {
		t.Fatalf("HGET h a after changing the copy = %+v", r)
	}
	if res, err := s.Copy(ctx, "h2", "h3", backends.CopyOptions{Move: true}); err != nil || res != backends.Copied {
		t.Fatalf("RENAME h2 h3 = %v, %v", res, err)
	}
	if n := items(t, s, "h2"); n != 0 {
		t.Fatalf("h2 keeps %d items after RENAME", n)
	}
	if r, _ := do(t, s, coll.ParseHGet, "hget", "h3", "a"); r.bulk != "copy" {
		t.Fatalf("HGET h3 a = %+v", r)
	}
	// COPY … REPLACE onto a hash of the same type leaves none of its fields.
	do(t, s, coll.ParseHSet, "hset", "h4", "only-in-h4", "x")
	if _, err := s.Copy(ctx, "h", "h4", backends.CopyOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
	if r, _ := do(t, s, coll.ParseHGet, "hget", "h4", "only-in-h4"); !r.null {
		t.Fatalf("h4 kept a field over COPY … REPLACE: %+v", r)
	}

	// A SET replaces the hash, and its items go.
	if _, err := s.Set(ctx, "h", []byte("now a string"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := items(t, s, "h"); n != 0 {
		t.Fatalf("h keeps %d items after SET", n)
	}
	// A DEL takes the items; a new hash under the name starts empty.
	do(t, s, coll.ParseHSet, "hset", "h5", "old", "1")
	s.Del(ctx, []string{"h5"})
	do(t, s, coll.ParseHSet, "hset", "h5", "new", "1")
	if r, _ := do(t, s, coll.ParseHGet, "hget", "h5", "old"); !r.null {
		t.Fatalf("a deleted hash's field came back: %+v", r)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, fmt.Sprintf("SELECT count(*) FROM %s", itemsTable(s.table).ident())); n != 0 {
		t.Fatalf("%d items after FLUSH", n)
	}
}

// An expired hash is absent, and a new one under its name does not see its
// fields: the row taken over purges them.
func TestCollectionExpiredTakenOver(t *testing.T) {
	d := newDriver(t, Options{SweepInterval: -1})
	s := openKV(t, d, uniqueTable(t), DurabilityUnlogged, "")
	ctx := testCtx(t)
	do(t, s, coll.ParseHSet, "hset", "h", "old", "1")
	sql(t, fmt.Sprintf("UPDATE %s SET expires_at = now() - interval '1 second' WHERE key = 'h'", s.table.ident()))
	if r, _ := do(t, s, coll.ParseHGet, "hget", "h", "old"); !r.null {
		t.Fatalf("HGET of an expired hash = %+v", r)
	}
	if n, _ := s.Exists(ctx, []string{"h"}); n != 0 {
		t.Fatalf("EXISTS of an expired hash = %d", n)
	}
	if r, err := do(t, s, coll.ParseHSet, "hset", "h", "new", "1"); err != nil || r.n != 1 {
		t.Fatalf("HSET over an expired hash = %+v, %v", r, err)
	}
	if r, _ := do(t, s, coll.ParseHGet, "hget", "h", "old"); !r.null {
		t.Fatalf("the expired hash's field came back: %+v", r)
	}
	if ttl, _ := s.TTL(ctx, "h"); ttl != backends.TTLPersistent {
		t.Fatalf("TTL of the new hash = %v, want none", ttl)
	}
}

// A kv table of the layout before collections gets its kind column and
// items table, and keeps its strings.
func TestTableBeforeCollections(t *testing.T) {
	d := newDriver(t, Options{})
	table := uniqueTable(t)
	sql(t, fmt.Sprintf(`CREATE TABLE %s (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, expires_at timestamptz NOT NULL)`, table))
	sql(t, fmt.Sprintf(`INSERT INTO %s VALUES ('old', 'string', 'infinity')`, table))
	s := openKV(t, d, table, DurabilityStandard, "")
	ctx := testCtx(t)
	if v, ok, err := s.Get(ctx, "old"); err != nil || !ok || string(v) != "string" {
		t.Fatalf("GET old = %q %v %v", v, ok, err)
	}
	if r, err := do(t, s, coll.ParseHSet, "hset", "h", "f", "v"); err != nil || r.n != 1 {
		t.Fatalf("HSET on a migrated table = %+v, %v", r, err)
	}
	// And a second route on it finds it ready.
	s2 := openKV(t, d, table, DurabilityStandard, "")
	if r, _ := do(t, s2, coll.ParseHGet, "hget", "h", "f"); r.bulk != "v" {
		t.Fatalf("HGET through a second route = %+v", r)
	}
	_ = context.Background
}
