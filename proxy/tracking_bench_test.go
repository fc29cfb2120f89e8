package proxy

import (
	"net"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/testenv"
)

// BenchmarkDispatchTracking runs the reads of tracking clients out of the
// read buffer, as BenchmarkDispatch does the plain ones: a RESP3 client in
// default mode (each GET registers its key, which stays registered), and
// valkey-go with its default options (OPTIN: a plain GET, and DoCache's
// CLIENT CACHING YES, MULTI, PTTL, GET, EXEC).
func BenchmarkDispatchTracking(b *testing.B) {
	ts := startServer(b, Config{})
	val := strings.Repeat("v", 64)
	bulk := "$64\r\n" + val + "\r\n"
	for _, tc := range []struct {
		name       string
		mode       []string
		req, reply string
	}{
		{"default-GET", nil, encode("GET", "bench:key"), bulk},
		{"optin-GET", []string{"optin"}, encode("GET", "bench:key"), bulk},
		{"optin-CACHING-GET", []string{"optin"}, encode("CLIENT", "CACHING", "yes") + encode("GET", "bench:key"), "+OK\r\n" + bulk},
		{"optin-DoCache", []string{"optin"}, encode("CLIENT", "CACHING", "yes") + encode("MULTI") + encode("PTTL", "bench:key") +
			encode("GET", "bench:key") + encode("EXEC"), "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:-1\r\n" + bulk},
	} {
		b.Run(tc.name, func(b *testing.B) {
			nc, peer := net.Pipe()
			defer nc.Close()
			defer peer.Close()
			c := newConn(ts.Server, nc, 1)
			c.init()
			defer c.endTracking()
			run := func(req []byte) {
				c.rd.r, c.rd.w = 0, copy(c.rd.buf, req)
				c.batch()
			}
			run([]byte(encode("HELLO", "3") + encode(append([]string{"CLIENT", "TRACKING", "on"}, tc.mode...)...)))
			if !strings.HasSuffix(string(c.out), "+OK\r\n") {
				b.Fatalf("CLIENT TRACKING on %v: %q", tc.mode, c.out)
			}
			c.out = c.out[:0]
			ts.backend("memory").Set(b.Context(), "bench:key", []byte(val), backends.SetOptions{})
			req := []byte(tc.req)
			run(req)
			if got := string(c.out); got != tc.reply {
				b.Fatalf("reply %q, want %q", got, tc.reply)
			}
			b.ReportAllocs()
			b.ResetTimer()
			stop := testenv.CPUPerOp(b)
			for range b.N {
				c.out = c.out[:0]
				run(req)
			}
			b.StopTimer()
			stop()
			if string(c.out) != tc.reply {
				b.Fatalf("reply %q", c.out)
			}
		})
	}
}
