package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

func cmd(t *testing.T, p coll.Parser, args ...string) coll.Command {
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

// hget reads a field through an HGET Op, as the RESP front would.
func hget(t *testing.T, s *Store, key, field string) (string, bool) {
	t.Helper()
	op := cmd(t, coll.ParseHGet, "hget", key, field)
	if err := s.Do(context.Background(), []string{key}, op); err != nil {
		t.Fatal(err)
	}
	var w capture
	op.Reply(&w)
	return w.bulk, w.bulk != "" || !w.null
}

// capture keeps the last bulk or null a reply wrote, and every bulk.
type capture struct {
	bulk  string
	bulks []string
	null  bool
	n     int64
}

func (c *capture) RESP3() bool      { return false }
func (c *capture) Int(n int64)      { c.n = n }
func (c *capture) Bulk(b []byte)    { c.bulk = string(b); c.bulks = append(c.bulks, c.bulk) }
func (c *capture) Status(string)    {}
func (c *capture) Null()            { c.null = true }
func (c *capture) NullArray()       { c.null = true }
func (c *capture) Array(int)        {}
func (c *capture) Map(int)          {}
func (c *capture) Set(int)          {}
func (c *capture) Double(f float64) {}

func TestCollectionsBesideStrings(t *testing.T) {
	d := NewDriver("mem", 64<<20)
	defer d.Close()
	s := open(t, d, "r").(*Store)
	ctx := context.Background()

	if err := s.Do(ctx, []string{"h"}, cmd(t, coll.ParseHSet, "hset", "h", "f", "v")); err != nil {
		t.Fatal(err)
	}
	if v, ok := hget(t, s, "h", "f"); !ok || v != "v" {
		t.Fatalf("HGET h f = %q %v, want v", v, ok)
	}
	if _, _, err := s.Get(ctx, "h"); !errors.Is(err, backends.ErrWrongType) {
		t.Fatalf("GET of a hash: %v, want WRONGTYPE", err)
	}
	if vals, _ := s.MGet(ctx, []string{"h"}, nil); vals[0] != nil {
		t.Fatalf("MGET of a hash = %q, want nil", vals[0])
	}
	if _, err := s.Set(ctx, "h", []byte("x"), backends.SetOptions{Get: true}); !errors.Is(err, backends.ErrWrongType) {
		t.Fatalf("SET … GET of a hash: %v, want WRONGTYPE", err)
	}
	if n, _ := s.Exists(ctx, []string{"h"}); n != 1 {
		t.Fatalf("EXISTS h = %d", n)
	}
	// EXPIRE works on any type; INCR does not.
	if ok, err := backends.DoExpire(ctx, s, "h", backends.TTL{Mode: backends.TTLRelative, D: time.Hour}, backends.ExpireAlways); !ok || err != nil {
		t.Fatalf("EXPIRE h: %v %v", ok, err)
	}
	if ttl, _ := s.TTL(ctx, "h"); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("TTL h = %v", ttl)
	}
	if _, err := backends.DoIncrBy(ctx, s, "h", 1); !errors.Is(err, backends.ErrWrongType) {
		t.Fatalf("INCR of a hash: %v, want WRONGTYPE", err)
	}
	// The expiry survives a change in place.
	if err := s.Do(ctx, []string{"h"}, cmd(t, coll.ParseHSet, "hset", "h", "g", "w")); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := s.TTL(ctx, "h"); ttl <= 0 {
		t.Fatalf("TTL h after HSET = %v, want kept", ttl)
	}
	// A COPY changes apart from its source.
	if _, err := s.Copy(ctx, "h", "h2", backends.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Do(ctx, []string{"h2"}, cmd(t, coll.ParseHSet, "hset", "h2", "f", "changed")); err != nil {
		t.Fatal(err)
	}
	if v, _ := hget(t, s, "h", "f"); v != "v" {
		t.Fatalf("HGET h f after changing its copy = %q, want v", v)
	}
	// HSET on a string: WRONGTYPE, and the string stays.
	s.Set(ctx, "s", []byte("str"), backends.SetOptions{})
	if err := s.Do(ctx, []string{"s"}, cmd(t, coll.ParseHSet, "hset", "s", "f", "v")); !errors.Is(err, backends.ErrWrongType) {
		t.Fatalf("HSET of a string: %v", err)
	}
	if v, _, _ := s.Get(ctx, "s"); string(v) != "str" {
		t.Fatalf("GET s = %q", v)
	}
	// SET replaces a hash.
	s.Set(ctx, "h", []byte("now a string"), backends.SetOptions{})
	if v, _, err := s.Get(ctx, "h"); err != nil || string(v) != "now a string" {
		t.Fatalf("GET h after SET = %q %v", v, err)
	}
}

// Concurrent HSETs of one hash lose no field, and readers never see a torn
// value (run with -race).
func TestCollectionsConcurrent(t *testing.T) {
	d := NewDriver("mem", 64<<20)
	defer d.Close()
	s := open(t, d, "r").(*Store)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 200 {
				f := fmt.Sprintf("f%d-%d", w, i)
				if err := s.Do(ctx, []string{"h"}, cmd(t, coll.ParseHSet, "hset", "h", f, "v")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 200 {
				hget(t, s, "h", fmt.Sprintf("f%d-%d", w, i))
			}
		}()
	}
	wg.Wait()
	for w := range 4 {
		for i := range 200 {
			if _, ok := hget(t, s, "h", fmt.Sprintf("f%d-%d", w, i)); !ok {
				t.Fatalf("field f%d-%d lost", w, i)
			}
		}
	}
}

// A collection grown one member at a time, which its writes change in
// place, is counted by the bound within the reweigh slack; grown past the
// bound, it is evicted as a string would be.
func TestCollectionGrowthCounted(t *testing.T) {
	const budget = 1 << 20
	d := NewDriver("mem", budget)
	defer d.Close()
	s := open(t, d, "r").(*Store)
	ctx := context.Background()
	member := func(i int) string { return fmt.Sprintf("%060d", i) }
	weight := func() int64 {
		it, ok := s.get("set")
		if !ok {
			return -1
		}
		return it.coll().v.Weight()
	}
	for i := range 2000 {
		if err := s.Do(ctx, []string{"set"}, cmd(t, coll.ParseSAdd, "sadd", "set", member(i))); err != nil {
			t.Fatal(err)
		}
		s.c.CleanUp()
		w, counted := weight(), int64(s.c.WeightedSize())
		if w < 0 {
			t.Fatalf("after %d SADDs: the set of %d bytes is gone from a %d budget", i+1, w, budget)
		}
		if counted < w-max(reweighSlack, w/16) {
			t.Fatalf("after %d SADDs: the cache counts %d bytes of a set of %d", i+1, counted, w)
		}
	}
	n := 2000
	for ; n < 40_000 && weight() >= 0; n++ { // 2.4 MiB offered to a 1 MiB cache
		if err := s.Do(ctx, []string{"set"}, cmd(t, coll.ParseSAdd, "sadd", "set", member(n))); err != nil {
			t.Fatal(err)
		}
		s.c.CleanUp()
	}
	t.Logf("evicted after %d SADDs", n)
	if w := weight(); w >= 0 {
		t.Fatalf("a set of %d bytes is still cached under a %d budget", w, budget)
	}
	if used := s.c.WeightedSize(); used > budget {
		t.Fatalf("cache holds %d bytes, over its %d budget", used, budget)
	}
}
