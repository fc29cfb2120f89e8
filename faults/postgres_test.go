package faults

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pgcache/pgcache/coherence"
	"github.com/pgcache/pgcache/internal/testenv"
)

// keepPostgresUp restarts the shared PostgreSQL at the end of a test that
// stopped it, should the test have failed before starting it again.
func keepPostgresUp(t *testing.T) {
	t.Cleanup(func() {
		if !pg.Running() {
			if err := pg.Start(); err != nil {
				t.Errorf("restart PostgreSQL for the next case: %v", err)
			}
		}
	})
}

// PostgreSQL stopped (fast: open transactions rolled back, clients
// disconnected) and started again under load. Requests fail while it is
// down, with an error, and only then; pgcache recovers by itself, without
// a restart; no acknowledged write is lost and L1 holds nothing stale.
func TestPostgresFastRestart(t *testing.T) {
	leakCheck(t)
	keepPostgresUp(t)
	r := startRig(t, pg, "faults_restart", rigConfig(pg.DSN(), "faults_restart", ""))

	stopped := time.Now()
	if err := pg.Shutdown(testenv.ShutdownFast); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	r.load.waitFailed(t, 50, 20*time.Second)
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	var recovered time.Time
	eventually(t, 30*time.Second, "requests succeed again", func() bool {
		recovered = r.load.firstOKAfter(up)
		return !recovered.IsZero()
	})
	r.load.waitOK(t, 1000, 30*time.Second)
	online := r.watch.firstAfter(up, "online", true)
	if online.IsZero() {
		r.waitOnline(60 * time.Second)
		online = time.Now()
	}
	settled := time.Now()
	r.load.waitOK(t, 1000, 30*time.Second)
	v := r.verify()

	first, last := r.load.failureSpan()
	if first.Before(stopped) {
		t.Errorf("a request failed %v before PostgreSQL was stopped", stopped.Sub(first))
	}
	if n := r.load.failedBetween(settled, time.Now()); n > 0 {
		t.Errorf("%d requests failed after recovery", n)
	}
	t.Logf("errors:\n%s", r.load.errorSummary())
	t.Logf("listener: %s", r.watch.history(stopped))
	figure(t, "pg fast restart: down %.2fs (stop %.2fs); first success %.2fs after PostgreSQL accepted connections; "+
		"failed requests %d (from %+.2fs to %+.2fs after the stop; %d sent after it was up); "+
		"L1 online %.2fs after it was up; acked writes %d, lost %d; L1 entries %d, stale %d",
		up.Sub(stopped).Seconds(), down.Sub(stopped).Seconds(), recovered.Sub(up).Seconds(),
		v.failed, first.Sub(stopped).Seconds(), last.Sub(stopped).Seconds(), r.load.failedBetween(up, time.Now()),
		online.Sub(up).Seconds(), v.acked, v.lost, v.entries, v.stale)
}

