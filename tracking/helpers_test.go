package tracking

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
	"github.com/pgcache/pgcache/changes"
	"github.com/pgcache/pgcache/route"
)

// rig is a tracker over a router of memory routes, as the RESP front has
// one: "memory" (the catch-all), "postgres" (pg:) and "pgx" (pg:x:).
type rig struct {
	t       *testing.T
	router  *route.Router
	tracker *Tracker
	reg     *prometheus.Registry
	nextID  int64
}

// rigRoutes are the routes newRig builds, by name and prefix.
var rigRoutes = []struct{ name, prefix string }{
	{"memory", ""},
	{"postgres", "pg:"},
	{"pgx", "pg:x:"},
}

// newRig builds the routes, lets edit change each before the table is
// built, and starts a tracker of their changes.
func newRig(t *testing.T, edit func(*route.Route)) *rig {
	t.Helper()
	drv := memory.NewDriver("mem", 64<<20)
	t.Cleanup(func() { drv.Close() })
	var routes []*route.Route
	for _, rr := range rigRoutes {
		b, err := drv.Open(context.Background(), backends.RouteSpec{Name: rr.name})
		if err != nil {
			t.Fatalf("open route %s: %v", rr.name, err)
		}
		r := &route.Route{Name: rr.name, Prefixes: []string{rr.prefix}, BackendName: "mem", Backend: b}
		if edit != nil {
			edit(r)
		}
		routes = append(routes, r)
	}
	tbl, err := route.NewTable(routes, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{t: t, router: route.NewRouter(tbl), reg: prometheus.NewRegistry()}
	g.tracker = New(changes.New(g.router))
	g.reg.MustRegister(g.tracker.Collectors()...)
	return g
}

// client is a tracking client: its tracking and the pushes it was sent,
// each the keys of one invalidation (nil: drop everything).
type client struct {
	*Client
	id int64

	mu     sync.Mutex
	pushes [][]string
	onPush func(keys []string) // instead of keeping them, when set
}

func (c *client) ID() int64 { return c.id }

func (c *client) PushKeys(keys []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.onPush != nil {
		c.onPush(keys)
		return true
	}
	c.pushes = append(c.pushes, slices.Clone(keys))
	return true
}

func (c *client) PushAll() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushes = append(c.pushes, nil)
	return true
}

var _ Conn = (*client)(nil)

// on returns a client with tracking on with o.
func (g *rig) on(o Options) *client {
	g.nextID++
	c := &client{id: g.nextID}
	c.Client = g.tracker.On(c, o)
	return c
}

// read is a GET of each key by c, as the RESP front's dispatcher runs it:
// Read, the reads, Served. It returns the values ("" for none).
func (g *rig) read(c *client, keys ...string) []string {
	g.t.Helper()
	tbl, release := g.router.Acquire()
	defer release()
	bs := make([][]byte, len(keys))
	for i, k := range keys {
		bs[i] = []byte(k)
	}
	g.tracker.Read(c.Client, tbl, bs, false)
	vals := make([]string, len(keys))
	for i, k := range keys {
		r, stored := tbl.ForKey(k)
		v, _, err := r.Backend.Get(context.Background(), stored)
		if err != nil {
			g.t.Fatalf("GET %s: %v", k, err)
		}
		vals[i] = string(v)
	}
	g.tracker.Served(c.Client)
	return vals
}

// write sets pairs of keys and values through their routes, one write
// each, as one batch of the client with id writer (0: none): EndBatch
// follows.
func (g *rig) write(writer int64, kv ...string) {
	g.t.Helper()
	tbl, release := g.router.Acquire()
	defer release()
	ctx := context.Background()
	if writer != 0 {
		ctx = changes.WithWriter(ctx, writer)
	}
	for i := 0; i < len(kv); i += 2 {
		r, stored := tbl.ForKey(kv[i])
		if _, err := r.Backend.Set(ctx, stored, []byte(kv[i+1]), backends.SetOptions{}); err != nil {
			g.t.Fatalf("SET %s: %v", kv[i], err)
		}
	}
	g.tracker.EndBatch()
}

// next takes c's first push, or fails.
func (c *client) next(t *testing.T, when string) []string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pushes) == 0 {
		t.Fatalf("%s: no push", when)
	}
	p := c.pushes[0]
	c.pushes = c.pushes[1:]
	return p
}

// want takes c's first push and checks it is an invalidation of keys
// (none: drop everything).
func (c *client) want(t *testing.T, when string, keys ...string) {
	t.Helper()
	got := c.next(t, when)
	if len(keys) == 0 {
		if got != nil {
			t.Fatalf("%s: got %q, want drop everything", when, got)
		}
		return
	}
	if got == nil || !slices.Equal(got, keys) {
		t.Fatalf("%s: got %s, want %q", when, show(got), keys)
	}
}

// quiet checks c has no push left.
func (c *client) quiet(t *testing.T, when string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pushes) > 0 {
		t.Fatalf("%s: pushes %v, want none", when, c.pushes)
	}
}

func show(keys []string) string {
	if keys == nil {
		return "drop everything"
	}
	return "[" + strings.Join(keys, " ") + "]"
}

// metric returns the value of a counter, gauge or histogram's count named
// name with label source=src ("" for none).
func (g *rig) metric(name, src string) float64 {
	g.t.Helper()
	mfs, err := g.reg.Gather()
	if err != nil {
		g.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if src != "" && labelOf(m, "source") != src {
				continue
			}
			return m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	g.t.Fatalf("metric %s{source=%q} not registered", name, src)
	return 0
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
