package coherence

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
)

// fencedMemory is the memory backend presented as a fenced table, with its
// reads counted: the tier's logic, tested without a database. The fences a
// trigger would publish are recorded by the tests themselves.
type fencedMemory struct {
	backends.Backend
	reads atomic.Int64
	ttls  bool // implement ExpiryReader through the memory backend's TTL
	// afterGet, when set, runs after a Get has read and before it returns:
	// a miss has its value and its token and has not filled yet, where
	// the tests pause a loader to force the late-fill race.
	afterGet func(key string)
}

func (m *fencedMemory) FenceTable() string                  { return "public.kv" }
func (m *fencedMemory) FenceKey(key string) (string, error) { return key, nil }

func (m *fencedMemory) Get(ctx context.Context, key string) ([]byte, bool, error) {
	m.reads.Add(1)
	v, ok, err := m.Backend.Get(ctx, key)
	if m.afterGet != nil {
		m.afterGet(key)
	}
	return v, ok, err
}

func (m *fencedMemory) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	m.reads.Add(int64(len(keys)))
	return m.Backend.MGet(ctx, keys, dst)
}

type expiringMemory struct{ *fencedMemory }

func (m expiringMemory) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	v, ok, err := m.Get(ctx, key)
	if err != nil || !ok {
		return v, 0, ok, err
	}
	ttl, err := m.Backend.TTL(ctx, key)
	return v, ttl, ok, err
}

func (m expiringMemory) MGetWithTTL(ctx context.Context, keys []string, dst []backends.Expiring) ([]backends.Expiring, error) {
	for _, k := range keys {
		v, ttl, ok, err := m.GetWithTTL(ctx, k)
		if err != nil {
			return dst, err
		}
		if !ok {
			v = nil
		}
		dst = append(dst, backends.Expiring{Val: v, TTL: ttl})
	}
	return dst, nil
}

