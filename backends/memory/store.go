package memory

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/internal/otterread"
	"github.com/pgcache/pgcache/internal/sweep"
)

// Store is one route's cache of a memory driver.
//
// Reads check each item's deadline against the clock themselves; otter's own
// expiry only frees the memory. Every read-modify-write runs inside otter's
// Compute, under the lock of the key's bucket, so concurrent INCRs lose
// nothing and SET NX has exactly one winner.
type Store struct {
	c       *cache
	sweep   *sweep.Sweeper[*item] // told of every item written with a deadline
	release func()
	closed  sync.Once
}

// k is a key for a lookup: borrowed keys are fine, otter keeps none.
func (s *Store) k(k string) string { return k }

// owned is a key the cache may keep: keys passed in are borrowed, and otter
// keeps the key a write is called with.
func (s *Store) owned(k string) string { return strings.Clone(k) }

func now() int64 { return time.Now().UnixNano() }

// deadline turns a TTL into an item's exp, given the old item's exp for TTLKeep.
func deadline(t backends.TTL, oldExp int64, n int64) int64 {
	switch t.Mode {
	case backends.TTLKeep:
		return oldExp
	case backends.TTLRelative:
		return n + int64(t.D)
	case backends.TTLAt:
		return t.At.UnixNano()
	}
	return 0
}

// wrote tells the sweeper of an item written with deadline exp (none: 0).
func (s *Store) wrote(exp int64) {
	if exp != 0 {
		s.sweep.Wrote(exp)
	}
}

// get looks k up; otter's policy hears of one read in otterread.Rate.
func (s *Store) get(k string) (*item, bool) { return otterread.Get(s.c, k) }

// Get returns the value of a live key.
func (s *Store) Get(_ context.Context, k string) ([]byte, bool, error) {
	it, ok := s.get(s.k(k))
	if !ok || !it.alive() {
		return nil, false, nil
	}
	return it.val(), true, nil
}

// MGet appends the value of each key, or nil, to dst.
func (s *Store) MGet(_ context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	var n int64 // the clock, read once the first item with a deadline is found
	for _, k := range keys {
		it, ok := s.get(s.k(k))
		if ok && it.exp != 0 && n == 0 {
			n = now()
		}
		if !ok || !it.live(n) {
			dst = append(dst, nil)
			continue
		}
		dst = append(dst, it.val())
	}
	return dst, nil
}

// Set stores val as opts says.
func (s *Store) Set(_ context.Context, k string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	if opts.Cond == backends.SetAlways && !opts.Get && opts.TTL.Mode != backends.TTLKeep {
		var exp int64
		if opts.TTL.Mode != backends.TTLNone {
			n := now()
			if exp = deadline(opts.TTL, 0, n); exp <= n {
				s.c.Invalidate(s.k(k)) // a deadline already past: stored, and gone at once
				return backends.SetResult{Stored: true}, nil
			}
		}
		s.c.Set(s.owned(k), newItem(val, exp))
		s.wrote(exp)
		return backends.SetResult{Stored: true}, nil
	}
	n := now()
	var res backends.SetResult
	var wrote int64
	s.c.Compute(s.owned(k), func(old *item, found bool) (*item, otter.ComputeOp) {
		live := found && old.live(n)
		if opts.Get && live {
			res.Old, res.OldFound = old.val(), true
		}
		if (opts.Cond == backends.SetIfAbsent && live) || (opts.Cond == backends.SetIfPresent && !live) {
			return old, otter.CancelOp
		}
		res.Stored = true
		oldExp := int64(0)
		if live {
			oldExp = old.exp
		}
		exp := deadline(opts.TTL, oldExp, n)
		if exp != 0 && exp <= n {
			return nil, otter.InvalidateOp
		}
		wrote = exp
		return newItem(val, exp), otter.WriteOp
	})
	s.wrote(wrote)
	return res, nil
}

// MSet stores every pair with no expiry. It is not atomic across keys: a
// reader may see some pairs before others.
func (s *Store) MSet(_ context.Context, pairs []backends.KV) error {
	for _, p := range pairs {
		s.c.Set(s.owned(p.Key), newItem(p.Val, 0))
	}
	return nil
}

// Del removes the keys and counts the live ones.
func (s *Store) Del(_ context.Context, keys []string) (int64, error) {
	n, count := now(), int64(0)
	for _, k := range keys {
		if it, ok := s.c.Invalidate(s.k(k)); ok && it.live(n) {
			count++
		}
	}
	return count, nil
}

