package coherence

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/server"
)

// helperEnv makes the test binary act as `pgcache run --config FILE`, so
// the child-process mode is tested without building the binary.
const helperEnv = "BENCH_COHERENCE_TEST_HELPER_PGCACHE" // not PGCACHE_: those are kept from the child

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperPgcache(os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
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

// asChildren makes Run start its pgcache instances as child processes of
// the test binary acting as pgcache.
func asChildren(t *testing.T, o *Options) {
	t.Setenv(helperEnv, "1")
	saved := childArgs
	childArgs = []string{"-test.run=^$", "--config"} // the helper reads the last argument
	t.Cleanup(func() { childArgs = saved })
	o.Server, o.Executable = ServerChild, os.Args[0]
}
