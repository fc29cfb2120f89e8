package proxy

import (
	"strings"
	"testing"

	"github.com/pgcache/pgcache/internal/auth"
)

// The credentials of the auth tests, on both servers: requirepass, and a
// user alice.
const (
	testPass  = "secret"
	alicePass = "alicepw"
)

func startAuthServer(t *testing.T) *testServer {
	t.Helper()
	ts := startServer(t, Config{})
	ts.SetUsers(auth.New(testPass, map[string]string{"alice": alicePass}, ""))
	return ts
}

// startAuthRedis is redis-server with the same credentials.
func startAuthRedis(t *testing.T) string {
	t.Helper()
	addr := startRedis(t, "--requirepass", testPass)
	c := dial(t, addr)
	for _, cmd := range [][]string{{"AUTH", testPass}, {"ACL", "SETUSER", "alice", "on", ">" + alicePass, "~*", "&*", "+@all"}} {
		if got := c.do(cmd...); got != "+OK\r\n" {
			t.Fatalf("redis %q: %q", cmd, got)
		}
	}
	return addr
}

// The auth matrix against Redis 7, byte for byte: no credentials, wrong
// ones, the default user's, a named user's, by AUTH and by HELLO … AUTH.
func TestAuthCompareWithRedis(t *testing.T) {
	ts, redisAddr := startAuthServer(t), startAuthRedis(t)
	for _, tc := range []struct {
		name string
		cmds [][]string
	}{
		{"before AUTH", [][]string{
			{"PING"}, {"GET", "k"}, {"SET", "k", "v"}, {"ECHO", "x"}, {"CLIENT", "ID"}, {"INFO"}, {"SELECT", "0"},
			{"FOO"}, {"GET"}, {"CLIENT", "FOO"},
			{"AUTH"}, {"AUTH", "a", "b", "c"}, {"AUTH", "wrong"}, {"AUTH", "default", "wrong"},
			{"AUTH", "nobody", testPass}, {"AUTH", "alice", testPass}, {"AUTH", "alice", ""},
			{"HELLO"}, {"HELLO", "3"}, {"HELLO", "2", "SETNAME", "n"}, {"HELLO", "3", "AUTH", "alice", "wrong"},
			{"HELLO", "3", "AUTH", "alice"}, {"HELLO", "4"}, {"HELLO", "x"}, {"HELLO", "3", "SETNAME", "a b"},
			{"PING"},
		}},
		{"requirepass", [][]string{
			{"AUTH", testPass}, {"PING"}, {"SET", "k", "v"}, {"GET", "k"},
			{"AUTH", "wrong"}, {"GET", "k"}, // a failed AUTH does not log the client out
			{"AUTH", "default", testPass}, {"AUTH", "alice", alicePass}, {"GET", "k"},
		}},
		{"named user", [][]string{{"AUTH", "alice", alicePass}, {"GET", "k"}, {"AUTH", "alice", "wrong"}, {"PING"}}},
		{"default user by name", [][]string{{"AUTH", "default", testPass}, {"PING"}}},
		{"HELLO AUTH", [][]string{{"HELLO", "3", "AUTH", "alice", "wrong"}, {"PING"}, {"HELLO", "3", "AUTH", "nobody", "x", "SETNAME", "n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, theirs := dial(t, ts.addr), dial(t, redisAddr)
			for _, cmd := range tc.cmds {
				want, got := theirs.do(cmd...), ours.do(cmd...)
				if got != want {
					t.Errorf("%q:\n got %q\nwant %q", cmd, got, want)
				}
			}
		})
	}
}

// HELLO … AUTH authenticates and switches protocol in one go; its reply
// names the server, so only its shape is compared.
func TestHelloAuth(t *testing.T) {
	ts := startAuthServer(t)
	c := dial(t, ts.addr)
	if got := c.do("HELLO", "3", "AUTH", "alice", alicePass, "SETNAME", "me"); !strings.HasPrefix(got, "%7\r\n") {
		t.Fatalf("HELLO 3 AUTH alice = %q, want a RESP3 map", got)
	}
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"CLIENT", "GETNAME"}, "$2\r\nme\r\n"},
		{[]string{"GET", "nosuch"}, "_\r\n"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// Before AUTH, Redis takes no request of more than 10 arguments or with an
// argument over 16KiB: it answers a protocol error and closes. After AUTH,
// in the same pipeline, the usual limits apply.
func TestPreAuthLimitsCompareWithRedis(t *testing.T) {
	ts, redisAddr := startAuthServer(t), startAuthRedis(t)
	const sentinel = "AUTH " + testPass + "\r\nECHO sentinel\r\n"
	mget := func(n int) string {
		return encode(append([]string{"MGET"}, strings.Split(strings.Repeat("k,", n-1)+"k", ",")...)...)
	}
	for _, tc := range []struct {
		name, in string
		closes   bool
	}{
		{"11 arguments", mget(10), true},
		{"10 arguments", mget(9), false},
		{"huge multibulk count", "*3000000000\r\n", true},
		{"bulk over 16KiB", "*2\r\n$3\r\nGET\r\n$16385\r\n", true},
		{"bulk of 16KiB", encode("GET", strings.Repeat("k", 16384)), false},
		{"bulk over 16KiB after AUTH", encode("AUTH", testPass) + encode("ECHO", strings.Repeat("v", 20000)), false},
		{"11 arguments after AUTH", encode("AUTH", testPass) + mget(10), false},
		{"11 arguments after a failed AUTH", encode("AUTH", "wrong") + mget(10), true},
		{"inline with many arguments", "ECHO" + strings.Repeat(" a", 30) + "\r\n", false},
		{"long inline", "ECHO " + strings.Repeat("a", 30000) + "\r\n", false},
		{"negative count", "*-1\r\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if !tc.closes {
				in += sentinel
			}
			want := exchange(t, redisAddr, in, tc.closes)
			got := exchange(t, ts.addr, in, tc.closes)
			if got != want {
				t.Errorf("\n got %.300q\nwant %.300q", got, want)
			}
		})
	}
	serves := dial(t, ts.addr)
	serves.do("AUTH", testPass)
	if got := serves.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("PING after AUTH on a fresh client = %q", got)
	}
}

