package frameworks

// Client-side caching (CLIENT TRACKING, issue 18) with real client
// libraries against a real pgcache: an app's own in-process cache must
// serve repeated reads from memory and drop a value as soon as any source
// pgcache knows of changes it.
//
//   - valkey-go with its default options (client-side caching on; it sends
//     CLUSTER SLOTS first and falls back to a single server);
//   - node-redis 5 with RESP 3 and its clientSideCache (tracking_node.js);
//   - redis-py 4.3 in RESP2 with the REDIRECT form: a second connection
//     subscribed to __redis__:invalidate (tracking_redispy.py).
//
// The route kinds are a memory route, a PostgreSQL kv table with an L1, a
// source table with an L1 (fenced by attach: auto) and a Valkey route with
// client_cache. The sources are another RESP client (SET, DEL), plain SQL
// (UPDATE, DELETE, TRUNCATE), a second pgcache instance on the same
// database and Valkey, and redis-cli straight to Valkey.
//
// "Served from the app's memory" is the client's own word: valkey-go's
// IsCacheHit, node-redis's cache hit count. A route whose changes pgcache
// does not see has each read invalidated right after its reply; a read
// after a round trip on the same connection (which takes in every push
// sent before it) is then not a hit, and the case fails there.
//
// The Node and Python programs are not run to the end as TestFrameworks'
// are: each is an app this test drives one request at a time over its
// stdin and stdout (JSON lines), so the changes can come from here (SQL,
// a second pgcache, Valkey) between its reads.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/internal/testenv"
)

const (
	// cscBound bounds every wait for a change to reach an app's cache.
	cscBound = 20 * time.Second
	// cscOnlineBound bounds a wait for an L1's fence listener to be
	// online: a canary must go around first (every 3 s).
	cscOnlineBound = 30 * time.Second
	// The application_name of the instances' PostgreSQL sessions, to tell
	// their LISTEN connections apart.
	cscAppA, cscAppB = "pgcache-csc-a", "pgcache-csc-b"
)

// cachingApp is an app with a client-side cache, as a test sees it.
type cachingApp interface {
	// read reads key through the app's cache: the value (ok false:
	// absent) and whether it came from the app's memory.
	read(t *testing.T, key string) (val string, ok, hit bool)
	// sync makes a round trip on the connection that reads key: the
	// pushes pgcache sent it before are taken in when sync returns.
	sync(t *testing.T, key string)
}

// cachedThenChanged is one case: key of route kind k is read twice, the
// second time from the app's memory; src changes it; the app's next reads
// return the new value, then serve it from memory again.
func cachedThenChanged(t *testing.T, r *cscRig, app cachingApp, k routeKind, src source) {
	key := r.fresh(k)
	r.seed(t, k, key, "v1")
	r.settle(t, k)
	if v, ok, _ := app.read(t, key); !matches(k, "v1", true, v, ok) {
		t.Fatalf("first read of %s: %q (present %v), want v1", key, v, ok)
	}
	app.sync(t, key)
	if v, ok, hit := app.read(t, key); !matches(k, "v1", true, v, ok) || !hit {
		t.Fatalf("second read of %s: %q (present %v), from the app's memory %v; want v1 from memory "+
			"(not from memory: pgcache told the client to drop the key right after the first read, "+
			"as it does on a route whose changes it does not see)", key, v, ok, hit)
	}
	// Nothing changed the key: it stays in the app's memory, also once
	// every notification sent so far has arrived.
	r.settle(t, k)
	app.sync(t, key)
	if v, ok, hit := app.read(t, key); !matches(k, "v1", true, v, ok) || !hit {
		t.Fatalf("third read of %s, with no change since the first: %q (present %v), from the app's memory %v; "+
			"want v1 from memory (pgcache told the client to drop a key nothing changed)", key, v, ok, hit)
	}
	want, present := src.change(t, r, k, key)
	poll(t, cscBound, fmt.Sprintf("the app reads %s = %q (present %v) after the change", key, want, present), func() bool {
		v, ok, _ := app.read(t, key)
		return matches(k, want, present, v, ok)
	})
	poll(t, cscBound, "the new value served from the app's memory", func() bool {
		app.sync(t, key)
		v, ok, hit := app.read(t, key)
		if !matches(k, want, present, v, ok) {
			t.Fatalf("%s read as %q (present %v) after the new value was read: stale", key, v, ok)
		}
		return hit
	})
}

// runCachingCases runs every source on every route kind it applies to.
func runCachingCases(t *testing.T, r *cscRig, app cachingApp) {
	for _, rk := range routeKinds {
		for _, src := range sources {
			if !containsKind(src.kinds, rk.kind) {
				continue
			}
			t.Run(rk.name+"/"+src.name, func(t *testing.T) { cachedThenChanged(t, r, app, rk.kind, src) })
		}
	}
}

