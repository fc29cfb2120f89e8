package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// A table route's rows are JSON objects to GET and hashes of their
// columns to the hash commands (HGET user:42 name): a read runs on the
// row as coll.HashOfRow reads it. HSET, on a route that says writable,
// changes columns of a row that exists (an UPDATE of it, in an atomic run
// of the row); every other write is refused, and TYPE says "string", as
// GET reads the row.

// Do runs a command on a row read as a hash.
func (s *Table) Do(ctx context.Context, keys []string, op backends.Op) error {
	if op, ok := op.(*coll.HSet); ok {
		if !s.writable {
			return backends.Refusal("ERR route " + s.route + " serves rows: HSET changes a row's columns only where the route says writable: true")
		}
		return s.hset(ctx, keys[0], op.Pairs)
	}
	if op.Writes() != backends.ReadOnly || len(keys) != 1 {
		return backends.Refusal("ERR route " + s.route + " serves rows: " + op.Name() + " is not one of the hash reads it answers")
	}
	row, ok, err := s.Get(ctx, keys[0])
	if err != nil {
		return err
	}
	return RunOnRow(row, ok, op)
}

// RunOnRow runs a read of a hash on a row (found: JSON), as a table route
// answers it; an L1 tier in front of one runs its cached rows through it.
func RunOnRow(row []byte, found bool, op backends.Op) error {
	if t, ok := op.(*coll.TypeOf); ok { // GET reads the row: a string
		t.Type = backends.TypeNone
		if found {
			t.Type = backends.TypeString
		}
		return nil
	}
	view := coll.NewSlots([]string{""}, nil)
	if found {
		h, err := coll.HashOfRow(row)
		if err != nil {
			return err
		}
		view.Load(0, h, false)
	}
	return op.Run(view)
}

// RowHash is backends.Rows's: a table route's row as a hash.
func (s *Table) RowHash() func(row []byte, found bool, op backends.Op) error { return RunOnRow }

// hset writes fields of an existing row, as one atomic run of it: the row
// is read locked, its fields changed, and written back.
func (s *Table) hset(ctx context.Context, key string, pairs [][]byte) error {
	return s.Atomically(ctx, []string{key}, func(tx backends.Backend) error {
		row, ok, err := tx.Get(ctx, key)
		if err != nil {
			return err
		}
		if !ok {
			return backends.Refusal("ERR no row " + key + " in " + s.FenceTable() + ": HSET changes a row, never makes one")
		}
		var cols map[string]json.RawMessage
		if err := json.Unmarshal(row, &cols); err != nil {
			return fmt.Errorf("%w: %v", backends.ErrBadValue, err)
		}
		for i := 0; i < len(pairs); i += 2 {
			name := string(pairs[i])
			if _, ok := cols[name]; !ok {
				return backends.Refusal("ERR " + s.FenceTable() + " has no column " + name)
			}
			v, _ := json.Marshal(string(pairs[i+1])) // PostgreSQL casts the text to the column's type
			cols[name] = v
		}
		out, err := json.Marshal(cols)
		if err != nil {
			return err
		}
		_, err = tx.Set(ctx, key, out, backends.SetOptions{Cond: backends.SetIfPresent})
		return err
	})
}

var _ backends.Rows = (*Table)(nil)
