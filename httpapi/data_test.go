package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
)

// TestDataEndpoints walks every endpoint and error over a real socket. Cases
// run in order against one server, and those that write use keys of their own.
func TestDataEndpoints(t *testing.T) {
	s := startData(t, Config{})
	c := newClient(t)
	mem := s.backend("mem")
	ctx := context.Background()
	for k, v := range map[string]string{"a": "1", "b": "two", "empty": "", "d1": "x", "d2": "y", "d3": "z"} {
		if _, err := mem.Set(ctx, k, []byte(v), backends.SetOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
		want                     string // the whole body
		contentType, allow       string // checked when set
	}{
		{name: "get", method: "GET", path: "/mem/get?id=a", status: 200, want: "1", contentType: "application/octet-stream"},
		{name: "get empty value", method: "GET", path: "/mem/get?id=empty", status: 200, want: ""},
		{name: "get absent", method: "GET", path: "/mem/get?id=nope", status: 404, want: "not found\n", contentType: "text/plain; charset=utf-8"},
		{name: "head", method: "HEAD", path: "/mem/get?id=b", status: 200, want: ""},
		{name: "get missing id", method: "GET", path: "/mem/get", status: 400, want: "missing id\n"},
		{name: "get empty id", method: "GET", path: "/mem/get?id=", status: 400, want: "empty id\n"},
		{name: "get bare id", method: "GET", path: "/mem/get?id", status: 400, want: "empty id\n"},
		{name: "get two ids", method: "GET", path: "/mem/get?id=a&id=b", status: 400, want: "get takes one id: use mget for several\n"},
		{name: "get unknown arg", method: "GET", path: "/mem/get?id=a&key=b", status: 400, want: "unknown parameter \"key\"\n"},
		{name: "get ttl", method: "GET", path: "/mem/get?id=a&ttl=5", status: 400, want: "unknown parameter \"ttl\": only set takes one\n"},

		{name: "unknown route", method: "GET", path: "/nope/get?id=a", status: 404, want: "unknown route \"nope\"\n"},
		{name: "unknown route wrong method", method: "PUT", path: "/nope/get?id=a", status: 404, want: "unknown route \"nope\"\n"},
		{name: "unknown action", method: "GET", path: "/mem/fetch?id=a", status: 404, want: "unknown action \"fetch\": want get, set, del or mget\n"},
		{name: "action with slash", method: "GET", path: "/mem/get/x?id=a", status: 404, want: "unknown action \"get/x\": want get, set, del or mget\n"},
		{name: "root", method: "GET", path: "/", status: 404, want: "not found: want /{route}/get, /{route}/set, /{route}/del or /{route}/mget\n"},
		{name: "route only", method: "GET", path: "/mem", status: 404, want: "not found: want /{route}/get, /{route}/set, /{route}/del or /{route}/mget\n"},
		{name: "route slash", method: "GET", path: "/mem/", status: 404, want: "not found: want /{route}/get, /{route}/set, /{route}/del or /{route}/mget\n"},
		{name: "long route name quoted short", method: "GET", path: "/" + strings.Repeat("r", 100) + "/get?id=a", status: 404, want: "unknown route \"" + strings.Repeat("r", 64) + "\"…\n"},

		{name: "get by PUT", method: "PUT", path: "/mem/get?id=a", status: 405, want: "method \"PUT\" not allowed for get: use GET, HEAD\n", allow: "GET, HEAD"},
		{name: "set by GET", method: "GET", path: "/mem/set?id=a", status: 405, want: "method \"GET\" not allowed for set: use POST, PUT\n", allow: "POST, PUT"},
		{name: "del by GET", method: "GET", path: "/mem/del?id=a", status: 405, want: "method \"GET\" not allowed for del: use DELETE, POST\n", allow: "DELETE, POST"},
		{name: "mget by POST", method: "POST", path: "/mem/mget?id=a", status: 405, want: "method \"POST\" not allowed for mget: use GET, HEAD\n", allow: "GET, HEAD"},
		{name: "set by PATCH", method: "PATCH", path: "/mem/set?id=a", status: 405, allow: "POST, PUT"},

		{name: "set by POST", method: "POST", path: "/mem/set?id=s1", body: "v1", status: 204},
		{name: "read it back", method: "GET", path: "/mem/get?id=s1", status: 200, want: "v1"},
		{name: "set by PUT", method: "PUT", path: "/mem/set?id=s1", body: "v2", status: 204},
		{name: "read the overwrite", method: "GET", path: "/mem/get?id=s1", status: 200, want: "v2"},
		{name: "set empty body", method: "POST", path: "/mem/set?id=s2", status: 204},
		{name: "read empty back", method: "GET", path: "/mem/get?id=s2", status: 200, want: ""},
		{name: "set ttl", method: "POST", path: "/mem/set?id=s3&ttl=100", body: "t", status: 204},
		{name: "set missing id", method: "POST", path: "/mem/set?ttl=1", body: "v", status: 400, want: "missing id\n"},
		{name: "set two ids", method: "POST", path: "/mem/set?id=x&id=y", body: "v", status: 400, want: "set takes one id\n"},
		{name: "set ttl 0", method: "POST", path: "/mem/set?id=x&ttl=0", body: "v", status: 400, want: "ttl must be a whole number of seconds > 0, not \"0\"\n"},
		{name: "set ttl negative", method: "POST", path: "/mem/set?id=x&ttl=-1", body: "v", status: 400, want: "ttl must be a whole number of seconds > 0, not \"-1\"\n"},
		{name: "set ttl fraction", method: "POST", path: "/mem/set?id=x&ttl=1.5", body: "v", status: 400, want: "ttl must be a whole number of seconds > 0, not \"1.5\"\n"},
		{name: "set ttl unit", method: "POST", path: "/mem/set?id=x&ttl=10s", body: "v", status: 400, want: "ttl must be a whole number of seconds > 0, not \"10s\"\n"},
		{name: "set ttl empty", method: "POST", path: "/mem/set?id=x&ttl=", body: "v", status: 400, want: "ttl must be a whole number of seconds > 0, not \"\"\n"},
		{name: "set ttl overflows", method: "POST", path: "/mem/set?id=x&ttl=9223372036854775807", body: "v", status: 400, want: "ttl must be a whole number of seconds > 0, not \"9223372036854775807\"\n"},
		{name: "set ttl twice", method: "POST", path: "/mem/set?id=x&ttl=1&ttl=2", body: "v", status: 400, want: "ttl given twice\n"},
		{name: "set mistyped ttl", method: "POST", path: "/mem/set?id=x&tll=5", body: "v", status: 400, want: "unknown parameter \"tll\"\n"},
		{name: "set gzip", method: "POST", path: "/mem/set?id=x", body: "v", header: []string{"Content-Encoding", "gzip"}, status: 415, want: "Content-Encoding \"gzip\" not supported: send the value as is\n"},
		{name: "set identity", method: "POST", path: "/mem/set?id=s4", body: "v", header: []string{"Content-Encoding", "identity"}, status: 204},
		{name: "set form body stays opaque", method: "POST", path: "/mem/set?id=s5", body: "--b\r\nnot a form", header: []string{"Content-Type", "multipart/form-data; boundary=b"}, status: 204},
		{name: "form body read back", method: "GET", path: "/mem/get?id=s5", status: 200, want: "--b\r\nnot a form"},
		{name: "refused writes stored nothing", method: "GET", path: "/mem/get?id=x", status: 404, want: "not found\n"},

		{name: "del", method: "DELETE", path: "/mem/del?id=d1", status: 200, want: "1", contentType: "text/plain; charset=utf-8"},
		{name: "del again", method: "DELETE", path: "/mem/del?id=d1", status: 200, want: "0"},
		{name: "del by POST, several", method: "POST", path: "/mem/del?id=d2&id=d3&id=nope&id=d2", status: 200, want: "2"},
		{name: "del missing id", method: "DELETE", path: "/mem/del", status: 400, want: "missing id\n"},
		{name: "del empty id", method: "DELETE", path: "/mem/del?id=a&id=", status: 400, want: "empty id\n"},

		{name: "mget", method: "GET", path: "/mem/mget?id=a&id=nope&id=b&id=a&id=empty", status: 200,
			want: `["MQ==",null,"dHdv","MQ==",""]`, contentType: "application/json"},
		{name: "mget one", method: "GET", path: "/mem/mget?id=nope", status: 200, want: `[null]`},
		{name: "mget missing id", method: "GET", path: "/mem/mget", status: 400, want: "missing id\n"},
		{name: "mget unknown arg", method: "GET", path: "/mem/mget?id=a&encoding=hex", status: 400, want: "unknown parameter \"encoding\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body *strings.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			var r response
			if body == nil {
				r = do(t, c, tc.method, s.url+tc.path, nil, tc.header...)
			} else {
				r = do(t, c, tc.method, s.url+tc.path, body, tc.header...)
			}
			if r.status != tc.status {
				t.Errorf("status %d, want %d (body %q)", r.status, tc.status, r.body)
			}
			if tc.want != "" || tc.status < 300 {
				if r.body != tc.want {
					t.Errorf("body %q, want %q", r.body, tc.want)
				}
			}
			if tc.contentType != "" {
				if got := r.header.Get("Content-Type"); got != tc.contentType {
					t.Errorf("Content-Type %q, want %q", got, tc.contentType)
				}
			}
			if tc.allow != "" {
				if got := r.header.Get("Allow"); got != tc.allow {
					t.Errorf("Allow %q, want %q", got, tc.allow)
				}
			}
		})
	}
}

