package valkey

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/testenv"
)

// bare is a plain valkey-go client on the package's server: "another
// client" for invalidation tests, and the baseline of the benchmarks.
func bare(t testing.TB) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{server.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestClientCacheHit(t *testing.T) {
	d := newDriver(t, server, cached(nil))
	s := open(t, d)
	mustSet(t, s, "k", "v")

	for i, wantHits := range []int64{0, 1, 2} {
		if v, ok := mustGet(t, s, "k"); !ok || v != "v" {
			t.Fatalf("read %d: GET = %q, %v", i, v, ok)
		}
		if got := d.stats.hits.Load(); got != wantHits {
			t.Fatalf("after read %d: hits = %d, want %d", i, got, wantHits)
		}
	}
	if got := d.stats.misses.Load(); got != 1 {
		t.Fatalf("misses = %d, want 1", got)
	}
	// An absent key is cached too (the server tracks it all the same).
	for range 2 {
		if _, ok := mustGet(t, s, "absent"); ok {
			t.Fatal("absent key found")
		}
	}
	if got := d.stats.hits.Load(); got != 3 {
		t.Fatalf("hits after two reads of an absent key = %d, want 3", got)
	}
	// MGet counts per key: k is cached, m is not.
	mustSet(t, s, "m", "w")
	if vals, err := s.MGet(ctxT(t), []string{"k", "m"}, nil); err != nil || string(vals[0]) != "v" || string(vals[1]) != "w" {
		t.Fatalf("MGET = %q, %v", vals, err)
	}
	if hits, misses := d.stats.hits.Load(), d.stats.misses.Load(); hits != 4 || misses != 3 {
		t.Fatalf("after MGET: hits, misses = %d, %d; want 4, 3", hits, misses)
	}

	info := map[string]string{}
	for _, kv := range d.Info(context.Background()) {
		info[kv[0]] = kv[1]
	}
	for field, want := range map[string]string{
		"backend_vk_mode":                "standalone",
		"backend_vk_client_cache":        "on",
		"backend_vk_client_cache_hits":   "4",
		"backend_vk_client_cache_misses": "3",
	} {
		if info[field] != want {
			t.Errorf("INFO %s = %q, want %q", field, info[field], want)
		}
	}
	if n, _ := strconv.Atoi(info["backend_vk_client_cache_entries"]); n < 2 {
		t.Errorf("INFO client_cache_entries = %q, want at least 2", info["backend_vk_client_cache_entries"])
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(d.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		m := mf.GetMetric()[0]
		if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "backend" || l[0].GetValue() != "vk" {
			t.Errorf("%s: labels %v, want backend=vk", mf.GetName(), l)
		}
		got[mf.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	for name, want := range map[string]float64{
		"pgcache_valkey_client_cache_hits_total":   4,
		"pgcache_valkey_client_cache_misses_total": 3,
		"pgcache_valkey_errors_total":              0,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	if got["pgcache_valkey_client_cache_bytes"] <= 0 || len(got) != 6 {
		t.Errorf("metrics = %v", got)
	}
}

// A write by another client reaches the cache through the server's
// invalidation, shortly after.
func TestClientCacheInvalidation(t *testing.T) {
	d := newDriver(t, server, cached(nil))
	s := open(t, d)
	other := bare(t)
	cli, err := testenv.LookPath("redis-cli", testenv.RedisInstall)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		write func(key, val string) error
	}{
		{"raw", func(key, val string) error { _, err := server.Do(context.Background(), "SET", key, val); return err }},
		{"valkey-go", func(key, val string) error {
			return other.Do(context.Background(), other.B().Set().Key(key).Value(val).Build()).Error()
		}},
		{"redis-cli", func(key, val string) error {
			out, err := exec.Command(cli, "-h", "127.0.0.1", "-p", strconv.Itoa(server.Port), "SET", key, val).CombinedOutput()
			if err == nil && strings.TrimSpace(string(out)) != "OK" {
				err = fmt.Errorf("redis-cli SET: %s", out)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			present, absent := tc.name+"-present", tc.name+"-absent"
			mustSet(t, s, present, "old")
			for range 2 { // the second read is a hit
				mustGet(t, s, present)
				mustGet(t, s, absent)
			}
			for _, k := range []string{present, absent} {
				if err := tc.write(s.key(k), "new"); err != nil {
					t.Fatal(err)
				}
				if !poll(200, func() bool { v, _ := mustGet(t, s, k); return v == "new" }) {
					t.Fatalf("%s: the other client's write was not seen within 2s", k)
				}
			}
		})
	}
}

// A write through the backend is read back at once, even while other
// readers keep fills of the key in flight, repeated with new values.
func TestClientCacheOwnWrites(t *testing.T) {
	t.Run("standalone", func(t *testing.T) { testOwnWrites(t, server) })
	t.Run("cluster", func(t *testing.T) { testOwnWrites(t, cluster) })
}

func testOwnWrites(t *testing.T, srv *testenv.Redis) {
	d := newDriver(t, srv, cached(nil))
	s := open(t, d)
	s2 := &Store{d: d, prefix: s.prefix} // a second handle on the same route's keys
	ctx := ctxT(t)

	// One reader: more only fight over the CPUs of a small machine.
	const readers = 1
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s2.Get(ctx, "k")
				s2.MGet(ctx, []string{"k", "other"}, nil)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	for i := range 1000 {
		want := "v" + strconv.Itoa(i)
		var err error
		switch i % 4 { // every kind of write fences
		case 0:
			_, err = s.Set(ctx, "k", []byte(want), backends.SetOptions{})
		case 1:
			err = s.MSet(ctx, []backends.KV{{Key: "k", Val: []byte(want)}})
		case 2:
			_, err = s.Set(ctx, "k", []byte(want), backends.SetOptions{Get: true, TTL: backends.TTL{Mode: backends.TTLRelative, D: time.Minute}})
		case 3:
			if _, err = s.Del(ctx, []string{"k"}); err == nil {
				if v, ok := mustGet(t, s, "k"); ok {
					t.Fatalf("round %d: GET after DEL = %q", i, v)
				}
				_, err = s.Set(ctx, "k", []byte(want), backends.SetOptions{})
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := mustGet(t, s, "k"); !ok || v != want {
			t.Fatalf("round %d: GET right after the write = %q, %v; want %q", i, v, ok, want)
		}
		if vals, err := s.MGet(ctx, []string{"k"}, nil); err != nil || string(vals[0]) != want {
			t.Fatalf("round %d: MGET right after the write = %q, %v; want %q", i, vals, err, want)
		}
	}
	if d.stats.hits.Load() == 0 {
		t.Fatal("no read was a cache hit: the test did not exercise the cache")
	}
}

func TestClientCacheMaxBytes(t *testing.T) {
	const maxBytes = 64 << 10
	d := newDriver(t, server, map[string]any{"client_cache": map[string]any{"max_bytes": "64KiB"}})
	s := open(t, d)
	val := string(make([]byte, 1000))
	for i := range 300 {
		k := strconv.Itoa(i)
		mustSet(t, s, k, val)
		mustGet(t, s, k)
		// Over the bound by at most the entries being stored concurrently:
		// here one.
		if used := d.cache.used.Load(); used > maxBytes+1100+entryOverhead {
			t.Fatalf("after %d keys the cache holds %d bytes, max_bytes is %d", i+1, used, maxBytes)
		}
	}
	if d.cache.evictions.Load() == 0 {
		t.Fatal("no eviction after 300KB through a 64KiB cache")
	}
	// Recently read keys are still served.
	before := d.stats.hits.Load()
	mustGet(t, s, "299")
	if d.stats.hits.Load() != before+1 {
		t.Fatal("the last key read is not cached")
	}
}

// A key's own expiry bounds how long the cache serves it.
func TestClientCacheKeyTTL(t *testing.T) {
	d := newDriver(t, server, cached(nil))
	s := open(t, d)
	if _, err := s.Set(ctxT(t), "k", []byte("v"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLRelative, D: 200 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, "k")
	if _, ok := mustGet(t, s, "k"); !ok || d.stats.hits.Load() != 1 {
		t.Fatalf("second read: ok=%v hits=%d, want a hit", ok, d.stats.hits.Load())
	}
	if !poll(200, func() bool { _, ok := mustGet(t, s, "k"); return !ok }) {
		t.Fatal("the key was still served 2s after its 200ms expiry")
	}
}

// message returns a real GET reply, as valkey-go hands it to the store.
func message(t *testing.T, val string) valkey.ValkeyMessage {
	t.Helper()
	c := bare(t)
	ctx := context.Background()
	if err := c.Do(ctx, c.B().Set().Key("msg").Value(val).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	m, err := c.Do(ctx, c.B().Get().Key("msg").Build()).ToMessage()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The store's side of the races, driven step by step as valkey-go would
// drive it, with no server timing involved.
func TestShardRaces(t *testing.T) {
	old := message(t, "old")
	now := time.Now()
	const ttl = time.Minute
	newShard := func() (*clientCache, *shard) {
		c := newClientCache(ttl, 1<<20, time.Hour)
		return c, c.newShard(valkey.CacheStoreOption{}).(*shard)
	}
	flight := func(s *shard) (hit bool, e valkey.CacheEntry) {
		v, e := s.Flight("k", "GET", ttl, now)
		return v.IsString(), e
	}
	wantRefetch := func(t *testing.T, e valkey.CacheEntry) {
		t.Helper()
		if e == nil {
			t.Fatal("Flight = miss, want a refetch")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // a fill to join would block
		defer cancel()
		if _, err := e.Wait(ctx); !errors.Is(err, errRefetch) {
			t.Fatalf("Wait = %v, want errRefetch", err)
		}
	}

	t.Run("fill overtaken by own write", func(t *testing.T) {
		c, s := newShard()
		if hit, e := flight(s); hit || e != nil {
			t.Fatal("first Flight is not a miss")
		}
		// A reader joins before the write: it overlaps the write, so the
		// old value is a fine answer for it.
		_, joined := flight(s)
		c.fence("k") // the write's reply is in
		_, e := flight(s)
		wantRefetch(t, e) // a reader after the write must not join
		s.Update("k", "GET", old)
		if v, err := joined.Wait(context.Background()); err != nil || !v.IsString() {
			t.Fatalf("joined reader: %v, %v", v, err)
		}
		if hit, e := flight(s); hit || e != nil {
			t.Fatal("the fenced fill was stored")
		}
		if c.dropped.Load() != 1 {
			t.Fatalf("dropped = %d, want 1", c.dropped.Load())
		}
	})

	t.Run("fill after own write", func(t *testing.T) {
		c, s := newShard()
		c.fence("k")
		flight(s)
		s.Update("k", "GET", old)
		if hit, _ := flight(s); !hit {
			t.Fatal("a fill that started after the fence was not stored")
		}
		c.fence("k")
		if hit, e := flight(s); hit || e != nil {
			t.Fatal("the fence did not evict the stored entry")
		}
	})

	t.Run("abandoned fill", func(t *testing.T) {
		c, s := newShard()
		flight(s)
		_, joined := flight(s)
		s.Cancel("k", "GET", context.DeadlineExceeded) // the request may be on the wire
		wantRefetch(t, joined)
		_, e := flight(s)
		wantRefetch(t, e) // the slot stays taken: its reply may still come
		c.fence("k")
		s.Update("k", "GET", old) // the late reply: nobody takes it
		if hit, e := flight(s); hit || e != nil {
			t.Fatal("the late reply of an abandoned fill was stored")
		}
	})

	t.Run("abandoned fill past the grace", func(t *testing.T) {
		c := newClientCache(ttl, 1<<20, 0)
		s := c.newShard(valkey.CacheStoreOption{}).(*shard)
		flight(s)
		s.Cancel("k", "GET", context.Canceled)
		if _, e := s.Flight("k", "GET", ttl, time.Now().Add(time.Second)); e != nil {
			t.Fatal("an abandoned fill past its grace still blocks the key")
		}
	})

	t.Run("fill answered with an error", func(t *testing.T) {
		_, s := newShard()
		flight(s)
		_, joined := flight(s)
		s.Cancel("k", "GET", valkey.ErrDoCacheAborted)
		if _, err := joined.Wait(context.Background()); err != valkey.ErrDoCacheAborted {
			t.Fatalf("joined reader: %v", err)
		}
		if _, e := flight(s); e != nil {
			t.Fatal("an answered fill still blocks the key")
		}
	})

	t.Run("connection closed", func(t *testing.T) {
		c, s := newShard()
		flight(s)
		s.Update("k", "GET", old)
		s.Flight("p", "GET", ttl, now)
		_, joined := s.Flight("p", "GET", ttl, now)
		s.Close(valkey.ErrDoCacheAborted)
		wantRefetch(t, joined)
		if hit, e := flight(s); hit || e != nil {
			t.Fatal("a closed shard still serves")
		}
		if c.used.Load() != 0 || len(c.shards) != 0 {
			t.Fatalf("after Close: used = %d, shards = %d", c.used.Load(), len(c.shards))
		}
	})

	t.Run("borrowed key", func(t *testing.T) {
		// The key of a miss points into a buffer the caller reuses: the
		// entry must not change with it.
		_, s := newShard()
		buf := []byte("k")
		if _, e := s.Flight(unsafe.String(&buf[0], len(buf)), "GET", ttl, now); e != nil {
			t.Fatal("first Flight is not a miss")
		}
		buf[0] = 'x'
		s.Update("k", "GET", old)
		if hit, _ := flight(s); !hit {
			t.Fatal("the entry of a key whose buffer was reused is not found by the key")
		}
	})

	t.Run("server invalidation", func(t *testing.T) {
		_, s := newShard()
		flight(s)
		s.Update("k", "GET", old)
		s.Delete([]valkey.ValkeyMessage{message(t, "k")})
		if hit, _ := flight(s); hit {
			t.Fatal("an invalidated entry is still served")
		}
		s.Update("k", "GET", old)
		s.Delete(nil)
		if hit, _ := flight(s); hit {
			t.Fatal("an entry is still served after invalidate-all")
		}
	})
}