// PostgreSQL crashes (immediate stop: no checkpoint; the next start runs
// recovery and empties every UNLOGGED table, the fence log included).
// pgcache keeps serving the routes that do not need PostgreSQL, recovers
// the others by itself; standard-durability acknowledged writes survive,
// and L1 never serves a row the crash erased.
func TestPostgresCrash(t *testing.T) {
	leakCheck(t)
	keepPostgresUp(t)
	pool := pg.Pool(t)
	const unlogged, async = "faults_crash_unlogged", "faults_crash_async"
	for _, tbl := range []string{unlogged, async} {
		testenv.Exec(t, pool, "DROP TABLE IF EXISTS "+tbl)
	}
	r := startRig(t, pg, "faults_crash", rigConfig(pg.DSN(), "faults_crash", `
  - {name: unlogged, prefix: "u:", backend: pg, table: `+unlogged+`, durability: unlogged, l1: {max_bytes: 8MiB}}
  - {name: async, prefix: "a:", backend: pg, table: `+async+`, durability: async}
`))
	loads := map[string]*load{
		"unlogged": startLoad(t, r.p.resp, loadOptions{prefix: "u:", writers: 2}),
		"async":    startLoad(t, r.p.resp, loadOptions{prefix: "a:", writers: 2}),
		"memory":   startLoad(t, r.p.resp, loadOptions{prefix: "m:", writers: 1, readers: 1}),
	}
	for _, l := range loads {
		l.waitOK(t, 200, 20*time.Second)
	}
	// A row of the UNLOGGED table, held in L1: the crash erases it.
	c := dialRESP(t, r.p.resp)
	if _, err := c.Do("SET", "u:erased", "before the crash"); err != nil {
		t.Fatal(err)
	}
	// A write fences its key twice: at once, and again when its own
	// notification comes back; it is held from the read after that on.
	tier := r.p.tier(t, "unlogged")
	eventually(t, 10*time.Second, "u:erased served from L1", func() bool {
		hits := tier.Stats.Hits.Load()
		v, err := c.Do("GET", "u:erased")
		if err != nil || v != "before the crash" {
			t.Fatalf("GET u:erased = %q, %v", v, err)
		}
		return tier.Stats.Hits.Load() > hits
	})

	crashed := time.Now()
	if err := pg.Shutdown(testenv.ShutdownImmediate); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	r.load.waitFailed(t, 50, 20*time.Second)
	loads["memory"].waitOK(t, 200, 20*time.Second) // it needs no PostgreSQL
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	var recovered time.Time
	eventually(t, 30*time.Second, "requests succeed again", func() bool {
		recovered = r.load.firstOKAfter(up)
		return !recovered.IsZero()
	})
	r.waitOnline(60 * time.Second)
	online := time.Now()
	for _, l := range loads {
		l.waitOK(t, 200, 30*time.Second)
	}
	// L1 is in use again, and does not serve the row the crash erased.
	for range 2 {
		if v, err := c.Do("GET", "u:erased"); err != nil || v != "" {
			t.Errorf("GET u:erased after the crash = %q, %v; want nil (UNLOGGED rows are gone)", v, err)
		}
	}

	// Writes acknowledged before PostgreSQL went down may be lost where
	// the durability allows it; none acknowledged after it came back may.
	lost := map[string]int{}
	acked := map[string]int{}
	for route, tbl := range map[string]string{"unlogged": unlogged, "async": async} {
		l := loads[route]
		l.Stop()
		a := l.ackedWrites()
		keys := lostWrites(a, fetchKV(t, pool, tbl, l.prefix, a))
		before, after := l.ackedBefore(keys, down)
		lost[route], acked[route] = before, len(a)
		if after > 0 {
			t.Errorf("route %s: %d writes acknowledged after the restart are lost", route, after)
		}
	}
	if n := loads["memory"].failed.Load(); n > 0 {
		t.Errorf("the memory route failed %d requests while PostgreSQL was down:\n%s", n, loads["memory"].errorSummary())
	}
	v := r.verify()
	t.Logf("errors:\n%s", r.load.errorSummary())
	t.Logf("listener: %s", r.watch.history(crashed))
	figure(t, "pg crash: down %.2fs (crash recovery included); first success %.2fs after it accepted connections; "+
		"L1 online %.2fs after; failed requests %d (memory route: %d); acked writes lost: standard %d of %d, "+
		"async %d of %d, unlogged %d of %d (none acknowledged after the restart); L1 entries %d, stale %d",
		up.Sub(crashed).Seconds(), recovered.Sub(up).Seconds(), online.Sub(up).Seconds(), v.failed,
		loads["memory"].failed.Load(), v.lost, v.acked, lost["async"], acked["async"],
		lost["unlogged"], acked["unlogged"], v.entries, v.stale)
}

// The LISTEN connection killed by the server (pg_terminate_backend) under
// load: L1 is bypassed until a new connection has proven itself, no client
// request fails (the LISTEN connection is not the pool's), and nothing
// stale stays in L1.
func TestListenConnectionKilled(t *testing.T) {
	leakCheck(t)
	r := startRig(t, pg, "faults_killed", rigConfig(pg.DSN(), "faults_killed", ""))
	reconnects := r.p.info(t)["l1_pg_listener_reconnects"]
	bypassedBefore := r.p.tier(t, "kv").Stats.Bypassed.Load()

	killed := time.Now()
	var n int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN `+coherence.Channel+`' AND pid <> pg_backend_pid()`).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("terminate the LISTEN connection: %d terminated, %v; want 1", n, err)
	}
	eventually(t, 30*time.Second, "the listener reconnects", func() bool {
		return r.p.info(t)["l1_pg_listener_reconnects"] != reconnects
	})
	r.waitOnline(30 * time.Second)
	online := time.Now()
	offline := r.watch.firstAfter(killed, "online", false)
	r.load.waitOK(t, 500, 20*time.Second)
	bypassed := r.p.tier(t, "kv").Stats.Bypassed.Load() - bypassedBefore
	v := r.verify()
	if v.failed > 0 {
		t.Errorf("%d client requests failed; the LISTEN connection is not theirs:\n%s", v.failed, r.load.errorSummary())
	}
	t.Logf("listener: %s", r.watch.history(killed))
	figure(t, "LISTEN connection killed: L1 off at %+.3fs, online again %.2fs after the kill; reads bypassing L1 meanwhile %d; "+
		"client errors %d; acked writes %d, lost %d; L1 entries %d, stale %d; stale reads %d (max age %v)",
		secondsAfter(offline, killed), online.Sub(killed).Seconds(), bypassed, v.failed, v.acked, v.lost, v.entries, v.stale,
		v.staleReads, v.maxStaleAge.Round(time.Millisecond))
}

