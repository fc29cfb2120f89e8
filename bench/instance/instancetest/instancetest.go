// Package instancetest lets a bench's tests run pgcache as a child process
// without building the binary: the test binary itself acts as `pgcache run
// --config FILE`.
package instancetest

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/bench/instance"
	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/server"
)

// helperEnv makes the test binary act as pgcache. Not PGCACHE_: those are
// kept from the child.
const helperEnv = "BENCH_TEST_HELPER_PGCACHE"

// Main is a bench test package's TestMain, or its start: when the binary
// was started as a helper child it serves and exits, else it returns.
func Main() {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(serve(os.Args[len(os.Args)-1]))
	}
}

// UseChild has children started by instance.StartChild, until the test
// ends, be this test binary acting as pgcache; it returns the executable
// to start.
func UseChild(t *testing.T) string {
	t.Setenv(helperEnv, "1")
	saved := instance.ChildArgs
	instance.ChildArgs = []string{"-test.run=^$", "--config"} // serve reads the last argument
	t.Cleanup(func() { instance.ChildArgs = saved })
	return os.Args[0]
}

// serve is cmd/pgcache's run, in short: serve the config until SIGTERM,
// then drain.
func serve(cfgPath string) int {
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
