package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/internal/testenv"
)

// The PostgreSQL cases share a rig: pgcache with a standard-durability kv
// route behind a coherent L1, under load (RESP writers and readers), while
// plain SQL writers churn rows that RESP readers keep reading through L1.
// After the fault, verify stops everything, proves every fence has been
// delivered and audits L1 against the table.

// pgRig is one PostgreSQL case's pgcache, load and churn.
type pgRig struct {
	t     *testing.T
	p     *pgcache
	pool  *pgxpool.Pool // the test's own, straight to PostgreSQL
	table string        // the kv table of route "kv" (prefix "pg:")
	load  *load
	churn *churn
	watch *watcher
}

// rigConfig is the rig's pgcache: route kv (prefix pg:) on a standard kv
// table with L1, the catch-all on memory, plus extra routes (YAML list
// items). dsn may point through a Link.
func rigConfig(dsn, table, extra string) string {
	return fmt.Sprintf(`
backends:
  pg: {type: postgres, dsn: %q, max_conns: 8, connect_timeout: 1s, command_timeout: 3s}
  mem: {type: memory, max_bytes: 64MiB}
routes:
  - {name: kv, prefix: "pg:", backend: pg, table: %s, durability: standard, l1: {max_bytes: 32MiB}}
  - {name: memory, prefix: "", backend: mem}
%s`, dsn, table, extra)
}

// startRig starts pgcache with cfg, waits until L1 is online and starts
// the load and the churn. srv is the PostgreSQL cfg points at.
func startRig(t *testing.T, srv *testenv.PG, table, cfg string) *pgRig {
	t.Helper()
	r := &pgRig{t: t, pool: srv.Pool(t), table: table}
	testenv.Exec(t, r.pool, "DROP TABLE IF EXISTS "+table)
	r.p = startPgcache(t, cfg)
	r.waitOnline(30 * time.Second)
	r.watch = watchListener(t, r.p, "pg")
	r.load = startLoad(t, r.p.resp, loadOptions{prefix: "pg:", writers: 4, readers: 4})
	r.churn = startChurn(t, r.p.resp, r.pool, table, "pg:", 16)
	r.load.waitOK(t, 500, 20*time.Second)
	r.churn.waitReads(t, 200, 20*time.Second)
	return r
}

// waitOnline waits, bounded, until the L1 fence listener is online, and
// returns how long that took.
func (r *pgRig) waitOnline(bound time.Duration) time.Duration {
	r.t.Helper()
	return eventually(r.t, bound, "L1 online", func() bool { return r.p.listener(r.t, "pg") == "online" })
}

// verdict is what verify found.
type verdict struct {
	acked, lost      int // acknowledged writes, and those missing from the table
	entries, stale   int // L1 entries audited, and those that differ from the table
	failed           int64
	staleReads       int64
	maxStaleAge      time.Duration
	bypassed, misses int64
}

// verify stops the load and the churn, waits for L1 to be online, proves
// every fence logged has been delivered (a marker row, updated by SQL
// after the churn stopped, is read back through L1: fences are delivered in
// log order), then audits every L1 entry and every acknowledged write.
func (r *pgRig) verify() verdict {
	t := r.t
	t.Helper()
	r.load.Stop()
	r.churn.Stop()
	r.waitOnline(60 * time.Second)
	r.syncFences()

	var v verdict
	acked := r.load.ackedWrites()
	v.acked = len(acked)
	v.lost = len(lostWrites(acked, r.fetch(acked)))
	v.entries, v.stale = auditL1(t, r.p.tier(t, "kv"), r.pool, r.table)
	v.failed = r.load.failed.Load()
	v.staleReads, v.maxStaleAge = r.churn.staleReads.Load(), time.Duration(r.churn.maxStaleAge.Load())
	st := &r.p.tier(t, "kv").Stats
	v.bypassed, v.misses = st.Bypassed.Load(), st.Misses.Load()
	if v.lost > 0 {
		t.Errorf("%d of %d acknowledged writes are not in the table with their value", v.lost, v.acked)
	}
	if v.stale > 0 {
		t.Errorf("%d of %d L1 entries differ from the table after every fence was delivered", v.stale, v.entries)
	}
	if n := r.load.wrong.Load(); n > 0 {
		t.Errorf("%d reads returned a value that was never written", n)
	}
	select {
	case err := <-r.p.Errors():
		t.Errorf("a front stopped serving: %v", err)
	default:
	}
	return v
}