// The LISTEN connection half-open: a Link between pgcache and PostgreSQL
// stops forwarding that one connection without closing it, so neither end
// learns anything. Only the canary can notice: one not back within
// DeadAfter turns L1 off and replaces the connection. Until then, L1 may
// serve what other writers changed; after, reads are correct again, and
// no client request fails (the pool's connections are not stalled).
func TestListenConnectionHalfOpen(t *testing.T) {
	leakCheck(t)
	link, err := NewLink(fmt.Sprintf("127.0.0.1:%d", pg.Port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	dsn := fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", pg.User, link.Addr(), pg.Database)
	r := startRig(t, pg, "faults_halfopen", rigConfig(dsn, "faults_halfopen", ""))
	bypassedBefore := r.p.tier(t, "kv").Stats.Bypassed.Load()

	stalled := time.Now()
	if n := link.Stall(func(heard []byte) bool { return bytes.Contains(heard, []byte("LISTEN "+coherence.Channel)) }); n != 1 {
		t.Fatalf("stalled %d connections, want the one LISTEN connection", n)
	}
	bound := coherence.DefaultDeadAfter + coherence.DefaultPingInterval + 5*time.Second
	eventually(t, bound, "L1 off after a canary is overdue", func() bool { return r.p.listener(t, "pg") != "online" })
	detected := r.watch.firstAfter(stalled, "online", false)
	if detected.IsZero() {
		detected = time.Now()
	}
	r.waitOnline(30 * time.Second)
	online := time.Now()
	r.load.waitOK(t, 500, 20*time.Second)
	bypassed := r.p.tier(t, "kv").Stats.Bypassed.Load() - bypassedBefore
	if bypassed == 0 {
		t.Error("no read bypassed L1 while the listener was off")
	}
	// The abandoned session is still in PostgreSQL, LISTENing: to the
	// server it is an idle client, until TCP keepalives (hours, by
	// default) say otherwise. It reads nothing, so it pins the NOTIFY
	// queue meanwhile.
	var listening int
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN `+coherence.Channel+`'`).Scan(&listening); err != nil {
		t.Fatal(err)
	}
	usage := queueUsage(t, r.pool)
	v := r.verify()
	if v.failed > 0 {
		t.Errorf("%d client requests failed:\n%s", v.failed, r.load.errorSummary())
	}
	// The reads sent after the listener was seen off and before it went
	// online again all bypassed L1. Those sent between its going online
	// and this test's noticing may meet the usual fence lag: the window
	// ends where the watcher last saw it off.
	off := r.watch.changedBefore(detected, "online")
	if off.IsZero() {
		off = online
	}
	before, beforeAge := r.churn.staleBetween(time.Time{}, stalled)
	window, windowAge := r.churn.staleBetween(stalled, detected)
	if n, age := r.churn.staleBetween(detected.Add(tick), off); n > 0 {
		t.Errorf("%d stale reads (up to %v old) while L1 was off", n, age)
	}
	after, afterAge := r.churn.staleBetween(off, time.Now())
	t.Logf("listener: %s", r.watch.history(stalled))
	figure(t, "LISTEN connection half-open: L1 off %.2fs after the stall (DeadAfter %v, canary every %v), online again %.2fs after; "+
		"reads bypassing L1 %d; stale reads (a version older than one committed before the read was sent): before the stall %d (max age %v), "+
		"stall to detection %d (max age %v), while off 0, after %d (max age %v); client errors %d; acked writes %d, lost %d; "+
		"L1 entries %d, stale %d; connections the link held %d; sessions LISTENing in PostgreSQL after the reconnect %d "+
		"(the abandoned one stays, and pins the NOTIFY queue: usage %.2g)",
		detected.Sub(stalled).Seconds(), coherence.DefaultDeadAfter, coherence.DefaultPingInterval, online.Sub(stalled).Seconds(),
		bypassed, before, beforeAge.Round(time.Millisecond), window, windowAge.Round(time.Millisecond), after, afterAge.Round(time.Millisecond),
		v.failed, v.acked, v.lost, v.entries, v.stale, link.Conns(), listening, usage)
}

// secondsAfter is at - t0 in seconds, or NaN when at is zero (not seen).
func secondsAfter(at, t0 time.Time) float64 {
	if at.IsZero() || at.Unix() <= 0 {
		return -1
	}
	return at.Sub(t0).Seconds()
}
