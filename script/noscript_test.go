package script

import "testing"

func TestNoScript(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"BLPOP", "x", "0"}, true},
		{[]string{"bzpopmax", "z", "0"}, true},
		{[]string{"cluster", "RESET", "hard"}, true},
		{[]string{"cluster", "info"}, false},
		{[]string{"config", "set", "maxmemory", "1"}, true},
		{[]string{"client", "help"}, false},
		{[]string{"client", "id"}, true},
		{[]string{"Client", "KILL", "id", "1"}, true},
		{[]string{"EVALSHA", "x", "0"}, true},
		{[]string{"get", "x"}, false},
		{[]string{"blmpop"}, false}, // not flagged in Redis 7.0
		{nil, false},
	} {
		if got := NoScript(argv(tc.args...)); got != tc.want {
			t.Errorf("NoScript(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
