package valkey

import (
	"context"

	"github.com/pgcache/pgcache/backends"
)

// Do: commands on collections reach Valkey once they are passed on
// (replaced when that lands).
func (s *Store) Do(context.Context, []string, backends.Op) error { return backends.ErrUnsupported }
