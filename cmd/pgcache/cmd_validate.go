package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/server"
)

func init() {
	register(command{
		name:  "validate",
		usage: "[--config FILE]",
		short: "check a config file (and the environment) and exit non-zero with the reasons",
		run:   cmdValidate,
	})
	register(command{
		name:  "version",
		usage: "",
		short: "print pgcache's version",
		run: func(args []string, stdout, stderr io.Writer) int {
			if code, ok := parse(commands["version"].flags(stderr), args); !ok {
				return code
			}
			fmt.Fprintln(stdout, "pgcache", server.Version())
			return exitOK
		},
	})
}

// cmdValidate makes the checks `run` makes before it opens a route: the
// config, its certificate files, each backend's options and each route's
// (server.Check), without connecting anywhere, and prints every reason.
func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := commands["validate"].flags(stderr)
	file := fs.String("config", "", "YAML config file to check")
	conf.AddFlags(fs)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	cfg, err := conf.Decode(conf.Source{File: *file, Flags: fs})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = server.Check(ctx, cfg, zap.NewNop())
		cancel()
	}
	if err != nil {
		fmt.Fprintf(stderr, "config is invalid:\n%v\n", err)
		return exitError
	}
	name := *file
	if name == "" {
		name = "embedded default"
	}
	fmt.Fprintf(stdout, "config OK (%s): %d backends, %d routes\n", name, len(cfg.Backends), len(cfg.Routes))
	return exitOK
}
