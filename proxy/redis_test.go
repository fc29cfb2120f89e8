package proxy

import (
	"bytes"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startRedis runs a real redis-server on a free 127.0.0.1 port for the test
// and returns its address. It has one database, so SELECT 1 fails there as
// it does in pgcache. extra are more command-line options (--requirepass).
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed; it is needed to compare replies with Redis's: apt-get install redis-server")
	}
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--databases", "1", "--dir", t.TempDir()}, extra...)
		cmd := exec.Command(bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		for range 500 {
			select {
			case <-exited:
			default:
				if nc, err := net.Dial("tcp", addr); err == nil {
					nc.Close()
					t.Cleanup(stop)
					return addr
				}
				time.Sleep(10 * time.Millisecond)
				continue
			}
			break
		}
		stop()
		if attempt == 3 {
			t.Fatalf("redis-server did not start on %s:\n%s", addr, out.String())
		}
	}
}

// TestCompareWithRedis sends the same commands to pgcache and to Redis and
// wants the same bytes back. Commands run in order on one connection to
// each, so state carries over identically.
func TestCompareWithRedis(t *testing.T) {
	ts := startServer(t, Config{})
	redisAddr := startRedis(t)
	ours, theirs := dial(t, ts.addr), dial(t, redisAddr)

	long := strings.Repeat("x", 200)
	many := []string{"nosuch"}
	for i := range 40 {
		many = append(many, "arg"+strconv.Itoa(i))
	}
	cmds := [][]string{
		// SET and its options
		{"SET", "s1", "v1"}, {"GET", "s1"}, {"GET", "nosuch"},
		{"SET", "s1", "v2", "NX"}, {"SET", "s1", "v2", "XX"}, {"GET", "s1"},
		{"SET", "s2", "v", "XX"}, {"SET", "s2", "v", "NX"}, {"SET", "s2", "v", "nx"},
		{"SET", "s1", "v3", "NX", "XX"}, {"SET", "s1", "v3", "XX", "NX"},
		{"SET", "s1", "v3", "GET"}, {"SET", "s3", "v", "GET"}, {"SET", "s1", "v4", "NX", "GET"},
		{"SET", "s4", "v", "NX", "GET"}, {"SET", "s4", "w", "XX", "GET"}, {"SET", "s5", "w", "XX", "GET"},
		{"SET", "s1", "v", "EX", "0"}, {"SET", "s1", "v", "EX", "-5"}, {"SET", "s1", "v", "PX", "0"},
		{"SET", "s1", "v", "EXAT", "0"}, {"SET", "s1", "v", "PXAT", "-1"}, {"SET", "s1", "v", "EX", "abc"},
		{"SET", "s1", "v", "EX"}, {"SET", "s1", "v", "EX", "10", "PX", "100"},
		{"SET", "s1", "v", "EX", "10", "KEEPTTL"}, {"SET", "s1", "v", "KEEPTTL", "EX", "10"},
		{"SET", "s1", "v", "EX", "9223372036854775807"}, {"SET", "s1", "v", "EX", "9223372036854775"},
		{"SET", "s1", "v", "PX", "9223372036854775807"}, {"SET", "s1", "v", "FOO"}, {"SET", "s1", "v", "GET", "GET"},
		{"SET", "s1", "v", "ex", "100"}, {"TTL", "s1"}, {"SET", "s1", "v", "EX", "10", "EX", "20"}, {"TTL", "s1"},
		{"SET", "s1", "v", "px", "100000"}, {"TTL", "s1"},
		{"SET", "s1", "v", "KEEPTTL"}, {"TTL", "s1"}, {"SET", "s1", "v"}, {"TTL", "s1"},
		{"SET", "s6", "v", "EXAT", "1"}, {"EXISTS", "s6"},
		{"SET", "s6", "v", "EXAT", "4102444800"}, {"TTL", "s6"},
		{"SET", "s7", "v", "PXAT", "4102444800000"}, {"TTL", "s7"},
		{"SET"}, {"SET", "a"}, {"GET"}, {"GET", "a", "b"}, {"get", "s1"}, {"gEt", "s1"},
		// SETEX, PSETEX, SETNX, GETDEL
		{"SETEX", "x1", "100", "v"}, {"TTL", "x1"}, {"SETEX", "x1", "0", "v"}, {"SETEX", "x1", "-1", "v"},
		{"SETEX", "x1", "abc", "v"}, {"SETEX", "x1", "10"}, {"SETEX", "x1", "9223372036854775807", "v"},
		{"PSETEX", "x2", "100000", "v"}, {"TTL", "x2"}, {"PSETEX", "x2", "0", "v"}, {"PSETEX", "x2", "1.5", "v"},
		{"SETNX", "x3", "a"}, {"SETNX", "x3", "b"}, {"GET", "x3"}, {"SETNX", "x3"},
		{"GETDEL", "x3"}, {"GETDEL", "x3"}, {"GETDEL"},
		// GETEX
		{"SET", "g1", "v"}, {"GETEX", "g1"}, {"GETEX", "g1", "EX", "100"}, {"TTL", "g1"},
		{"GETEX", "g1", "PERSIST"}, {"TTL", "g1"}, {"GETEX", "g1", "PX", "100000"}, {"TTL", "g1"},
		{"GETEX", "g1", "EXAT", "4102444800"}, {"TTL", "g1"}, {"GETEX", "g1", "PXAT", "4102444800000"},
		{"GETEX", "g1", "EX", "0"}, {"GETEX", "g1", "EX", "-1"}, {"GETEX", "nosuch", "EX", "0"},
		{"GETEX", "nosuch", "EX", "abc"}, {"GETEX", "g1", "EX", "abc"}, {"GETEX", "g1", "PERSIST", "EX", "10"},
		{"GETEX", "g1", "EX", "10", "PERSIST"}, {"GETEX", "g1", "KEEPTTL"}, {"GETEX", "g1", "NX"},
		{"GETEX", "g1", "EX"}, {"GETEX", "g1", "FOO"}, {"GETEX", "g1", "PERSIST", "PERSIST"},
		{"GETEX", "g1", "EXAT", "1"}, {"EXISTS", "g1"}, {"GETEX"},
		// MGET, MSET
		{"MSET", "m1", "a", "m2", "b", "pg:m3", "c", "pg:x:m4", "d"},
		{"MGET", "m1", "m2", "pg:m3", "nosuch", "pg:nosuch", "m1", "pg:x:m4"},
		{"MSET", "m1"}, {"MSET", "m1", "a", "m2"}, {"MGET"}, {"MSET", "m1", "z", "m1", "y"}, {"GET", "m1"},
		// INCR family
		{"INCR", "i1"}, {"INCR", "i1"}, {"INCRBY", "i1", "10"}, {"INCRBY", "i1", "-20"}, {"DECR", "i1"},
		{"DECRBY", "i1", "5"}, {"DECRBY", "i1", "-5"}, {"INCRBY", "i1", "1.5"}, {"INCRBY", "i1", "abc"},
		{"INCRBY", "i1", " 1"}, {"INCRBY", "i1", "+1"}, {"INCRBY", "i1", "01"}, {"INCRBY", "i1", "-0"},
		{"SET", "i2", "9223372036854775806"}, {"INCR", "i2"}, {"INCR", "i2"},
		{"SET", "i3", "-9223372036854775807"}, {"DECR", "i3"}, {"DECR", "i3"},
		{"DECRBY", "i3", "-9223372036854775808"}, {"INCRBY", "i3", "-9223372036854775808"},
		{"INCRBY", "i9", "-9223372036854775808"}, {"DECRBY", "i9", "9223372036854775807"},
		{"SET", "i4", "abc"}, {"INCR", "i4"}, {"SET", "i5", " 1"}, {"INCR", "i5"}, {"SET", "i6", "1.0"},
		{"INCR", "i6"}, {"SET", "i7", "007"}, {"INCR", "i7"}, {"SET", "i10", ""}, {"INCR", "i10"},
		{"SET", "i8", "v", "EX", "100"}, {"SET", "i8", "5", "KEEPTTL"}, {"INCR", "i8"}, {"TTL", "i8"},
		{"INCR"}, {"INCR", "a", "b"}, {"DECRBY", "a"}, {"DECR"},
		// DEL, UNLINK, EXISTS
		{"SET", "k1", "v"}, {"SET", "pg:k2", "v"}, {"DEL", "k1", "pg:k2", "nosuch", "k1"}, {"DEL"},
		{"SET", "k1", "v"}, {"UNLINK", "k1", "k1"}, {"UNLINK"},
		{"SET", "k1", "v"}, {"SET", "pg:k2", "v"}, {"EXISTS", "k1", "k1", "pg:k2", "nosuch"}, {"EXISTS"},
		// EXPIRE family
		{"SET", "e1", "v"}, {"EXPIRE", "e1", "100"}, {"TTL", "e1"}, {"PTTL", "nosuch"}, {"TTL", "nosuch"},
		{"EXPIRE", "e1", "100", "NX"}, {"EXPIRE", "e1", "200", "XX"}, {"TTL", "e1"},
		{"EXPIRE", "e1", "100", "GT"}, {"EXPIRE", "e1", "300", "GT"}, {"TTL", "e1"},
		{"EXPIRE", "e1", "400", "LT"}, {"EXPIRE", "e1", "50", "lt"}, {"TTL", "e1"},
		{"EXPIRE", "e1", "10", "NX", "XX"}, {"EXPIRE", "e1", "10", "GT", "LT"}, {"EXPIRE", "e1", "10", "NX", "GT"},
		{"EXPIRE", "e1", "10", "FOO"}, {"EXPIRE", "e1", "abc"}, {"EXPIRE", "e1", "abc", "FOO"},
		{"EXPIRE", "e1", "9223372036854775807"}, {"EXPIRE", "e1", "-9223372036854775807"},
		{"PEXPIRE", "e1", "9223372036854775807"}, {"EXPIRE", "e1", "10", "XX", "XX"},
		{"SET", "e2", "v"}, {"EXPIRE", "e2", "100", "XX"}, {"EXPIRE", "e2", "100", "GT"},
		{"EXPIRE", "e2", "100", "LT"}, {"TTL", "e2"},
		{"SET", "e3", "v"}, {"EXPIRE", "e3", "100", "XX", "LT"}, {"TTL", "e3"}, {"EXPIRE", "e3", "100", "XX", "GT"},
		{"EXPIRE", "e3", "100", "LT", "XX"}, {"EXPIRE", "e3", "50", "LT", "XX"}, {"TTL", "e3"},
		{"EXPIRE", "nosuch", "100"}, {"EXPIRE", "e2", "0"}, {"EXISTS", "e2"},
		{"SET", "e4", "v"}, {"EXPIRE", "e4", "-1"}, {"EXISTS", "e4"},
		{"SET", "e6", "v", "EX", "100"}, {"EXPIRE", "e6", "-1", "LT"}, {"EXISTS", "e6"},
		{"SET", "e5", "v"}, {"PEXPIRE", "e5", "100000"}, {"TTL", "e5"}, {"PERSIST", "e5"}, {"PERSIST", "e5"},
		{"TTL", "e5"}, {"PERSIST", "nosuch"}, {"EXPIRE", "e5"}, {"TTL"}, {"PTTL", "a", "b"}, {"PERSIST"},
		// the rest of the string commands
		{"APPEND", "s1", "hello"}, {"APPEND", "s1", " world"}, {"GET", "s1"}, {"APPEND", "s1"},
		{"STRLEN", "s1"}, {"STRLEN", "nosuch"}, {"STRLEN"},
		{"GETRANGE", "s1", "0", "4"}, {"GETRANGE", "s1", "-5", "-1"}, {"GETRANGE", "s1", "-1", "-5"},
		{"GETRANGE", "s1", "5", "2"}, {"GETRANGE", "s1", "0", "1000"}, {"GETRANGE", "s1", "-1000", "2"},
		{"GETRANGE", "nosuch", "0", "-1"}, {"GETRANGE", "s1", "x", "1"}, {"SUBSTR", "s1", "6", "-1"},
		{"SETRANGE", "s2", "5", "ab"}, {"GET", "s2"}, {"SETRANGE", "s2", "0", "XYZ"}, {"GET", "s2"},
		{"SETRANGE", "s3", "0", ""}, {"EXISTS", "s3"}, {"SETRANGE", "s2", "3", ""}, {"SETRANGE", "s2", "-1", "x"},
		{"SETRANGE", "s2", "x", "y"}, {"SETRANGE", "s2", "536870912", "x"},
		{"SET", "s4", "v", "EX", "100"}, {"APPEND", "s4", "w"}, {"TTL", "s4"}, {"SETRANGE", "s4", "0", "z"}, {"TTL", "s4"},
		{"INCRBYFLOAT", "f1", "10.5"}, {"INCRBYFLOAT", "f1", "0.1"}, {"INCRBYFLOAT", "f1", "-5"},
		{"INCRBYFLOAT", "f3", "5.0e3"}, {"INCRBYFLOAT", "f1", "x"}, {"INCRBYFLOAT", "f1", "+inf"},
		{"INCRBYFLOAT", "f1", " 1"}, {"INCRBYFLOAT", "s1", "1"}, {"GET", "f1"}, {"SET", "f2", "1e3"}, {"INCRBYFLOAT", "f2", "1"},
		{"GETSET", "g1", "a"}, {"GETSET", "g1", "b"}, {"GET", "g1"}, {"GETSET", "g1"},
		{"SET", "l1", "ohmytext"}, {"SET", "l2", "mynewtext"}, {"LCS", "l1", "l2"}, {"LCS", "l1", "l2", "LEN"},
		{"LCS", "l1", "l2", "IDX"}, {"LCS", "l1", "l2", "IDX", "MINMATCHLEN", "4"},
		{"LCS", "l1", "l2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"}, {"LCS", "l1", "l2", "LEN", "IDX"},
		{"LCS", "l1", "nosuch"}, {"LCS", "l1", "l2", "FOO"}, {"LCS", "l1", "l2", "MINMATCHLEN"}, {"LCS", "l1"},
		{"SETBIT", "b1", "1", "1"}, {"SETBIT", "b1", "7", "1"}, {"GET", "b1"}, {"SETBIT", "b1", "1", "0"}, {"GETBIT", "b1", "7"},
		{"GETBIT", "b1", "100"}, {"GETBIT", "nosuch", "3"}, {"SETBIT", "b1", "-1", "1"}, {"SETBIT", "b1", "1", "2"},
		{"SETBIT", "b1", "x", "1"}, {"SETBIT", "b1", "4294967296", "1"}, {"GETBIT", "b1", "4294967296"}, {"SETBIT", "b2", "20", "1"}, {"GET", "b2"},
		{"MSETNX", "nx1", "a", "nx2", "b"}, {"MSETNX", "nx2", "c", "nx3", "d"}, {"MGET", "nx1", "nx2", "nx3"},
		{"MSETNX", "nx4", "x", "nx4", "y"}, {"GET", "nx4"}, {"MSETNX", "nx5"}, {"MSETNX", "nx5", "a", "nx6"},
		// transactions
		{"EXEC"}, {"DISCARD"}, {"MULTI", "x"}, {"MULTI"}, {"MULTI"}, {"SET", "t1", "1"}, {"INCR", "t1"},
		{"GET", "t1"}, {"INCR", "s1"}, {"PING"}, {"EXEC"}, {"GET", "t1"},
		{"MULTI"}, {"SET", "t1", "2"}, {"NOSUCH"}, {"GET", "t1"}, {"EXEC"}, {"GET", "t1"},
		{"MULTI"}, {"SET", "t1"}, {"EXEC"}, {"MULTI"}, {"SET", "t1", "3"}, {"DISCARD"}, {"GET", "t1"},
		{"MULTI"}, {"WATCH", "t1"}, {"EXEC"}, {"MULTI"}, {"EXEC"},
		{"WATCH", "t1"}, {"SET", "t1", "4"}, {"MULTI"}, {"SET", "t1", "5"}, {"EXEC"}, {"GET", "t1"},
		{"WATCH", "t1"}, {"MULTI"}, {"SET", "t1", "6"}, {"EXEC"}, {"GET", "t1"},
		{"WATCH", "t1", "t2"}, {"UNWATCH"}, {"SET", "t1", "7"}, {"MULTI"}, {"GET", "t1"}, {"EXEC"},
		{"WATCH"}, {"WATCH", "nosuch"}, {"MULTI"}, {"EXEC"},
		// scripts
		{"EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "sc1", "v"},
		{"EVAL", "return redis.call('get', KEYS[1])", "1", "sc1"},
		{"EVAL", "return {1, 2, 'x', {ok='fine'}, false, true}", "0"},
		{"EVAL", "return redis.pcall('incr', KEYS[1])", "1", "sc1"},
		{"EVAL", "return redis.error_reply('my error')", "0"}, {"EVAL", "return redis.status_reply('OK2')", "0"},
		{"EVAL", "return 3.99", "0"}, {"EVAL", "return", "-1"}, {"EVAL", "return", "x"}, {"EVAL", "return", "2", "a"},
		{"SCRIPT", "LOAD", "return KEYS[1]..ARGV[1]"},
		{"EVALSHA", "50e5e1b59d02e7e0f5e0e1a3c9b9e5a4e2d1b9a1", "0"},
		{"SCRIPT", "EXISTS", "a42059b356c875f0717db19a51f6aaca9ae659ea", "ffffffffffffffffffffffffffffffffffffffff"},
		{"EVAL", "return redis.call('nosuch')", "0"}, {"EVAL", "return redis.call('multi')", "0"},
		{"EVAL", "return redis.pcall('blpop', 'x', 0)", "0"}, {"EVAL", "return redis.pcall('cluster', 'reset', 'hard')", "0"},
		{"EVAL", "return redis.pcall('client', 'id')", "0"}, {"EVAL", "return redis.pcall('watch', 'x')", "0"},
		{"EVAL_RO", "return redis.call('set', KEYS[1], 'x')", "1", "sc1"}, {"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "sc1"},
		{"FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('myfunc', function(keys, args) return redis.call('get', keys[1]) end)"},
		{"FCALL", "myfunc", "1", "sc1"}, {"FCALL", "nosuch", "0"}, {"FUNCTION", "DELETE", "mylib"},
		{"MULTI"}, {"EVAL", "return redis.call('incr', KEYS[1])", "1", "sc2"}, {"INCR", "sc2"}, {"EXEC"},
		{"MULTI"}, {"MSETNX", "sc3", "a", "sc4", "b"}, {"MSETNX", "sc3", "c"}, {"MGET", "sc3", "sc4"}, {"EXEC"},
		// server and connection
		{"PING"}, {"PING", "hello"}, {"PING", "a", "b"}, {"ECHO", "x"}, {"ECHO"}, {"ECHO", ""},
		{"SELECT", "0"}, {"SELECT", "1"}, {"SELECT", "x"}, {"SELECT", "-1"}, {"SELECT"},
		{"AUTH", "x"}, {"AUTH", "default", "x"}, {"AUTH", "foo", "x"}, {"AUTH", "a", "b", "c"}, {"AUTH"},
		{"HELLO", "4"}, {"HELLO", "x"}, {"HELLO", "1"}, {"HELLO", "3", "FOO"}, {"HELLO", "3", "AUTH", "foo", "x"},
		{"HELLO", "3", "SETNAME", "a b"}, {"HELLO", "3", "AUTH", "default"}, {"HELLO", "2", "SETNAME"},
		{"CLIENT"}, {"CLIENT", "FOO"}, {"CLIENT", "SETNAME"}, {"CLIENT", "SETNAME", "a b"},
		{"CLIENT", "SETNAME", "n1"}, {"CLIENT", "GETNAME"}, {"CLIENT", "SETNAME", ""}, {"CLIENT", "GETNAME"},
		{"CLIENT", "ID", "x"}, {"CLIENT", "GETNAME", "x"}, {"client", "setname", "a\x00b"},
		{"COMMAND", "FOO"}, {"COMMAND", "COUNT", "x"}, {"COMMAND", "DOCS", "nosuch"},
		{"COMMAND", "INFO", "nosuch"}, {"INFO", "nosuch"}, {"DBSIZE", "x"},
		// SORT's options that reach no store, and GET
		{"RPUSH", "so", "3", "1", "2"}, {"SORT", "so", "GET", "#", "GET", "nokey"},
		{"SORT", "so", "BY", "nosort", "GET", "#", "GET", "x", "STORE", "so2"}, {"LRANGE", "so2", "0", "-1"},
		{"SORT", "so", "LIMIT", "1"}, {"SORT", "so", "x"}, {"SORT", "so", "LIMIT", "a", "1"},
		{"SORT_RO", "so", "STORE", "d"}, {"SORT"}, {"SORT_RO"}, {"SORT", "so", "GET"},
		// unknown commands
		{"FOO"}, {"FOO", "a", "b"}, {"foo", "a\x00b", "c\nd"}, {long, long}, {"x", long, "y"}, many,
		{"GET\r\n"}, {""},
	}
	for _, cmd := range cmds {
		want, got := theirs.do(cmd...), ours.do(cmd...)
		if got != want && !sameTTL(cmd, got, want) {
			t.Errorf("%q:\n got %q\nwant %q", cmd, got, want)
		}
	}

	// RESP3: the same, where the reply types differ.
	ours.do("HELLO", "3")
	theirs.do("HELLO", "3")
	for _, cmd := range [][]string{
		{"GET", "nosuch"}, {"SET", "r1", "v"}, {"SET", "r1", "v", "NX"}, {"SET", "r2", "v", "XX"},
		{"SET", "r1", "w", "GET"}, {"SET", "r3", "w", "GET"}, {"MGET", "r1", "nosuch", "pg:nosuch"},
		{"GETEX", "nosuch"}, {"GETDEL", "nosuch"}, {"CLIENT", "GETNAME"}, {"COMMAND", "DOCS", "nosuch"},
		{"COMMAND", "INFO", "nosuch"}, {"INCR", "r4"}, {"PING"}, {"ECHO", "e"}, {"TTL", "nosuch"},
		{"HELLO", "2", "SETNAME", "x y"}, {"GET", "nosuch"}, {"GET", "r1"},
	} {
		want, got := theirs.do(cmd...), ours.do(cmd...)
		if got != want {
			t.Errorf("RESP3 %q:\n got %q\nwant %q", cmd, got, want)
		}
	}
}

// TestCompareProtocolWithRedis sends raw, often malformed, input to both
// on fresh connections and wants the same bytes back and the same close.
func TestCompareProtocolWithRedis(t *testing.T) {
	ts := startServer(t, Config{})
	redisAddr := startRedis(t)
	const sentinel = "ECHO sentinel\r\n"
	for _, tc := range []struct {
		name, in string
		closes   bool // the server closes: read to EOF, send no sentinel
	}{
		{"overflowing bulk length", "*1\r\n$9223372036854775807\r\nx\r\n", true},
		{"huge multibulk count", "*3000000000\r\n", true},
		{"negative multibulk count", "*-10\r\nPING\r\n", false},
		{"zero multibulk count", "*0\r\nPING\r\n", false},
		{"negative bulk length", "*1\r\n$-1\r\n", true},
		{"bulk length not a number", "*1\r\n$abc\r\n", true},
		{"bulk length with leading zero", "*1\r\n$04\r\nPING\r\n", true},
		{"empty bulk length", "*1\r\n$\r\n", true},
		{"bulk length over 512MiB", "*1\r\n$536870913\r\n", true},
		{"count not a number", "*abc\r\n", true},
		{"empty count", "*\r\n", true},
		{"count with leading zero", "*01\r\n$4\r\nPING\r\n", true},
		{"expected dollar", "*1\r\nx3\r\nPING\r\n", true},
		{"expected dollar got colon", "*2\r\n$3\r\nGET\r\n:1\r\n", true},
		{"expected dollar got CR", "*2\r\n$3\r\nGET\r\n\r\n\r\n", true},
		{"bytes after bulk not checked", "*1\r\n$4\r\nPINGxyPING\r\n", false},
		{"byte after CR not checked", "*1\rX$4\rYPING\r\n", false},
		{"blank inline lines", "PING\r\n\r\n\n  \r\nPING\n", false},
		{"unbalanced double quote", "set \"a\" \"b\r\n", true},
		{"closing quote then letter", "echo \"a\"b\r\n", true},
		{"closing single quote then letter", "echo 'a'b\r\n", true},
		{"escaped single quote", "echo 'a\\'b'\r\n", false},
		{"double quote escapes", "echo \"\\x41\\x4g\\n\\t\\\\\\\"\\q\"\r\n", false},
		{"quote inside argument", "SET a\"b c\" d\r\nGET \"ab c\"\r\n", false},
		{"vertical tab", "\vPING\va\r\n", false},
		{"closing quote then vertical tab", "echo \"a\"\vb\r\n", false},
		{"empty command name", "*1\r\n$0\r\n\r\n", false},
		{"NUL in unknown args", "*2\r\n$3\r\nfoo\r\n$3\r\na\x00b\r\n", false},
		{"quit", "QUIT\r\nPING\r\n", true},
		{"quit with arguments", "QUIT x y\r\nPING\r\n", true},
		{"pipeline then protocol error", "PING\r\nPING\r\n*1\r\n$-5\r\n", true},
		{"too big inline", strings.Repeat("a", 70000), true},
		{"too big multibulk count string", "*" + strings.Repeat("1", 70000), true},
		{"too big bulk count string", "*1\r\n$" + strings.Repeat("1", 70000), true},
		{"inline unknown command", "FOO bar \"baz qux\"\r\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if !tc.closes {
				in += sentinel
			}
			want := exchange(t, redisAddr, in, tc.closes)
			got := exchange(t, ts.addr, in, tc.closes)
			if got != want {
				t.Errorf("\n got %q\nwant %q", got, want)
			}
		})
	}
	serves(t, ts.addr)
}

// exchange sends in on a fresh connection and reads until the server
// closes it (untilEOF) or answers the sentinel.
func exchange(t *testing.T, addr, in string, untilEOF bool) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(nc, in) // the server may close before taking it all
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := nc.Read(buf)
		got = append(got, buf[:n]...)
		if !untilEOF && bytes.HasSuffix(got, []byte("$8\r\nsentinel\r\n")) {
			return string(got)
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("no end after %q", got)
			}
			if untilEOF {
				return string(got) + "<closed>"
			}
			t.Fatalf("read after %q: %v", got, err)
		}
	}
}

// sameTTL accepts TTL replies a second apart: after EXAT the remaining
// time depends on the clock, and a second may turn between the two
// servers' answers.
func sameTTL(cmd []string, got, want string) bool {
	if len(cmd) != 2 || !strings.EqualFold(cmd[0], "TTL") {
		return false
	}
	g, gerr := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(got, ":"), "\r\n"), 10, 64)
	w, werr := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(want, ":"), "\r\n"), 10, 64)
	return gerr == nil && werr == nil && w > 0 && (g == w || g == w-1 || g == w+1)
}