// Exists counts the live keys.
func (s *Store) Exists(_ context.Context, keys []string) (int64, error) {
	n, count := now(), int64(0)
	for _, k := range keys {
		if it, ok := s.c.GetIfPresent(s.k(k)); ok && it.live(n) {
			count++
		}
	}
	return count, nil
}

// GetDel returns a live key's value and removes it.
func (s *Store) GetDel(_ context.Context, k string) ([]byte, bool, error) {
	it, ok := s.c.Invalidate(s.k(k))
	if !ok || !it.live(now()) {
		return nil, false, nil
	}
	return it.val(), true, nil
}

// GetEx returns a live key's value and sets its expiry.
func (s *Store) GetEx(ctx context.Context, k string, ttl backends.TTL) ([]byte, bool, error) {
	if ttl.Mode == backends.TTLKeep {
		return s.Get(ctx, k)
	}
	n := now()
	var val []byte
	var found bool
	var wrote int64
	// owned: a write stores the key it was called with, not the entry's.
	s.c.ComputeIfPresent(s.owned(k), func(old *item) (*item, otter.ComputeOp) {
		if !old.live(n) {
			return old, otter.InvalidateOp
		}
		val, found = old.val(), true
		exp := deadline(ttl, old.exp, n)
		if exp != 0 && exp <= n {
			return nil, otter.InvalidateOp
		}
		wrote = exp
		return newItem(val, exp), otter.WriteOp
	})
	s.wrote(wrote)
	return val, found, nil
}

// IncrBy adds delta to the integer at k.
func (s *Store) IncrBy(_ context.Context, k string, delta int64) (int64, error) {
	n := now()
	var result, wrote int64
	var err error
	s.c.Compute(s.owned(k), func(old *item, found bool) (*item, otter.ComputeOp) {
		var cur, exp int64
		if found && old.live(n) {
			v, ok := backends.ParseInt(old.val())
			if !ok {
				err = backends.ErrNotInteger
				return old, otter.CancelOp
			}
			cur, exp = v, old.exp
		}
		if (delta > 0 && cur > maxInt64-delta) || (delta < 0 && cur < minInt64-delta) {
			err = backends.ErrOverflow
			return old, otter.CancelOp
		}
		result, wrote = cur+delta, exp
		var digits [20]byte
		return newItem(strconv.AppendInt(digits[:0], result, 10), exp), otter.WriteOp
	})
	s.wrote(wrote)
	return result, err
}

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

// Expire sets, changes or removes (TTLNone) a live key's expiry.
func (s *Store) Expire(_ context.Context, k string, ttl backends.TTL, cond backends.ExpireCond) (bool, error) {
	n := now()
	changed := false
	var wrote int64
	// owned: a write stores the key it was called with, not the entry's.
	s.c.ComputeIfPresent(s.owned(k), func(old *item) (*item, otter.ComputeOp) {
		if !old.live(n) {
			return old, otter.InvalidateOp
		}
		if ttl.Mode == backends.TTLNone {
			if old.exp == 0 {
				return old, otter.CancelOp
			}
			changed = true
			return newItem(old.val(), 0), otter.WriteOp
		}
		exp := deadline(ttl, old.exp, n)
		if !backends.ExpireAllowed(cond, old.exp, exp) {
			return old, otter.CancelOp
		}
		changed = true
		if exp <= n {
			return nil, otter.InvalidateOp
		}
		wrote = exp
		return newItem(old.val(), exp), otter.WriteOp
	})
	s.wrote(wrote)
	return changed, nil
}

// TTL returns the remaining lifetime of k.
func (s *Store) TTL(_ context.Context, k string) (time.Duration, error) {
	n := now()
	it, ok := s.c.GetIfPresent(s.k(k))
	switch {
	case !ok || !it.live(n):
		return backends.TTLMissing, nil
	case it.exp == 0:
		return backends.TTLPersistent, nil
	}
	return time.Duration(it.exp - n), nil
}

// Len counts the route's keys, as otter estimates (expired entries not
// yet removed included).
func (s *Store) Len(context.Context) (int64, error) {
	return int64(s.c.EstimatedSize()), nil
}

// Close releases the route's cache: the last Store of a route drops it. A
// reload opens the new route table before it closes the old one, so a
// route that stays keeps its keys.
func (s *Store) Close() error {
	s.closed.Do(s.release)
	return nil
}

var (
	_ backends.Backend = (*Store)(nil)
	_ backends.Sizer   = (*Store)(nil)
)
