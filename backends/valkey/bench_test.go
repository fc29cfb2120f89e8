package valkey

import (
	"context"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
)

// The backend against a bare valkey-go client doing the same command: the
// ratio is this package's overhead (timeouts, key namespace, error mapping,
// the copy of values). The server's round trip dominates both.

var benchVal = []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef") // 64 bytes

func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	b.Run("backend", func(b *testing.B) {
		s := open(b, newDriver(b, server, nil))
		mustSet(b, s, "k", string(benchVal))
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, err := s.Get(ctx, "k"); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		c := bare(b)
		c.Do(ctx, c.B().Set().Key("bench-k").Value(string(benchVal)).Build())
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Do(ctx, c.B().Get().Key("bench-k").Build()).AsBytes(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkGetParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("backend", func(b *testing.B) {
		s := open(b, newDriver(b, server, nil))
		mustSet(b, s, "k", string(benchVal))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, _, err := s.Get(ctx, "k"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("bare", func(b *testing.B) {
		c := bare(b)
		c.Do(ctx, c.B().Set().Key("bench-k").Value(string(benchVal)).Build())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := c.Do(ctx, c.B().Get().Key("bench-k").Build()).Error(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkSet(b *testing.B) {
	ctx := context.Background()
	b.Run("backend", func(b *testing.B) {
		s := open(b, newDriver(b, server, nil))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Set(ctx, "k", benchVal, backends.SetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("backend_client_cache", func(b *testing.B) { // the fence's cost
		s := open(b, newDriver(b, server, cached(nil)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Set(ctx, "k", benchVal, backends.SetOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		c := bare(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Do(ctx, c.B().Set().Key("bench-k").Value(string(benchVal)).Build()).Error(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A hot key from the client cache against the in-process memory backend.
func BenchmarkGetHot(b *testing.B) {
	ctx := context.Background()
	b.Run("valkey_client_cache", func(b *testing.B) {
		d := newDriver(b, server, cached(nil))
		s := open(b, d)
		mustSet(b, s, "k", string(benchVal))
		mustGet(b, s, "k")
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, err := s.Get(ctx, "k"); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
		if d.stats.misses.Load() != 1 {
			b.Fatalf("misses = %d: the hot key was not served from the cache", d.stats.misses.Load())
		}
	})
	b.Run("memory", func(b *testing.B) {
		m, err := memory.NewDriver("mem", 64<<20).Open(ctx, backends.RouteSpec{Name: "r"})
		if err != nil {
			b.Fatal(err)
		}
		mustSet(b, m, "k", string(benchVal))
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, err := m.Get(ctx, "k"); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
}

// Sixteen hot keys in one MGet (the proxy joins pipelined GETs into one)
// from the client cache, against the in-process memory backend.
func BenchmarkMGetHot(b *testing.B) {
	ctx := context.Background()
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = "hot:" + string(rune('a'+i))
	}
	run := func(b *testing.B, s backends.Backend) {
		for _, k := range keys {
			mustSet(b, s, k, string(benchVal))
		}
		dst, err := s.MGet(ctx, keys, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if dst, err = s.MGet(ctx, keys, dst[:0]); err != nil || len(dst) != len(keys) {
				b.Fatal(len(dst), err)
			}
		}
	}
	b.Run("valkey_client_cache", func(b *testing.B) {
		d := newDriver(b, server, cached(nil))
		run(b, open(b, d))
		if d.stats.misses.Load() != int64(len(keys)) {
			b.Fatalf("misses = %d: the hot keys were not served from the cache", d.stats.misses.Load())
		}
	})
	b.Run("memory", func(b *testing.B) {
		m, err := memory.NewDriver("mem", 64<<20).Open(ctx, backends.RouteSpec{Name: "r"})
		if err != nil {
			b.Fatal(err)
		}
		run(b, m)
	})
}
