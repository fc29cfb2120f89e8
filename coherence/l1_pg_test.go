package coherence

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/postgres"
	"github.com/pgcache/pgcache/internal/testenv"
)

// instance is one pgcache's worth of coherence on a shared database: its own
// pool, fences, listener, relay candidate and L1 tier over a kv table.
type instance struct {
	coord *Coordinator
	tier  *Tier
	kv    backends.Backend
	reads *pausedReads // the table as the tier sees it
}

func newInstance(t testing.TB, table string) *instance {
	t.Helper()
	return instanceOn(t, backends.RouteSpec{Name: table, Table: table, Durability: "unlogged"}, 200*time.Millisecond)
}

// instanceOn is one pgcache's coherence and L1 tier over the route spec,
// with its triggers attached and canaries ping apart, online.
func instanceOn(t testing.TB, spec backends.RouteSpec, ping time.Duration) *instance {
	t.Helper()
	return instanceWith(t, spec, ListenerOptions{PingInterval: ping}, L1{MaxBytes: 16 << 20})
}

// instanceWith is instanceOn with the listener's and the tier's options.
func instanceWith(t testing.TB, spec backends.RouteSpec, lo ListenerOptions, l1 L1) *instance {
	t.Helper()
	d, err := postgres.NewDriver("pg", postgres.Options{DSN: pg.DSN(), MaxConns: 8}, backends.Env{})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := d.Open(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	reads := pauseReads(t, kv)
	c := NewCoordinator(d.Pool(), CoordinatorOptions{ListenerOptions: lo}, zap.NewNop())
	c.OnConnect(func(ctx context.Context) error {
		if err := kv.(interface{ Prepare(context.Context) error }).Prepare(ctx); err != nil {
			return err
		}
		return Attach(ctx, d.Pool(), kv.(backends.Fenced).FenceTable())
	})
	tier, err := c.NewTier(spec.Name, reads, l1)
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(func() {
		c.Close()
		tier.Close()
		d.Close()
	})
	waitFor(t, "instance online", func() bool { s, _ := c.Listener.State(); return s == StateOnline })
	return &instance{coord: c, tier: tier, kv: kv, reads: reads}
}

// pausedReads is a table as its tier sees it, with hooks the tests set
// after the table's reads: there a read has its value and its token and has
// not filled yet, where the tests pause a loader to force the late-fill
// race. The tier has no hook of its own.
type pausedReads struct {
	backends.Backend
	fenced backends.Fenced
	expiry backends.ExpiryReader
	// afterGet runs after a GetWithTTL, the read of a miss (Tier.load);
	// afterMGet after an MGetWithTTL, a refresh's read or an MGET's misses.
	afterGet  atomic.Pointer[func(key string)]
	afterMGet atomic.Pointer[func()]
}

func pauseReads(t testing.TB, b backends.Backend) *pausedReads {
	t.Helper()
	fenced, ok := b.(backends.Fenced)
	expiry, ok2 := b.(backends.ExpiryReader)
	if !ok || !ok2 {
		t.Fatalf("%T is not a fenced table with expiries", b)
	}
	return &pausedReads{Backend: b, fenced: fenced, expiry: expiry}
}

func (p *pausedReads) FenceTable() string                  { return p.fenced.FenceTable() }
func (p *pausedReads) FenceKey(key string) (string, error) { return p.fenced.FenceKey(key) }
func (p *pausedReads) Unwrap() backends.Backend            { return p.Backend }

func (p *pausedReads) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	v, ttl, ok, err := p.expiry.GetWithTTL(ctx, key)
	if fn := p.afterGet.Load(); fn != nil {
		(*fn)(key)
	}
	return v, ttl, ok, err
}

func (p *pausedReads) MGetWithTTL(ctx context.Context, keys []string, dst []backends.Expiring) ([]backends.Expiring, error) {
	dst, err := p.expiry.MGetWithTTL(ctx, keys, dst)
	if fn := p.afterMGet.Load(); fn != nil {
		(*fn)()
	}
	return dst, err
}

