package faults

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pgcache/pgcache/internal/pgcachetest"
)

// The lifecycle cases run the pgcache binary as a child process, as an
// operator does, and signal it.

// startChild runs the pgcache binary on body (a config without listen: or
// log:) with an info-level JSON log, whose lines the cases look for.
func startChild(t testing.TB, body string) *pgcachetest.Process {
	t.Helper()
	return pgcachetest.StartProcess(t, pgcachetest.Config{YAML: "log: {level: info, format: json}\n" + body})
}

// rssKiB is a child's resident memory (VmRSS), in KiB.
func rssKiB(c *pgcachetest.Process) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.Pid()))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// childFDs counts a child's open descriptors.
func childFDs(c *pgcachetest.Process) int { return countFDs(strconv.Itoa(c.Pid())) }

// exitCode is the code of an exited process; a signal is an error.
func exitCode(st *os.ProcessState) (int, error) {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, errors.New("killed by " + ws.Signal().String())
	}
	return st.ExitCode(), nil
}
