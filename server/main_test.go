package server

import (
	"fmt"
	"os"
	"testing"

	"github.com/pgcache/pgcache/internal/testenv"
)

// pg is the PostgreSQL every test of the package shares.
var pg *testenv.PG

func TestMain(m *testing.M) {
	var err error
	pg, err = testenv.StartPostgres()
	if err != nil {
		fmt.Fprintln(os.Stderr, "server tests need PostgreSQL:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
