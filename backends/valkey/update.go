package valkey

import (
	"context"
	"errors"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/backends"
)

// maxWatchRetries bounds how often updateWatched starts over after another
// client wrote the key between its read and its write.
const maxWatchRetries = 64

var errWatchContention = errors.New("the key kept changing under a read-modify-write")

// updateWatched runs u as Redis clients do an optimistic read-modify-write:
// on a connection of its own, WATCH the key, read its value and lifetime,
// apply, and write in MULTI/EXEC. EXEC fails when the key was written after
// the WATCH, and then it runs again.
func (s *Store) updateWatched(ctx context.Context, key string, u backends.Update) error {
	op := u.Op()
	cctx, done, c, err := s.d.begin(ctx, op)
	if err != nil {
		return err
	}
	defer done()
	k := s.key(key)
	var applyErr error
	err = c.Dedicated(func(dc valkey.DedicatedClient) error {
		for range maxWatchRetries {
			reads := dc.DoMulti(cctx,
				dc.B().Watch().Key(k).Build(),
				dc.B().Get().Key(k).Build(),
				dc.B().Pttl().Key(k).Build())
			if err := reads[0].Error(); err != nil {
				return err
			}
			cur := backends.Current{TTL: backends.TTLPersistent}
			v, err := reads[1].ToString()
			switch {
			case valkey.IsValkeyNil(err):
			case err != nil:
				return err
			default:
				cur.Val = []byte(v)
				if ms, err := reads[2].AsInt64(); err == nil && ms >= 0 {
					cur.TTL = time.Duration(ms) * time.Millisecond
				}
			}
			ch, err := u.Apply(cur)
			if err != nil || ch.Kind == backends.Keep {
				applyErr = err
				return dc.Do(cctx, dc.B().Unwatch().Build()).Error()
			}
			write := dc.B().Del().Key(k).Build()
			if ch.Kind == backends.Put {
				cmd := dc.B().Arbitrary("SET").Keys(k).Args(string(ch.Val))
				if ch.TTL.Mode == backends.TTLKeep {
					cmd = cmd.Args("KEEPTTL")
				} else if unit, n, ok := expiryArgs(ch.TTL); ok {
					cmd = cmd.Args(unit, n)
				}
				write = cmd.Build()
				if d, ok := ch.TTL.Deadline(time.Now()); ok && !d.After(time.Now()) {
					write = dc.B().Del().Key(k).Build()
				}
			}
			res := dc.DoMulti(cctx, dc.B().Multi().Build(), write, dc.B().Exec().Build())
			exec := res[len(res)-1]
			if err := exec.Error(); err != nil {
				if valkey.IsValkeyNil(err) {
					continue // written since WATCH: read again
				}
				return err
			}
			return nil
		}
		return errWatchContention
	})
	s.written(k)
	if err != nil {
		return s.d.fail(ctx, op, err)
	}
	return applyErr
}
