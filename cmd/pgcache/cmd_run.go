package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/sdnotify"
	"github.com/pgcache/pgcache/server"
)

func init() {
	register(command{
		name:  "run",
		usage: "[--config FILE] [flags]",
		short: "serve RESP, HTTP and the admin API until SIGTERM or SIGINT; SIGHUP reloads the config",
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
	src := conf.Source{File: *file, Flags: fs}
	// Decoded only: server.New validates it with every other check that
	// needs no network, the ones `pgcache validate` makes, and reports
	// every reason at once.
	cfg, err := conf.Decode(src)
	if err != nil {
		fmt.Fprintf(stderr, "pgcache: config:\n%v\n", err)
		return exitError
	}
	log, err := server.NewLogger(cfg.Log)
	if err != nil {
		// log.level or log.format is wrong: server.New names it with the
		// rest. Until then, zap's defaults.
		log, _ = server.NewLogger(conf.Log{Level: conf.DefaultLogLevel, Format: conf.DefaultLogFormat})
	}
	defer log.Sync()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	srv, err := server.New(ctx, cfg, log)
	cancel()
	if errs, ok := errors.AsType[conf.Errors](err); ok {
		fmt.Fprintf(stderr, "pgcache: config:\n%v\n", errs)
		return exitError
	}
	if err != nil {
		log.Error("start", zap.Error(err))
		return exitError
	}
	srv.SetSource(src)
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
	notify(log, sdnotify.Ready("serving"))

	code := exitOK
wait:
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				reload(srv, log)
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
	notify(log, sdnotify.Stopping())
	// Read now, not at start: a reload may have changed it.
	ctx, cancel = context.WithTimeout(context.Background(), time.Duration(srv.Config().ShutdownTimeout))
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown", zap.Error(err))
	}
	log.Info("pgcache stopped")
	return code
}

// reload is SIGHUP: read the config file again and swap it in. A config
// that is refused leaves the running one serving; the server has logged
// why and counted it, and systemd's status line says so too.
func reload(srv *server.Server, log *zap.Logger) {
	notify(log, sdnotify.Reloading())
	status := "serving"
	if err := srv.ReloadFile(context.Background()); err != nil {
		status = "serving the previous config; reload refused: " + oneLine(err.Error())
	}
	notify(log, sdnotify.Ready(status))
}

// notify reports a failure to reach systemd's notify socket, which only
// matters to someone reading why the unit does not come up.
func notify(log *zap.Logger, err error) {
	if err != nil {
		log.Warn("sd_notify", zap.Error(err))
	}
}

// oneLine joins a multi-line error for a one-line status.
func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }
