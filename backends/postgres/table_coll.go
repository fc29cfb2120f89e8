package postgres

import (
	"context"
	"fmt"

	"github.com/pgcache/pgcache/backends"
)

// Do refuses commands on collections: a table route's rows are strings of
// JSON (GET) until its hash commands are here.
func (s *Table) Do(_ context.Context, _ []string, op backends.Op) error {
	return fmt.Errorf("%s: %s: %w", s.where, op.Name(), backends.ErrUnsupported)
}
