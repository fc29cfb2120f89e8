package valkey

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/testenv"
)

func TestServerErrors(t *testing.T) {
	d := newDriver(t, server, cached(nil))
	s := open(t, d)
	ctx := ctxT(t)
	if _, err := server.Do(ctx, "RPUSH", s.key("list"), "x"); err != nil {
		t.Fatal(err)
	}
	// MGET answers nil for a key of another type, in a cluster too, where
	// it is split into GETs.
	for _, srv := range []*testenv.Redis{server, cluster} {
		for _, options := range []map[string]any{nil, cached(nil)} {
			s := open(t, newDriver(t, srv, options))
			srv.Do(ctx, "RPUSH", s.key("list"), "x")
			mustSet(t, s, "str", "v")
			vals, err := s.MGet(ctx, []string{"list", "str"}, nil)
			if err != nil || len(vals) != 2 || vals[0] != nil || string(vals[1]) != "v" {
				t.Errorf("%s %v: MGET list str = %q, %v; want [nil v]", srv.Addr(), options, vals, err)
			}
		}
	}
	for _, op := range []string{"get", "set-get", "incrby"} {
		var err error
		switch op {
		case "get":
			_, _, err = s.Get(ctx, "list")
		case "set-get":
			_, err = s.Set(ctx, "list", []byte("v"), backends.SetOptions{Get: true})
		case "incrby":
			_, err = backends.DoIncrBy(ctx, s, "list", 1)
		}
		if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") || errors.Is(err, backends.ErrUnavailable) {
			t.Errorf("%s on a list = %v, want the server's WRONGTYPE, not unavailability", op, err)
		}
	}
	// The caller's own cancellation is not the store's failure.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	before := d.stats.errors.Load()
	if _, _, err := s.Get(cctx, "k"); !errors.Is(err, context.Canceled) || errors.Is(err, backends.ErrUnavailable) {
		t.Errorf("Get with a cancelled context = %v, want context.Canceled", err)
	}
	if d.stats.errors.Load() != before {
		t.Error("a cancelled call counted as an error")
	}
}
