package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
)

// maxSetRetries bounds the reruns of a read-modify-write that met a
// concurrent change: a row inserted after its snapshot (setGetSQL), a value
// fixed between a refused increment and its explanation (incrWhySQL). Each
// rerun sees the change, so a second attempt nearly always settles it.
const maxSetRetries = 10

// casAttempts bounds the optimistic tries of HINCRBYFLOAT and ZADD … INCR
// (read, compute in Go, write if unchanged); a member that keeps changing
// under them is then left to the generic path, which holds the key's lock
// from its read to its write and so always settles.
const casAttempts = 3

// errContention is the failure after maxSetRetries reruns.
var errContention = errors.New("key kept changing under the statement; try again")

// KV is a route's kv table.
type KV struct {
	base
	key        keyType
	durability string
	sql        kvSQL
	coll       collSQL
	sweeper    *sweeper // nil when sweep_interval is negative
	sweepStats sweepStats
	expiryLog  atomic.Pointer[string] // the sweep that logs what it deletes (LogExpiries); nil: none

	// Single-key reads, and plain SETs, share statements when the pool is
	// busy (coalesce.go).
	gets    coalescer[string, strRead]
	getTTLs coalescer[string, backends.Expiring] // a nil Val: absent
	sets    coalescer[setRow, struct{}]

	keyspace keyspace // SCAN, flushes, copies (keyspace.go)
}

// kvSpec reads a kv route's options, refusing every one it cannot honour.
func kvSpec(spec backends.RouteSpec) (t tableName, durability string, k keyType, err error) {
	var errs []error
	t, terr := parseTableName(spec.Table)
	if terr != nil {
		errs = append(errs, &backends.SpecError{Field: "table", Value: spec.Table, Reason: terr.Error()})
	}
	if t.schema == "" {
		t.schema = defaultSchema
	}
	durability = spec.Durability
	switch durability {
	case "":
		durability = DurabilityStandard
	case DurabilityStandard, DurabilityAsync, DurabilityUnlogged:
	default:
		errs = append(errs, &backends.SpecError{Field: "durability", Value: spec.Durability,
			Reason: "must be unlogged, async or standard"})
	}
	if spec.Writable {
		errs = append(errs, &backends.SpecError{Field: "writable", Value: "true", Reason: "only a source_table route's rows are written by HSET"})
	}
	k, ok := lookupKeyType(spec.KeyType)
	if !ok {
		errs = append(errs, &backends.SpecError{Field: "key_type", Value: spec.KeyType, Reason: "must be text, uuid or bigint"})
	}
	return t, durability, k, errors.Join(errs...)
}

// openKV checks a kv route's options and builds its store; its table is
// set up by the caller (Open) or on first use.
func (d *Driver) openKV(spec backends.RouteSpec) (*KV, error) {
	t, durability, k, err := kvSpec(spec)
	if err != nil {
		return nil, err
	}
	pool, err := d.poolFor(durability)
	if err != nil {
		return nil, err
	}
	s := &KV{key: k, durability: durability, sql: kvStatements(t.ident(), k),
		coll: collStatements(t.ident(), itemsTable(t).ident(), k)}
	s.init(d, pool, spec.Name, t, func(ctx context.Context) error {
		return ensureKVTable(ctx, pool, t, k, durability)
	})
	slots := int(pool.Config().MaxConns)
	s.gets = coalescer[string, strRead]{slots: slots, one: s.getOne, many: s.getMany, own: strings.Clone}
	s.getTTLs = coalescer[string, backends.Expiring]{slots: slots, one: s.getTTLOne, many: s.getTTLMany, own: strings.Clone}
	s.sets = coalescer[setRow, struct{}]{slots: setSlots(slots), one: s.setOne, many: s.setMany, own: setRow.own}
	if iv := time.Duration(d.opts.SweepInterval); iv > 0 {
		s.sweeper = startSweeper(s, iv)
	}
	return s, nil
}

// Durability is the route's durability: unlogged, async or standard.
func (s *KV) Durability() string { return s.durability }

// expiry turns a TTL into the $ttl and $at parameters of a deadline (see
// kvSQL) and whether it is KEEPTTL.
func expiry(t backends.TTL) (ttl, at any, keep bool) {
	switch t.Mode {
	case backends.TTLRelative:
		return t.D, nil, false
	case backends.TTLAt:
		return nil, t.At, false
	case backends.TTLKeep:
		return nil, nil, true
	}
	return nil, nil, false
}

