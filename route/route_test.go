package route

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/backends/memory"
)

func table(t *testing.T, prefixes map[string][]string) *Table {
	t.Helper()
	d := memory.NewDriver("mem", 1<<20)
	t.Cleanup(func() { d.Close() })
	var routes []*Route
	for name, ps := range prefixes {
		b, err := d.Open(context.Background(), backends.RouteSpec{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, &Route{Name: name, Prefixes: ps, BackendName: "mem", Backend: b})
	}
	tab, err := NewTable(routes, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestLongestPrefix(t *testing.T) {
	tab := table(t, map[string][]string{
		"all":      {""},
		"pg":       {"pg:"},
		"sessions": {"pg:session:"},
		"http":     nil,
	})
	for _, tc := range []struct{ key, route, stripped string }{
		{"a", "all", "a"},
		{"pg:42", "pg", "42"},
		{"pg:session:7", "sessions", "7"},
		{"pg:sess", "pg", "sess"},
		{"", "all", ""},
	} {
		r, k := tab.ForKey(tc.key)
		if r == nil || r.Name != tc.route || k != tc.stripped {
			t.Errorf("ForKey(%q) = %v, %q; want %s, %q", tc.key, r, k, tc.route, tc.stripped)
		}
	}
	if tab.ByName("http") == nil || tab.ByName("nope") != nil {
		t.Errorf("ByName")
	}
	noCatchAll := table(t, map[string][]string{"pg": {"pg:"}})
	if r, _ := noCatchAll.ForKey("x"); r != nil {
		t.Errorf("ForKey without a catch-all = %v, want nil", r.Name)
	}
}

func TestDuplicates(t *testing.T) {
	d := memory.NewDriver("mem", 1<<20)
	defer d.Close()
	b, _ := d.Open(context.Background(), backends.RouteSpec{Name: "a"})
	if _, err := NewTable([]*Route{{Name: "a", Prefixes: []string{"x"}, Backend: b}, {Name: "b", Prefixes: []string{"x"}, Backend: b}}, nil); err == nil {
		t.Errorf("duplicate prefix accepted")
	}
	if _, err := NewTable([]*Route{{Name: "a", Backend: b}, {Name: "a", Backend: b}}, nil); err == nil {
		t.Errorf("duplicate name accepted")
	}
}

func TestValueLimit(t *testing.T) {
	d := memory.NewDriver("mem", 1<<20)
	defer d.Close()
	b, _ := d.Open(context.Background(), backends.RouteSpec{Name: "a"})
	tab, err := NewTable([]*Route{{Name: "a", Prefixes: []string{""}, Backend: b, MaxValueBytes: 4}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := tab.ForKey("k")
	ctx := context.Background()
	if _, err := r.Backend.Set(ctx, "k", []byte("12345"), backends.SetOptions{}); err != backends.ErrValueTooLarge {
		t.Fatalf("Set over the limit: %v", err)
	}
	if _, ok, _ := r.Backend.Get(ctx, "k"); ok {
		t.Fatalf("a refused value was stored")
	}
	if _, err := r.Backend.Set(ctx, "k", []byte("1234"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Swap waits for the requests on the old table before handing it back.
func TestSwapWaitsForInflight(t *testing.T) {
	old := table(t, map[string][]string{"a": {""}})
	next := table(t, map[string][]string{"b": {""}})
	r := NewRouter(old)
	held, release := r.Acquire()
	if held != old {
		t.Fatal("Acquire did not return the current table")
	}
	swapped := make(chan *Table)
	go func() {
		got, err := r.Swap(context.Background(), next)
		if err != nil {
			t.Error(err)
		}
		swapped <- got
	}()
	// New requests see the new table while the old one drains.
	for range 1000 {
		if r.Current() == next {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cur, rel2 := r.Acquire()
	if cur != next {
		t.Fatalf("Acquire after Swap returned the old table")
	}
	rel2()
	select {
	case <-swapped:
		t.Fatal("Swap returned while a request still held the old table")
	default:
	}
	release()
	if got := <-swapped; got != old {
		t.Fatalf("Swap returned %p, want the old table", got)
	}
}

func TestSwapTimeout(t *testing.T) {
	r := NewRouter(table(t, map[string][]string{"a": {""}}))
	_, release := r.Acquire()
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := r.Swap(ctx, table(t, map[string][]string{"b": {""}})); err == nil {
		t.Fatal("Swap did not time out while the old table was held")
	}
}

func TestAcquireConcurrentWithSwap(t *testing.T) {
	r := NewRouter(table(t, map[string][]string{"a": {""}}))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, release := r.Acquire()
				release()
			}
		})
	}
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := r.Swap(ctx, table(t, map[string][]string{"a": {""}})); err != nil {
			t.Error(err)
		}
		cancel()
	}
	close(stop)
	wg.Wait()
}

// A CRUD: key is the table route's it names or no route's: never the
// catch-all's, nor a shorter prefix's. A route that claims a CRUD: prefix
// of its own takes it.
func TestCRUDKeysBelongToTheirTable(t *testing.T) {
	tab := table(t, map[string][]string{
		"all":   {""},
		"c":     {"C"},
		"users": {"user:", "CRUD:app.public.users:"},
	})
	for _, tc := range []struct{ key, route, stripped string }{
		{"CRUD:app.public.users:42", "users", "42"},
		{"CRUD:app.public.other:42", "", ""},
		{"CRUD:other.public.users:42", "", ""},
		{"CRUD:", "", ""},
		{"CRU", "c", "RU"},
		{"crud:app.public.other:1", "all", "crud:app.public.other:1"},
	} {
		r, k := tab.ForKey(tc.key)
		switch {
		case tc.route == "" && r != nil:
			t.Errorf("ForKey(%q) = %s, %q; want no route", tc.key, r.Name, k)
		case tc.route != "" && (r == nil || r.Name != tc.route || k != tc.stripped):
			t.Errorf("ForKey(%q) = %v, %q; want %s, %q", tc.key, r, k, tc.route, tc.stripped)
		}
	}
	// By name (HTTP): the catch-all refuses a CRUD: key; a prefixed route
	// stores it under its prefix, which is no CRUD: key over RESP.
	if _, err := tab.ByName("all").Key("CRUD:app.public.other:42"); err != ErrCRUDKey {
		t.Errorf("catch-all Key(CRUD:…) = %v, want ErrCRUDKey", err)
	}
	if k, err := tab.ByName("c").Key("CRUD:x"); err != nil || k != "CRUD:x" {
		t.Errorf("prefixed route Key(CRUD:x) = %q, %v", k, err)
	}
}

// Canon rewrites the key a route's backend sees, by prefix and by name.
func TestCanon(t *testing.T) {
	tab := table(t, map[string][]string{"rows": {"r:"}})
	r := tab.ByName("rows")
	r.Canon = func(k string) string { return strings.Trim(k, `[]"`) }
	if got, k := tab.ForKey(`r:[42]`); got != r || k != "42" {
		t.Errorf("ForKey(r:[42]) = %v, %q; want rows, 42", got, k)
	}
	if k, err := r.Key(`"42"`); err != nil || k != "42" {
		t.Errorf(`Key("42") = %q, %v; want 42`, k, err)
	}
}

// TestDoSeqCountsEachCommand: a pipelined run through the wrapper counts
// each command under its own name and result, as Do would, and times each
// stretch of one command once.
func TestDoSeqCountsEachCommand(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	d := memory.NewDriver("mem", 1<<20)
	t.Cleanup(func() { d.Close() })
	b, err := d.Open(context.Background(), backends.RouteSpec{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := NewTable([]*Route{{Name: "r", BackendName: "mem", Backend: b}}, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.Close() })
	var ops []backends.Op
	for _, line := range []string{"LPUSH k a", "LPUSH k b", "RPOP k", "HGET k f", "LPUSH k c"} {
		args := coll.Args(line)
		ops = append(ops, parseColl(t, args))
	}
	errs := make([]error, len(ops))
	if err := tab.ByName("r").Backend.(backends.Sequencer).DoSeq(context.Background(), "k", ops, errs); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[3], backends.ErrWrongType) || errs[0] != nil || errs[4] != nil {
		t.Fatalf("errs = %v, want WRONGTYPE for HGET alone", errs)
	}
	for _, c := range []struct {
		op   string
		want float64
	}{{"lpush", 3}, {"rpop", 1}, {"hget", 1}} { // WRONGTYPE is the client's: ok
		var got dto.Metric
		if err := m.requests.WithLabelValues("r", c.op, "ok").Write(&got); err != nil {
			t.Fatal(err)
		}
		if got.GetCounter().GetValue() != c.want {
			t.Errorf("requests{op=%s,result=ok} = %v, want %v", c.op, got.GetCounter().GetValue(), c.want)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	timed := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "pgcache_route_request_duration_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "op" {
					timed[l.GetValue()] = s.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	if timed["lpush"] != 2 || timed["rpop"] != 1 || timed["hget"] != 1 { // LPUSH LPUSH, then LPUSH
		t.Errorf("latency observations by op: %v, want lpush 2, rpop 1, hget 1", timed)
	}
}

// parseColl parses a request of coll.Commands.
func parseColl(t *testing.T, args [][]byte) coll.Command {
	t.Helper()
	for _, c := range coll.Commands {
		if strings.EqualFold(c.Name, string(args[0])) {
			op, err := c.Parse(args)
			if err != nil {
				t.Fatal(err)
			}
			return op
		}
	}
	t.Fatalf("no command %q", args[0])
	return nil
}
