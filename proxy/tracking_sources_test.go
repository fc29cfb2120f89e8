package proxy

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// notifyingBackend is a memory store that is a backends.Notifier of what
// the test reports, as an L1 tier is of PostgreSQL's fences. It hides the
// store's own capabilities (it does not Unwrap), so the tracker sees only
// this Notifier. paused, when set, holds a read after it began (after the
// reader registered its keys) until the test releases it.
type notifyingBackend struct {
	backends.Backend
	watching atomic.Bool

	mu     sync.Mutex
	fns    map[int]func(backends.Outside)
	nextFn int
	paused chan chan struct{} // a read sends a channel, and waits until it is closed
}

func newNotifying(b backends.Backend) *notifyingBackend {
	n := &notifyingBackend{Backend: b, fns: map[int]func(backends.Outside){}}
	n.watching.Store(true)
	return n
}

func (n *notifyingBackend) Notify(fn func(backends.Outside)) (cancel func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := n.nextFn
	n.nextFn++
	n.fns[id] = fn
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.fns, id)
	}
}

func (n *notifyingBackend) Watching() bool { return n.watching.Load() }

// report sends o as the backend's goroutine would: Watching turns false
// before a Lost report, and true again after the test calls back.
func (n *notifyingBackend) report(o backends.Outside) {
	if o.Lost {
		n.watching.Store(false)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, fn := range n.fns {
		fn(o)
	}
}

func (n *notifyingBackend) subscribers() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.fns)
}

func (n *notifyingBackend) pause() {
	n.mu.Lock()
	p := n.paused
	n.mu.Unlock()
	if p != nil {
		release := make(chan struct{})
		p <- release
		<-release
	}
}

func (n *notifyingBackend) Get(ctx context.Context, key string) ([]byte, bool, error) {
	n.pause()
	return n.Backend.Get(ctx, key)
}

func (n *notifyingBackend) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	n.pause()
	return n.Backend.MGet(ctx, keys, dst)
}

// MGetWithTTL makes the backend an ExpiryReader, as an L1 tier is: a
// read-only EXEC reads its keys with it, before its requests run.
func (n *notifyingBackend) MGetWithTTL(ctx context.Context, keys []string, dst []backends.Expiring) ([]backends.Expiring, error) {
	n.pause()
	for _, k := range keys {
		v, ok, err := n.Backend.Get(ctx, k)
		if err != nil {
			return dst, err
		}
		ttl, err := n.Backend.TTL(ctx, k)
		if err != nil {
			return dst, err
		}
		if !ok {
			v = nil
		}
		dst = append(dst, backends.Expiring{Val: v, TTL: ttl})
	}
	return dst, nil
}

func (n *notifyingBackend) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	got, err := n.MGetWithTTL(ctx, []string{key}, nil)
	if err != nil {
		return nil, 0, false, err
	}
	return got[0].Val, got[0].TTL, got[0].Val != nil, nil
}

func (n *notifyingBackend) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	return n.Backend.(backends.Atomic).Atomically(ctx, keys, fn)
}

var _ backends.Notifier = (*notifyingBackend)(nil)

// startNotifying starts a server whose "postgres" route (pg:) stores in a
// notifyingBackend.
func startNotifying(t *testing.T) (*testServer, *notifyingBackend) {
	t.Helper()
	var nb *notifyingBackend
	ts := startServerWith(t, Config{}, func(r *route.Route) {
		if r.Name == "postgres" {
			nb = newNotifying(r.Backend)
			r.Backend = nb
		}
	})
	return ts, nb
}

// tracker3 is a RESP3 connection with CLIENT TRACKING on with opts.
func tracker3(t *testing.T, addr string, opts ...string) *rawClient {
	t.Helper()
	c := dial(t, addr)
	c.do("HELLO", "3")
	if got := c.do(append([]string{"CLIENT", "TRACKING", "on"}, opts...)...); got != "+OK\r\n" {
		t.Fatalf("CLIENT TRACKING on %v: %q", opts, got)
	}
	return c
}