// value makes a value a bytea parameter: pgx sends a nil slice as NULL.
func value(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// strRead is a read of one key as a string: its value (nil: absent), or
// that it holds a collection.
type strRead struct {
	val  []byte
	coll bool
}

// Get returns the value of a live key; ErrWrongType when it holds a
// collection.
func (s *KV) Get(ctx context.Context, key string) (val []byte, ok bool, err error) {
	if _, err := s.key.param(key); err != nil {
		return nil, false, err // checked first: a shared query must not fail for one bad key
	}
	r, err := s.gets.get(ctx, key)
	if r.coll {
		return nil, false, backends.ErrWrongType
	}
	return r.val, r.val != nil, err
}

// getOne reads one key with a statement of its own.
func (s *KV) getOne(ctx context.Context, key string) (r strRead, err error) {
	k, err := s.key.param(key)
	if err != nil {
		return r, err
	}
	err = s.do(ctx, "get", func(ctx context.Context) error {
		var val []byte
		var kind byte
		r = strRead{}
		switch err := s.pool.QueryRow(ctx, s.sql.get, k).Scan(&val, &kind); {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		case kind != kindString:
			r = strRead{coll: true}
		default:
			r = strRead{val: value(val)}
		}
		return nil
	})
	return r, err
}

// getMany reads keys with one statement: the coalescer's shared query.
func (s *KV) getMany(ctx context.Context, keys []string) ([]strRead, error) {
	found, err := s.mget(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]strRead, len(keys))
	for i, k := range keys {
		out[i] = found[k]
	}
	return out, nil
}

// MGet appends the value of each key, or nil (absent, or a collection), to
// dst: one query for all. A single key is read as Get, sharing a query
// with concurrent reads.
func (s *KV) MGet(ctx context.Context, keys []string, dst [][]byte) ([][]byte, error) {
	if out, done, err := fewKeys(ctx, keys, dst, s.getString); done {
		return out, err
	}
	found, err := s.mget(ctx, keys)
	if err != nil {
		return dst, err
	}
	for _, k := range keys {
		dst = append(dst, found[k].val) // nil when absent or a collection
	}
	return dst, nil
}

// getString is Get answering a collection as absent, as MGET does.
func (s *KV) getString(ctx context.Context, key string) ([]byte, bool, error) {
	val, ok, err := s.Get(ctx, key)
	if errors.Is(err, backends.ErrWrongType) {
		return nil, false, nil
	}
	return val, ok, err
}

// mget reads keys with one statement.
func (s *KV) mget(ctx context.Context, keys []string) (map[string]strRead, error) {
	ks, err := s.key.params(keys)
	if err != nil {
		return nil, err
	}
	found := make(map[string]strRead, len(keys))
	err = s.do(ctx, "mget", func(ctx context.Context) error {
		clear(found)
		rows, err := s.pool.Query(ctx, s.sql.mget, ks)
		if err != nil {
			return err
		}
		var k string
		var v []byte
		var kind byte
		_, err = pgx.ForEachRow(rows, []any{&k, &v, &kind}, func() error {
			if kind != kindString {
				found[k] = strRead{coll: true}
			} else {
				found[k] = strRead{val: value(v)}
			}
			return nil
		})
		return err
	})
	return found, err
}

