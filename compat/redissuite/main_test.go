package redissuite

import (
	"os"
	"testing"

	"github.com/pgcache/pgcache/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemovePgcacheBinary()
	os.Exit(code)
}
