package httpapi

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// adminServer is an Admin serving on a free 127.0.0.1 port.
type adminServer struct {
	*Admin
	url    string
	served chan error
}

func startAdmin(t testing.TB, opts AdminOptions) *adminServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &adminServer{Admin: NewAdmin(opts, nil), url: "http://" + ln.Addr().String(), served: make(chan error, 1)}
	go func() { a.served <- a.Serve(ln) }()
	t.Cleanup(func() { a.stop(t) })
	return a
}

func (a *adminServer) stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Errorf("admin Shutdown: %v", err)
	}
	if a.served == nil {
		return
	}
	if err := <-a.served; err != nil {
		t.Errorf("admin Serve after Shutdown: %v, want nil", err)
	}
	a.served = nil
}

func TestAdmin(t *testing.T) {
	data := startData(t, Config{})
	var ready atomic.Pointer[[]string]
	ready.Store(&[]string{})
	var loaded atomic.Pointer[string]
	a := startAdmin(t, AdminOptions{
		Gatherer: data.reg,
		Ready:    func(context.Context) []string { return *ready.Load() },
		Config: func() ([]byte, error) {
			return []byte(`{"routes":[{"name":"mem"}],"dsn":"postgres://app:***@db/app"}`), nil
		},
		Load: func(_ context.Context, body []byte) error {
			if !strings.HasPrefix(string(body), "routes:") {
				return errors.New("routes[0].backend: \"pgx\" is not a configured backend")
			}
			s := string(body)
			loaded.Store(&s)
			return nil
		},
	})
	bare := startAdmin(t, AdminOptions{}) // every func nil
	broken := startAdmin(t, AdminOptions{Config: func() ([]byte, error) { return nil, errors.New("render: boom") }})
	c := newClient(t)

	// Some data traffic, with a key that must never show up in metrics.
	const secret = "key-that-must-not-be-a-label"
	do(t, c, "POST", data.url+"/mem/set?id="+secret, strings.NewReader("v"))
	do(t, c, "GET", data.url+"/mem/get?id="+secret, nil)
	do(t, c, "GET", data.url+"/nope/get?id="+secret, nil)

	for _, tc := range []struct {
		name, method, url, body string
		before                  func()
		status                  int
		want                    []string // substrings of the body
		not                     []string // must not be in the body
		header                  [2]string
	}{
		{name: "healthz", method: "GET", url: a.url + "/healthz", status: 200, want: []string{"ok\n"}},
		{name: "healthz bare", method: "GET", url: bare.url + "/healthz", status: 200, want: []string{"ok\n"}},
		{name: "readyz ready", method: "GET", url: a.url + "/readyz", status: 200, want: []string{"ok\n"}},
		{name: "readyz without func", method: "GET", url: bare.url + "/readyz", status: 200, want: []string{"ok\n"}},
		{
			name: "readyz down", method: "GET", url: a.url + "/readyz",
			before: func() {
				ready.Store(&[]string{"backend pg: dial 127.0.0.1:5432: connection refused", "backend vk:\nunavailable"})
			},
			status: 503, want: []string{"backend pg: dial 127.0.0.1:5432: connection refused\nbackend vk: unavailable\n"},
		},
		{
			name: "metrics", method: "GET", url: a.url + "/metrics", status: 200,
			want: []string{
				`pgcache_route_requests_total{op="get",result="ok",route="mem"} 1`,
				`pgcache_route_requests_total{op="set",result="ok",route="mem"} 1`,
				`pgcache_route_lookups_total{result="hit",route="mem"} 1`,
				`pgcache_http_requests_total{action="get",code="2xx"} 1`,
				`pgcache_http_requests_total{action="get",code="4xx"} 1`,
				`pgcache_http_requests_total{action="set",code="2xx"} 1`,
			},
			not:    []string{secret, `"nope"`},
			header: [2]string{"Content-Type", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"},
		},
		{name: "metrics without gatherer", method: "GET", url: bare.url + "/metrics", status: 501, want: []string{"metrics is not available\n"}},
		{
			name: "config", method: "GET", url: a.url + "/config", status: 200,
			want:   []string{`{"routes":[{"name":"mem"}],"dsn":"postgres://app:***@db/app"}`},
			header: [2]string{"Content-Type", "application/json"},
		},
		{name: "config failing", method: "GET", url: broken.url + "/config", status: 500, want: []string{"config: render: boom\n"}},
		{name: "config without func", method: "GET", url: bare.url + "/config", status: 501, want: []string{"config is not available\n"}},
		{name: "load", method: "POST", url: a.url + "/load", body: "routes: []", status: 200, want: []string{"ok\n"}},
		{name: "load refused", method: "POST", url: a.url + "/load", body: "nonsense", status: 400, want: []string{"routes[0].backend: \"pgx\" is not a configured backend\n"}},
		{name: "load too large", method: "POST", url: a.url + "/load", body: "routes: " + strings.Repeat("x", maxLoadBytes), status: 413},
		{name: "load without func", method: "POST", url: bare.url + "/load", body: "routes: []", status: 501, want: []string{"load is not implemented yet\n"}},
		{name: "load by GET", method: "GET", url: a.url + "/load", status: 405, header: [2]string{"Allow", "POST"}},
		{name: "healthz by POST", method: "POST", url: a.url + "/healthz", status: 405, header: [2]string{"Allow", "GET, HEAD"}},
		{name: "debug l1 without func", method: "GET", url: bare.url + "/debug/l1", status: 501, want: []string{"l1 listing is not available\n"}},
		{name: "pprof index", method: "GET", url: a.url + "/debug/pprof/", status: 200, want: []string{"goroutine", "heap"}},
		{name: "pprof goroutine", method: "GET", url: a.url + "/debug/pprof/goroutine?debug=1", status: 200, want: []string{"goroutine profile:"}},
		{name: "pprof cmdline", method: "GET", url: a.url + "/debug/pprof/cmdline", status: 200},
		{name: "unknown path", method: "GET", url: a.url + "/nope", status: 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			var r response
			if tc.body != "" {
				r = do(t, c, tc.method, tc.url, strings.NewReader(tc.body))
			} else {
				r = do(t, c, tc.method, tc.url, nil)
			}
			if r.status != tc.status {
				t.Errorf("status %d, want %d (body %.200q)", r.status, tc.status, r.body)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.body, w) {
					t.Errorf("body lacks %q:\n%.2000s", w, r.body)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(r.body, n) {
					t.Errorf("body has %q", n)
				}
			}
			if tc.header[0] != "" {
				if got := r.header.Get(tc.header[0]); got != tc.header[1] {
					t.Errorf("%s %q, want %q", tc.header[0], got, tc.header[1])
				}
			}
		})
	}
	if got := loaded.Load(); got == nil || *got != "routes: []" {
		t.Errorf("Load got %v, want the posted body", got)
	}
}
