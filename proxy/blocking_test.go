package proxy

import (
	"strings"
	"testing"
	"time"
)

// blockedClients is INFO's blocked_clients line, as c reads it.
func blockedClients(c *rawClient) string {
	for line := range strings.Lines(c.do("INFO", "clients")) {
		if strings.HasPrefix(line, "blocked_clients:") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// blockAll sends each blocking command on its own connection, one after
// the other, each once INFO counts the ones before it as blocked: the
// order they blocked in is theirs.
func blockAll(t *testing.T, addr string, admin *rawClient, cmds ...[]string) []*rawClient {
	t.Helper()
	var cs []*rawClient
	for i, cmd := range cmds {
		c := dial(t, addr)
		c.send(encode(cmd...))
		want := "blocked_clients:" + string(rune('1'+i))
		eventually(t, want, func() bool { return blockedClients(admin) == want })
		cs = append(cs, c)
	}
	return cs
}

// TestBlockedServedInOrder: clients blocked on a key are served in the
// order they blocked, as Redis serves them, by a push through another
// connection or in MULTI (unit/type/list's "BLMPOP with multiple blocked
// clients", which waited forever on a client served out of turn).
func TestBlockedServedInOrder(t *testing.T) {
	ts := startServer(t, Config{})
	admin := dial(t, ts.addr)
	for round := range 5 { // the wrong order was a race: try it more than once
		cs := blockAll(t, ts.addr, admin,
			[]string{"BLPOP", "q", "0"},
			[]string{"BLPOP", "q", "0"},
			[]string{"BLPOP", "q", "0"})
		admin.do("RPUSH", "q", "a", "b", "c")
		for i, c := range cs {
			if got, want := c.reply(), encode("q", string(rune('a'+i))); got != want {
				t.Fatalf("round %d: client %d blocked got %q, want %q", round, i+1, got, want)
			}
		}

		cs = blockAll(t, ts.addr, admin,
			[]string{"BLMPOP", "0", "2", "l1", "l2", "LEFT", "COUNT", "1"},
			[]string{"BLMPOP", "0", "2", "l1", "l2", "RIGHT", "COUNT", "10"},
			[]string{"BLMPOP", "0", "2", "l1", "l2", "LEFT", "COUNT", "10"},
			[]string{"BLMPOP", "0", "2", "l1", "l2", "RIGHT", "COUNT", "1"})
		admin.do("MULTI")
		admin.do("LPUSH", "l1", "a", "b", "c", "d", "e")
		admin.do("LPUSH", "l2", "1", "2", "3", "4", "5")
		admin.do("EXEC")
		for i, want := range []string{
			"*2\r\n$2\r\nl1\r\n*1\r\n$1\r\ne\r\n",
			"*2\r\n$2\r\nl1\r\n*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n",
			"*2\r\n$2\r\nl2\r\n*5\r\n$1\r\n5\r\n$1\r\n4\r\n$1\r\n3\r\n$1\r\n2\r\n$1\r\n1\r\n",
		} {
			if got := cs[i].reply(); got != want {
				t.Fatalf("round %d: BLMPOP client %d got %q, want %q", round, i+1, got, want)
			}
		}
		admin.do("LPUSH", "l2", "x")
		if got, want := cs[3].reply(), "*2\r\n$2\r\nl2\r\n*1\r\n$1\r\nx\r\n"; got != want {
			t.Fatalf("round %d: the fourth BLMPOP got %q, want %q", round, got, want)
		}
		eventually(t, "no client blocked", func() bool { return blockedClients(admin) == "blocked_clients:0" })
	}
}

// TestWriteAnsweredAfterTheClientsItWoke: a push is answered once the
// clients it woke have run, and those their own pushes woke, as Redis
// serves blocked clients before any other command (unit/type/list's
// "Linked LMOVEs"): a command pipelined after the push sees the element
// moved twice.
func TestWriteAnsweredAfterTheClientsItWoke(t *testing.T) {
	ts := startServer(t, Config{})
	admin := dial(t, ts.addr)
	for round := range 10 {
		cs := blockAll(t, ts.addr, admin,
			[]string{"BLMOVE", "l1", "l2", "RIGHT", "LEFT", "0"},
			[]string{"BLMOVE", "l2", "l3", "LEFT", "RIGHT", "0"})
		pipeline(t, admin, []step{
			{[]string{"RPUSH", "l1", "foo"}, ":1\r\n"},
			{[]string{"LRANGE", "l1", "0", "-1"}, "*0\r\n"},
			{[]string{"LRANGE", "l2", "0", "-1"}, "*0\r\n"},
			{[]string{"LRANGE", "l3", "0", "-1"}, "*1\r\n$3\r\nfoo\r\n"},
		})
		for i, c := range cs {
			if got := c.reply(); got != "$3\r\nfoo\r\n" {
				t.Fatalf("round %d: BLMOVE %d got %q", round, i+1, got)
			}
		}
		admin.do("DEL", "l3")
	}
}

// TestBlockedKeyOfAnotherType: a blocked BZPOPMIN is not woken into an
// error by its key becoming a string for a while; it pops the sorted set
// the key holds next (unit/type/zset's "ZADD + DEL + SET should not awake
// blocked client").
func TestBlockedKeyOfAnotherType(t *testing.T) {
	ts := startServer(t, Config{})
	admin := dial(t, ts.addr)
	for _, pop := range [][]string{{"BZPOPMIN", "z", "0"}, {"BLPOP", "z", "0"}} {
		cs := blockAll(t, ts.addr, admin, pop)
		admin.do("MULTI")
		if pop[0] == "BLPOP" {
			admin.do("RPUSH", "z", "foo")
		} else {
			admin.do("ZADD", "z", "0", "foo")
		}
		admin.do("DEL", "z")
		admin.do("SET", "z", "foo")
		admin.do("EXEC")
		admin.do("DEL", "z")
		want := encode("z", "bar")
		if pop[0] == "BLPOP" {
			admin.do("RPUSH", "z", "bar")
		} else {
			admin.do("ZADD", "z", "1", "bar")
			want = encode("z", "bar", "1")
		}
		if got := cs[0].reply(); got != want {
			t.Errorf("%s got %q, want %q", pop[0], got, want)
		}
	}
}

// TestCopyIsAWrite: RENAME and COPY report their destination written: a
// list renamed into a blocked client's key feeds it (unit/type/list's
// "BLPOP when new key is moved into place", which waited forever), and a
// COPY onto a watched key aborts EXEC even when the value is the same.
func TestCopyIsAWrite(t *testing.T) {
	ts := startServer(t, Config{})
	admin := dial(t, ts.addr)
	cs := blockAll(t, ts.addr, admin, []string{"BLPOP", "foo", "0"})
	admin.do("LPUSH", "bob", "abc", "def", "hij")
	admin.do("RENAME", "bob", "foo")
	if got, want := cs[0].reply(), encode("foo", "hij"); got != want {
		t.Errorf("BLPOP after RENAME: %q, want %q", got, want)
	}
	a := dial(t, ts.addr)
	admin.do("SET", "w", "same")
	admin.do("SET", "src", "same")
	a.do("WATCH", "w")
	admin.do("COPY", "src", "w", "REPLACE")
	a.do("MULTI")
	a.do("PING")
	if got := a.do("EXEC"); got != "*-1\r\n" {
		t.Errorf("EXEC after a COPY onto a watched key: %q, want a null array", got)
	}
}

// TestInfoForgetsClosedBlockedClients: a blocked client that closed its
// connection is not in INFO's counts, though the blocked command would
// not notice the close by itself for an hour here: INFO ends it (as Redis,
// which hears of a close at once, counts it no longer).
func TestInfoForgetsClosedBlockedClients(t *testing.T) {
	ts := startServer(t, Config{BlockPoll: time.Hour})
	admin := dial(t, ts.addr)
	cs := blockAll(t, ts.addr, admin, []string{"BLPOP", "gone", "0"}, []string{"BLPOP", "stays", "0"})
	cs[0].nc.Close()
	eventually(t, "the closed client forgotten", func() bool { return blockedClients(admin) == "blocked_clients:1" })
	if got := connectedClients(admin); got != "connected_clients:2" {
		t.Errorf("INFO: %s, want 2 (admin and the client still blocked)", got)
	}
	admin.do("RPUSH", "stays", "v")
	if got, want := cs[1].reply(), encode("stays", "v"); got != want {
		t.Errorf("the client still blocked got %q, want %q", got, want)
	}
}

// TestInfoForgetsClosedBlockedClientsWithPipelined: a client that sent
// more commands after its blocking one, then closed, is gone as well (a
// peek sees the unread commands, not the close behind them).
func TestInfoForgetsClosedBlockedClientsWithPipelined(t *testing.T) {
	ts := startServer(t, Config{BlockPoll: time.Hour})
	admin := dial(t, ts.addr)
	cs := blockAll(t, ts.addr, admin, []string{"BLPOP", "gone", "0"}, []string{"BLPOP", "stays", "0"})
	if _, err := cs[0].nc.Write([]byte("PING\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	cs[0].nc.Close()
	eventually(t, "the closed client forgotten", func() bool { return blockedClients(admin) == "blocked_clients:1" })
	admin.do("RPUSH", "stays", "v")
	if got, want := cs[1].reply(), encode("stays", "v"); got != want {
		t.Errorf("the client still blocked got %q, want %q", got, want)
	}
}

// connectedClients is INFO's connected_clients line, as c reads it.
func connectedClients(c *rawClient) string {
	for line := range strings.Lines(c.do("INFO", "clients")) {
		if strings.HasPrefix(line, "connected_clients:") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