func containsKind(ks []routeKind, k routeKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func TestClientSideCaching(t *testing.T) {
	env := programEnv(t)
	r := startCSCRig(t)
	addr := r.a.Addr("resp")

	t.Run("valkey-go", func(t *testing.T) {
		app := newValkeyGoApp(t, addr)
		runCachingCases(t, r, app)
		t.Run("listen-connection-killed", func(t *testing.T) { listenKilled(t, r, app) })
	})
	t.Run("node-redis", func(t *testing.T) {
		runCachingCases(t, r, newNodeApp(t, env, addr))
	})
	t.Run("redis-py-redirect", func(t *testing.T) {
		redirectCases(t, r, startAgent(t, "/usr/bin/python3", "tracking_redispy.py", append(env, "REDIS_URL=redis://"+addr+"/0")))
	})
}

// valkeyGoApp is valkey-go with its default options.
type valkeyGoApp struct {
	c     valkey.Client
	syncs *atomic.Int64 // probe keys used by sync
}

func newValkeyGoApp(t *testing.T, addr string) valkeyGoApp {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		t.Fatalf("valkey.NewClient with its default options: %v", err)
	}
	t.Cleanup(c.Close)
	// valkey-go asked CLUSTER SLOTS first; pgcache is one server.
	if m := c.Mode(); m != valkey.ClientModeStandalone {
		t.Fatalf("valkey-go mode %q, want %q", m, valkey.ClientModeStandalone)
	}
	return valkeyGoApp{c: c, syncs: new(atomic.Int64)}
}

func (a valkeyGoApp) read(t *testing.T, key string) (string, bool, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	defer cancel()
	res := a.c.DoCache(ctx, a.c.B().Get().Key(key).Cache(), time.Minute)
	v, err := res.ToString()
	if valkey.IsValkeyNil(err) {
		return "", false, res.IsCacheHit()
	}
	if err != nil {
		t.Fatalf("DoCache GET %s: %v (the same transaction by hand: %s)", key, err, a.byHand(ctx, key))
	}
	return v, true, res.IsCacheHit()
}

// byHand sends what DoCache sends on a miss (CLIENT CACHING YES, MULTI,
// PTTL, GET, EXEC) as plain commands, and returns their replies: valkey-go
// reports a failed EXEC without the server's error.
func (a valkeyGoApp) byHand(ctx context.Context, key string) string {
	b := a.c.B()
	dc, cancel := a.c.Dedicate()
	defer cancel()
	var replies []string
	for _, r := range dc.DoMulti(ctx, b.ClientCaching().Yes().Build(), b.Multi().Build(),
		b.Pttl().Key(key).Build(), b.Get().Key(key).Build(), b.Exec().Build()) {
		if err := r.Error(); err != nil {
			replies = append(replies, err.Error())
		} else {
			replies = append(replies, r.String())
		}
	}
	return strings.Join(replies, "; ")
}

// sync reads a fresh memory key of key's slot with DoCache: valkey-go
// sends a cached read on the connection of its slot (Do picks one at
// random), so the read is a round trip on the connection that read key.
// A command on key itself could change what the case sees: a PTTL on a
// Valkey route is a read the Valkey server does not track, which pgcache
// reports as a change of the key.
func (a valkeyGoApp) sync(t *testing.T, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	defer cancel()
	probe := fmt.Sprintf("mem:sync-%d{%s}", a.syncs.Add(1), slotPart(key))
	res := a.c.DoCache(ctx, a.c.B().Get().Key(probe).Cache(), time.Minute)
	if err := res.Error(); err != nil && !valkey.IsValkeyNil(err) {
		t.Fatalf("DoCache GET %s: %v", probe, err)
	}
	if res.IsCacheHit() {
		t.Fatalf("DoCache GET %s, never read before, was a hit", probe)
	}
}

