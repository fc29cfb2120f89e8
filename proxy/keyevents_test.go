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
		c.do("CONFIG", "SET", "notify-keyspace-events", "EA")
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
