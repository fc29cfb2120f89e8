package coherence

import (
	"context"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/backends/coll"
)

// TestExpiredReachEveryInstance: a key that expires in a kv table behind
// tiers is reported once by each instance's tier, whichever instance's
// sweep deleted it: a string and a hash given lifetimes through one
// instance; not a key whose lifetime a SET through the other took away
// before its deadline.
func TestExpiredReachEveryInstance(t *testing.T) {
	spec := backends.RouteSpec{Name: "ekv", Table: "expired_kv", Durability: "unlogged"}
	a, b := tierOn(t, spec), tierOn(t, spec)
	ctx := context.Background()
	ga, gb := make(backendtest.Expired, 100), make(backendtest.Expired, 100)
	defer a.tier.NotifyExpired(ga.Fn)()
	defer b.tier.NotifyExpired(gb.Fn)()

	set := func(tier *Tier, key string, ttl time.Duration) {
		t.Helper()
		opts := backends.SetOptions{}
		if ttl > 0 {
			opts.TTL = backends.TTL{Mode: backends.TTLRelative, D: ttl}
		}
		if _, err := tier.Set(ctx, key, []byte("v"), opts); err != nil {
			t.Fatal(err)
		}
	}
	set(a.tier, "str", 300*time.Millisecond)
	hset, err := coll.ParseHSet([][]byte{[]byte("hset"), []byte("hash"), []byte("f"), []byte("v")})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.tier.Do(ctx, []string{"hash"}, hset); err != nil {
		t.Fatal(err)
	}
	expire := &backends.Expire{TTL: backends.TTL{Mode: backends.TTLRelative, D: 300 * time.Millisecond}}
	if err := a.tier.Update(ctx, "hash", expire); err != nil || !expire.Changed {
		t.Fatalf("EXPIRE hash: changed %v, %v", expire.Changed, err)
	}
	set(a.tier, "kept", 300*time.Millisecond)
	set(b.tier, "kept", 0)

	ga.Once(t, "instance a", "str", "hash")
	gb.Once(t, "instance b", "str", "hash")
	set(b.tier, "marker", 100*time.Millisecond)
	ga.Once(t, "instance a, a key expiring after them", "marker")
	gb.Once(t, "instance b, a key expiring after them", "marker")
	if _, ok, err := b.tier.Get(ctx, "kept"); err != nil || !ok {
		t.Fatalf("GET kept = %v, %v", ok, err)
	}
}

// TestExpiredWrittenElsewhere: an instance that listens learns of a
// deadline written through another, which does not, from the write's
// fence, and reports the key when it expires, long before its sweep
// interval (the default minute) would have found it.
func TestExpiredWrittenElsewhere(t *testing.T) {
	spec := backends.RouteSpec{Name: "ekv2", Table: "expired_elsewhere_kv", Durability: "unlogged"}
	a, b := tierOn(t, spec), tierOn(t, spec)
	got := make(backendtest.Expired, 10)
	defer b.tier.NotifyExpired(got.Fn)()
	set := func(tier *Tier, key string) {
		t.Helper()
		ttl := backends.TTL{Mode: backends.TTLRelative, D: 300 * time.Millisecond}
		if _, err := tier.Set(context.Background(), key, []byte("v"), backends.SetOptions{TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	// Once b has swept this one, and looked, it knows of no deadline.
	set(b.tier, "first")
	got.Once(t, "a key written through the listening instance", "first")
	set(a.tier, "k")
	// Once waits 20 s at most: a third of the sweep interval.
	got.Once(t, "a key written through the other instance", "k")
}
