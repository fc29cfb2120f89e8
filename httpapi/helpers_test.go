package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/route"
)

// testRoute is a route of a test table: a memory namespace unless b is set.
type testRoute struct {
	name     string
	b        backends.Backend
	maxValue int64
}

// newRouter builds a router over memory routes (and any given backends) with
// route metrics registered on reg.
func newRouter(t testing.TB, reg prometheus.Registerer, specs ...testRoute) *route.Router {
	t.Helper()
	drv := memory.NewDriver("mem", 64<<20)
	t.Cleanup(func() { _ = drv.Close() })
	var routes []*route.Route
	for _, s := range specs {
		b := s.b
		if b == nil {
			var err error
			if b, err = drv.Open(context.Background(), backends.RouteSpec{Name: s.name}); err != nil {
				t.Fatal(err)
			}
		}
		routes = append(routes, &route.Route{
			Name:          s.name,
			BackendName:   s.name + "-backend",
			Backend:       b,
			MaxValueBytes: s.maxValue,
		})
	}
	tbl, err := route.NewTable(routes, route.NewMetrics(reg))
	if err != nil {
		t.Fatal(err)
	}
	return route.NewRouter(tbl)
}

// dataServer is a Data serving on a free 127.0.0.1 port.
type dataServer struct {
	*Data
	router *route.Router
	reg    *prometheus.Registry
	addr   string
	url    string // http://addr
	served chan error
}

// overDefaults is cfg with its zero fields at conf's defaults: a test names
// only the limits it is about.
func overDefaults(cfg Config) Config {
	out := ConfigOf(conf.Default().HTTP)
	set, o := reflect.ValueOf(cfg), reflect.ValueOf(&out).Elem()
	for i := range set.NumField() {
		if f := set.Field(i); !f.IsZero() {
			o.Field(i).Set(f)
		}
	}
	return out
}

// startData serves a Data on a free port over routes (one memory route "mem"
// when none are given), with cfg over the defaults, and shuts it down when
// the test ends.
func startData(t testing.TB, cfg Config, specs ...testRoute) *dataServer {
	t.Helper()
	if len(specs) == 0 {
		specs = []testRoute{{name: "mem"}}
	}
	reg := prometheus.NewRegistry()
	router := newRouter(t, reg, specs...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dataServer{
		Data:   NewData(router, overDefaults(cfg), nil, reg),
		router: router,
		reg:    reg,
		addr:   ln.Addr().String(),
		served: make(chan error, 1),
	}
	s.url = "http://" + s.addr
	// fasthttp's idle-worker cleaner checks for Stop only between sleeps of
	// this length (10s by default): shorten it so that a leak check after
	// Shutdown sees it gone without waiting that long.
	s.srv.MaxIdleWorkerDuration = 50 * time.Millisecond
	go func() { s.served <- s.Serve(ln) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop shuts the server down and checks Serve's answer; it may run twice.
func (s *dataServer) stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if s.served == nil {
		return
	}
	select {
	case err := <-s.served:
		if err != nil {
			t.Errorf("Serve after Shutdown: %v, want nil", err)
		}
	case <-ctx.Done():
		t.Errorf("Serve did not return after Shutdown")
	}
	s.served = nil
}

// backend returns the backend of a route, for checking what HTTP stored.
func (s *dataServer) backend(name string) backends.Backend {
	return s.router.Current().ByName(name).Backend
}

// response is what a test reads back from a request.
type response struct {
	status int
	body   string
	header http.Header
	close  bool // the server said Connection: close (net/http drops the header)
}

// do sends one request with the standard client and reads the whole answer.
func do(t testing.TB, c *http.Client, method, url string, body io.Reader, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return response{status: resp.StatusCode, body: string(b), header: resp.Header, close: resp.Close}
}

// newClient returns an HTTP client of its own, whose idle connections are
// closed when the test ends.
func newClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// serverGoroutines lists the goroutines still running server code of this
// package, fasthttp's or net/http's.
func serverGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // the caller's own goroutine
		}
		if strings.Contains(g, "fasthttp.(*Server)") || strings.Contains(g, "fasthttp.(*workerPool)") ||
			strings.Contains(g, "net/http.(*Server)") || strings.Contains(g, "net/http.(*conn)") ||
			strings.Contains(g, "pgcache/httpapi.(*") {
			found = append(found, g)
		}
	}
	return found
}

// waitNoServerGoroutines polls, bounded, until no server goroutine is left.
func waitNoServerGoroutines(t testing.TB) {
	t.Helper()
	var left []string
	for range 200 {
		if left = serverGoroutines(); len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d server goroutines left after Shutdown:\n%s", len(left), strings.Join(left, "\n\n"))
}
