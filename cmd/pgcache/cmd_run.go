package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/server"
)

func init() {
	register(command{
		name:  "run",
		usage: "[--config FILE] [flags]",
		short: "serve RESP, HTTP and the admin API until SIGTERM or SIGINT",
		run:   cmdRun,
	})
}

func cmdRun(args []string, _, stderr io.Writer) int {
	c := commands["run"]
	fs := c.flags(stderr)
	file := fs.String("config", "", "YAML config file (default: the embedded memory route)")
	conf.AddFlags(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, err := conf.Load(conf.Source{File: *file, Flags: fs})
	if err != nil {
		fmt.Fprintf(stderr, "pgcache: config:\n%v\n", err)
		return exitError
	}
	log, err := server.NewLogger(cfg.Log)
	if err != nil {
		fmt.Fprintf(stderr, "pgcache: log: %v\n", err)
		return exitError
	}
	defer log.Sync()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv, err := server.New(ctx, cfg, log)
	cancel()
	if err != nil {
		log.Error("start", zap.Error(err))
		return exitError
	}
	// Signals are caught before listening, so a SIGTERM that arrives while
	// starting still drains instead of killing the process.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := srv.Start(); err != nil {
		log.Error("start", zap.Error(err))
		srv.Shutdown(context.Background())
		return exitError
	}
	log.Info("pgcache started", zap.String("version", server.Version()), zap.Int("routes", len(cfg.Routes)))

	code := exitOK
wait:
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				log.Warn("SIGHUP: live reload is not supported yet; restart pgcache to change its config")
				continue
			}
			log.Info("stopping", zap.String("signal", sig.String()))
			break wait
		case err := <-srv.Errors():
			log.Error("a front stopped serving", zap.Error(err))
			code = exitError
			break wait
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Duration(cfg.ShutdownTimeout))
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown", zap.Error(err))
	}
	log.Info("pgcache stopped")
	return code
}
