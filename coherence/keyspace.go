package coherence

import (
	"context"
	"fmt"

	"github.com/pgcache/pgcache/backends"
)

// Keyspace capabilities of a tier. Scans, EXPIRETIME and RANDOMKEY read the
// backend (backends.As finds them through Unwrap); the tier implements the
// two that write, so that it drops what they change.

// Flush empties the backend, then the whole L1. The table's fence (a
// TRUNCATE publishes one to every instance; this one fences locally at once)
// keeps a read that began before the flush from filling afterwards.
func (t *Tier) Flush(ctx context.Context) error {
	f, ok := backends.As[backends.Flusher](t.Backend)
	if !ok {
		return fmt.Errorf("l1: flush: %w", backends.ErrUnsupported)
	}
	defer func() {
		t.f.FenceTable(t.table.Name)
		t.cache.InvalidateAll()
	}()
	return f.Flush(ctx)
}

// Copy copies through and fences both keys.
func (t *Tier) Copy(ctx context.Context, src, dst string, o backends.CopyOptions) (backends.CopyResult, error) {
	c, ok := backends.As[backends.Copier](t.Backend)
	if !ok {
		return 0, fmt.Errorf("l1: copy: %w", backends.ErrUnsupported)
	}
	defer t.invalidate(true, src, dst)
	return c.Copy(ctx, src, dst, o)
}

var (
	_ backends.Flusher = (*Tier)(nil)
	_ backends.Copier  = (*Tier)(nil)
)
