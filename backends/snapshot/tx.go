package snapshot

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/memory"
)

// tx is the Backend fn runs on: the scratch store, refusing any key the
// run did not declare. It has no capability beyond Backend and
// ExpiryReader: DBSIZE or a flush would see the scratch, not the store.
type tx struct {
	s    *memory.Store
	keys map[string]loaded // the declared keys
}

func (t *tx) check(key string) error {
	if _, ok := t.keys[key]; !ok {
		return fmt.Errorf("%w: %s", backends.ErrUndeclaredKey, strconv.Quote(key))
	}
	return nil
}

func (t *tx) checkAll(keys []string) error {
	for _, k := range keys {
		if err := t.check(k); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := t.check(key); err != nil {
		return nil, false, err
	}
	return t.s.Get(ctx, key)
}

func (t *tx) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	if err := t.checkAll(keys); err != nil {
		return dst, err
	}
	return t.s.MGet(ctx, keys, dst)
}

func (t *tx) Set(ctx context.Context, key string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	if err := t.check(key); err != nil {
		return backends.SetResult{}, err
	}
	return t.s.Set(ctx, key, val, opts)
}

func (t *tx) MSet(ctx context.Context, pairs []backends.KV) error {
	for _, p := range pairs {
		if err := t.check(p.Key); err != nil {
			return err
		}
	}
	return t.s.MSet(ctx, pairs)
}

func (t *tx) Del(ctx context.Context, keys []string) (int64, error) {
	if err := t.checkAll(keys); err != nil {
		return 0, err
	}
	return t.s.Del(ctx, keys)
}

func (t *tx) Exists(ctx context.Context, keys []string) (int64, error) {
	if err := t.checkAll(keys); err != nil {
		return 0, err
	}
	return t.s.Exists(ctx, keys)
}

func (t *tx) Update(ctx context.Context, key string, u backends.Update) error {
	if err := t.check(key); err != nil {
		return err
	}
	return t.s.Update(ctx, key, u)
}

func (t *tx) TTL(ctx context.Context, key string) (time.Duration, error) {
	if err := t.check(key); err != nil {
		return 0, err
	}
	return t.s.TTL(ctx, key)
}

// GetWithTTL serves a cache tier that wraps the tx as it wraps the store.
func (t *tx) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	if err := t.check(key); err != nil {
		return nil, 0, false, err
	}
	return t.getWithTTL(ctx, key)
}

func (t *tx) getWithTTL(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	// Two calls, with nothing in between: only fn writes the scratch.
	val, ok, err := t.s.Get(ctx, key)
	if err != nil || !ok {
		return nil, 0, false, err
	}
	ttl, err := t.s.TTL(ctx, key)
	if err != nil {
		return nil, 0, false, err
	}
	if ttl == backends.TTLMissing { // expired between the two
		return nil, 0, false, nil
	}
	return val, ttl, true, nil
}

func (t *tx) MGetWithTTL(ctx context.Context, keys []string, dst []backends.Expiring) ([]backends.Expiring, error) {
	if err := t.checkAll(keys); err != nil {
		return dst, err
	}
	for _, k := range keys {
		val, ttl, _, err := t.getWithTTL(ctx, k)
		if err != nil {
			return dst, err
		}
		dst = append(dst, backends.Expiring{Val: val, TTL: ttl})
	}
	return dst, nil
}

// Close does nothing: Run drops the scratch.
func (t *tx) Close() error { return nil }

var (
	_ backends.Backend      = (*tx)(nil)
	_ backends.ExpiryReader = (*tx)(nil)
)

func (t *tx) Do(ctx context.Context, keys []string, op backends.Op) error {
	if err := t.checkAll(keys); err != nil {
		return err
	}
	return t.s.Do(ctx, keys, op)
}