// Set stores val as opts says. The common cases are one plain statement
// each, and a plain SET (no condition, no GET, no expiry or one relative
// to now) shares an upsert with concurrent ones when the pool is busy;
// SET … GET takes setGetSQL. Asked whether it made the key, a plain SET
// takes a statement of its own that says (setMade); SET NX made it when it
// stored, SET XX never does, and SET … GET did when it found no value.
func (s *KV) Set(ctx context.Context, key string, val []byte, opts backends.SetOptions) (backends.SetResult, error) {
	k, err := s.key.param(key)
	if err != nil {
		return backends.SetResult{}, err
	}
	val = value(val)
	if !opts.Get && !opts.AskCreated && opts.Cond == backends.SetAlways &&
		(opts.TTL.Mode == backends.TTLNone || opts.TTL.Mode == backends.TTLRelative) {
		row := setRow{key: key, val: val, ttl: -1}
		if opts.TTL.Mode == backends.TTLRelative {
			row.ttl = opts.TTL.D
		}
		_, err := s.sets.get(ctx, row)
		if err == nil {
			s.expires(opts.TTL)
		}
		return backends.SetResult{Stored: err == nil}, err
	}
	ttl, at, keep := expiry(opts.TTL)
	var res backends.SetResult
	err = s.do(ctx, "set", func(ctx context.Context) error {
		res = backends.SetResult{}
		var err error
		switch {
		case opts.Get:
			err = s.setGet(ctx, k, val, ttl, at, keep, opts.Cond, &res)
			res.Created = res.Stored && !res.OldFound
		case opts.Cond == backends.SetIfAbsent:
			err = storedRow(s.pool.QueryRow(ctx, s.sql.setNX, k, val, ttl, at), &res.Stored)
			res.Created = res.Stored
		case opts.Cond == backends.SetIfPresent:
			err = storedRow(s.pool.QueryRow(ctx, s.sql.setXX, k, val, ttl, at, keep), &res.Stored)
		case opts.AskCreated:
			err = s.pool.QueryRow(ctx, s.sql.setMade, k, val, ttl, at, keep).Scan(&res.Created)
			res.Stored = err == nil
		default:
			_, err = s.pool.Exec(ctx, s.sql.set, k, val, ttl, at, keep)
			res.Stored = err == nil
		}
		res.Created = res.Created && opts.AskCreated && err == nil
		return err
	})
	if res.Stored {
		s.expires(opts.TTL)
	}
	return res, err
}

// setSlots is how many plain SETs of a table run at once before the rest
// queue for a shared upsert: a quarter of the pool, at least one. Writes
// of one table wait for the same WAL flushes, so an upsert of the rows
// that queued meanwhile costs about what one row does: one slot stored
// more SETs a second than four, into standard and unlogged tables alike
// (docs/performance.md, Shared SETs). The cost is that a SET waiting on a row lock
// holds back the SETs queued behind it, until it gets the lock or its
// command timeout ends it.
func setSlots(poolSize int) int { return max(1, poolSize/4) }

// setRow is a plain SET: a key, its value and its lifetime from now (-1:
// none).
type setRow struct {
	key string
	val []byte
	ttl time.Duration
}

// own copies the key and value a queued SET borrows from its caller.
func (r setRow) own() setRow {
	return setRow{key: strings.Clone(r.key), val: slices.Clone(r.val), ttl: r.ttl}
}

// setOne stores one row with a statement of its own.
func (s *KV) setOne(ctx context.Context, r setRow) (struct{}, error) {
	k, err := s.key.param(r.key)
	if err != nil {
		return struct{}{}, err
	}
	var ttl any
	if r.ttl >= 0 {
		ttl = r.ttl
	}
	return struct{}{}, s.do(ctx, "set", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, s.sql.set, k, r.val, ttl, nil, false)
		return err
	})
}

// setMany stores queued SETs with one upsert: the coalescer's shared
// statement. Of a key queued twice the later value is stored: the two
// SETs ran concurrently, so either order is one they could have had, and
// both are answered OK.
func (s *KV) setMany(ctx context.Context, rows []setRow) ([]struct{}, error) {
	if err := s.upsert(ctx, "set", rows, nil); err != nil {
		return nil, err
	}
	return make([]struct{}, len(rows)), nil
}

