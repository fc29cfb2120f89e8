// Package standard imports the backends that ship with pgcache, so that
// each registers itself. A new backend is one folder and one line here.
package standard

import (
	_ "github.com/pgcache/pgcache/backends/memory"
	_ "github.com/pgcache/pgcache/backends/postgres"
	_ "github.com/pgcache/pgcache/backends/valkey"
)
