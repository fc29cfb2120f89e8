package redissuite

import (
	"os"
	"testing"

	"github.com/pgcache/pgcache/internal/pgcachetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgcachetest.RemoveBinary()
	os.Exit(code)
}
