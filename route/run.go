package route

import (
	"context"
	"fmt"

	"github.com/pgcache/pgcache/backends"
)

// Atomically runs fn atomically on the backend, on a tx wrapped as the
// route wraps: its writes are counted, limited and seen by WATCH.
func (in *instrumented) Atomically(ctx context.Context, keys []string, fn func(tx backends.Backend) error) error {
	a, ok := backends.As[backends.Atomic](in.b)
	if !ok {
		return fmt.Errorf("route %s: transactions and scripts: %w", in.route, backends.ErrUnsupported)
	}
	v, _ := in.views.Get().(*runView)
	if v == nil {
		v = &runView{}
		v.call = v.run
	}
	v.instrumented = instrumented{meter: in.meter, deferred: &v.written}
	v.fn = fn
	err := a.Atomically(ctx, keys, v.call)
	// Reported whether or not the run committed: a write that did not
	// happen costs a reader one needless invalidation, never a stale value.
	in.wroteAll(ctx, v.written)
	clear(v.written)
	v.instrumented, v.fn, v.written = instrumented{}, nil, v.written[:0]
	if cap(v.written) > 1024 {
		v.written = nil
	}
	in.views.Put(v)
	return err
}

// runView is the wrapper of one atomic run's tx, with what the run wrote.
// Views are pooled: one per run was an allocation of the whole wrapper,
// and of the function handed to the backend.
type runView struct {
	instrumented
	written []string
	fn      func(tx backends.Backend) error // the caller's
	call    func(tx backends.Backend) error // v.run, bound once
}

// run is the function the backend runs with the tx: fn, on its wrapper.
// A backend may run it again (a retried PostgreSQL transaction): the
// writes of every try are reported.
func (v *runView) run(tx backends.Backend) error {
	v.b = tx
	return v.fn(&v.instrumented)
}
