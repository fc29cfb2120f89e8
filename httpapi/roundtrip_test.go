package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// TestBytesRoundTrip: any value and any key come back byte for byte, through
// get and through mget's base64.
func TestBytesRoundTrip(t *testing.T) {
	s := startData(t, Config{})
	c := newClient(t)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	big := bytes.Repeat(all, 4096) // 1MiB
	for _, tc := range []struct {
		name, key string
		val       []byte
	}{
		{"all bytes", "all", all},
		{"empty", "empty", []byte{}},
		{"nul", "nul", []byte{0}},
		{"crlf", "crlf", []byte("a\r\n\r\nb")},
		{"invalid utf8", "bad-utf8", []byte{0xff, 0xfe, 0xc3}},
		{"1MiB", "big", big},
		{"key of odd bytes", "\x00 +&=/?#%é\xff\n", []byte("odd")},
		{"key of spaces", "  ", []byte("sp")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"id": {tc.key}}.Encode()
			if r := do(t, c, "PUT", s.url+"/mem/set?"+q, bytes.NewReader(tc.val)); r.status != 204 {
				t.Fatalf("set: %d %q", r.status, r.body)
			}
			// What HTTP stored is the route-local key, exactly.
			v, ok, err := s.backend("mem").Get(context.Background(), tc.key)
			if err != nil || !ok || !bytes.Equal(v, tc.val) {
				t.Fatalf("backend has %q %v %v for key %q", v, ok, err, tc.key)
			}
			r := do(t, c, "GET", s.url+"/mem/get?"+q, nil)
			if r.status != 200 || r.body != string(tc.val) {
				t.Errorf("get: %d, %d bytes; want 200, %d bytes", r.status, len(r.body), len(tc.val))
			}
			r = do(t, c, "GET", s.url+"/mem/mget?"+q+"&id=absent&"+q, nil)
			var got [][]byte // encoding/json decodes base64 strings into []byte
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatalf("mget: %d %q: %v", r.status, r.body, err)
			}
			if len(got) != 3 || !bytes.Equal(got[0], tc.val) || got[1] != nil || !bytes.Equal(got[2], tc.val) {
				t.Errorf("mget: %d values, want [value, null, value]", len(got))
			}
			if got[0] == nil {
				t.Errorf("mget: a present value decoded as null")
			}
		})
	}
}

// TestSetTTL: ttl=1 expires the key; a later set without ttl persists it.
func TestSetTTL(t *testing.T) {
	s := startData(t, Config{})
	c := newClient(t)
	mem := s.backend("mem")
	ctx := context.Background()

	if r := do(t, c, "POST", s.url+"/mem/set?id=k&ttl=1", strings.NewReader("v")); r.status != 204 {
		t.Fatalf("set: %d %q", r.status, r.body)
	}
	if d, err := mem.TTL(ctx, "k"); err != nil || d <= 0 || d > time.Second {
		t.Fatalf("TTL after ttl=1: %v %v, want (0, 1s]", d, err)
	}
	gone := false
	for range 300 { // bounded: 300 × 10ms, well past the second
		if r := do(t, c, "GET", s.url+"/mem/get?id=k", nil); r.status == 404 {
			gone = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !gone {
		t.Fatal("key with ttl=1 never expired")
	}

	do(t, c, "POST", s.url+"/mem/set?id=p&ttl=100", strings.NewReader("v"))
	if d, _ := mem.TTL(ctx, "p"); d <= 99*time.Second || d > 100*time.Second {
		t.Errorf("TTL after ttl=100: %v", d)
	}
	do(t, c, "POST", s.url+"/mem/set?id=p", strings.NewReader("v"))
	if d, _ := mem.TTL(ctx, "p"); d != backends.TTLPersistent {
		t.Errorf("TTL after a set without ttl: %v, want persistent", d)
	}
}

// TestBodyLimit: a body over MaxBodyBytes is refused with 413, whether its
// length is announced or chunked, and the server goes on serving.
func TestBodyLimit(t *testing.T) {
	const limit = 1024
	s := startData(t, Config{MaxBodyBytes: limit})
	c := newClient(t)
	at := strings.Repeat("v", limit)
	over := at + "v"

	if r := do(t, c, "POST", s.url+"/mem/set?id=k", strings.NewReader(at)); r.status != 204 {
		t.Errorf("body at the limit: %d %q", r.status, r.body)
	}
	if r := do(t, c, "POST", s.url+"/mem/set?id=k", strings.NewReader(over)); r.status != 413 ||
		r.body != "request body too large: limit 1024 bytes\n" {
		t.Errorf("body over the limit: %d %q", r.status, r.body)
	}
	// A reader of unknown length makes net/http send the body chunked.
	chunked := struct{ *strings.Reader }{strings.NewReader(over)}
	if r := do(t, c, "POST", s.url+"/mem/set?id=k", chunked); r.status != 413 {
		t.Errorf("chunked body over the limit: %d %q", r.status, r.body)
	}
	if r := do(t, c, "GET", s.url+"/mem/get?id=k", nil); r.status != 200 || r.body != at {
		t.Errorf("after refusals: %d, %d bytes; want the value at the limit", r.status, len(r.body))
	}
}