// TestHeadContentLength: HEAD answers the length a GET would send.
func TestHeadContentLength(t *testing.T) {
	s := startData(t, Config{})
	if _, err := s.backend("mem").Set(context.Background(), "k", []byte("12345"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("HEAD", s.url+"/mem/get?id=k", nil)
	resp, err := newClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != 5 {
		t.Errorf("HEAD: status %d, Content-Length %d; want 200, 5", resp.StatusCode, resp.ContentLength)
	}
}

// TestBackendErrors: each backend failure maps to its status and one-line
// reason, and no failed write answers 2xx.
func TestBackendErrors(t *testing.T) {
	wrap := func(sentinel error, msg string) error { return fmt.Errorf("%s: %w", msg, sentinel) }
	s := startData(t, Config{},
		testRoute{name: "down", b: failing{err: wrap(backends.ErrUnavailable, "dial 127.0.0.1:5432")}},
		testRoute{name: "badkey", b: failing{err: wrap(backends.ErrBadKey, `"x" is not a uuid`)}},
		testRoute{name: "badvalue", b: failing{err: wrap(backends.ErrBadValue, "not a JSON object")}},
		testRoute{name: "unsupported", b: failing{err: backends.ErrUnsupported}},
		testRoute{name: "broken", b: failing{err: fmt.Errorf("ERROR: disk full\nDETAIL: no space left")}},
		testRoute{name: "liar", b: failing{stored: false}},
		testRoute{name: "small", maxValue: 4},
	)
	c := newClient(t)
	for _, tc := range []struct {
		route  string
		status int
		want   string
	}{
		{"down", 503, "backend down-backend unavailable\n"},
		{"badkey", 400, "\"x\" is not a uuid: invalid key\n"},
		{"badvalue", 400, "not a JSON object: invalid value\n"},
		{"unsupported", 501, "backend unsupported-backend: operation not supported by this backend\n"},
		{"broken", 503, "backend broken-backend: ERROR: disk full DETAIL: no space left\n"},
	} {
		for _, req := range []struct{ method, action string }{
			{"GET", "get"}, {"POST", "set"}, {"DELETE", "del"}, {"GET", "mget"},
		} {
			t.Run(tc.route+"/"+req.action, func(t *testing.T) {
				r := do(t, c, req.method, s.url+"/"+tc.route+"/"+req.action+"?id=x", strings.NewReader("v"))
				if r.status != tc.status || r.body != tc.want {
					t.Errorf("got %d %q, want %d %q", r.status, r.body, tc.status, tc.want)
				}
			})
		}
	}

	t.Run("set not stored", func(t *testing.T) {
		r := do(t, c, "POST", s.url+"/liar/set?id=x", strings.NewReader("v"))
		if r.status != 503 || r.body != "backend liar-backend did not store the value\n" {
			t.Errorf("got %d %q", r.status, r.body)
		}
	})
	t.Run("value over route limit", func(t *testing.T) {
		r := do(t, c, "POST", s.url+"/small/set?id=x", strings.NewReader("12345"))
		if r.status != 413 || r.body != "value too large: route small allows 4 bytes\n" {
			t.Errorf("got %d %q", r.status, r.body)
		}
		if r := do(t, c, "GET", s.url+"/small/get?id=x", nil); r.status != 404 {
			t.Errorf("refused value was stored: %d %q", r.status, r.body)
		}
		if r := do(t, c, "POST", s.url+"/small/set?id=x", strings.NewReader("1234")); r.status != 204 {
			t.Errorf("value at the limit: %d %q", r.status, r.body)
		}
	})
}
