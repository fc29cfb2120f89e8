package bench

import (
	"fmt"
	"os"
	"testing"
	"time"

	_ "github.com/pgcache/pgcache/backends/standard"
	"github.com/pgcache/pgcache/bench/instance/instancetest"
	"github.com/pgcache/pgcache/internal/testenv"
)

// The servers the tests that name existing servers share (--pg-dsn,
// --valkey-addr); tests of the throwaway path start their own through Run.
var (
	pg        *testenv.PG
	valkeySrv *testenv.Redis
)

func TestMain(m *testing.M) {
	instancetest.Main()
	var err error
	if pg, err = testenv.StartPostgres(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if valkeySrv, err = testenv.StartRedis(); err != nil {
		pg.Stop()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	valkeySrv.Stop()
	pg.Stop()
	os.Exit(code)
}

// tinyOptions is a run small enough for CI: 1000 keys, 1 s of GET, 1000
// background rows, pgcache in-process, files in a temporary directory.
func tinyOptions(t *testing.T, engines ...string) (Options, *testenv.SyncBuffer) {
	t.Helper()
	dir := t.TempDir()
	out := &testenv.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("output:\n%s", out.String())
		}
	})
	return Options{
		Engines:  engines,
		Keys:     1000,
		KeysFile: dir + "/keys.txt",
		Rows:     1000,
		Duration: time.Second,
		Warmup:   -1,
		Out:      dir + "/out",
		Server:   ServerInProcess,
		NoCaps:   true,
		Stdout:   out,
		Stderr:   out,
		Workers:  50,
	}, out
}
