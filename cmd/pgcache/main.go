// Command pgcache is a cache sidecar: Redis protocol and HTTP in front of an
// in-process cache, Valkey, or PostgreSQL tables.
package main

import (
	"os"

	_ "github.com/pgcache/pgcache/backends/standard"
)

func main() { os.Exit(runCommand(os.Args[1:], os.Stdout, os.Stderr)) }