// pushOf is the RESP3 invalidation of keys (none: the null of "drop
// everything").
func pushOf(keys ...string) string {
	if len(keys) == 0 {
		return ">2\r\n$10\r\ninvalidate\r\n_\r\n"
	}
	s := ">2\r\n$10\r\ninvalidate\r\n*" + strconv.Itoa(len(keys)) + "\r\n"
	for _, k := range keys {
		s += "$" + strconv.Itoa(len(k)) + "\r\n" + k + "\r\n"
	}
	return s
}

// quiet checks that c has nothing pending: a PING's reply comes first.
func quiet(t *testing.T, c *rawClient, when string) {
	t.Helper()
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("%s: got %q, want only PONG", when, got)
	}
}

// metric returns the value of a counter, gauge or histogram's count
// named name with label source=src ("" for none).
func metric(t *testing.T, ts *testServer, name, src string) float64 {
	t.Helper()
	mfs, err := ts.reg.Gather()
	if err != nil {
		t.Fatal(err)
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
	t.Fatalf("metric %s{source=%q} not registered", name, src)
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

// TestTrackingNotifierReports: what a route's backend reports reaches the
// tracking clients. Keys come back with the route's prefix; All drops
// every key the route served, and only those, and tells BCAST clients
// whose prefixes reach the route to drop everything; Lost tells every
// client that read through the route to drop everything, and while the
// backend is not Watching its keys are bounced after each read.
func TestTrackingNotifierReports(t *testing.T) {
	ts, nb := startNotifying(t)
	a := tracker3(t, ts.addr)
	bc := tracker3(t, ts.addr, "BCAST", "PREFIX", "pg:a")
	far := tracker3(t, ts.addr, "BCAST", "PREFIX", "zz")
	other := tracker3(t, ts.addr) // reads the memory route only
	for _, k := range []string{"pg:a", "pg:b", "pg:x:1", "mem"} {
		a.do("GET", k)
	}
	other.do("GET", "mem")

	commit := time.Now().Add(-20 * time.Millisecond)
	nb.report(backends.Outside{Keys: []string{"a", "c"}, Source: "postgres", At: commit})
	if got, want := readPush(t, a), pushOf("pg:a"); got != want {
		t.Fatalf("Keys: got %q, want %q", got, want)
	}
	quiet(t, a, "after Keys")
	if got, want := readPush(t, bc), pushOf("pg:a"); got != want {
		t.Fatalf("Keys, BCAST: got %q, want %q", got, want)
	}
	if got := metric(t, ts, "pgcache_tracking_commit_to_push_seconds", ""); got != 1 {
		t.Errorf("commit-to-push observations: %v, want 1", got)
	}

	// pg:x:1 is the pgx route's (the longer prefix), mem the memory
	// route's: an All of the postgres route drops pg:b alone.
	nb.report(backends.Outside{All: true, Source: "postgres"})
	if got, want := readPush(t, a), pushOf("pg:b"); got != want {
		t.Fatalf("All: got %q, want %q", got, want)
	}
	quiet(t, a, "after All")
	if got, want := readPush(t, bc), pushOf(); got != want {
		t.Fatalf("All, BCAST: got %q, want %q", got, want)
	}
	quiet(t, far, "a BCAST prefix the route's keys never match")
	quiet(t, other, "a client that read other routes only")

	a.do("GET", "pg:c")
	nb.report(backends.Outside{Lost: true, All: true, Source: "postgres"})
	if got, want := readPush(t, a), pushOf(); got != want {
		t.Fatalf("Lost: got %q, want %q", got, want)
	}
	quiet(t, a, "after Lost")
	if got, want := readPush(t, bc), pushOf(); got != want {
		t.Fatalf("Lost, BCAST: got %q, want %q", got, want)
	}
	quiet(t, other, "Lost, a client that read other routes only")

	// Not Watching: a read of the route's keys is bounced, not kept.
	if got, want := a.do("GET", "pg:d"), "_\r\n"; got != want {
		t.Fatalf("GET: %q", got)
	}
	if got, want := readPush(t, a), pushOf("pg:d"); got != want {
		t.Fatalf("bounce: got %q, want %q", got, want)
	}
	keys, _, _ := ts.tracking.counts()
	nb.watching.Store(true)
	a.do("GET", "pg:e")
	quiet(t, a, "a read while Watching")
	if after, _, _ := ts.tracking.counts(); after != keys+1 {
		t.Errorf("tracked keys: %d after a read while Watching, want %d", after, keys+1)
	}

	for _, m := range []struct {
		name, src string
		want      float64
	}{
		{"pgcache_tracking_invalidations_total", "postgres", 3}, // pg:a to a and bc, pg:b to a
		{"pgcache_tracking_invalidations_total", "unseen", 1},
		{"pgcache_tracking_drop_all_total", "postgres", 3}, // bc on All, a and bc on Lost
		{"pgcache_tracking_drop_all_total", "flush", 0},
		{"pgcache_tracking_clients", "", 4},
	} {
		if got := metric(t, ts, m.name, m.src); got != m.want {
			t.Errorf("%s{source=%q} = %v, want %v", m.name, m.src, got, m.want)
		}
	}
	if got, want := metric(t, ts, "pgcache_tracking_keys", ""), float64(keys+1); got != want {
		t.Errorf("pgcache_tracking_keys = %v, want %v", got, want)
	}
}

// TestTrackingReadRacesReport: a read that registered its key and is
// held before it reads the backend, while the backend reports a change of
// the key (or loses its source), gets its reply and then the
// invalidation: the client drops what it just cached. The pause hook
// makes the interleaving certain. The same for a read-only EXEC (valkey-go's
// cached read), which reads its keys before its requests run.
func TestTrackingReadRacesReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report backends.Outside
		want   string
		exec   bool
	}{
		{"keys", backends.Outside{Keys: []string{"k"}, Source: "postgres"}, pushOf("pg:k"), false},
		{"all", backends.Outside{All: true, Source: "postgres"}, pushOf("pg:k"), false},
		{"lost", backends.Outside{Lost: true, All: true, Source: "postgres"}, pushOf(), false},
		{"exec-keys", backends.Outside{Keys: []string{"k"}, Source: "postgres"}, pushOf("pg:k"), true},
		{"exec-lost", backends.Outside{Lost: true, All: true, Source: "postgres"}, pushOf(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, nb := startNotifying(t)
			c := tracker3(t, ts.addr)
			writer := dial(t, ts.addr)
			writer.do("SET", "pg:k", "old")
			paused := make(chan chan struct{})
			nb.mu.Lock()
			nb.paused = paused
			nb.mu.Unlock()
			if tc.exec {
				c.do("MULTI")
				c.do("PTTL", "pg:k")
				c.do("GET", "pg:k")
				c.send(encode("EXEC"))
			} else {
				c.send(encode("GET", "pg:k"))
			}
			release := <-paused // registered, not yet read
			nb.mu.Lock()
			nb.paused = nil
			nb.mu.Unlock()
			if _, err := nb.Backend.Set(context.Background(), "k", []byte("new"), backends.SetOptions{}); err != nil {
				t.Fatal(err)
			}
			nb.report(tc.report)
			close(release)
			want := "$3\r\nnew\r\n"
			if tc.exec {
				want = "*2\r\n:-1\r\n$3\r\nnew\r\n"
			}
			if got := c.reply(); got != want {
				t.Fatalf("the held read: got %q, want %q", got, want)
			}
			if got := readPush(t, c); got != tc.want {
				t.Fatalf("after the reply: got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTrackingFollowsReloads: a new table's Notifiers are subscribed
// before it serves, the old table's unsubscribed once it has drained; a
// reload that keeps every backend changes nothing for the clients, one
// that sends a prefix to another backend tells them to drop everything.
func TestTrackingFollowsReloads(t *testing.T) {
	var raws []*route.Route
	var nb *notifyingBackend
	ts := startServerWith(t, Config{}, func(r *route.Route) {
		if r.Name == "postgres" {
			nb = newNotifying(r.Backend)
			r.Backend = nb
		}
		raws = append(raws, &route.Route{Name: r.Name, Prefixes: r.Prefixes, BackendName: r.BackendName, Backend: r.Backend})
	})
	c := tracker3(t, ts.addr)
	c.do("GET", "pg:k")
	if got := nb.subscribers(); got != 1 {
		t.Fatalf("subscribers at start: %d, want 1", got)
	}
	swap := func(routes []*route.Route) {
		t.Helper()
		tbl, err := route.NewTable(routes, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := ts.router.Swap(ctx, tbl); err != nil {
			t.Fatal(err)
		}
	}
	clone := func(rs []*route.Route) []*route.Route {
		var out []*route.Route
		for _, r := range rs {
			cp := *r
			out = append(out, &cp)
		}
		return out
	}

	swap(clone(raws))
	if got := nb.subscribers(); got != 1 {
		t.Fatalf("subscribers after a reload with the same backends: %d, want 1", got)
	}
	quiet(t, c, "a reload that kept the backends")
	nb.report(backends.Outside{Keys: []string{"k"}, Source: "postgres"})
	if got, want := readPush(t, c), pushOf("pg:k"); got != want {
		t.Fatalf("a report after the reload: got %q, want %q", got, want)
	}

	c.do("GET", "pg:k")
	moved := clone(raws)
	nb2 := newNotifying(moved[0].Backend) // pg: now stores in the memory route's store
	for _, r := range moved {
		if r.Name == "postgres" {
			r.Backend = nb2
		}
	}
	swap(moved)
	if got, want := readPush(t, c), pushOf(); got != want {
		t.Fatalf("a reload that moved pg: got %q, want %q", got, want)
	}
	if got, got2 := nb.subscribers(), nb2.subscribers(); got != 0 || got2 != 1 {
		t.Fatalf("subscribers after the move: old %d, new %d; want 0 and 1", got, got2)
	}
	if got := metric(t, ts, "pgcache_tracking_drop_all_total", "reload"); got != 1 {
		t.Errorf("drop_all{source=reload} = %v, want 1", got)
	}
}

// TestTrackingBCASTBatches: BCAST clients get the keys a command (or a
// transaction) changed under each prefix in one array per prefix, sorted,
// as Redis sends them once per event-loop iteration; NOLOOP leaves out
// the client's own.
func TestTrackingBCASTBatches(t *testing.T) {
	ts := startServer(t, Config{})
	all := tracker3(t, ts.addr, "BCAST")
	ab := tracker3(t, ts.addr, "BCAST", "PREFIX", "a:", "PREFIX", "b:")
	self := tracker3(t, ts.addr, "BCAST", "PREFIX", "a:", "NOLOOP")
	w := dial(t, ts.addr)

	w.do("MSET", "c:1", "x", "a:2", "y", "a:1", "z")
	if got, want := readPush(t, all), pushOf("a:1", "a:2", "c:1"); got != want {
		t.Fatalf("MSET, empty prefix: got %q, want %q", got, want)
	}
	if got, want := readPush(t, ab), pushOf("a:1", "a:2"); got != want {
		t.Fatalf("MSET, a: and b:: got %q, want %q", got, want)
	}
	if got, want := readPush(t, self), pushOf("a:1", "a:2"); got != want {
		t.Fatalf("MSET, NOLOOP reader: got %q, want %q", got, want)
	}

	w.do("MULTI")
	for _, k := range []string{"b:1", "a:3", "c:2", "b:2"} {
		w.do("INCR", k)
	}
	w.do("EXEC")
	if got, want := readPush(t, ab), pushOf("a:3"); got != want {
		t.Fatalf("EXEC, first prefix: got %q, want %q", got, want)
	}
	if got, want := readPush(t, ab), pushOf("b:1", "b:2"); got != want {
		t.Fatalf("EXEC, second prefix: got %q, want %q", got, want)
	}
	quiet(t, ab, "after EXEC")
	if got, want := readPush(t, self), pushOf("a:3"); got != want {
		t.Fatalf("EXEC, NOLOOP reader: got %q, want %q", got, want)
	}

	// A pipeline of the NOLOOP client's own writes, and one by another
	// client of the same key: the last writer decides.
	self.send(encode("SET", "a:own", "1") + encode("SET", "a:mine", "2"))
	self.reply()
	self.reply()
	quiet(t, self, "NOLOOP, its own writes")
	self.do("SET", "a:k", "1")
	w.do("SET", "a:k", "2")
	if got, want := readPush(t, self), pushOf("a:k"); got != want {
		t.Fatalf("NOLOOP, another client's write: got %q, want %q", got, want)
	}
}

// TestTrackingTableFullByConfig: one client reads ten times
// tracking-table-max-keys (set by CONFIG SET) in distinct keys. The
// table stays at the bound, the server's heap does not grow with the
// keys read, and the client is told of every key evicted: the oldest.
func TestTrackingTableFullByConfig(t *testing.T) {
	const bound = 5000
	ts := startServer(t, Config{})
	admin := dial(t, ts.addr)
	if got := admin.do("CONFIG", "SET", "tracking-table-max-keys", strconv.Itoa(bound)); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	c := tracker3(t, ts.addr)
	told := make([]bool, 10*bound) // by key number: the test keeps no strings
	ntold := 0
	tell := func(push string) {
		k := pushKey(t, push)
		i, err := strconv.Atoi(strings.TrimPrefix(k, "key:"))
		if err != nil || i >= len(told) || told[i] {
			t.Fatalf("invalidation of %q: not a key read, or twice", k)
		}
		told[i] = true
		ntold++
	}
	read := func(from, to int) {
		var pipe strings.Builder
		for i := from; i < to; i++ {
			pipe.WriteString(encode("GET", "key:"+strconv.Itoa(i)))
		}
		c.send(pipe.String())
		for replies := 0; replies < to-from; {
			r := c.reply()
			if strings.HasPrefix(r, ">") {
				tell(r)
				continue
			}
			replies++
		}
	}
	read(0, bound)
	before := heapInuse()
	for i := 1; i < 10; i++ {
		read(i*bound, (i+1)*bound)
	}
	for ntold < 9*bound { // the last batch's evictions may trail
		tell(readPush(t, c))
	}
	after := heapInuse()
	t.Logf("heap in use: %d bytes after the first %d keys, %d after 10×", before, bound, after)
	for i := range 9 * bound { // the oldest were evicted
		if !told[i] {
			t.Fatalf("key:%d was evicted without an invalidation", i)
		}
	}
	if keys, items, _ := ts.tracking.counts(); keys != bound || items != bound {
		t.Errorf("tracking table: %d keys, %d items; want %d of each", keys, items, bound)
	}
	if got := metric(t, ts, "pgcache_tracking_invalidations_total", "table-full"); got != 9*bound {
		t.Errorf("invalidations{source=table-full} = %v, want %d", got, 9*bound)
	}
	// Had the table kept every key, it would hold 9×bound more entries of
	// about 120 bytes (a key, its entry, its map slot): over 1,000 bytes
	// per bound key. Allow 300 per bound key for the connection's buffers
	// and the collector's noise (about 120 seen).
	if after > before && after-before > 300*bound {
		t.Errorf("heap grew from %d to %d bytes reading 10×%d keys", before, after, bound)
	}
}

// pushKey is the one key of a RESP3 invalidation push.
func pushKey(t *testing.T, push string) string {
	t.Helper()
	parts := strings.Split(push, "\r\n")
	if len(parts) != 7 || parts[0] != ">2" || parts[3] != "*1" {
		t.Fatalf("not a one-key invalidation: %q", push)
	}
	return parts[5]
}