// The late-fill race of "Cache-aside without the race" (docs/bench.md) on a real table: a loader paused after
// its SELECT, an UPDATE committed by plain SQL, its fence delivered through
// the log, the relay and LISTEN; the loader resumes and its fill is dropped.
func TestLateFillRaceOnPostgres(t *testing.T) {
	p := pg.Pool(t)
	a := newInstance(t, "race_kv")
	testenv.Exec(t, p, `INSERT INTO race_kv VALUES ('k', 'old', 'infinity') ON CONFLICT (key) DO UPDATE SET value = 'old'`)

	paused, resume := make(chan struct{}), make(chan struct{})
	hook := func(string) { close(paused); <-resume }
	a.reads.afterGet.Store(&hook)
	got := make(chan string)
	go func() {
		v, _, err := a.tier.Get(context.Background(), "k")
		if err != nil {
			t.Error(err)
		}
		got <- string(v)
	}()
	<-paused
	tok := a.coord.Fences.Token()
	testenv.Exec(t, p, `UPDATE race_kv SET value = 'new' WHERE key = 'k'`)
	fenced(t, a.coord.Fences, tok, "public.race_kv", "k")
	a.reads.afterGet.Store(nil)
	close(resume)
	if v := <-got; v != "old" {
		t.Fatalf("the raced read = %q, want old (what it read)", v)
	}
	if n := a.tier.Stats.FillsFenced.Load(); n != 1 {
		t.Fatalf("fills fenced = %d, want 1", n)
	}
	if v, _, _ := a.tier.Get(context.Background(), "k"); string(v) != "new" {
		t.Fatalf("next read = %q, want new", v)
	}
}

