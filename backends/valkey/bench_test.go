package valkey

import (
	"context"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
	"github.com/pgcache/pgcache/internal/testenv"
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

// BenchmarkClientCacheHit reads hot client-cached keys through the
// backend's own hit path (fast: clientCache.hit, a lock-free lookup) and
// through valkey-go's DoCache (docache: a command built, the clock read,
// the slot hashed, the shard's Flight), as reads went before the fast
// path: one GET, GETs from every core, one 16-key MGET. The fast path earns
// its code while fast costs less than docache (docs/performance.md says
// how to read it).
func BenchmarkClientCacheHit(b *testing.B) {
	ctx := context.Background()
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = "hot:" + string(rune('a'+i))
	}
	for _, op := range []string{"GET", "GET-parallel", "MGET16"} {
		for _, fast := range []bool{true, false} {
			name := op + "/fast"
			if !fast {
				name = op + "/docache"
			}
			b.Run(name, func(b *testing.B) {
				d := newDriver(b, server, cached(nil))
				s := open(b, d)
				get, mget := s.Get, s.MGet
				if !fast {
					get, mget = s.getThrough, s.mgetThrough
				}
				for _, k := range keys {
					mustSet(b, s, k, string(benchVal))
				}
				// DoCache keeps a key read alone in its slot's connection
				// and the keys of an MGET in the first key's: fill both.
				if _, err := mget(ctx, keys, nil); err != nil {
					b.Fatal(err)
				}
				for _, k := range keys {
					if _, _, err := get(ctx, k); err != nil {
						b.Fatal(err)
					}
				}
				misses := d.stats.misses.Load()
				var dst [][]byte
				b.ReportAllocs()
				b.ResetTimer()
				stop := testenv.CPUPerOp(b)
				switch op {
				case "GET":
					for range b.N {
						if _, ok, err := get(ctx, keys[0]); err != nil || !ok {
							b.Fatal(ok, err)
						}
					}
				case "GET-parallel":
					b.RunParallel(func(pb *testing.PB) {
						for i := 0; pb.Next(); i++ {
							if _, ok, err := get(ctx, keys[i&15]); err != nil || !ok {
								b.Error(ok, err)
								return
							}
						}
					})
				case "MGET16":
					for range b.N {
						var err error
						if dst, err = mget(ctx, keys, dst[:0]); err != nil || len(dst) != len(keys) {
							b.Fatal(len(dst), err)
						}
					}
				}
				b.StopTimer()
				stop()
				if got := d.stats.misses.Load(); got != misses {
					b.Fatalf("%d misses while reading hot keys: they were not served from the cache", got-misses)
				}
			})
		}
	}
}
