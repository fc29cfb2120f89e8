package valkey

import (
	"errors"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/certs/certstest"
	"github.com/pgcache/pgcache/internal/testenv"
)

// A route on a server that speaks only TLS (and asks for, but does not
// require, a client certificate): with the CA, and with a client
// certificate too, writes and reads work; over plain TCP, or without
// trusting the CA, the route answers unavailable.
func TestTLS(t *testing.T) {
	files := certstest.Generate(t, t.TempDir())
	srv, err := testenv.StartRedisTLS(testenv.RedisTLS{Cert: files.ServerCert, Key: files.ServerKey, CA: files.CA})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []struct {
		name  string
		tls   map[string]any
		works bool
	}{
		{"server verified", map[string]any{"enabled": true, "ca_file": files.CA}, true},
		{"client certificate", map[string]any{"enabled": true, "ca_file": files.CA,
			"cert_file": files.ClientCert, "key_file": files.ClientKey}, true},
		{"plain TCP", nil, false},
		{"CA not trusted", map[string]any{"enabled": true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := map[string]any{"dial_timeout": "1s", "command_timeout": "2s"}
			if tc.tls != nil {
				opts["tls"] = tc.tls
			}
			s := open(t, newDriver(t, srv, opts))
			_, err := s.Set(ctxT(t), "k", []byte("over tls"), backends.SetOptions{})
			if !tc.works {
				if !errors.Is(err, backends.ErrUnavailable) {
					t.Fatalf("SET = %v, want ErrUnavailable", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("SET over TLS: %v", err)
			}
			if v, ok := mustGet(t, s, "k"); !ok || v != "over tls" {
				t.Fatalf("GET over TLS = %q, %v", v, ok)
			}
			// The value is on the server, under the route's namespace.
			if keys, err := srv.Do(ctxT(t), "KEYS", "*:k"); err != nil || keys == "" {
				t.Fatalf("KEYS on the server = %q, %v", keys, err)
			}
		})
	}
}
