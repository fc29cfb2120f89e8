package proxy

import (
	"strconv"
	"strings"
	"testing"
)

// TestMemoryUsage: MEMORY USAGE answers a positive size for a key of
// every type, nil for no key, and Redis's errors for its options, which it
// checks first (Redis's suite calls it on a hash before its hash tests).
func TestMemoryUsage(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	for _, cmd := range [][]string{
		{"SET", "s", "hello"}, {"HSET", "h", "f", "v"}, {"SADD", "st", "1"},
		{"ZADD", "z", "1", "m"}, {"RPUSH", "l", "a"},
	} {
		c.do(cmd...)
		for _, usage := range [][]string{{"MEMORY", "USAGE", cmd[1]}, {"MEMORY", "USAGE", cmd[1], "SAMPLES", "0"}} {
			got := c.do(usage...)
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(got, ":"), "\r\n"))
			if err != nil || n <= len(cmd[1]) {
				t.Errorf("%q: %q, want a size", usage, got)
			}
		}
	}
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"MEMORY", "USAGE", "nosuch"}, "$-1\r\n"},
		{[]string{"MEMORY", "USAGE", "nosuch", "SAMPLES"}, "-ERR syntax error\r\n"},
		{[]string{"MEMORY", "USAGE", "nosuch", "SAMPLES", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"MEMORY", "USAGE", "nosuch", "SAMPLES", "-1"}, "-ERR syntax error\r\n"},
		{[]string{"MEMORY", "USAGE", "s", "FOO", "1"}, "-ERR syntax error\r\n"},
		{[]string{"MEMORY", "USAGE"}, "-ERR wrong number of arguments for 'memory|usage' command\r\n"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.cmd, got, tc.want)
		}
	}
}
