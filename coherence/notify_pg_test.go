package coherence

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/backendtest"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/coherence/fence"
	"github.com/pgcache/pgcache/internal/testenv"
)

// tierOn is one pgcache's coherence and L1 tier over the route spec, with
// its triggers attached, online.
func tierOn(t *testing.T, spec backends.RouteSpec) *instance {
	t.Helper()
	return instanceOn(t, spec, 100*time.Millisecond)
}

type reports = backendtest.Reports

func keysAre(ks ...string) func(backends.Outside) bool { return backendtest.KeysAre("postgres", ks...) }

func isAll(o backends.Outside) bool {
	return o.All && !o.Lost && o.Keys == nil && o.Source == "postgres"
}
func isLost(o backends.Outside) bool {
	return o.Lost && o.All && o.Keys == nil && o.Source == "postgres"
}

// pgNow is PostgreSQL's clock.
func pgNow(t *testing.T, i *instance) time.Time {
	t.Helper()
	var now time.Time
	if err := i.coord.Pool().QueryRow(context.Background(), "SELECT clock_timestamp()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// TestTierNotifiesKV: on a kv table, plain SQL's UPDATE and DELETE are
// reported as their keys, with the relay's time between the write and the
// report by PostgreSQL's clock; TRUNCATE as All; a write by a second
// pgcache instance as its key; and nothing once cancelled.
func TestTierNotifiesKV(t *testing.T) {
	p := pg.Pool(t)
	spec := backends.RouteSpec{Name: "nkv", Table: "notify_kv", Durability: "unlogged"}
	a := tierOn(t, spec)
	if !a.tier.Watching() {
		t.Fatal("an online tier is not Watching")
	}
	tok := a.coord.Fences.Token()
	testenv.Exec(t, p, `INSERT INTO notify_kv VALUES ('k1', 'v', 'infinity'), ('k2', 'v', 'infinity'), ('we"ird key', 'v', 'infinity')`)
	fenced(t, a.coord.Fences, tok, "public.notify_kv", "k1") // before Notify: not reported
	r := make(reports, 1000)
	cancel := a.tier.Notify(r.Fn)
	defer cancel()

	before := pgNow(t, a)
	testenv.Exec(t, p, `UPDATE notify_kv SET value = 'w' WHERE key = 'k1'`)
	o := r.Next(t, "UPDATE", keysAre("k1"))
	if after := pgNow(t, a); o.At.Before(before) || o.At.After(after) {
		t.Errorf("At = %v, not between the UPDATE (%v) and its report (%v)", o.At, before, after)
	}
	testenv.Exec(t, p, `DELETE FROM notify_kv WHERE key = 'k2'`)
	r.Next(t, "DELETE", keysAre("k2"))
	testenv.Exec(t, p, `UPDATE notify_kv SET value = 'w' WHERE key = 'we"ird key'`)
	r.Next(t, "a key with a quote", keysAre(`we"ird key`))
	testenv.Exec(t, p, `TRUNCATE notify_kv`)
	r.Next(t, "TRUNCATE", isAll)

	b := tierOn(t, spec)
	if _, err := b.tier.Set(context.Background(), "from b", []byte("v"), backends.SetOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Next(t, "a second instance's SET", keysAre("from b"))

	cancel()
	testenv.Exec(t, p, `UPDATE notify_kv SET value = 'x'`)
	// A fence recorded after the UPDATE's shows the UPDATE's was handled.
	tok = a.coord.Fences.Token()
	testenv.Exec(t, p, `INSERT INTO notify_kv VALUES ('marker', 'v', 'infinity')`)
	fenced(t, a.coord.Fences, tok, "public.notify_kv", "marker")
	if len(r) != 0 {
		t.Fatalf("%d reports after cancel: %+v", len(r), <-r)
	}
}

// relayPair starts two instances over spec and returns the one whose
// relay became active first, and the other.
func relayPair(t *testing.T, spec backends.RouteSpec) (relay, standby *instance) {
	t.Helper()
	a, b := tierOn(t, spec), tierOn(t, spec)
	waitFor(t, "a relay active", func() bool { return a.coord.Relay.Stats.Active.Load() || b.coord.Relay.Stats.Active.Load() })
	if !a.coord.Relay.Stats.Active.Load() {
		return b, a
	}
	return a, b
}

// TestRelayAppliesItsDrainsLocally: the instance whose relay drains a
// fence applies it as the drain takes it, and skips the NOTIFY that
// brings it back; another instance applies it from the NOTIFY. Each
// reports the write once.
func TestRelayAppliesItsDrainsLocally(t *testing.T) {
	p := pg.Pool(t)
	local, remote := relayPair(t, backends.RouteSpec{Name: "lkv", Table: "local_kv", Durability: "unlogged"})
	testenv.Exec(t, p, `INSERT INTO local_kv VALUES ('k', 'v', 'infinity')`)
	lr, rr := make(reports, 100), make(reports, 100)
	defer local.tier.Notify(lr.Fn)()
	defer remote.tier.Notify(rr.Fn)()
	ls, rs := &local.coord.Listener.Stats, &remote.coord.Listener.Stats
	// Earlier fences (the INSERT's) have come back before the counts are
	// read: a canary is published after every fence logged before it.
	proven := func(i *instance) time.Time { return i.coord.Listener.Proven() }
	since := pgNow(t, local)
	waitFor(t, "canaries after the INSERT", func() bool { return proven(local).After(since) && proven(remote).After(since) })
	for len(lr)+len(rr) > 0 {
		select {
		case <-lr:
		case <-rr:
		}
	}
	localBefore, keyFences := ls.LocalFences.Load(), local.coord.Fences.Stats.KeyFences.Load()

	testenv.Exec(t, p, `UPDATE local_kv SET value = 'w' WHERE key = 'k'`)
	lr.Next(t, "the relay's instance", keysAre("k"))
	rr.Next(t, "the other instance", keysAre("k"))
	if got := ls.LocalFences.Load() - localBefore; got != 1 {
		t.Fatalf("the relay's instance applied %d notifications of its own drains, want 1", got)
	}
	waitFor(t, "the echo", func() bool { return ls.Echoes.Load() == ls.LocalFences.Load() })
	if got := local.coord.Fences.Stats.KeyFences.Load() - keyFences; got != 1 {
		t.Errorf("the relay's instance fenced %d keys for one UPDATE, want 1", got)
	}
	if len(lr) != 0 {
		t.Errorf("the relay's instance reported the UPDATE again: %+v", <-lr)
	}
	if rs.LocalFences.Load() != 0 || rs.Echoes.Load() != 0 {
		t.Errorf("the standby's listener applied %d local fences and skipped %d echoes, want 0 and 0", rs.LocalFences.Load(), rs.Echoes.Load())
	}
}

// TestWatchAfterOwnWrite: a WATCH token taken right after this instance's
// own write is not raised when that write's fence comes back through the
// log (the EXEC it guards would abort with no write in between), on the
// relay's instance and on a standby's, while a write after the token
// still raises it.
func TestWatchAfterOwnWrite(t *testing.T) {
	p := pg.Pool(t)
	relay, standby := relayPair(t, backends.RouteSpec{Name: "wkv", Table: "watch_own_kv", Durability: "unlogged"})
	ctx := context.Background()
	// The fences of the writes so far have come back to i once a canary
	// it sent after them has.
	settled := func(i *instance) {
		t.Helper()
		since := pgNow(t, i)
		waitFor(t, "a canary after the writes", func() bool { return i.coord.Listener.Proven().After(since) })
	}
	for _, c := range []struct {
		name string
		i    *instance
	}{{"the relay's instance", relay}, {"a standby's instance", standby}} {
		for round := range 3 {
			if _, err := c.i.tier.Set(ctx, "k", []byte(fmt.Sprint("v", round)), backends.SetOptions{}); err != nil {
				t.Fatal(err)
			}
			tok := c.i.tier.WatchToken(ctx, "k")
			settled(c.i)
			if c.i.tier.ChangedSince("k", tok) {
				t.Fatalf("%s, round %d: the fence of a write made before the WATCH token counted as a change after it", c.name, round)
			}
		}
		tok := c.i.tier.WatchToken(ctx, "k")
		testenv.Exec(t, p, `UPDATE watch_own_kv SET value = 'sql' WHERE key = 'k'`)
		settled(c.i)
		if !c.i.tier.ChangedSince("k", tok) {
			t.Fatalf("%s: a write by plain SQL after the token is not seen", c.name)
		}
	}
}

// TestWatchSMoveKeepsDestination: an SMOVE of a member the destination
// has already leaves the destination as it was, so a WATCH of it is not
// raised (Redis's "SMOVE only notify dstset when the addition is
// successful"), while the source it took the member from is; an SMOVE that
// adds the member raises both.
func TestWatchSMoveKeepsDestination(t *testing.T) {
	i := tierOn(t, backends.RouteSpec{Name: "wsm", Table: "watch_smove_kv", Durability: "unlogged"})
	ctx := context.Background()
	do := func(parse func([][]byte) (coll.Command, error), req string, keys ...string) {
		t.Helper()
		op, err := parse(coll.Args(req))
		if err == nil {
			err = i.tier.Do(ctx, keys, op)
		}
		if err != nil {
			t.Fatalf("%s: %v", req, err)
		}
	}
	do(coll.ParseSAdd, "sadd src a b", "src")
	do(coll.ParseSAdd, "sadd dst a", "dst")
	src, dst := i.tier.WatchToken(ctx, "src"), i.tier.WatchToken(ctx, "dst")
	do(coll.ParseSMove, "smove src dst a", "src", "dst")
	if i.tier.ChangedSince("dst", dst) {
		t.Error("an SMOVE of a member the destination had raised the destination's WATCH")
	}
	if !i.tier.ChangedSince("src", src) {
		t.Error("an SMOVE did not raise its source's WATCH")
	}
	dst = i.tier.WatchToken(ctx, "dst")
	do(coll.ParseSMove, "smove src dst b", "src", "dst")
	if !i.tier.ChangedSince("dst", dst) {
		t.Error("an SMOVE that added a member did not raise the destination's WATCH")
	}
}

// TestTierNotifiesSourceTable: on a source table, a row's key is reported
// as the route's canonical spelling of it (the one the route reads back as
// that row); a key it cannot spell so (a text key that reads as JSON)
// becomes All rather than being dropped; TRUNCATE is All.
func TestTierNotifiesSourceTable(t *testing.T) {
	p := pg.Pool(t)
	testenv.Exec(t, p, `CREATE TABLE notify_rows (id int PRIMARY KEY, v text)`)
	testenv.Exec(t, p, `CREATE TABLE notify_pairs (a int, b text, v text, PRIMARY KEY (a, b))`)
	testenv.Exec(t, p, `CREATE TABLE notify_named (name text PRIMARY KEY, v text)`)
	testenv.Exec(t, p, `INSERT INTO notify_rows VALUES (42, 'a'), (7, 'b')`)
	testenv.Exec(t, p, `INSERT INTO notify_pairs VALUES (1, 'x', 'a')`)
	testenv.Exec(t, p, `INSERT INTO notify_named VALUES ('plain', 'a'), ('[x]', 'b'), ('"q"', 'c')`)
	rows := tierOn(t, backends.RouteSpec{Name: "rows", SourceTable: "public.notify_rows"})
	pairs := tierOn(t, backends.RouteSpec{Name: "pairs", SourceTable: "public.notify_pairs"})
	named := tierOn(t, backends.RouteSpec{Name: "named", SourceTable: "public.notify_named"})
	rr, pr, nr := make(reports, 100), make(reports, 100), make(reports, 100)
	defer rows.tier.Notify(rr.Fn)()
	defer pairs.tier.Notify(pr.Fn)()
	defer named.tier.Notify(nr.Fn)()

	ctx := context.Background()
	// The route reads the reported key back as the row.
	if v, ok, err := rows.tier.Get(ctx, "42"); err != nil || !ok {
		t.Fatalf("Get 42: %q %v %v", v, ok, err)
	}
	for _, tc := range []struct {
		name string
		r    reports
		sql  string
		want func(backends.Outside) bool
	}{
		{"int UPDATE", rr, `UPDATE notify_rows SET v = 'z' WHERE id = 42`, keysAre("42")},
		{"int DELETE", rr, `DELETE FROM notify_rows WHERE id = 7`, keysAre("7")},
		{"composite UPDATE", pr, `UPDATE notify_pairs SET v = 'z' WHERE a = 1`, keysAre(`[1,"x"]`)},
		{"text UPDATE", nr, `UPDATE notify_named SET v = 'z' WHERE name = 'plain'`, keysAre("plain")},
		{"text that reads as an array", nr, `UPDATE notify_named SET v = 'z' WHERE name = '[x]'`, isAll},
		{"text that reads as a string", nr, `UPDATE notify_named SET v = 'z' WHERE name = '"q"'`, isAll},
		{"TRUNCATE", rr, `TRUNCATE notify_rows`, isAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Exec(t, p, tc.sql)
			tc.r.Next(t, tc.name, tc.want)
		})
	}
	// The other tables' tiers heard nothing of notify_rows.
	for _, r := range []reports{pr, nr} {
		for len(r) > 0 {
			if o := <-r; slices.Contains(o.Keys, "42") || slices.Contains(o.Keys, "7") {
				t.Errorf("another table's tier told of notify_rows: %+v", o)
			}
		}
	}
}

// TestTierNotifiesLost: the LISTEN connection killed is reported as Lost,
// with Watching false; back online, Watching is true, an All follows, and
// writes are reported by key again.
func TestTierNotifiesLost(t *testing.T) {
	p := pg.Pool(t)
	a := tierOn(t, backends.RouteSpec{Name: "lost", Table: "notify_lost", Durability: "unlogged"})
	r := make(reports, 1000)
	var watchingAtLost atomic.Int32 // 1: false, 2: true
	defer a.tier.Notify(func(o backends.Outside) {
		if o.Lost {
			// On the listener's goroutine, which alone brings fences back
			// online: what Watching says here is what it said at Lost.
			watchingAtLost.Store(map[bool]int32{false: 1, true: 2}[a.tier.Watching()])
		}
		r.Fn(o)
	})()
	if !a.tier.Watching() {
		t.Fatal("an online tier is not Watching")
	}
	testenv.Exec(t, p, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`)
	r.Next(t, "connection killed", isLost)
	if got := watchingAtLost.Load(); got != 1 {
		t.Fatalf("Watching when Lost was sent: %v, want false", got == 2)
	}
	// Watching went false before Lost was sent; it may be back by now, so
	// look at it only through the All that comes with it.
	r.Next(t, "online again", isAll)
	if !a.tier.Watching() {
		t.Fatal("Watching is false after the All of coming online")
	}
	testenv.Exec(t, p, `INSERT INTO notify_lost VALUES ('k', 'v', 'infinity')`)
	r.Next(t, "a write after the reconnect", keysAre("k"))
}

// TestTierNotifyRace: a tier read races a fence, deterministically. The
// property: when the Outside naming the key is delivered, the fence is
// already recorded, so the raced read's token is refused (its value is
// never cached and never served again), and a read that starts after the
// Outside returns the new value. Together with the proxy's order (a read
// registers its key before it reads), a client that cached the raced
// value is told to drop it.
func TestTierNotifyRace(t *testing.T) {
	p := pg.Pool(t)
	a := tierOn(t, backends.RouteSpec{Name: "race", Table: "notify_race", Durability: "unlogged"})
	tok := a.coord.Fences.Token()
	testenv.Exec(t, p, `INSERT INTO notify_race VALUES ('k', 'old', 'infinity')`)
	fenced(t, a.coord.Fences, tok, "public.notify_race", "k") // before Notify: not reported
	f, tbl := a.coord.Fences, a.coord.Fences.Table("public.notify_race")
	h, err := a.tier.hash("k")
	if err != nil {
		t.Fatal(err)
	}

	type seen struct {
		out        backends.Outside
		tokenValid bool // the raced read's token, as the fences judged it when the Outside ran
	}
	got := make(chan seen, 100)
	var readTok atomic.Uint64
	paused, resume := make(chan struct{}), make(chan struct{})
	hook := func(key string) {
		a.tier.mu.Lock()
		readTok.Store(uint64(a.tier.flights[key].tok))
		a.tier.mu.Unlock()
		close(paused)
		<-resume
	}
	a.reads.afterGet.Store(&hook)
	defer a.tier.Notify(func(o backends.Outside) {
		got <- seen{out: o, tokenValid: f.Valid(fence.Token(readTok.Load()), tbl, h)}
	})()
	read := make(chan string)
	go func() {
		v, _, err := a.tier.Get(context.Background(), "k")
		if err != nil {
			t.Error(err)
		}
		read <- string(v)
	}()
	<-paused // the read has its value, not yet cached
	testenv.Exec(t, p, `UPDATE notify_race SET value = 'new' WHERE key = 'k'`)
	var s seen
	select {
	case s = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("no Outside for the UPDATE")
	}
	if !keysAre("k")(s.out) {
		t.Fatalf("Outside = %+v, want key k", s.out)
	}
	if s.tokenValid {
		t.Fatal("the Outside ran before the fence was recorded: the raced read could still fill")
	}
	if v, _, _ := a.tier.Backend.Get(context.Background(), "k"); string(v) != "new" {
		t.Fatalf("PostgreSQL has %q", v)
	}
	a.reads.afterGet.Store(nil)
	close(resume)
	if v := <-read; v != "old" {
		t.Fatalf("the raced read = %q, want old (what it read)", v)
	}
	if n := a.tier.Stats.FillsFenced.Load(); n != 1 {
		t.Fatalf("fills fenced = %d, want 1: the raced value was cached", n)
	}
	if v, _, _ := a.tier.Get(context.Background(), "k"); string(v) != "new" {
		t.Fatalf("a read after the Outside = %q, want new", v)
	}

	// The other order: the read fills first, then the write. The entry is
	// refused from the fence on, and the Outside follows.
	if v, _, _ := a.tier.Get(context.Background(), "k"); string(v) != "new" {
		t.Fatalf("cached read = %q", v)
	}
	hits := a.tier.Stats.Hits.Load()
	if v, _, _ := a.tier.Get(context.Background(), "k"); string(v) != "new" || a.tier.Stats.Hits.Load() != hits+1 {
		t.Fatalf("not served from L1: %q", v)
	}
	testenv.Exec(t, p, `UPDATE notify_race SET value = 'newer' WHERE key = 'k'`)
	select {
	case s = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("no Outside for the second UPDATE")
	}
	if !keysAre("k")(s.out) {
		t.Fatalf("Outside = %+v, want key k", s.out)
	}
	if v, _, _ := a.tier.Get(context.Background(), "k"); string(v) != "newer" {
		t.Fatalf("a read after the Outside = %q, want newer", v)
	}
}

// TestFenceTimes: with either trigger, a fence's At is the time the
// trigger logged it, within the writing statement and before its commit,
// not the later time the relay took it from the log. (No drain runs while
// the transaction waits: canaries are 10 s apart, and a drain that took
// rows would raise At, see TestFenceTimeAfterEarlierDrain.)
func TestFenceTimes(t *testing.T) {
	p := pg.Pool(t)
	ctx := context.Background()
	fns := []TriggerFunc{TriggerC, TriggerPLpgSQL}
	for _, fn := range fns {
		testenv.Exec(t, p, `CREATE TABLE ftime_`+string(fn)+` (k int PRIMARY KEY, v int)`)
		if got, err := AttachUsing(ctx, p, "ftime_"+string(fn), fn); err != nil || got != fn {
			t.Fatalf("attach with %s: %q, %v", fn, got, err)
		}
	}
	c := startCoordinator(t, p, CoordinatorOptions{ListenerOptions: ListenerOptions{PingInterval: 10 * time.Second}})
	for _, fn := range fns {
		t.Run(string(fn), func(t *testing.T) {
			table := "public.ftime_" + string(fn)
			notes := make(chan fenceNote, 10)
			defer c.Fences.watch(table, func(n fenceNote) { notes <- n })()
			tx, err := p.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			var before, during time.Time
			if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&before); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` VALUES (1, 0)`); err != nil {
				t.Fatal(err)
			}
			// The commit comes a while after the write: a drain's time
			// would be after it.
			if err := tx.QueryRow(ctx, `SELECT clock_timestamp() FROM pg_sleep(0.2)`).Scan(&during); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case n := <-notes:
				if !slices.Equal(n.keys, []string{"1"}) {
					t.Fatalf("fence on %v, want key 1", n.keys)
				}
				if n.at.Before(before) || !n.at.Before(during) {
					t.Fatalf("At %v, want within the INSERT (after %v, before %v)", n.at, before, during)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no fence within 20s")
			}
		})
	}
}

// TestFenceTimeAfterEarlierDrain: a fence whose transaction stayed open
// across a drain gets that drain's start as its time, not its trigger's:
// it cannot have committed before a drain that took everything it saw.
func TestFenceTimeAfterEarlierDrain(t *testing.T) {
	p := pg.Pool(t)
	ctx := context.Background()
	testenv.Exec(t, p, `CREATE TABLE ftime_open (k int PRIMARY KEY, v int)`)
	if err := Attach(ctx, p, "ftime_open"); err != nil {
		t.Fatal(err)
	}
	c := startCoordinator(t, p, CoordinatorOptions{ListenerOptions: ListenerOptions{PingInterval: 10 * time.Second}})
	notes := make(chan fenceNote, 10)
	defer c.Fences.watch("public.ftime_open", func(n fenceNote) { notes <- n })()
	next := func(key string) fenceNote {
		t.Helper()
		for {
			select {
			case n := <-notes:
				if slices.Equal(n.keys, []string{key}) {
					return n
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no fence on %s within 20s", key)
			}
		}
	}
	tx, err := p.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var logged time.Time
	if err := tx.QueryRow(ctx, `INSERT INTO ftime_open VALUES (1, 0) RETURNING clock_timestamp()`).Scan(&logged); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	// Another write, drained while the first transaction is open: the
	// drain starts at least 100 ms after the first fence was logged.
	testenv.Exec(t, p, `INSERT INTO ftime_open VALUES (2, 0)`)
	next("2")
	// Empty drains come between (every 5 ms): they keep the floor.
	time.Sleep(30 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	n := next("1")
	var now time.Time
	if err := p.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	if n.at.Before(logged.Add(90*time.Millisecond)) || n.at.After(now) {
		t.Fatalf("At %v: want after the drain that took key 2 (logged %v, +100 ms) and before %v", n.at, logged, now)
	}
}

// TestFenceLogGetsAt: Setup adds at to a log without it (as older builds
// made it), and both triggers keep logging whatever the log's columns: a
// dropped column is skipped, and rows logged without at are read as NULL.
func TestFenceLogGetsAt(t *testing.T) {
	p := pg.Pool(t)
	ctx := context.Background()
	if err := Setup(ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.Exec(t, p, `CREATE TABLE fat (k int PRIMARY KEY, v int)`)
	testenv.Exec(t, p, `CREATE TABLE fat_pl (k int PRIMARY KEY, v int)`)
	if _, err := AttachUsing(ctx, p, "fat", TriggerC); err != nil {
		t.Fatal(err)
	}
	if _, err := AttachUsing(ctx, p, "fat_pl", TriggerPLpgSQL); err != nil {
		t.Fatal(err)
	}
	hasAt := func() bool {
		var ok bool
		if err := p.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_attribute WHERE attrelid = '`+Schema+`.fence_log'::regclass
			AND attname = 'at' AND NOT attisdropped)`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !hasAt() {
		t.Fatal("Setup made a log without at")
	}
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// timed returns whether each row the statements log has a time.
	timed := func(stmts ...string) []bool {
		t.Helper()
		var got []bool
		loggedBy(t, conn, func(tx pgx.Tx) {
			before, err := pgx.CollectRows(mustQuery(t, tx, `SELECT ctid::text FROM `+Schema+`.fence_log`), pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			before = append([]string{}, before...) // never NULL: <> ALL(NULL) is no row
			for _, s := range stmts {
				if _, err := tx.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			col := "NULL::timestamptz"
			if hasAt() {
				col = "at"
			}
			got, err = pgx.CollectRows(mustQuery(t, tx, `SELECT `+col+` IS NOT NULL FROM `+Schema+`.fence_log
				WHERE ctid::text <> ALL($1) ORDER BY ctid`, before), pgx.RowTo[bool])
			if err != nil {
				t.Fatal(err)
			}
		})
		return got
	}
	writes := []string{`INSERT INTO fat VALUES (1, 0)`, `INSERT INTO fat_pl VALUES (1, 0)`}
	if got := timed(writes...); !slices.Equal(got, []bool{true, true}) {
		t.Fatalf("rows timed: %v, want both", got)
	}
	// A log as older builds made it: without at (dropped here, so the C
	// trigger also meets a dropped column).
	testenv.Exec(t, p, `ALTER TABLE `+Schema+`.fence_log DROP COLUMN at`)
	// (timed's writes are rolled back: the same INSERTs again.)
	if got := timed(writes...); len(got) != 2 {
		t.Fatalf("rows logged without at: %d, want 2", len(got))
	}
	for range 2 { // and again: nothing to do
		if err := Setup(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if !hasAt() {
		t.Fatal("Setup did not add at to a log without it")
	}
	if got := timed(writes...); !slices.Equal(got, []bool{true, true}) {
		t.Fatalf("rows timed after the migration: %v, want both", got)
	}
}
