package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessTree returns pid and its descendants, read from /proc (Linux):
// a PostgreSQL postmaster and the processes it has forked, say. Nil for
// pid <= 0.
func ProcessTree(pid int) []int {
	if pid <= 0 {
		return nil
	}
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 {
			continue
		}
		p, err1 := strconv.Atoi(strings.Fields(s)[0])
		pp, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil {
			children[pp] = append(children[pp], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
