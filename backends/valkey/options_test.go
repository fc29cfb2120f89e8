package valkey

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

func TestOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options map[string]any
		want    string // in the error
	}{
		{"unknown", map[string]any{"bogus": 1}, "bogus"},
		{"unknown nested", map[string]any{"client_cache": map[string]any{"size": "1MiB"}}, "size"},
		{"addr", map[string]any{"addrs": []string{"localhost"}}, `addrs[0]: "localhost"`},
		{"duration", map[string]any{"command_timeout": "soon"}, `"soon" is not a duration`},
		{"duration unit", map[string]any{"dial_timeout": 5}, "with a unit"},
		{"negative", map[string]any{"command_timeout": "-1s"}, `command_timeout: "-1s" must be positive`},
		{"conns", map[string]any{"conns_per_node": 3}, "conns_per_node: 3"},
		{"conns high", map[string]any{"conns_per_node": 512}, "conns_per_node: 512"},
		{"cache ttl", map[string]any{"client_cache": map[string]any{"ttl": "-1m"}}, "client_cache.ttl"},
		{"cache size", map[string]any{"client_cache": map[string]any{"max_bytes": "lots"}}, `"lots" is not a size`},
		{"tls off", map[string]any{"tls": map[string]any{"ca_file": "/ca.pem"}}, "tls.enabled is false"},
		{"tls pair", map[string]any{"tls": map[string]any{"enabled": true, "cert_file": "/c.pem"}}, "cert_file and key_file"},
		{"tls ca", map[string]any{"tls": map[string]any{"enabled": true, "ca_file": "/nonexistent.pem"}}, "tls.ca_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(context.Background(), "vk", tc.options, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%v) = %v, want an error with %q", tc.options, err, tc.want)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	if len(o.Addrs) != 1 || o.Addrs[0] != DefaultAddr || time.Duration(o.CommandTimeout) != DefaultCommandTimeout ||
		time.Duration(o.DialTimeout) != DefaultDialTimeout || o.ClientCache != nil || o.RawKeys {
		t.Fatalf("defaults = %+v", o)
	}
	d, err := New(context.Background(), "vk", map[string]any{
		"addrs": []string{server.Addr()}, "client_cache": map[string]any{}, "conns_per_node": 1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c := d.(*Driver).cache
	if c == nil || c.ttl != DefaultClientCacheTTL || c.maxBytes != DefaultClientCacheMaxBytes {
		t.Fatalf("client_cache: {} = %+v, want the defaults", c)
	}
}

func TestPipelineMultiplex(t *testing.T) {
	for conns, want := range map[int]int{0: 0, 1: -1, 2: 1, 4: 2, 256: 8} {
		if got := pipelineMultiplex(conns); got != want {
			t.Errorf("pipelineMultiplex(%d) = %d, want %d", conns, got, want)
		}
	}
}

func TestOpen(t *testing.T) {
	ctx := ctxT(t)
	t.Run("namespace", func(t *testing.T) {
		d := newDriver(t, server, nil)
		a, b := open(t, d), open(t, d)
		mustSet(t, a, "k", "a")
		mustSet(t, b, "k", "b")
		if v, _ := mustGet(t, a, "k"); v != "a" {
			t.Fatalf("route a reads %q: routes collide", v)
		}
		if got, err := server.Do(ctx, "GET", a.route+":k"); err != nil || got != "a" {
			t.Fatalf("GET %s:k on the server = %q, %v", a.route, got, err)
		}
	})
	t.Run("raw_keys", func(t *testing.T) {
		d := newDriver(t, server, map[string]any{"raw_keys": true})
		b, err := d.Open(ctx, backends.RouteSpec{Name: "only"})
		if err != nil {
			t.Fatal(err)
		}
		mustSet(t, b, "raw-k", "v")
		if got, err := server.Do(ctx, "GET", "raw-k"); err != nil || got != "v" {
			t.Fatalf("GET raw-k on the server = %q, %v", got, err)
		}
		// The same route again (a reload) is fine; another route is not
		// until the first is gone.
		again, err := d.Open(ctx, backends.RouteSpec{Name: "only"})
		if err != nil {
			t.Fatalf("reopening the route: %v", err)
		}
		var se *backends.SpecError
		if _, err := d.Open(ctx, backends.RouteSpec{Name: "second"}); !errors.As(err, &se) {
			t.Fatalf("second route on raw_keys = %v, want a SpecError", err)
		}
		b.Close()
		b.Close() // idempotent: the claim is released once
		again.Close()
		if _, err := d.Open(ctx, backends.RouteSpec{Name: "second"}); err != nil {
			t.Fatalf("second route after the first closed: %v", err)
		}
	})
	t.Run("spec", func(t *testing.T) {
		d := newDriver(t, server, nil)
		var se *backends.SpecError
		if _, err := d.Open(ctx, backends.RouteSpec{Name: "r", Table: "t"}); !errors.As(err, &se) || se.Field != "table" {
			t.Fatalf("Open with a table = %v, want a SpecError on table", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		d := newDriver(t, server, nil)
		s := open(t, d)
		d.Close()
		if _, _, err := s.Get(ctx, "k"); !errors.Is(err, backends.ErrUnavailable) {
			t.Fatalf("Get after Close = %v, want ErrUnavailable", err)
		}
		if _, err := d.Open(ctx, backends.RouteSpec{Name: "r"}); err == nil {
			t.Fatal("Open after Close succeeded")
		}
	})
}

func TestServerErrors(t *testing.T) {
	d := newDriver(t, server, cached(nil))
	s := open(t, d)
	ctx := ctxT(t)
	if _, err := server.Do(ctx, "RPUSH", s.key("list"), "x"); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"get", "set-get", "incrby"} {
		var err error
		switch op {
		case "get":
			_, _, err = s.Get(ctx, "list")
		case "set-get":
			_, err = s.Set(ctx, "list", []byte("v"), backends.SetOptions{Get: true})
		case "incrby":
			_, err = s.IncrBy(ctx, "list", 1)
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
