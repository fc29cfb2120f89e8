package httpapi

import (
	"context"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// failing is a backend whose every call fails with err: the one way to see
// how the front maps a backend's failure. Behaviour of real backends is the
// memory backend's business, used everywhere else.
type failing struct {
	err    error
	stored bool // Set's SetResult.Stored when err is nil
}

func (f failing) Get(context.Context, string) ([]byte, bool, error) { return nil, false, f.err }
func (f failing) MGet(_ context.Context, _ []string, dst [][]byte) ([][]byte, error) {
	return dst, f.err
}
func (f failing) Set(context.Context, string, []byte, backends.SetOptions) (backends.SetResult, error) {
	return backends.SetResult{Stored: f.stored}, f.err
}
func (f failing) MSet(context.Context, []backends.KV) error             { return f.err }
func (f failing) Del(context.Context, []string) (int64, error)          { return 0, f.err }
func (f failing) Exists(context.Context, []string) (int64, error)       { return 0, f.err }
func (f failing) Update(context.Context, string, backends.Update) error { return f.err }
func (f failing) TTL(context.Context, string) (time.Duration, error)    { return 0, f.err }
func (f failing) Do(context.Context, []string, backends.Op) error       { return f.err }
func (f failing) Close() error                                          { return nil }

// blocking is a memory-like backend whose Get waits for release, to hold a
// request in flight. It reports each entry on entered and returns the ctx's
// error if the ctx ends first.
type blocking struct {
	failing
	entered chan struct{}
	release chan struct{}
}

func (b blocking) Get(ctx context.Context, _ string) ([]byte, bool, error) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
		return []byte("late"), true, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

var (
	_ backends.Backend = failing{}
	_ backends.Backend = blocking{}
)