func newTier(t *testing.T, expiring bool) (*Tier, *fencedMemory, *Fences) {
	t.Helper()
	d := memory.NewDriver("mem", 16<<20)
	t.Cleanup(func() { d.Close() })
	b, err := d.Open(context.Background(), backends.RouteSpec{Name: "kv"})
	if err != nil {
		t.Fatal(err)
	}
	m := &fencedMemory{Backend: b}
	f := NewFences(1024)
	f.SetOnline(true)
	var under backends.Backend = m
	if expiring {
		under = expiringMemory{m}
	}
	tier, err := NewTier(under, f, L1{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return tier, m, f
}

var ctx = context.Background()

func get(t *testing.T, tier *Tier, key string) string {
	t.Helper()
	v, ok, err := tier.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "<absent>"
	}
	return string(v)
}

// writeElsewhere is a write by another instance or by psql: it reaches the
// table without this tier, and this instance learns of it by a fence.
func writeElsewhere(t *testing.T, m *fencedMemory, key, val string) {
	t.Helper()
	if _, err := m.Backend.Set(ctx, key, []byte(val), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestHitAfterFill(t *testing.T) {
	tier, m, _ := newTier(t, false)
	writeElsewhere(t, m, "k", "v1")
	for range 3 {
		if got := get(t, tier, "k"); got != "v1" {
			t.Fatalf("Get = %q", got)
		}
	}
	if n := m.reads.Load(); n != 1 {
		t.Fatalf("backend reads = %d, want 1 (then hits)", n)
	}
	if h := tier.Stats.Hits.Load(); h != 2 {
		t.Fatalf("hits = %d, want 2", h)
	}
}

// The late-fill race of "Cache-aside without the race" (docs/bench.md), forced: a loader is paused after its
// read; a write commits and its fence arrives; the loader resumes. Its fill
// must be dropped, and the next read must return the new value.
func TestLateFillDropped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fence func(f *Fences)
	}{
		{"key fence", func(f *Fences) { f.FenceKey("public.kv", "k") }},
		{"table fence (TRUNCATE)", func(f *Fences) { f.FenceTable("public.kv") }},
		{"whole-cache fence (reconnect)", func(f *Fences) { f.SetOnline(false); f.SetOnline(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tier, m, f := newTier(t, false)
			writeElsewhere(t, m, "k", "old")
			paused, resume := make(chan struct{}), make(chan struct{})
			m.afterGet = func(string) { close(paused); <-resume }
			got := make(chan string)
			go func() { got <- get(t, tier, "k") }()
			<-paused // the loader has read "old"
			writeElsewhere(t, m, "k", "new")
			tc.fence(f)
			m.afterGet = nil
			close(resume)
			if v := <-got; v != "old" {
				t.Fatalf("the raced read returned %q, want the value it read (old)", v)
			}
			if n := tier.Stats.FillsFenced.Load(); n != 1 {
				t.Fatalf("fills fenced = %d, want 1", n)
			}
			if v := get(t, tier, "k"); v != "new" {
				t.Fatalf("next read = %q, want new", v)
			}
		})
	}
}

// A fence that arrives after a fill was stored makes the entry unusable on
// the next hit, whatever the order of fill and eviction.
func TestFenceAfterFill(t *testing.T) {
	tier, m, f := newTier(t, false)
	writeElsewhere(t, m, "k", "old")
	get(t, tier, "k")
	writeElsewhere(t, m, "k", "new")
	f.FenceKey("public.kv", "k")
	if v := get(t, tier, "k"); v != "new" {
		t.Fatalf("read after fence = %q", v)
	}
	if n := tier.Stats.Stale.Load(); n != 1 {
		t.Fatalf("stale hits refused = %d, want 1", n)
	}
}

func TestOwnWriteVisible(t *testing.T) {
	tier, _, _ := newTier(t, false)
	for i := range 100 {
		v := string(rune('a' + i%26))
		if _, err := tier.Set(ctx, "k", []byte(v), backends.SetOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := get(t, tier, "k"); got != v {
			t.Fatalf("read after own write %d = %q, want %q", i, got, v)
		}
	}
	tier.Del(ctx, []string{"k"})
	if got := get(t, tier, "k"); got != "<absent>" {
		t.Fatalf("read after own DEL = %q", got)
	}
}

func TestOfflineBypasses(t *testing.T) {
	tier, m, f := newTier(t, false)
	writeElsewhere(t, m, "k", "v")
	f.SetOnline(false)
	for range 3 {
		get(t, tier, "k")
	}
	if n := m.reads.Load(); n != 3 {
		t.Fatalf("backend reads while offline = %d, want 3", n)
	}
	if n := tier.Stats.FillsStored.Load(); n != 0 {
		t.Fatalf("fills while offline = %d, want 0", n)
	}
	f.SetOnline(true)
	get(t, tier, "k")
	get(t, tier, "k")
	if n := m.reads.Load(); n != 4 {
		t.Fatalf("backend reads after reconnect = %d, want 4", n)
	}
}

// N concurrent misses on one key: exactly one backend read.
func TestCoalescedMisses(t *testing.T) {
	tier, m, _ := newTier(t, false)
	writeElsewhere(t, m, "k", "v")
	const n = 50
	entered, release := make(chan struct{}), make(chan struct{})
	m.afterGet = func(string) { close(entered); <-release }
	var wg sync.WaitGroup
	wg.Go(func() { get(t, tier, "k") })
	<-entered
	for range n - 1 {
		wg.Go(func() {
			if v := get(t, tier, "k"); v != "v" {
				t.Errorf("coalesced read = %q", v)
			}
		})
	}
	// Every waiter has joined once the coalesced count reaches n-1.
	for i := 0; tier.Stats.Coalesced.Load() < n-1; i++ {
		if i > 5000 {
			t.Fatalf("only %d waiters joined", tier.Stats.Coalesced.Load())
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if r := m.reads.Load(); r != 1 {
		t.Fatalf("backend reads = %d, want 1", r)
	}
}

// A miss that begins after a fence does not join a read that began before it.
func TestNoJoinAcrossFence(t *testing.T) {
	tier, m, f := newTier(t, false)
	writeElsewhere(t, m, "k", "old")
	paused, resume := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	m.afterGet = func(string) {
		if first.CompareAndSwap(false, true) {
			close(paused)
			<-resume
		}
	}
	slow := make(chan string)
	go func() { slow <- get(t, tier, "k") }()
	<-paused
	writeElsewhere(t, m, "k", "new")
	f.FenceKey("public.kv", "k")
	if v := get(t, tier, "k"); v != "new" {
		t.Fatalf("a read that began after the fence returned %q", v)
	}
	close(resume)
	<-slow
	if v := get(t, tier, "k"); v != "new" {
		t.Fatalf("later read = %q", v)
	}
}

// MGet fills L1 with what it read, for rows that expire (kv) and rows that
// do not (table routes) alike, and a fence makes the next MGet read again.
func TestMGetFills(t *testing.T) {
	for _, expiring := range []bool{false, true} {
		tier, m, f := newTier(t, expiring)
		writeElsewhere(t, m, "a", "1")
		writeElsewhere(t, m, "b", "2")
		mget := func() string {
			t.Helper()
			vals, err := tier.MGet(ctx, []string{"a", "b", "absent"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("%q", vals)
		}
		if got, want := mget(), `["1" "2" ""]`; got != want {
			t.Fatalf("expiring=%v: MGet = %s, want %s", expiring, got, want)
		}
		before := m.reads.Load()
		mget()
		if n := m.reads.Load() - before; n != 1 {
			t.Fatalf("expiring=%v: second MGet read %d keys from the backend, want 1 (the absent one)", expiring, n)
		}
		writeElsewhere(t, m, "a", "new")
		f.FenceKey("public.kv", "a")
		if got, want := mget(), `["new" "2" ""]`; got != want {
			t.Fatalf("expiring=%v: MGet after a fence = %s, want %s", expiring, got, want)
		}
	}
}

// An L1 entry never outlives the row's remaining TTL.
func TestEntryBoundByRowTTL(t *testing.T) {
	tier, m, _ := newTier(t, true)
	if _, err := m.Backend.Set(ctx, "k", []byte("v"), backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLRelative, D: 50 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if v := get(t, tier, "k"); v != "v" {
		t.Fatalf("Get = %q", v)
	}
	for i := 0; get(t, tier, "k") != "<absent>"; i++ {
		if i > 200 {
			t.Fatal("the L1 entry outlived the row")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Expired L1 entries give their memory back; the others stay.
func TestExpiredEntriesAreFreed(t *testing.T) {
	tier, m, _ := newTier(t, true)
	short := backends.SetOptions{TTL: backends.TTL{Mode: backends.TTLRelative, D: 50 * time.Millisecond}}
	for i := range 100 {
		if _, err := m.Backend.Set(ctx, fmt.Sprint("short", i), []byte("v"), short); err != nil {
			t.Fatal(err)
		}
		writeElsewhere(t, m, fmt.Sprint("keep", i), "v")
		get(t, tier, fmt.Sprint("short", i))
		get(t, tier, fmt.Sprint("keep", i))
	}
	for end := time.Now().Add(10 * time.Second); tier.cache.EstimatedSize() > 100 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := tier.cache.EstimatedSize(); n != 100 {
		t.Fatalf("L1 holds %d entries, want the 100 without a lifetime", n)
	}
}

func TestFencesRaiseConcurrently(t *testing.T) {
	f := NewFences(16)
	f.SetOnline(true)
	h := f.Hash("t", "k")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				f.FenceHash(h)
			}
		})
	}
	wg.Wait()
	// The bucket holds the last sequence handed out: no fence was lost to a
	// smaller one written late.
	if tok := f.Token(); !f.Valid(tok, f.Table("t"), h) || f.Valid(tok-1, f.Table("t"), h) {
		t.Fatalf("bucket is not at the latest sequence %d", tok)
	}
}

func BenchmarkTierHit(b *testing.B) {
	d := memory.NewDriver("mem", 16<<20)
	defer d.Close()
	mb, _ := d.Open(context.Background(), backends.RouteSpec{Name: "kv"})
	f := NewFences(0)
	f.SetOnline(true)
	tier, _ := NewTier(&fencedMemory{Backend: mb}, f, L1{MaxBytes: 1 << 20})
	mb.Set(ctx, "key:42", make([]byte, 100), backends.SetOptions{})
	tier.Get(ctx, "key:42")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, _ := tier.Get(ctx, "key:42"); !ok {
			b.Fatal("miss")
		}
	}
}
