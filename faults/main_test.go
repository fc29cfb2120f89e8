package faults

import (
	"fmt"
	"os"
	"testing"

	"github.com/pgcache/pgcache/internal/pgcachetest"
	"github.com/pgcache/pgcache/internal/testenv"
)

// pg is the PostgreSQL the package shares. The cases that stop, crash or
// restart it leave it running: the tests of this package run one at a time
// (none calls t.Parallel), since they count the process's goroutines and
// descriptors and take PostgreSQL away from each other.
var pg *testenv.PG

func TestMain(m *testing.M) {
	var err error
	if pg, err = testenv.StartPostgres(); err != nil {
		fmt.Fprintln(os.Stderr, "the fault suite needs PostgreSQL:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	pgcachetest.RemoveBinary()
	os.Exit(code)
}

// full reports whether the heavy cases run at their full size (10,000
// connections, 2,000 slowloris clients): not under -short, and not under
// -race, whose per-goroutine cost makes them minutes long. `make
// test-faults` runs the suite without -race for that reason.
func full() bool { return !testing.Short() && !raceEnabled }

// size is n at full size and small otherwise.
func size(n, small int) int {
	if full() {
		return n
	}
	return small
}