// syncFences updates a marker row by SQL and reads it through pgcache
// until the new value shows: the relay publishes the fence log in order,
// so by then every fence logged before the marker's has been applied.
func (r *pgRig) syncFences() {
	t := r.t
	t.Helper()
	c := dialRESP(t, r.p.resp)
	defer c.Close()
	if _, err := c.Do("SET", "pg:marker", "0"); err != nil {
		t.Fatalf("SET marker: %v", err)
	}
	if v, err := c.Do("GET", "pg:marker"); err != nil || v != "0" { // in L1 now
		t.Fatalf("GET marker = %q, %v", v, err)
	}
	testenv.Exec(t, r.pool, "UPDATE "+r.table+" SET value = '1' WHERE key = 'marker'")
	eventually(t, 30*time.Second, "the marker's fence delivered", func() bool {
		v, err := c.Do("GET", "pg:marker")
		return err == nil && v == "1"
	})
}

// fetch reads the rows of the acknowledged keys (written as pg:<key>).
func (r *pgRig) fetch(acked map[string]string) map[string]string {
	return fetchKV(r.t, r.pool, r.table, "pg:", acked)
}

// fetchKV reads the live rows of a kv table for keys written with prefix.
func fetchKV(t testing.TB, pool *pgxpool.Pool, table, prefix string, acked map[string]string) map[string]string {
	t.Helper()
	keys := make([]string, 0, len(acked))
	for k := range acked {
		keys = append(keys, strings.TrimPrefix(k, prefix))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rows, err := pool.Query(ctx, "SELECT key, value FROM "+table+" WHERE key = ANY($1) AND expires_at > now()", keys)
	if err != nil {
		t.Fatalf("read back %s: %v", table, err)
	}
	defer rows.Close()
	got := make(map[string]string, len(keys))
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		got[prefix+k] = string(v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// auditL1 compares every valid L1 entry of a kv route with its row.
func auditL1(t testing.TB, tier *coherence.Tier, pool *pgxpool.Pool, table string) (entries, stale int) {
	t.Helper()
	cached := map[string]string{}
	tier.Entries(func(k string, v []byte) bool {
		cached[k] = string(v)
		return true
	})
	rows := fetchKV(t, pool, table, "", cached)
	for k, v := range cached {
		if rows[k] != v {
			stale++
			if stale <= 5 {
				t.Logf("stale L1 entry %q = %q, table has %q", k, v, rows[k])
			}
		}
	}
	return len(cached), stale
}

// churn is plain SQL writers updating rows that RESP readers read through
// pgcache's L1. A read is stale when it returns a version older than one
// that had committed before the read was sent; its age is how long before.
type churn struct {
	addr, prefix string
	stop         chan struct{}
	wg           sync.WaitGroup

	mu      sync.Mutex
	commits [][]time.Time // per key, the commit time of each version (1-based)

	reads       atomic.Int64
	staleReads  atomic.Int64
	maxStaleAge atomic.Int64 // nanoseconds
	sqlErrors   atomic.Int64
	started     time.Time
	stale       []staleTick // by the 10ms tick the read was sent in, under mu
}

// staleTick counts the stale reads sent in one tick, and the oldest.
type staleTick struct {
	n      int
	maxAge time.Duration
}

// startChurn seeds keys c0..c{n-1} at version 0 and starts one SQL writer
// and two RESP readers.
func startChurn(t testing.TB, addr string, pool *pgxpool.Pool, table, prefix string, n int) *churn {
	t.Helper()
	ch := &churn{addr: addr, prefix: prefix, stop: make(chan struct{}), commits: make([][]time.Time, n), started: time.Now()}
	c := dialRESP(t, addr)
	for i := range n {
		if _, err := c.Do("SET", fmt.Sprintf("%sc%d", prefix, i), "0"); err != nil {
			t.Fatalf("seed churn: %v", err)
		}
	}
	c.Close()
	ch.wg.Go(func() { ch.write(pool, table, n) })
	for range 2 {
		ch.wg.Go(func() { ch.read(n) })
	}
	t.Cleanup(ch.Stop)
	return ch
}

func (ch *churn) write(pool *pgxpool.Pool, table string, n int) {
	for i := 0; ; i++ {
		select {
		case <-ch.stop:
			return
		case <-time.After(2 * time.Millisecond):
		}
		k := i % n
		ch.mu.Lock()
		ver := len(ch.commits[k]) + 1
		ch.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := pool.Exec(ctx, "UPDATE "+table+" SET value = $1 WHERE key = $2", strconv.Itoa(ver), fmt.Sprintf("c%d", k))
		cancel()
		if err != nil {
			// Down, or the outcome unknown: the same version is written
			// again next time, so a commit that did happen unrecorded
			// never makes a later read look stale.
			ch.sqlErrors.Add(1)
			continue
		}
		ch.mu.Lock()
		ch.commits[k] = append(ch.commits[k], time.Now())
		ch.mu.Unlock()
	}
}

func (ch *churn) read(n int) {
	var c *respConn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-ch.stop:
			return
		default:
		}
		if c == nil {
			var err error
			if c, err = dialRESPTimeout(ch.addr, 5*time.Second); err != nil {
				c = nil
				time.Sleep(10 * time.Millisecond)
				continue
			}
		}
		k := i % n
		sent := time.Now()
		v, err := c.Do("GET", fmt.Sprintf("%sc%d", ch.prefix, k))
		if err != nil {
			if _, ok := err.(errReply); !ok {
				c.Close()
				c = nil
			}
			time.Sleep(2 * time.Millisecond)
			continue
		}
		ch.reads.Add(1)
		ver, _ := strconv.Atoi(v)
		ch.mu.Lock()
		commits := ch.commits[k]
		var newer time.Time // the commit of the version after the one read
		if ver < len(commits) {
			newer = commits[ver]
		}
		ch.mu.Unlock()
		if !newer.IsZero() && newer.Before(sent) {
			age := sent.Sub(newer)
			ch.staleReads.Add(1)
			i := int(sent.Sub(ch.started) / tick)
			ch.mu.Lock()
			for len(ch.stale) <= i {
				ch.stale = append(ch.stale, staleTick{})
			}
			ch.stale[i].n++
			ch.stale[i].maxAge = max(ch.stale[i].maxAge, age)
			ch.mu.Unlock()
			for {
				old := ch.maxStaleAge.Load()
				if int64(age) <= old || ch.maxStaleAge.CompareAndSwap(old, int64(age)) {
					break
				}
			}
		}
	}
}

// staleBetween counts the stale reads sent in [from, to), to the tick,
// and the oldest.
func (ch *churn) staleBetween(from, to time.Time) (n int, maxAge time.Duration) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	lo, hi := int(from.Sub(ch.started)/tick), int(to.Sub(ch.started)/tick)
	for i := max(lo, 0); i < min(hi, len(ch.stale)); i++ {
		n += ch.stale[i].n
		maxAge = max(maxAge, ch.stale[i].maxAge)
	}
	return n, maxAge
}

