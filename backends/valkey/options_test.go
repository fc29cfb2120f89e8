package valkey

import (
	"context"
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
			_, err := New(context.Background(), "vk", tc.options, backends.Env{})
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
	}, backends.Env{})
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

// The slots Redis Cluster's specification gives as examples.
func TestSlot(t *testing.T) {
	for key, want := range map[string]uint16{
		"123456789":            0x31c3 & 16383, // CRC16/XMODEM's check value
		"foo":                  12182,
		"{user1000}.following": slot("user1000"),
		"foo{}{bar}":           slot("foo{}{bar}"),
	} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
}
