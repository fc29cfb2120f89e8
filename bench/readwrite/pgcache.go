package readwrite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/bench/instance"
)

// runPgcache runs o.Instances pgcache servers with a coherent L1 on the
// table; readers send RESP MGET of one CRUD: key, spread across the
// instances by row, through valkey-go (as the cache-aside stack's readers
// reach Valkey); writers UPDATE by SQL and, with several instances,
// every second write is a SET of the row through one of them in turn.
// After the writers stop and every instance has received every fence,
// each instance's L1 is read through its admin API (GET /debug/l1) and
// compared with PostgreSQL.
func (r *run) runPgcache(ctx context.Context) (_ *stackResult, err error) {
	insts, clients, stop, err := r.startInstances(ctx, StackPgcache)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	read := func(ctx context.Context, _ int, id int64) (bool, error) {
		c := clients[int(id)%len(clients)]
		vals, err := c.Do(ctx, c.B().Mget().Key(r.rowKey(id)).Build()).ToArray()
		if err == nil && (len(vals) != 1 || vals[0].IsNil()) {
			err = fmt.Errorf("row %d: MGET answered %v", id, vals)
		}
		return false, err
	}
	write := r.pgcacheWriter(clients)
	if err := r.warm(ctx, read); err != nil {
		return nil, err
	}
	before, err := l1Stats(ctx, clients)
	if err != nil {
		return nil, err
	}
	res := &stackResult{load: runLoad(ctx, r.o, read, write, r.o.Progress, StackPgcache)}
	after, err := l1Stats(ctx, clients)
	if err != nil {
		return nil, err
	}
	res.hitRatio = after.Minus(before).HitRatio()

	// Settle: once a canary sent after the last write has come back to
	// every instance, every fence of the run has been received.
	if err := waitSettled(ctx, insts, time.Now(), r.o.SettleTimeout); err != nil {
		return nil, err
	}
	for i, in := range insts {
		entries, stale, err := r.auditL1(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("pgcache instance %d: %w", i, err)
		}
		res.entries += entries
		res.stale += stale
	}
	return res, nil
}

// startInstances starts o.Instances pgcache servers for stack (their
// configs and logs are named after it) and a RESP client of each
// (client-side caching off); stop closes the clients and stops the servers.
func (r *run) startInstances(ctx context.Context, stack string) (insts []instance.Instance, clients []valkey.Client, stop func() error, err error) {
	dir, done, err := r.instanceDir()
	if err != nil {
		return nil, nil, nil, err
	}
	stop = func() error {
		var first error
		for _, c := range clients {
			c.Close()
		}
		for _, in := range insts {
			if serr := in.Stop(); serr != nil && first == nil {
				first = serr
			}
		}
		done()
		return first
	}
	for i := range r.o.Instances {
		in, err := r.startInstance(ctx, dir, fmt.Sprintf("%s-%d", stack, i))
		if err != nil {
			return nil, nil, nil, errors.Join(err, stop())
		}
		insts = append(insts, in)
	}
	for _, in := range insts {
		c, err := dialRESP(in.Addr("resp"))
		if err != nil {
			return nil, nil, nil, errors.Join(fmt.Errorf("pgcache: %w", err), stop())
		}
		clients = append(clients, c)
	}
	return insts, clients, stop, nil
}

// rowKey is row id's key on the table route, in its canonical spelling
// (the one a write of the row reports to tracking clients).
func (r *run) rowKey(id int64) string { return r.keys[id] }

// pgcacheWriter is the writers of the stacks through pgcache: UPDATE by
// SQL and, with several instances, every second write a SET of the row
// through one of them in turn.
func (r *run) pgcacheWriter(clients []valkey.Client) writeFunc {
	var writes atomicCounter
	sqlWrite := r.sqlWriter()
	return func(ctx context.Context, id int64) error {
		n := writes.next()
		if len(clients) > 1 && n%2 == 0 {
			row := fmt.Sprintf(`{"id":%d,"v":%d,"payload":"w%d"}`, id, n, n)
			c := clients[int(n/2)%len(clients)]
			return c.Do(ctx, c.B().Set().Key(r.rowKey(id)).Value(row).Build()).Error()
		}
		return sqlWrite(ctx, id)
	}
}

// instanceDir is where the instances' configs and logs go: the output
// directory, else a temporary one that done removes.
func (r *run) instanceDir() (dir string, done func(), err error) {
	if r.o.Out != "" {
		return r.o.Out, func() {}, nil
	}
	dir, err = os.MkdirTemp("", "pgcache-bench-coherence-")
	if err != nil {
		return "", nil, errors.Join(errors.New("pgcache configs and logs"), err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
