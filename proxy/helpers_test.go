package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/route"
)

// testServer is a proxy.Server on a free 127.0.0.1 port over memory routes:
//
//	memory   ""      the catch-all
//	postgres "pg:"   a second namespace of the same cache
//	pgx      "pg:x:" a third, to prove the longest prefix wins
type testServer struct {
	*Server
	addr    string
	router  *route.Router
	metrics *route.Metrics
	reg     *prometheus.Registry
	driver  *memory.Driver
	errc    chan error
}

// testRoutes are the routes startServer builds, by name and prefix.
var testRoutes = []struct{ name, prefix string }{
	{"memory", ""},
	{"postgres", "pg:"},
	{"pgx", "pg:x:"},
}

// startServer starts a server with cfg's non-zero fields, and the defaults
// (conf's) for the others: a test names only the limits it is about.
func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	return startServerWith(t, cfg, func(*route.Route) {})
}

// startServerWith lets the test change the routes before the table is built.
func startServerWith(t testing.TB, cfg Config, edit func(*route.Route)) *testServer {
	t.Helper()
	registerTestCommands()
	busy := backends.NewBusyThreshold(backends.DefaultBusyThreshold)
	enc := new(backends.Encodings)
	drv := memory.NewDriver("mem", 256<<20, memory.WithBusyThreshold(busy), memory.WithEncodings(enc))
	var routes []*route.Route
	for _, tr := range testRoutes {
		b, err := drv.Open(context.Background(), backends.RouteSpec{Name: tr.name})
		if err != nil {
			t.Fatalf("open route %s: %v", tr.name, err)
		}
		r := &route.Route{Name: tr.name, Prefixes: []string{tr.prefix}, BackendName: "mem", Backend: b}
		edit(r)
		routes = append(routes, r)
	}
	reg := prometheus.NewRegistry()
	m := route.NewMetrics(reg)
	tbl, err := route.NewTable(routes, m)
	if err != nil {
		t.Fatalf("route table: %v", err)
	}
	router := route.NewRouter(tbl)
	var log *zap.Logger
	if tt, ok := t.(*testing.T); ok {
		log = zaptest.NewLogger(tt, zaptest.Level(zap.WarnLevel))
	}
	srv := New(router, m, overDefaults(cfg), backends.Env{Busy: busy, Encodings: enc}, log, reg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ts := &testServer{Server: srv, addr: ln.Addr().String(), router: router, metrics: m, reg: reg, driver: drv, errc: make(chan error, 1)}
	go func() { ts.errc <- srv.Serve(ln) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// overDefaults is cfg with its zero fields at conf's defaults.
func overDefaults(cfg Config) Config {
	out := ConfigOf(conf.Default().RESP, "dev")
	set, o := reflect.ValueOf(cfg), reflect.ValueOf(&out).Elem()
	for i := range set.NumField() {
		if f := set.Field(i); !f.IsZero() {
			o.Field(i).Set(f)
		}
	}
	return out
}

// stop shuts the server down (once) and checks Serve returned nil.
func (ts *testServer) stop(t testing.TB) {
	t.Helper()
	if ts.errc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-ts.errc; err != nil {
		t.Errorf("Serve returned %v after Shutdown, want nil", err)
	}
	ts.errc = nil
	ts.driver.Close()
}

// backend returns a route's backend, to look behind the proxy.
func (ts *testServer) backend(name string) backends.Backend {
	return ts.router.Current().ByName(name).Backend
}

// rawClient speaks RESP over a plain socket and returns replies as the
// exact bytes the server sent.
type rawClient struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dial(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// encode builds a multibulk request.
func encode(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// do sends one command and returns its reply.
func (c *rawClient) do(args ...string) string {
	c.t.Helper()
	c.send(encode(args...))
	return c.reply()
}

func (c *rawClient) send(raw string) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.nc, raw); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// reply reads one whole reply.
func (c *rawClient) reply() string {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	if err := readReply(c.br, &b); err != nil {
		c.t.Fatalf("read reply (got %q so far): %v", b.String(), err)
	}
	return b.String()
}

// try sends a request and reads its reply, returning an error rather
// than failing the test: for use off the test's goroutine.
func (c *rawClient) try(raw string) (string, error) {
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.nc, raw); err != nil {
		return "", err
	}
	var b strings.Builder
	err := readReply(c.br, &b)
	return b.String(), err
}

// closed reports whether the server closes the connection: reading,
// past any replies still coming, ends in EOF or a reset rather than a
// timeout.
func (c *rawClient) closed() bool {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c.br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true
}

// readReply copies one RESP2 or RESP3 reply from br to w.
func readReply(br *bufio.Reader, w *strings.Builder) error {
	line, err := br.ReadString('\n')
	w.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("malformed line %q", line)
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		_, err := io.ReadFull(br, buf)
		w.Write(buf)
		return err
	case '*', '~', '>':
		for range max(n, 0) {
			if err := readReply(br, w); err != nil {
				return err
			}
		}
		return nil
	case '%', '|':
		for range 2 * max(n, 0) {
			if err := readReply(br, w); err != nil {
				return err
			}
		}
		if line[0] == '|' {
			return readReply(br, w)
		}
		return nil
	}
	return fmt.Errorf("unknown reply type in %q", line)
}

// serves checks that a fresh client is served: after a hostile client, the
// server must still work for everyone else.
func serves(t testing.TB, addr string) {
	t.Helper()
	c := dial(t, addr)
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING from a fresh client = %q", got)
	}
	c.do("SET", "serves:probe", "ok")
	if got := c.do("GET", "serves:probe"); got != "$2\r\nok\r\n" {
		t.Fatalf("GET from a fresh client = %q", got)
	}
	c.nc.Close()
}

// eventually polls cond, up to a bound, for what the test cannot wait on
// directly (a server goroutine noticing a closed socket).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: not within 5s", what)
}

// heapInuse is the heap in use after a full collection.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
