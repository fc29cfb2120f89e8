package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	_ "github.com/pgcache/pgcache/backends/standard"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/testenv"
	"github.com/pgcache/pgcache/server"
)

// The servers the tests that name existing servers share (--pg-dsn,
// --valkey-addr); tests of the throwaway path start their own through Run.
var (
	pg        *testenv.PG
	valkeySrv *testenv.Redis
)

// helperEnv makes the test binary act as `pgcache run --config FILE`, so
// the child-process mode is tested without building the binary.
const helperEnv = "BENCH_TEST_HELPER_PGCACHE" // not PGCACHE_: those are kept from the child

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperPgcache(os.Args[len(os.Args)-1]))
	}
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

// helperPgcache is cmd/pgcache's run, in short: serve the config until
// SIGTERM, then drain.
func helperPgcache(cfgPath string) int {
	cfg, err := conf.Load(conf.Source{File: cfgPath, Environ: func() []string { return nil }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	srv, err := server.New(context.Background(), cfg, zap.NewNop())
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-sigs
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// syncBuffer is a buffer safe to write from the progress goroutine and
// the runner at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tinyOptions is a run small enough for CI: 1000 keys, 1 s of GET, 1000
// background rows, pgcache in-process, files in a temporary directory.
func tinyOptions(t *testing.T, engines ...string) (Options, *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	out := &syncBuffer{}
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