// waitReads waits, bounded, until n more reads have been answered.
func (ch *churn) waitReads(t testing.TB, n int64, bound time.Duration) {
	t.Helper()
	target := ch.reads.Load() + n
	eventually(t, bound, "churn reads", func() bool { return ch.reads.Load() >= target })
}

// Stop stops the churn and waits for it; it may be called again.
func (ch *churn) Stop() {
	select {
	case <-ch.stop:
	default:
		close(ch.stop)
	}
	ch.wg.Wait()
}

// watcher records the L1 fence listener's state as INFO reports it, every
// 25ms, with when each state was first seen.
type watcher struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	changes []stateChange
}

type stateChange struct {
	at    time.Time // when the sample that saw the new state was answered
	state string
	// lastOld is when the last sample that still saw the previous state
	// was sent: the state changed after that.
	lastOld time.Time
}

func watchListener(t testing.TB, p *pgcache, backend string) *watcher {
	w := &watcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var c *respConn
		defer func() {
			if c != nil {
				c.Close()
			}
		}()
		last, lastSent := "", time.Time{}
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			if c == nil {
				var err error
				if c, err = dialRESPTimeout(p.resp, 5*time.Second); err != nil {
					c = nil
					continue
				}
			}
			sent := time.Now()
			reply, err := c.Do("INFO")
			if err != nil {
				c.Close()
				c = nil
				continue
			}
			state := "?"
			for _, line := range strings.Split(reply, "\r\n") {
				if v, ok := strings.CutPrefix(line, "l1_"+backend+"_listener:"); ok {
					state = v
				}
			}
			if state != last {
				w.mu.Lock()
				w.changes = append(w.changes, stateChange{at: time.Now(), state: state, lastOld: lastSent})
				w.mu.Unlock()
				last = state
			}
			lastSent = sent
		}
	}()
	t.Cleanup(w.Stop)
	return w
}

func (w *watcher) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// firstAfter is when the listener was first seen in a state other than
// (or, with is, in) state after at; the zero time if not yet.
func (w *watcher) firstAfter(at time.Time, state string, is bool) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.changes {
		if c.at.After(at) && (c.state == state) == is {
			return c.at
		}
	}
	return time.Time{}
}

// changedBefore is a time before which the listener had not yet entered
// state after at: when the last sample still seeing the previous state was
// sent. The zero time if it has not been seen in state since at.
func (w *watcher) changedBefore(at time.Time, state string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.changes {
		if c.at.After(at) && c.state == state {
			return c.lastOld
		}
	}
	return time.Time{}
}

// history renders the changes relative to t0.
func (w *watcher) history(t0 time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for _, c := range w.changes {
		parts = append(parts, fmt.Sprintf("%+.2fs %s", c.at.Sub(t0).Seconds(), c.state))
	}
	return strings.Join(parts, ", ")
}