// With users but no requirepass the default user is disabled: AUTH
// <password> is checked (and fails) rather than refused as unconfigured.
func TestAuthUsersOnly(t *testing.T) {
	ts := startServer(t, Config{})
	ts.SetUsers(auth.New("", map[string]string{"alice": alicePass}, ""))
	c := dial(t, ts.addr)
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"PING"}, "-" + errNoAuth + "\r\n"},
		{[]string{"AUTH", alicePass}, "-" + errWrongPass + "\r\n"},
		{[]string{"AUTH", "default", ""}, "-" + errWrongPass + "\r\n"},
		{[]string{"AUTH", "alice", alicePass}, "+OK\r\n"},
		{[]string{"PING"}, "+PONG\r\n"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// Credentials change under connected clients as in Redis: those already
// authenticated stay; a client that connected while auth was off stays in
// when it is turned on; turning it off lets waiting clients in.
func TestAuthReload(t *testing.T) {
	ts := startServer(t, Config{})
	before := dial(t, ts.addr)
	before.do("PING")
	ts.SetUsers(auth.New(testPass, nil, ""))
	after := dial(t, ts.addr)
	if got := after.do("PING"); got != "-"+errNoAuth+"\r\n" {
		t.Fatalf("a new client once auth is on: %q", got)
	}
	if got := before.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("a client from before auth was on: %q", got)
	}
	ts.SetUsers(auth.New("other", nil, ""))
	if got := after.do("AUTH", testPass); got != "-"+errWrongPass+"\r\n" {
		t.Fatalf("AUTH with the replaced password: %q", got)
	}
	ts.SetUsers(nil)
	if got := after.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("a waiting client once auth is off: %q", got)
	}
	if got := ts.stats.AuthFailures.Load(); got != 1 {
		t.Errorf("AuthFailures = %d, want 1", got)
	}
}
