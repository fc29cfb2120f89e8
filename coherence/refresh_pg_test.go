package coherence

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/testenv"
)

// TestRefreshAfterOutsideWrite: with L1.Refresh, a row L1 held when plain
// SQL changed it is read again after its fence, so the next read is a hit
// with the new value; a row L1 did not hold is left to its reader.
func TestRefreshAfterOutsideWrite(t *testing.T) {
	p := pg.Pool(t)
	spec := backends.RouteSpec{Name: "refresh_kv", Table: "refresh_kv", Durability: "unlogged"}
	a := instanceWith(t, spec, 200*time.Millisecond, L1{MaxBytes: 16 << 20, Refresh: true})
	ctx := context.Background()
	tok := a.coord.Fences.Token()
	testenv.Exec(t, p, `INSERT INTO refresh_kv VALUES ('held', 'old', 'infinity'), ('cold', 'old', 'infinity')
		ON CONFLICT (key) DO UPDATE SET value = 'old'`)
	fenced(t, a.coord.Fences, tok, "public.refresh_kv", "held") // else the read below may not fill
	if v, _, _ := a.tier.Get(ctx, "held"); string(v) != "old" {
		t.Fatalf("held = %q, want old", v)
	}
	filled := a.tier.Stats.FillsStored.Load()

	testenv.Exec(t, p, `UPDATE refresh_kv SET value = 'new'`)
	waitFor(t, "the refresh's fill", func() bool { return a.tier.Stats.FillsStored.Load() > filled })
	if n := a.tier.Stats.Refreshed.Load(); n != 1 {
		t.Fatalf("refreshed %d rows, want 1 (the one L1 held)", n)
	}
	misses := a.tier.Stats.Misses.Load()
	if v, _, _ := a.tier.Get(ctx, "held"); string(v) != "new" {
		t.Fatalf("held after the refresh = %q, want new", v)
	}
	if n := a.tier.Stats.Misses.Load(); n != misses {
		t.Fatalf("the read after the refresh missed (%d misses, was %d)", n, misses)
	}
	if v, _, _ := a.tier.Get(ctx, "cold"); string(v) != "new" {
		t.Fatalf("cold = %q, want new", v)
	}
}

// TestRefreshRacesWrite: a refresh is a fill like a miss's. One paused
// after its read while a second UPDATE commits and fences stores nothing,
// and the next read sees the second write.
func TestRefreshRacesWrite(t *testing.T) {
	p := pg.Pool(t)
	spec := backends.RouteSpec{Name: "refresh_race_kv", Table: "refresh_race_kv", Durability: "unlogged"}
	a := instanceWith(t, spec, 200*time.Millisecond, L1{MaxBytes: 16 << 20, Refresh: true})
	ctx := context.Background()
	tok := a.coord.Fences.Token()
	testenv.Exec(t, p, `INSERT INTO refresh_race_kv VALUES ('k', 'v0', 'infinity') ON CONFLICT (key) DO UPDATE SET value = 'v0'`)
	fenced(t, a.coord.Fences, tok, "public.refresh_race_kv", "k")
	if v, _, _ := a.tier.Get(ctx, "k"); string(v) != "v0" {
		t.Fatalf("k = %q, want v0", v)
	}

	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() { once.Do(func() { close(paused); <-resume }) }
	a.tier.afterRefreshRead.Store(&hook)
	testenv.Exec(t, p, `UPDATE refresh_race_kv SET value = 'v1' WHERE key = 'k'`)
	select {
	case <-paused: // the refresh read v1 under a token taken before
	case <-time.After(20 * time.Second):
		t.Fatal("no refresh of k within 20s")
	}
	tok = a.coord.Fences.Token()
	testenv.Exec(t, p, `UPDATE refresh_race_kv SET value = 'v2' WHERE key = 'k'`)
	fenced(t, a.coord.Fences, tok, "public.refresh_race_kv", "k")
	fencedBefore := a.tier.Stats.FillsFenced.Load()
	a.tier.afterRefreshRead.Store(nil)
	close(resume)
	waitFor(t, "the raced refresh's fill dropped", func() bool { return a.tier.Stats.FillsFenced.Load() > fencedBefore })
	if v, _, _ := a.tier.Get(ctx, "k"); string(v) != "v2" {
		t.Fatalf("next read = %q, want v2", v)
	}
}
