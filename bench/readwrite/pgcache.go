package readwrite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
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
	dir, done, err := r.instanceDir()
	if err != nil {
		return nil, err
	}
	var insts []instance.Instance
	defer func() {
		for _, in := range insts {
			if serr := in.Stop(); serr != nil && err == nil {
				err = serr
			}
		}
		done()
	}()
	for i := range r.o.Instances {
		in, err := r.startInstance(ctx, dir, i)
		if err != nil {
			return nil, err
		}
		insts = append(insts, in)
	}
	var clients []valkey.Client
	for _, in := range insts {
		c, err := dialRESP(in.Addr("resp"))
		if err != nil {
			return nil, fmt.Errorf("pgcache: %w", err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	crud := "CRUD:" + r.env.database + ".public." + rowsTable + ":"
	read := func(ctx context.Context, id int64) (bool, error) {
		c := clients[int(id)%len(clients)]
		vals, err := c.Do(ctx, c.B().Mget().Key(crud+strconv.FormatInt(id, 10)).Build()).ToArray()
		if err == nil && (len(vals) != 1 || vals[0].IsNil()) {
			err = fmt.Errorf("row %d: MGET answered %v", id, vals)
		}
		return false, err
	}
	var writes atomicCounter
	sqlWrite := r.sqlWriter()
	write := func(ctx context.Context, id int64) error {
		n := writes.next()
		if len(clients) > 1 && n%2 == 0 {
			row := fmt.Sprintf(`{"id":%d,"v":%d,"payload":"w%d"}`, id, n, n)
			c := clients[int(n/2)%len(clients)]
			return c.Do(ctx, c.B().Set().Key(crud+strconv.FormatInt(id, 10)).Value(row).Build()).Error()
		}
		return sqlWrite(ctx, id)
	}
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