// slotPart is the part of key Redis Cluster hashes to a slot: the first
// non-empty {hash tag}, or else the whole key.
func slotPart(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// listenKilled: pgcache's LISTEN connection is killed while valkey-go
// holds a kv key and a memory key (one slot: one connection, one cache)
// in its memory. The app is told to drop everything: both become misses
// with neither written. A plain SQL UPDATE during the outage is read
// after it, never the value from before, and once the listener is back
// the app caches again and a later UPDATE reaches it.
func listenKilled(t *testing.T, r *cscRig, app valkeyGoApp) {
	kvKey, memKey := "pg:{killed}", "mem:{killed}"
	r.seed(t, kvRoute, kvKey, "v1")
	r.seed(t, memRoute, memKey, "m1")
	r.settle(t, kvRoute)
	for _, key := range []string{kvKey, memKey} {
		app.read(t, key)
		app.sync(t, key)
		if _, _, hit := app.read(t, key); !hit {
			t.Fatalf("%s: the second read was not from the app's memory", key)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	err := r.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN `+coherence.Channel+`' AND application_name = $1`, cscAppA).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("terminate the LISTEN connection of instance a: %d terminated, %v; want 1", n, err)
	}
	// Nothing wrote memKey: only "drop everything" makes it a miss.
	poll(t, cscBound, "the app's cache emptied after the LISTEN connection died", func() bool {
		_, _, hit := app.read(t, memKey)
		return !hit
	})
	if v, _, hit := app.read(t, kvKey); hit {
		t.Errorf("%s still served from the app's memory (%q) after the drop", kvKey, v)
	}
	testenv.Exec(t, r.pool, `UPDATE csc_kv SET value = 'v2' WHERE key = $1`, rowKey(kvKey))
	poll(t, cscBound, "the UPDATE made during the outage is read", func() bool {
		v, ok, _ := app.read(t, kvKey)
		return ok && v == "v2"
	})
	r.waitOnline(t, r.other)
	poll(t, cscBound, "v2 served from the app's memory once the listener is back", func() bool {
		app.sync(t, kvKey)
		v, ok, hit := app.read(t, kvKey)
		if !ok || v != "v2" {
			t.Fatalf("%s = %q (present %v) after v2 was read: stale", kvKey, v, ok)
		}
		return hit
	})
	testenv.Exec(t, r.pool, `UPDATE csc_kv SET value = 'v3' WHERE key = $1`, rowKey(kvKey))
	poll(t, cscBound, "an UPDATE after the reconnect reaches the app", func() bool {
		v, ok, _ := app.read(t, kvKey)
		return ok && v == "v3"
	})
}

// nodeApp is node-redis 5 with RESP 3 and clientSideCache
// (tracking_node.js), one request at a time.
type nodeApp struct{ a *agent }

func newNodeApp(t *testing.T, env []string, addr string) nodeApp {
	return nodeApp{startAgent(t, "node", "tracking_node.js", append(env, "REDIS_URL=redis://"+addr+"/0"))}
}

func (n nodeApp) read(t *testing.T, key string) (string, bool, bool) {
	t.Helper()
	var rep struct {
		Value *string `json:"value"`
		Hit   bool    `json:"hit"`
	}
	n.a.call(t, map[string]any{"op": "get", "key": key}, &rep)
	if rep.Value == nil {
		return "", false, rep.Hit
	}
	return *rep.Value, true, rep.Hit
}

// sync sends PING: node-redis has one connection.
func (n nodeApp) sync(t *testing.T, _ string) {
	t.Helper()
	n.a.call(t, map[string]any{"op": "ping"}, nil)
}

// redirectCases: redis-py in RESP2, tracking with REDIRECT to a second
// connection subscribed to __redis__:invalidate. A read leaves no
// invalidation behind (one after the read would mean the route's key is
// dropped at once: not kept by pgcache's tracking); a change from another
// client, or by plain SQL, sends one naming the key.
func redirectCases(t *testing.T, r *cscRig, py *agent) {
	for _, tc := range []struct {
		route  routeKind
		source string
	}{
		{memRoute, "resp-set"},
		{kvRoute, "resp-set"},
		{kvRoute, "sql-update"},
		{rowRoute, "resp-set"},
		{rowRoute, "sql-update"},
		{valkeyRoute, "resp-set"},
		{valkeyRoute, "redis-cli-to-valkey-set"},
	} {
		var src source
		for _, s := range sources {
			if s.name == tc.source {
				src = s
			}
		}
		name := routeKinds[tc.route].name + "/" + tc.source
		t.Run(name, func(t *testing.T) {
			key := r.fresh(tc.route)
			r.seed(t, tc.route, key, "v1")
			r.settle(t, tc.route)
			var got struct {
				Value *string `json:"value"`
			}
			py.call(t, map[string]any{"op": "get", "key": key}, &got)
			if got.Value == nil || !matches(tc.route, "v1", true, *got.Value, true) {
				t.Fatalf("GET %s: %v, want v1", key, got.Value)
			}
			var pending struct {
				Keys  []string `json:"keys"`
				Nulls int      `json:"nulls"`
			}
			r.settle(t, tc.route) // what pgcache sent about the read has arrived
			py.call(t, map[string]any{"op": "sync"}, &pending)
			for _, k := range pending.Keys {
				if k == key {
					t.Fatalf("%s was invalidated right after the read, before any change: "+
						"pgcache does not keep this route's keys tracked (messages: %v)", key, pending.Keys)
				}
			}
			src.change(t, r, tc.route, key)
			py.call(t, map[string]any{"op": "wait", "key": key, "timeout": cscBound.Seconds()}, nil)
		})
	}
}

// poll calls cond until it is true, failing the test after bound.
func poll(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, bound)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