// upsert stores rows in one statement: all or none. Of a key named twice
// the last row wins. With made, the statement says which keys it made
// (upsertMade), and made is called with each, once the statement has
// committed.
func (s *KV) upsert(ctx context.Context, op string, rows []setRow, made func(key string)) error {
	last := make(map[string]int, len(rows))
	for i, r := range rows {
		last[r.key] = i
	}
	type kv struct {
		k   any
		v   []byte
		ttl int64 // microseconds, -1 for none
		key string
	}
	uniq := make([]kv, 0, len(last))
	for i, r := range rows {
		if last[r.key] != i {
			continue
		}
		k, err := s.key.param(r.key)
		if err != nil {
			return err
		}
		ttl := int64(-1)
		if r.ttl >= 0 {
			ttl = r.ttl.Microseconds()
		}
		uniq = append(uniq, kv{k, r.val, ttl, r.key})
	}
	slices.SortFunc(uniq, func(a, b kv) int { return s.key.compare(a.k, b.k) })
	ks, vs, ttls := make([]any, len(uniq)), make([][]byte, len(uniq)), make([]int64, len(uniq))
	for i, r := range uniq {
		ks[i], vs[i], ttls[i] = r.k, r.v, r.ttl
	}
	keys := s.key.array(ks)
	if made == nil {
		return s.do(ctx, op, func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, s.sql.upsert, keys, vs, ttls)
			return err
		})
	}
	var madeAt []int // places in uniq, from 1 (array_position's)
	err := s.do(ctx, op, func(ctx context.Context) error {
		madeAt = madeAt[:0]
		res, err := s.pool.Query(ctx, s.sql.upsertMade, keys, vs, ttls)
		if err != nil {
			return err
		}
		var at int
		var m bool
		_, err = pgx.ForEachRow(res, []any{&at, &m}, func() error {
			if m {
				madeAt = append(madeAt, at)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return err
	}
	for _, at := range madeAt {
		made(uniq[at-1].key)
	}
	return nil
}

// storedRow reads the RETURNING true of a conditional write: no row means
// the condition refused it.
func storedRow(row pgx.Row, stored *bool) error {
	err := row.Scan(stored)
	if errors.Is(err, pgx.ErrNoRows) {
		*stored = false
		return nil
	}
	return err
}

func (s *KV) setGet(ctx context.Context, k any, val []byte, ttl, at any, keep bool, cond backends.SetCond, res *backends.SetResult) error {
	for range maxSetRetries {
		var hadRow, coll bool
		*res = backends.SetResult{}
		err := s.pool.QueryRow(ctx, s.sql.setGet, k, val, ttl, at, keep, int32(cond)).
			Scan(&res.Old, &res.OldFound, &res.Stored, &hadRow, &coll)
		if err != nil {
			return err
		}
		if coll {
			*res = backends.SetResult{}
			return backends.ErrWrongType
		}
		if res.Stored || hadRow || cond == backends.SetIfPresent {
			return nil
		}
	}
	return errContention
}

// MSet stores every pair with no expiry, in one statement: all or none.
// Of a key named twice the last value wins, as in Redis. When a pair asks
// whether it made its key, the statement says (upsertMade).
func (s *KV) MSet(ctx context.Context, pairs []backends.KV) error {
	if len(pairs) == 0 {
		return nil
	}
	rows := make([]setRow, len(pairs))
	ask := false
	for i, p := range pairs {
		rows[i] = setRow{key: p.Key, val: value(p.Val), ttl: -1}
		ask = ask || p.AskCreated
	}
	if !ask {
		return s.upsert(ctx, "mset", rows, nil)
	}
	made := map[string]bool{}
	if err := s.upsert(ctx, "mset", rows, func(key string) { made[key] = true }); err != nil {
		return err
	}
	for i := range pairs {
		if p := &pairs[i]; made[p.Key] {
			p.Created, made[p.Key] = p.AskCreated, false // its first pair made it
		}
	}
	return nil
}

// Del removes the keys and counts the live ones.
func (s *KV) Del(ctx context.Context, keys []string) (int64, error) {
	return s.count(ctx, "del", s.sql.del, keys)
}

// Exists counts the live keys; a key named twice counts twice.
func (s *KV) Exists(ctx context.Context, keys []string) (int64, error) {
	return s.count(ctx, "exists", s.sql.exists, keys)
}

func (s *KV) count(ctx context.Context, op, sql string, keys []string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	ks, err := s.key.params(keys)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.do(ctx, op, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, sql, ks).Scan(&n)
	})
	return n, err
}

// Update runs the updates kvSQL has a statement for as that statement,
// and any other in a transaction that locks the key's row (updateTx).
func (s *KV) Update(ctx context.Context, key string, u backends.Update) error {
	return backends.RunUpdate(ctx, s, key, u, s.updateTx)
}

// GetDel returns a live key's value and removes it.
func (s *KV) GetDel(ctx context.Context, key string) (val []byte, ok bool, err error) {
	k, err := s.key.param(key)
	if err != nil {
		return nil, false, err
	}
	var coll bool
	err = s.do(ctx, "getdel", func(ctx context.Context) error {
		val, ok = nil, false
		var live bool
		if err := s.pool.QueryRow(ctx, s.sql.getDel, k).Scan(&val, &live, &coll); err != nil {
			return err
		}
		if ok = live; !ok {
			val = nil
		}
		return nil
	})
	if err == nil && coll {
		return nil, false, backends.ErrWrongType
	}
	return val, ok, err
}

// GetEx returns a live key's value and changes its expiry as ttl says.
func (s *KV) GetEx(ctx context.Context, key string, t backends.TTL) (val []byte, ok bool, err error) {
	if t.Mode == backends.TTLKeep {
		return s.Get(ctx, key)
	}
	k, err := s.key.param(key)
	if err != nil {
		return nil, false, err
	}
	ttl, at, _ := expiry(t)
	var coll bool
	err = s.do(ctx, "getex", func(ctx context.Context) error {
		val, ok = nil, false
		err := s.pool.QueryRow(ctx, s.sql.getEx, k, ttl, at).Scan(&val, &coll)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		ok = err == nil && !coll
		return err
	})
	if err == nil && coll {
		return nil, false, backends.ErrWrongType
	}
	if ok {
		s.expires(t)
	}
	return val, ok, err
}

// IncrBy adds delta to the integer at key, in one statement (incrSQL),
// which also says whether it made the key; a refusal costs a second one
// that says why (incrWhySQL).
func (s *KV) IncrBy(ctx context.Context, key string, delta int64) (result int64, created bool, err error) {
	k, err := s.key.param(key)
	if err != nil {
		return 0, false, err
	}
	err = s.do(ctx, "incrby", func(ctx context.Context) error {
		for range maxSetRetries {
			err := s.pool.QueryRow(ctx, s.sql.incr, k, delta).Scan(&result, &created)
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			var why string
			err = s.pool.QueryRow(ctx, s.sql.incrWhy, k, delta).Scan(&why)
			switch {
			case errors.Is(err, pgx.ErrNoRows): // deleted or expired since: again
			case err != nil:
				return err
			case why == "wrongtype":
				return backends.ErrWrongType
			case why == "notint":
				return backends.ErrNotInteger
			case why == "overflow":
				return backends.ErrOverflow
			}
		}
		return errContention
	})
	return result, created && err == nil, err
}

// Expire sets (or, for TTLNone, removes) a live key's deadline if cond
// allows; a deadline not in the future deletes the key.
func (s *KV) Expire(ctx context.Context, key string, t backends.TTL, cond backends.ExpireCond) (bool, error) {
	k, err := s.key.param(key)
	if err != nil {
		return false, err
	}
	var changed bool
	switch t.Mode {
	case backends.TTLNone:
		err = s.do(ctx, "persist", func(ctx context.Context) error {
			return storedRow(s.pool.QueryRow(ctx, s.sql.persist, k), &changed)
		})
	case backends.TTLRelative, backends.TTLAt:
		ttl, at, _ := expiry(t)
		err = s.do(ctx, "expire", func(ctx context.Context) error {
			return s.pool.QueryRow(ctx, s.sql.expire, k, ttl, at, int32(cond)).Scan(&changed)
		})
	default:
		return false, fmt.Errorf("%s: expire: TTL mode %d is not an expiry: %w", s.where, t.Mode, backends.ErrUnsupported)
	}
	if changed {
		s.expires(t)
	}
	return changed, err
}

// TTL returns the remaining lifetime of key by the database's clock.
func (s *KV) TTL(ctx context.Context, key string) (time.Duration, error) {
	k, err := s.key.param(key)
	if err != nil {
		return 0, err
	}
	d := backends.TTLMissing
	err = s.do(ctx, "ttl", func(ctx context.Context) error {
		var us int64
		err := s.pool.QueryRow(ctx, s.sql.ttl, k).Scan(&us)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			d = backends.TTLMissing
			return nil
		case err != nil:
			return err
		case us < 0:
			d = backends.TTLPersistent
		default:
			d = time.Duration(us) * time.Microsecond
		}
		return nil
	})
	return d, err
}

// Close stops the route's sweeper. The table and the pool stay: the rows
// are the data, and the pool is the driver's.
func (s *KV) Close() error {
	if s.sweeper != nil {
		s.sweeper.stop()
	}
	s.d.forget(s)
	return nil
}

var (
	_ backends.Backend      = (*KV)(nil)
	_ opened                = (*KV)(nil)
	_ backends.NativeGetDel = (*KV)(nil)
	_ backends.NativeGetEx  = (*KV)(nil)
	_ backends.NativeIncrBy = (*KV)(nil)
	_ backends.NativeExpire = (*KV)(nil)
)
