package valkey

import (
	"slices"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// reports gathers a Notifier's reports; fn never blocks.
type reports chan backends.Outside

func (r reports) fn(o backends.Outside) {
	o.Keys = slices.Clone(o.Keys)
	select {
	case r <- o:
	default:
		panic("more reports than the test reads")
	}
}

// next waits for the first report want accepts, passing over others.
func (r reports) next(t *testing.T, what string, want func(backends.Outside) bool) backends.Outside {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case o := <-r:
			if want(o) {
				return o
			}
			t.Logf("%s: passed over %+v", what, o)
		case <-timeout:
			t.Fatalf("%s: no report within 20s", what)
		}
	}
}

func keysAre(ks ...string) func(backends.Outside) bool {
	return func(o backends.Outside) bool {
		return !o.All && o.Source == "valkey" && slices.Equal(o.Keys, ks)
	}
}

// TestNotifyInvalidations: with a client cache, a key read through it and
// then changed by another client is reported with the route's key; a
// flush by another client is All; a read the server does not track (TTL)
// is reported at once; the connections killed are Lost, and Watching is
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
	defer s.Notify(r.fn)()
	defer other.Notify(ro.fn)()
	b := bare(t)
	ctx := ctxT(t)

	mustSet(t, s, "k", "v1")
	if v, _ := mustGet(t, s, "k"); v != "v1" {
		t.Fatalf("GET k = %q", v)
	}
	if err := b.Do(ctx, b.B().Set().Key(s.prefix+"k").Value("v2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r.next(t, "SET by another client", keysAre("k"))
	if v, _ := mustGet(t, s, "k"); v != "v2" {
		t.Fatalf("GET k after the report = %q, want v2", v)
	}

	// TTL is not tracked by the server: reported as it returns.
	if _, err := s.TTL(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-r:
		if !keysAre("t")(o) {
			t.Fatalf("after TTL: %+v, want key t", o)
		}
	default:
		t.Fatal("TTL's key not reported when it returned")
	}

	mustGet(t, s, "k")
	if err := b.Do(ctx, b.B().Flushall().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	r.next(t, "FLUSHALL by another client", func(o backends.Outside) bool { return o.All && !o.Lost && o.Source == "valkey" })

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
	r.next(t, "connections killed", func(o backends.Outside) bool { return o.Lost && o.All && o.Source == "valkey" })
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
	r.next(t, "SET by another client after the reconnect", keysAre("k2"))
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
	s.Notify(r.fn)()
}
