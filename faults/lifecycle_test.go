package faults

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pgcache/pgcache/internal/testenv"
)

// The pgcache binary, signalled as an operator or a supervisor would.

// standardConfig is a child's config: a standard-durability kv table as
// the catch-all route.
func standardConfig(table string) string {
	return fmt.Sprintf(`shutdown_timeout: 20s
backends:
  pg: {type: postgres, dsn: %q, max_conns: 8}
routes:
  - {name: kv, prefix: "", backend: pg, table: %s, durability: standard}
`, pg.DSN(), table)
}

// SIGTERM under load: pgcache drains and exits 0. Every write it
// acknowledged is in PostgreSQL with its value; a request in flight got
// its reply or an error, never +OK for a write that is then missing.
func TestSIGTERMUnderLoad(t *testing.T) {
	pool := pg.Pool(t)
	testenv.Exec(t, pool, "DROP TABLE IF EXISTS faults_sigterm")
	c := startChild(t, standardConfig("faults_sigterm"))
	l := startLoad(t, c.RESP, loadOptions{writers: 8})
	l.waitOK(t, 2000, 60*time.Second)
	rss, fds := rssKiB(c), childFDs(c)

	okBefore := l.ok.Load()
	signalled := time.Now()
	c.Signal(syscall.SIGTERM)
	st := c.Wait(30 * time.Second)
	exited := time.Now()
	l.Stop()
	if code, err := exitCode(st); err != nil || code != 0 {
		t.Errorf("exit: code %d, %v; want 0", code, err)
	}
	acked := l.ackedWrites()
	lost := lostWrites(acked, fetchKV(t, pool, "faults_sigterm", "", acked))
	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged writes are not in PostgreSQL with their value, like %q", len(lost), len(acked), lost[0])
	}
	if !c.LogHas(`"pgcache stopped"`) {
		t.Errorf("no \"pgcache stopped\" in the log:\n%s", c.LogTail(10))
	}
	drained := l.ok.Load() - okBefore
	t.Logf("errors after the signal:\n%s", l.errorSummary())
	figure(t, "SIGTERM under load (8 writers): exit 0 after %.2fs; requests answered after the signal %d; failed %d "+
		"(connection closed or refused, none answered +OK); acked writes %d, lost %d; child under load: RSS %d MiB, %d fds",
		exited.Sub(signalled).Seconds(), drained, l.failed.Load(), len(acked), len(lost), rss>>10, fds)
}

// SIGHUP with a broken config file: the reload is refused, counted and
// logged, and pgcache goes on serving the config it runs, data and all.
// Once the file is fixed, the next SIGHUP loads it.
func TestSIGHUPBrokenConfig(t *testing.T) {
	c := startChild(t, memoryConfig(""))
	mustDo(t, c.RESP, "SET", "k", "before SIGHUP")
	file := c.ConfigFile
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	reloads := func(result string) float64 {
		return scrape(t, c.Admin)[`pgcache_config_reloads_total{result="`+result+`"}`]
	}
	for _, broken := range []string{
		"routes: [\n  - {name: broken\n",                                     // not YAML
		string(good) + "  - {name: second, prefix: \"\", backend: nosuch}\n", // YAML, invalid
	} {
		before := reloads("error")
		if err := os.WriteFile(file, []byte(broken), 0o600); err != nil {
			t.Fatal(err)
		}
		c.Signal(syscall.SIGHUP)
		eventually(t, 10*time.Second, "the reload refused", func() bool { return reloads("error") == before+1 })
		if !c.Running() {
			t.Fatalf("pgcache exited on SIGHUP with a broken file; log:\n%s", c.LogTail(10))
		}
		if v := mustDo(t, c.RESP, "GET", "k"); v != "before SIGHUP" {
			t.Errorf("GET k after SIGHUP = %q, want the value set before", v)
		}
	}
	if !c.LogHas("config reload refused; the running config goes on") {
		t.Errorf("the refusal is not in the log:\n%s", c.LogTail(10))
	}
	if n := reloads("ok"); n != 0 {
		t.Errorf("pgcache_config_reloads_total{result=\"ok\"} = %v after broken files", n)
	}
	if err := os.WriteFile(file, good, 0o600); err != nil {
		t.Fatal(err)
	}
	c.Signal(syscall.SIGHUP)
	eventually(t, 10*time.Second, "the fixed file loaded", func() bool { return reloads("ok") == 1 })
	if v := mustDo(t, c.RESP, "GET", "k"); v != "before SIGHUP" {
		t.Errorf("GET k after a good reload = %q: the memory route was rebuilt", v)
	}
	refused := reloads("error")
	c.Signal(syscall.SIGTERM)
	if code, err := exitCode(c.Wait(30 * time.Second)); err != nil || code != 0 {
		t.Errorf("exit after SIGTERM: code %d, %v; want 0", code, err)
	}
	figure(t, "SIGHUP with a broken config file (not YAML; a route on a missing backend): each reload refused "+
		"(pgcache_config_reloads_total{result=\"error\"} %v, logged), the running config and its data kept; "+
		"the fixed file loaded on the next SIGHUP", refused)
}

// kill -9 under load, then the same binary started again on the same
// ports and config: it serves, and every write acknowledged before the
// kill on a standard-durability route is in PostgreSQL.
func TestKill9Restart(t *testing.T) {
	pool := pg.Pool(t)
	testenv.Exec(t, pool, "DROP TABLE IF EXISTS faults_kill9")
	c := startChild(t, standardConfig("faults_kill9"))
	l := startLoad(t, c.RESP, loadOptions{writers: 8})
	l.waitOK(t, 2000, 60*time.Second)

	killed := time.Now()
	c.Signal(syscall.SIGKILL)
	st := c.Wait(10 * time.Second)
	if ws, ok := st.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("pgcache ended with %v, want killed by SIGKILL", st)
	}
	l.waitFailed(t, 50, 20*time.Second)
	restart := time.Now()
	c2 := c.Restart(t)
	serving := time.Now()
	var recovered time.Time
	eventually(t, 30*time.Second, "the load is served by the new process", func() bool {
		recovered = l.firstOKAfter(serving)
		return !recovered.IsZero()
	})
	l.waitOK(t, 1000, 30*time.Second)
	l.Stop()
	acked := l.ackedWrites()
	lost := lostWrites(acked, fetchKV(t, pool, "faults_kill9", "", acked))
	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged writes are not in PostgreSQL with their value, like %q", len(lost), len(acked), lost[0])
	}
	figure(t, "kill -9 under load (8 writers), then a restart on the same ports: the new process answered PING %.2fs after it was "+
		"started, the load was served again %.2fs after the kill; failed requests %d (while no process listened); "+
		"acked writes %d, lost %d; new process RSS %d MiB, %d fds",
		serving.Sub(restart).Seconds(), recovered.Sub(killed).Seconds(), l.failed.Load(), len(acked), len(lost),
		rssKiB(c2)>>10, childFDs(c2))
}
