package coherence

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/testenv"
)

// TestRefreshAfterOutsideWrite: with L1.Refresh, a row L1 held when plain
// SQL changed it is read again after its fence, so the next read is a hit
// with the new value; a row L1 did not hold is left to its reader.
func TestRefreshAfterOutsideWrite(t *testing.T) {
	p := pg.Pool(t)
	a := refreshing(t, p, "refresh_kv", "held", "old", "cold")
	ctx := context.Background()
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
	a := refreshing(t, p, "refresh_race_kv", "k", "v0")
	ctx := context.Background()

	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func() { once.Do(func() { close(paused); <-resume }) }
	a.reads.afterMGet.Store(&hook)
	testenv.Exec(t, p, `UPDATE refresh_race_kv SET value = 'v1' WHERE key = 'k'`)
	select {
	case <-paused: // the refresh read v1 under a token taken before
	case <-time.After(20 * time.Second):
		t.Fatal("no refresh of k within 20s")
	}
	tok := a.coord.Fences.Token()
	testenv.Exec(t, p, `UPDATE refresh_race_kv SET value = 'v2' WHERE key = 'k'`)
	fenced(t, a.coord.Fences, tok, "public.refresh_race_kv", "k")
	fencedBefore := a.tier.Stats.FillsFenced.Load()
	a.reads.afterMGet.Store(nil)
	close(resume)
	waitFor(t, "the raced refresh's fill dropped", func() bool { return a.tier.Stats.FillsFenced.Load() > fencedBefore })
	if v, _, _ := a.tier.Get(ctx, "k"); string(v) != "v2" {
		t.Fatalf("next read = %q, want v2", v)
	}
}

// refreshing is an instance with L1.Refresh over a kv table, with held set
// to val and cached, and the other keys set to val and not cached.
func refreshing(t *testing.T, p *pgxpool.Pool, table, held, val string, others ...string) *instance {
	t.Helper()
	spec := backends.RouteSpec{Name: table, Table: table, Durability: "unlogged"}
	a := instanceWith(t, spec, ListenerOptions{PingInterval: 200 * time.Millisecond}, L1{MaxBytes: 16 << 20, Refresh: true})
	tok := a.coord.Fences.Token()
	for _, k := range append([]string{held}, others...) {
		testenv.Exec(t, p, fmt.Sprintf(`INSERT INTO %s VALUES ('%s', '%s', 'infinity') ON CONFLICT (key) DO UPDATE SET value = '%s'`, table, k, val, val))
	}
	// The inserts' fences must have come, or the read below may not fill.
	fenced(t, a.coord.Fences, tok, "public."+table, held)
	if v, _, _ := a.tier.Get(context.Background(), held); string(v) != val {
		t.Fatalf("%s = %q, want %s", held, v, val)
	}
	return a
}
