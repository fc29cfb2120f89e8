package valkey

import (
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
)

type reports = backendtest.Reports

func keysAre(ks ...string) func(backends.Outside) bool { return backendtest.KeysAre("valkey", ks...) }

// TestNotifyInvalidations: with a client cache, a key read through it and
// then changed by another client is reported with the route's key; a
// flush by another client is All; a read the server does not track (TTL,
// EXISTS) is marked for its reader to ask, not reported, and an atomic run's reads are
// confirmed through the client cache; the connections killed are Lost, and Watching is
// true again once a read has reconnected. Another route of the driver
// hears of none of the first route's keys.
func TestNotifyInvalidations(t *testing.T) {
	d := newDriver(t, server, cached(nil))
	s, other := open(t, d), open(t, d)
	mustGet(t, s, "warm") // connects
	if !s.Watching() {
		t.Fatal("a connected client cache is not Watching")
	}
	r, ro := make(reports, 1000), make(reports, 1000)
	defer s.Notify(r.Fn)()
	defer other.Notify(ro.Fn)()
	b := bare(t)
	ctx := ctxT(t)

	mustSet(t, s, "k", "v1")
	if v, _ := mustGet(t, s, "k"); v != "v1" {
		t.Fatalf("GET k = %q", v)
	}
	if err := b.Do(ctx, b.B().Set().Key(s.prefix+"k").Value("v2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r.Next(t, "SET by another client", keysAre("k"))
	if v, _ := mustGet(t, s, "k"); v != "v2" {
		t.Fatalf("GET k after the report = %q, want v2", v)
	}

	// TTL is not tracked by the server: the read is marked for its
	// reader to ask, and nobody is told.
	tok := s.ReadToken()
	if _, err := s.TTL(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if !s.Unwatched("t", tok) {
		t.Fatal("TTL: the read was not marked as unwatched")
	}
	tok = s.ReadToken()
	if _, err := s.Exists(ctx, []string{"e1", "e2"}); err != nil {
		t.Fatal(err)
	}
	if !s.Unwatched("e1", tok) || !s.Unwatched("e2", tok) {
		t.Fatal("EXISTS: the read was not marked as unwatched")
	}
	select {
	case o := <-r:
		t.Fatalf("TTL: reported %+v", o)
	default:
	}
	// An atomic run's reads are confirmed through the client cache: not
	// marked, and a later change is reported.
	mustSet(t, s, "t", "t1")
	tok = s.ReadToken()
	if err := s.Atomically(ctx, []string{"t"}, func(tx backends.Backend) error {
		_, _, err := tx.Get(ctx, "t")
		return err
	}); err != nil || s.Unwatched("t", tok) {
		t.Fatalf("an atomic run: %v, marked %v", err, s.Unwatched("t", tok))
	}
	if err := b.Do(ctx, b.B().Set().Key(s.prefix+"t").Value("t2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r.Next(t, "SET by another client after an atomic run read", keysAre("t"))

	mustGet(t, s, "k") // cached: watched
	tok = s.ReadToken()
	if _, _, err := s.Get(ctx, "k"); err != nil || s.Unwatched("k", tok) {
		t.Fatalf("a cached GET: %v, marked %v", err, s.Unwatched("k", tok))
	}

	mustGet(t, s, "k")
	if err := b.Do(ctx, b.B().Flushall().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r.Next(t, "FLUSHALL by another client", func(o backends.Outside) bool { return o.All && !o.Lost && o.Source == "valkey" })

	for len(ro) > 0 {
		if o := <-ro; len(o.Keys) > 0 {
			t.Fatalf("another route was told of keys: %+v", o)
		}
	}

	mustGet(t, s, "k")
	// Every normal connection but the one that asks: valkey-go may also
	// have given the bare client's own call a connection killed under it
	// (EOF), so its error says nothing; the report below is the check.
	b.Do(ctx, b.B().ClientKill().TypeNormal().Build())
	r.Next(t, "connections killed", func(o backends.Outside) bool { return o.Lost && o.All && o.Source == "valkey" })
	// valkey-go reconnects on the next call.
	if !poll(200, func() bool { s.Get(ctx, "k"); return s.Watching() }) {
		t.Fatal("not Watching after reads reconnected")
	}
	mustGet(t, s, "k2")
	// The bare client's other connections were killed too: its first call
	// on one may meet the EOF.
	var err error
	if !poll(200, func() bool {
		err = b.Do(ctx, b.B().Set().Key(s.prefix+"k2").Value("x").Build()).Error()
		return err == nil
	}) {
		t.Fatal(err)
	}
	r.Next(t, "SET by another client after the reconnect", keysAre("k2"))
}

// TestNotifyWithoutClientCache: without a client cache nothing is watched.
func TestNotifyWithoutClientCache(t *testing.T) {
	d := newDriver(t, server, nil)
	s := open(t, d)
	mustGet(t, s, "k")
	if s.Watching() {
		t.Fatal("Watching without a client cache")
	}
	r := make(reports, 10)
	s.Notify(r.Fn)()
}
