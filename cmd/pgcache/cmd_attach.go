package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/coherence"
)

func init() {
	register(command{
		name:  "attach",
		usage: "[--dsn DSN] [--trigger auto|c|plpgsql] schema.table ...",
		short: "install the fence triggers on tables, so pgcache's L1 tiers learn of every write (idempotent)",
		run:   func(args []string, stdout, stderr io.Writer) int { return cmdAttach("attach", args, stdout, stderr) },
	})
	register(command{
		name:  "detach",
		usage: "[--dsn DSN] schema.table ...",
		short: "remove the fence triggers from tables",
		run:   func(args []string, stdout, stderr io.Writer) int { return cmdAttach("detach", args, stdout, stderr) },
	})
}

func cmdAttach(name string, args []string, stdout, stderr io.Writer) int {
	c := commands[name]
	fs := c.flags(stderr)
	dsn := fs.String("dsn", "", "PostgreSQL connection string (default: the PG* environment variables)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	var trigger *string
	if name == "attach" {
		trigger = fs.String("trigger", "auto", "what the row triggers run: c (the pgcache_fence extension), plpgsql, or auto (c where available)")
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	want := coherence.TriggerAuto
	if trigger != nil {
		switch *trigger {
		case "auto":
		case string(coherence.TriggerC), string(coherence.TriggerPLpgSQL):
			want = coherence.TriggerFunc(*trigger)
		default:
			fmt.Fprintf(stderr, "pgcache %s: --trigger %q: must be auto, c or plpgsql\n", name, *trigger)
			return exitUsage
		}
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "pgcache %s: name at least one table\n", name)
		fs.Usage()
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, *dsn)
	if err != nil {
		fmt.Fprintf(stderr, "pgcache %s: connect: %v\n", name, err)
		return exitError
	}
	defer conn.Close(context.Background())
	for _, table := range fs.Args() {
		if name == "attach" {
			var got coherence.TriggerFunc
			if got, err = coherence.AttachUsing(ctx, conn, table, want); err == nil {
				fmt.Fprintf(stdout, "attached %s (%s trigger)\n", table, got)
			}
		} else if err = coherence.Detach(ctx, conn, table); err == nil {
			fmt.Fprintf(stdout, "detached %s\n", table)
		}
		if err != nil {
			fmt.Fprintf(stderr, "pgcache %s %s: %v\n", name, table, err)
			return exitError
		}
	}
	return exitOK
}
