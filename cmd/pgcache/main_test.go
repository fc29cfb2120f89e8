package main

import (
	"os"
	"testing"
)

// asBinaryEnv makes the test binary act as the pgcache binary: a test
// starts it as a child process with a command line of pgcache's (the demo
// test). Not PGCACHE_: those are config.
const asBinaryEnv = "CMD_PGCACHE_TEST_AS_BINARY"

func TestMain(m *testing.M) {
	if os.Getenv(asBinaryEnv) == "1" {
		os.Exit(runCommand(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
