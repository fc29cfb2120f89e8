package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// command is one subcommand: `pgcache <name> [flags]`.
type command struct {
	name, usage, short string
	run                func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed (a bad config, a server that could not start)
	exitUsage = 2 // the command line was wrong
)

func runCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		// A command line that does nothing: say what would, where errors go.
		usage(stderr)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "pgcache: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "pgcache: a cache sidecar speaking RESP and HTTP in front of memory, Valkey or PostgreSQL")
	fmt.Fprintln(w, "\nusage: pgcache <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].short)
	}
	fmt.Fprintln(w, "\n`pgcache <command> --help` shows a command's flags.")
}

// flags returns a flag set for c that prints its usage on -h.
func (c command) flags(stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: pgcache %s %s\n\n%s\n\nflags:\n", c.name, c.usage, c.short)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, returning an exit code when the command should stop.
func parse(fs *pflag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if err == pflag.ErrHelp {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return exitUsage, false
	}
	return 0, true
}
