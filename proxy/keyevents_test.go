package proxy

import (
	"strings"
	"testing"
)

// TestCollectionEventsCompareWithRedis: the keyspace events of commands on
// collections, a "del" for each key a command emptied among them, are
// Redis's, in Redis's order.
func TestCollectionEventsCompareWithRedis(t *testing.T) {
	ts := startServer(t, Config{})
	redisAddr := startRedis(t)
	cmds := [][]string{
		{"HSET", "h", "f", "v", "g", "w"}, {"HDEL", "h", "f"}, {"HDEL", "h", "g"}, {"HDEL", "h", "g"},
		{"SADD", "s", "a"}, {"SREM", "s", "a"}, {"SREM", "s", "a"},
		{"RPUSH", "l", "x"}, {"LPOP", "l"}, {"LPOP", "l"},
		{"ZADD", "z", "1", "m"}, {"ZPOPMIN", "z"},
		{"RPUSH", "src", "x"}, {"LMOVE", "src", "dst", "LEFT", "LEFT"},
		{"SADD", "d", "m"}, {"SINTERSTORE", "d", "nokey"}, {"SINTERSTORE", "d", "nokey"},
		{"SADD", "u", "m"}, {"SPOP", "u"}, {"SADD", "m1", "a"}, {"SMOVE", "m1", "m2", "a"}, {"SMOVE", "m2", "m2", "a"},
		{"ZADD", "zs", "1", "a"}, {"ZRANGESTORE", "zd", "zs", "5", "9"}, {"ZADD", "zd", "1", "a"},
		{"ZRANGESTORE", "zd", "zs", "5", "9"}, {"ZMPOP", "1", "zs", "MIN"}, {"RPUSH", "lm", "a"}, {"LMPOP", "1", "lm", "LEFT"},
		{"RPUSH", "t", "a", "b"}, {"LTRIM", "t", "1", "0"},
		{"RPUSH", "so", "2", "1"}, {"SORT", "so", "STORE", "sd"}, {"SORT", "nokey", "STORE", "sd"},
		{"SET", "end", "x"},
	}
	events := func(addr string) []string {
		sub, c := dial(t, addr), dial(t, addr)
		c.do("CONFIG", "SET", "notify-keyspace-events", "EAn")
		sub.do("PSUBSCRIBE", "__keyevent@0__:*")
		for _, cmd := range cmds {
			c.do(cmd...)
		}
		var got []string
		for {
			// *4 pmessage pattern channel key, as one string per reply
			r := sub.reply()
			parts := strings.Split(r, "\r\n")
			if len(parts) < 9 {
				t.Fatalf("%s: not a pmessage: %q", addr, r)
			}
			ev := strings.TrimPrefix(parts[6], "__keyevent@0__:") + " " + parts[8]
			got = append(got, ev)
			if ev == "set end" {
				return got
			}
		}
	}
	want, got := events(redisAddr), events(ts.addr)
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
}

// TestNewKeyEventsCompareWithRedis: the "new" events (class n) of the
// commands that make keys, Redis's test of them first ("Keyspace
// notifications: new key test"), are Redis's, in Redis's order, on
// __keyspace@0__ and __keyevent@0__: once for a key made, none for a key
// written over, and for RENAME's and COPY's destination every time.
func TestNewKeyEventsCompareWithRedis(t *testing.T) {
	ts := startServer(t, Config{})
	redisAddr := startRedis(t)
	cmds := [][]string{
		{"SET", "foo", "bar"}, {"SET", "foo", "baz"}, {"SET", "bar", "bar"},
		{"SETNX", "foo", "x"}, {"SETNX", "nx", "x"}, {"SET", "nx2", "v", "NX"}, {"SET", "foo", "v", "XX"},
		{"SET", "xx", "v", "XX"}, {"GETSET", "gs", "v"}, {"GETSET", "gs", "w"}, {"SET", "sg", "v", "GET"},
		{"SETEX", "se", "100", "v"}, {"PSETEX", "pse", "100000", "v"}, {"SET", "kt", "v", "KEEPTTL"},
		{"SET", "kt", "w", "KEEPTTL"}, {"SET", "ex", "v", "EX", "100"}, {"SET", "ex", "w", "EX", "100"},
		{"INCR", "i"}, {"INCR", "i"}, {"DECRBY", "d", "5"}, {"INCRBYFLOAT", "f", "1.5"}, {"INCRBYFLOAT", "f", "1"},
		{"APPEND", "a", "x"}, {"APPEND", "a", "y"}, {"SETRANGE", "sr", "0", ""}, {"SETRANGE", "sr", "2", "x"},
		{"SETRANGE", "sr", "0", "y"}, {"SETBIT", "sb", "7", "1"}, {"SETBIT", "sb", "7", "0"},
		{"MSET", "m1", "1", "m2", "2", "m1", "3"}, {"MSET", "m1", "4", "m3", "5"},
		{"MSETNX", "n1", "1", "n2", "2"}, {"MSETNX", "n1", "1", "n3", "3"},
		{"DEL", "foo"}, {"SET", "foo", "again"},
		{"RENAME", "foo", "ren"}, {"RENAME", "ren", "ren"}, {"RENAMENX", "bar", "ren"}, {"RENAMENX", "bar", "ren2"},
		{"COPY", "ren", "cp"}, {"COPY", "ren", "cp"}, {"COPY", "ren", "cp", "REPLACE"}, {"RENAME", "ren", "cp"},
		{"HSET", "h", "f", "v"}, {"HSET", "h", "g", "w"}, {"LPUSH", "l", "a"}, {"SADD", "s", "a"},
		{"ZADD", "z", "1", "a"}, {"ZINCRBY", "z2", "1", "a"}, {"HINCRBY", "h2", "f", "1"},
		{"SET", "end", "x"},
	}
	events := func(addr string) []string {
		sub, c := dial(t, addr), dial(t, addr)
		c.do("CONFIG", "SET", "notify-keyspace-events", "KEn")
		sub.do("PSUBSCRIBE", "*")
		for _, cmd := range cmds {
			c.do(cmd...)
		}
		var got []string
		for {
			// *4 pmessage pattern channel payload, as one string per reply
			parts := strings.Split(sub.reply(), "\r\n")
			if len(parts) < 9 {
				t.Fatalf("%s: not a pmessage: %q", addr, parts)
			}
			got = append(got, parts[6]+" "+parts[8])
			if parts[6] == "__keyevent@0__:new" && parts[8] == "end" {
				return got
			}
		}
	}
	want, got := events(redisAddr), events(ts.addr)
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("events:\n got %v\nwant %v", got, want)
	}
}

// TestNotifyFlagsCompareWithRedis: CONFIG GET notify-keyspace-events
// answers as Redis 7.0 does for any flags with n, which A does not include
// and which Redis writes only without A.
func TestNotifyFlagsCompareWithRedis(t *testing.T) {
	ts := startServer(t, Config{})
	ours, theirs := dial(t, ts.addr), dial(t, startRedis(t))
	for _, flags := range []string{"En", "n", "nKE", "AKEn", "nA", "Kn$", "g$lshzxetdn", "KEmn", "Ed", "AE", "nq", ""} {
		for _, cmd := range [][]string{
			{"CONFIG", "SET", "notify-keyspace-events", flags}, {"CONFIG", "GET", "notify-keyspace-events"},
		} {
			if got, want := ours.do(cmd...), theirs.do(cmd...); got != want {
				t.Errorf("%q:\n pgcache %q\n   redis %q", cmd, got, want)
			}
		}
	}
}