// Writes through any instance and through SQL are seen by every instance
// once fenced.
func TestInstancesSeeEachOthersWrites(t *testing.T) {
	p := pg.Pool(t)
	ins := []*instance{newInstance(t, "multi_kv"), newInstance(t, "multi_kv"), newInstance(t, "multi_kv")}
	ctx := context.Background()
	read := func(i *instance, k string) string {
		v, ok, err := i.tier.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "<absent>"
		}
		return string(v)
	}
	converge := func(what, k, want string) {
		t.Helper()
		for n, i := range ins {
			waitFor(t, fmt.Sprintf("%s: instance %d reads %s=%s", what, n, k, want), func() bool { return read(i, k) == want })
		}
	}
	for n, i := range ins {
		k := fmt.Sprintf("k%d", n)
		if _, err := i.tier.Set(ctx, k, []byte("v1"), backends.SetOptions{}); err != nil {
			t.Fatal(err)
		}
		converge("set through an instance", k, "v1") // fills every L1
		if _, err := i.tier.Set(ctx, k, []byte("v2"), backends.SetOptions{}); err != nil {
			t.Fatal(err)
		}
		converge("overwrite through an instance", k, "v2")
	}
	for _, step := range []struct{ what, sql, key, want string }{
		{"UPDATE", `UPDATE multi_kv SET value = 'u' WHERE key = 'k0'`, "k0", "u"},
		{"INSERT ON CONFLICT", `INSERT INTO multi_kv VALUES ('k1', 'c', 'infinity') ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, "k1", "c"},
		{"DELETE", `DELETE FROM multi_kv WHERE key = 'k2'`, "k2", "<absent>"},
		{"TRUNCATE", `TRUNCATE multi_kv`, "k0", "<absent>"},
	} {
		testenv.Exec(t, p, step.sql)
		converge(step.what, step.key, step.want)
	}
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	testenv.Exec(t, p, `INSERT INTO multi_kv VALUES ('copied', 'before', 'infinity')`)
	converge("insert", "copied", "before")
	testenv.Exec(t, p, `DELETE FROM multi_kv WHERE key = 'copied'`)
	converge("delete before COPY", "copied", "<absent>")
	if _, err := conn.Conn().CopyFrom(ctx, []string{"multi_kv"}, []string{"key", "value", "expires_at"},
		pgx.CopyFromRows([][]any{{"copied", []byte("after"), time.Now().Add(time.Hour)}})); err != nil {
		t.Fatal(err)
	}
	converge("COPY", "copied", "after")
}

// soak runs readers and writers on hot keys across instances, then stops
// the writers, lets fences settle, and counts L1 entries that differ from
// the table.
func soak(t *testing.T, ins []*instance, table string, d time.Duration) (stale int) {
	p := pg.Pool(t)
	ctx := context.Background()
	const keys = 50
	for k := range keys {
		testenv.Exec(t, p, fmt.Sprintf(`INSERT INTO %s VALUES ($1, '0', 'infinity') ON CONFLICT (key) DO UPDATE SET value = '0'`, table), fmt.Sprintf("k%d", k))
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	var writes atomic.Int64
	deadline := time.Now().Add(d)
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for n := 0; !stop.Load() && time.Now().Before(deadline) && n < 1_000_000; n++ {
				k := fmt.Sprintf("k%d", r.IntN(keys))
				v := []byte(fmt.Sprintf("%d-%d", w, n))
				var err error
				if w%2 == 0 { // half through instances, half as plain SQL
					_, err = ins[n%len(ins)].tier.Set(ctx, k, v, backends.SetOptions{})
				} else {
					_, err = p.Exec(ctx, fmt.Sprintf(`UPDATE %s SET value = $2 WHERE key = $1`, table), k, v)
				}
				if err != nil {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		})
	}
	for r := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			for n := 0; !stop.Load() && time.Now().Before(deadline) && n < 10_000_000; n++ {
				if _, _, err := ins[n%len(ins)].tier.Get(ctx, fmt.Sprintf("k%d", rng.IntN(keys))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if writes.Load() == 0 {
		t.Fatal("no writes happened")
	}
	// Settle: every fence of the writes has been received once a canary
	// sent after the last write has come back to each instance.
	mark := time.Now()
	for _, i := range ins {
		waitFor(t, "a canary sent after the writes", func() bool { return i.coord.Listener.Proven().After(mark) })
	}
	truth := map[string]string{}
	rows, err := p.Query(ctx, fmt.Sprintf(`SELECT key, value FROM %s`, table))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var v []byte
		rows.Scan(&k, &v)
		truth[k] = string(v)
	}
	for _, i := range ins {
		i.tier.Entries(func(k string, v []byte) bool {
			if truth[k] != string(v) {
				stale++
			}
			return true
		})
	}
	t.Logf("%d writes; %d stale L1 entries", writes.Load(), stale)
	return stale
}

// A bounded randomized soak across three instances ends with no stale entry.
func TestSoakNoStaleEntries(t *testing.T) {
	ins := []*instance{newInstance(t, "soak_kv"), newInstance(t, "soak_kv"), newInstance(t, "soak_kv")}
	if stale := soak(t, ins, "soak_kv", 8*time.Second); stale != 0 {
		t.Fatalf("%d stale L1 entries after the writes settled", stale)
	}
}

// The same harness with received fences ignored must find stale entries:
// proof that the soak can fail.
func TestSoakFindsStaleWithoutFences(t *testing.T) {
	deaf := func() *instance {
		spec := backends.RouteSpec{Name: "nofence_kv", Table: "nofence_kv", Durability: "unlogged"}
		return instanceWith(t, spec, ListenerOptions{PingInterval: 200 * time.Millisecond, ignoreFences: true}, L1{MaxBytes: 16 << 20})
	}
	ins := []*instance{deaf(), deaf()}
	if stale := soak(t, ins, "nofence_kv", 4*time.Second); stale == 0 {
		t.Fatal("no stale entry with fences ignored: the soak cannot tell")
	}
}

// The listener killed under load: the tiers bypass, reconnect, fence
// everything, and no entry is stale afterwards.
func TestListenerKilledUnderLoad(t *testing.T) {
	p := pg.Pool(t)
	ins := []*instance{newInstance(t, "kill_kv"), newInstance(t, "kill_kv")}
	done := make(chan int)
	go func() {
		stale := -1 // soak failed: its t.Fatal ends this goroutine, not the test
		defer func() { done <- stale }()
		stale = soak(t, ins, "kill_kv", 4*time.Second)
	}()
	time.Sleep(time.Second)
	testenv.Exec(t, p, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`)
	if stale := <-done; stale != 0 {
		t.Fatalf("%d stale entries after the listener was killed", stale)
	}
	for n, i := range ins {
		if i.coord.Listener.Stats.Reconnects.Load() < 1 {
			t.Errorf("instance %d did not reconnect", n)
		}
	}
}
