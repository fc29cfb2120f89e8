package readwrite

import (
	"os"
	"testing"

	"github.com/pgcache/pgcache/bench/instance/instancetest"
)

func TestMain(m *testing.M) {
	instancetest.Main()
	os.Exit(m.Run())
}

// asChildren makes Run start its pgcache instances as child processes of
// the test binary acting as pgcache.
func asChildren(t *testing.T, o *Options) {
	o.Server, o.Executable = ServerChild, instancetest.UseChild(t)
}
