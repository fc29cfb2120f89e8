package postgres

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// The commands on collections that have statements of their own: one
// round trip each, reading or writing only the members the command names
// (or the range it asks for), never the whole collection. Each answers
// what the Op's Run would: it fills the Op's result fields, and Reply
// writes them.
//
// A read is one statement, so one snapshot: the kind of the key's live row
// (none: an empty collection; another kind: WRONGTYPE) and the members it
// asks for, which count only when the row is of the command's kind (an
// expired row's items may still be there until the sweeper deletes it).
// A read of one row is scalar subqueries, which cost little to plan for
// each run's parameters, as PostgreSQL does (by its estimates such a plan
// costs less than the generic one); a read of rows runs its generic plan
// (readRows), in no particular order: Go puts a range's in its order.
//
// A write is a batch, which PostgreSQL runs as one implicit transaction,
// sent in one round trip:
//
//  1. lockRowsSQL locks the rows of the keys, in key order, and gives a key
//     without a live row one of the command's kind (taking over an expired
//     row: the purge trigger then deletes its old items). A live row of the
//     kind is rewritten as it is, so that the fence triggers of an L1 tier
//     (package coherence) see the write, as they see the generic path's
//     updateRowSQL; one of another kind is locked and left as it is (a
//     WRONGTYPE changes nothing). It also makes the
//     statements after it run their generic plans (an index plan on the
//     key's entries whatever the parameters), not a plan made for each
//     run's parameters, which for these statements costs several times
//     what running them does (genericPlansSQL).
//  2. The command's statement. Its snapshot is taken after the lock, so it
//     sees every change committed before: every writer of a collection's
//     items holds its row's lock until it commits (this path, the atomic
//     runs, DEL, SET and the sweeper through the row itself). Its first
//     column says WRONGTYPE, in which case it changed nothing.
//  3. For a command that removes members, or may add none, dropEmptySQL:
//     a row of the kind left without items is deleted, as Redis deletes a
//     key it empties; so is the row step 1 made for a key the command then
//     did not fill (SREM or LPOP of a key that does not exist).
//
// Why not one statement: a statement's snapshot is taken before it waits
// for a lock, so a statement that locked the row and read the members
// would read them as they were before the writer it waited for committed;
// and the purge trigger of a row taken over fires at the end of the
// statement that took it over, which would delete what that statement
// added as well.
//
// HINCRBYFLOAT and ZADD … INCR compute in Go (long double, and float
// overflow to inf, which PostgreSQL refuses), in two round trips: a read
// of the one member, Run on a collection of just that member, and a write
// that applies only if the member is still as read (hashCASSQL,
// zsetCASSQL), again otherwise; a member that keeps changing under a few
// such tries is left to the generic path, which locks the key first.

// native runs the Ops that have statements of their own; done is false
// for the others, and for the rare shapes of a native command that the
// generic path serves (errNotNative).
func (s *KV) native(ctx context.Context, keys []string, op backends.Op) (done bool, err error) {
	if w, ok, err := s.planned(ctx, keys[0], op); ok {
		if err != nil {
			return true, err
		}
		return true, s.write(ctx, op, w)
	}
	switch op := op.(type) {
	case *coll.HGet:
		if op.StrLen {
			err = s.hashStrLen(ctx, keys[0], op)
		} else {
			err = s.hashGet(ctx, keys[0], op)
		}
	case *coll.HMGet:
		err = s.hashMGet(ctx, keys[0], op)
	case *coll.HIncrBy:
		err = s.hashIncrBy(ctx, keys[0], op)
	case *coll.HIncrByFloat:
		err = s.hashIncrByFloat(ctx, keys[0], op)
	case *coll.Has:
		if op.Type == backends.TypeHash {
			err = s.hashExists(ctx, keys[0], op)
		} else {
			err = s.setIsMember(ctx, keys[0], op)
		}
	case *coll.ZAdd: // planned but for INCR, or pairs the generic path serves
		if !plainPairs(op) {
			return false, nil
		}
		err = s.zsetIncr(ctx, keys[0], op)
	case *coll.ZScore:
		err = s.zsetScore(ctx, keys[0], op)
	case *coll.ZMScore:
		err = s.zsetMScore(ctx, keys[0], op)
	case *coll.ZCount:
		err = s.zsetCount(ctx, keys[0], op)
	case *coll.ZRank:
		err = s.zsetRank(ctx, keys[0], op)
	case *coll.ZRange:
		err = s.zsetRange(ctx, keys, op)
	case *coll.ZRemRange:
		err = s.zsetRemRange(ctx, keys[0], op)
	case *coll.Len:
		err = s.collLen(ctx, keys[0], op)
	case *coll.LIndex:
		err = s.listIndex(ctx, keys[0], op)
	case *coll.LRange:
		err = s.listRange(ctx, keys[0], op)
	case *coll.LSet:
		err = s.listSet(ctx, keys[0], op)
	case *coll.LTrim:
		err = s.listTrim(ctx, keys[0], op)
	case *coll.LMove:
		err = s.listMove(ctx, keys, op)
	case *coll.BPop:
		err = s.listBPop(ctx, keys, op)
	default:
		return false, nil
	}
	if errors.Is(err, errNotNative) {
		return false, nil
	}
	return true, err
}

// planned is the write of an Op that is one native write of its key, made
// without running it: the commands a client pipelines most, whose runs
// DoSeq sends in one batch. ok is false for any other Op (ZADD ... INCR,
// and a ZADD the generic path serves, among them); err is the key's.
func (s *KV) planned(ctx context.Context, key string, op backends.Op) (w nativeWrite, ok bool, err error) {
	k, kerr := s.key.param(key)
	switch op := op.(type) {
	case *coll.Push:
		w = s.listPush(k, op)
	case *coll.Pop:
		w = s.listPop(k, op)
	case *coll.SAdd:
		w = s.setAdd(k, op)
	case *coll.HSet:
		w = s.hashSet(k, op)
	case *coll.HSetNX:
		w = s.hashSetNX(k, op)
	case *coll.Rem:
		w = s.collRem(k, op)
	case *coll.ZPop:
		w = s.zsetPop(k, op)
	case *coll.ZAdd:
		if op.Incr || !plainPairs(op) {
			return nativeWrite{}, false, nil
		}
		w = s.zsetAdd(k, op)
	default:
		return nativeWrite{}, false, nil
	}
	if kerr != nil {
		return nativeWrite{}, true, opError(ctx, s.where, op.Name(), kerr)
	}
	return w, true, nil
}

// DoSeq runs a pipelined run of ops on key (backends.Sequencer). Each
// stretch of planned writes goes in one batch: one round trip and one
// commit for a client's sixteen pipelined LPUSHes, where Do would take
// sixteen of each. Every write in the batch locks the key's row again and
// drops it if it emptied it, as Do alone does, so each op sees the ones
// before it and answers what it would alone. Any other op runs as Do runs
// it, in its place.
func (s *KV) DoSeq(ctx context.Context, key string, ops []backends.Op, errs []error) error {
	keys := []string{key}
	ws := make([]nativeWrite, 0, len(ops))
	for i := 0; i < len(ops); {
		ws = ws[:0]
		j := i
		for ; j < len(ops); j++ {
			backends.ClearMarks(ops[j])
			w, ok, err := s.planned(ctx, key, ops[j])
			if !ok || err != nil {
				break
			}
			ws = append(ws, w)
		}
		if len(ws) < 2 {
			errs[i] = s.Do(ctx, keys, ops[i])
			i++
			continue
		}
		if err := s.writes(ctx, ops[i:j], ws, errs[i:j]); err != nil {
			if !refused(ctx, err) { // the store failed: so does the rest of the run
				for k := i; k < len(ops); k++ {
					errs[k] = err
				}
				return nil
			}
			// One statement failed (a member over the index's size), so the
			// batch's transaction wrote nothing: each runs alone, to fail alone.
			for k := i; k < j; k++ {
				errs[k] = s.Do(ctx, keys, ops[k])
			}
		}
		i = j
	}
	return nil
}

// refused reports whether err is PostgreSQL's refusal of a statement, not
// the store failing or the caller giving up.
func refused(ctx context.Context, err error) bool {
	return sqlState(err) != "" && ctx.Err() == nil && !errors.Is(err, backends.ErrUnavailable)
}

// keyParam is key as a statement parameter; a key the table's type cannot
// hold fails as the op's error.
func (s *KV) keyParam(ctx context.Context, op backends.Op, key string) (any, error) {
	k, err := s.key.param(key)
	if err != nil {
		return nil, opError(ctx, s.where, op.Name(), err)
	}
	return k, nil
}

// keyParams is keyParam of each key, in order.
func (s *KV) keyParams(ctx context.Context, op backends.Op, keys []string) ([]any, error) {
	out := make([]any, len(keys))
	for i, key := range keys {
		k, err := s.keyParam(ctx, op, key)
		if err != nil {
			return nil, err
		}
		out[i] = k
	}
	return out, nil
}

// lockOrder is the array parameter of lockRowsSQL for keys: sorted as the
// primary key orders them, without duplicates, so that writers of several
// keys lock them in one global order and never deadlock.
func (s *KV) lockOrder(keys []any) any {
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, s.key.compare)
	sorted = slices.CompactFunc(sorted, func(a, b any) bool { return s.key.compare(a, b) == 0 })
	return s.key.array(sorted)
}

// nativeWrite is one write (see the top of this file): the keys' rows
// locked (made of kind where there are none), the statement sql, and, when
// drop, dropEmptySQL. scan reads the statement's result; it is called
// again when the batch is. after, when set, is the op's outcome of what
// scan read (WRONGTYPE). A write of one key is most often keyWrite's.
type nativeWrite struct {
	keys  []any // as keyParams
	kind  byte
	drop  bool
	sql   string
	args  []any
	scan  func(br pgx.BatchResults) error
	after func() error
}

// write runs w, op's write (writes).
func (s *KV) write(ctx context.Context, op backends.Op, w nativeWrite) error {
	var errs [1]error
	if err := s.writes(ctx, []backends.Op{op}, []nativeWrite{w}, errs[:]); err != nil {
		return err
	}
	return errs[0]
}

// writes runs ws, the writes of ops, in one batch, which PostgreSQL runs
// as one transaction, in order; errs[i] gets ops[i]'s outcome, and the
// error returned is the batch's, every op's. Each write marks the keys it
// emptied (backends.MarkEmptied): those dropEmptySQL deleted that step 1
// did not make; and the keys it made (backends.MarkCreated): those step 1
// inserted that dropEmptySQL did not delete. A row step 1 took over, its
// deadline passed, counts as neither (xmax 0 says inserted, and nothing
// cheaper says taken over): Redis would say "expired" and then "new"
// (coll/events.go).
func (s *KV) writes(ctx context.Context, ops []backends.Op, ws []nativeWrite, errs []error) error {
	type locks struct{ locked, order any }
	lk := make([]locks, len(ws))
	for i, w := range ws {
		lk[i] = locks{s.lockOrder(w.keys), s.key.array(w.keys)}
	}
	made, dropped := make([]uint64, len(ws)), make([]uint64, len(ws)) // by the key's place in its command's keys
	err := s.do(ctx, ops[0].Name(), func(ctx context.Context) error {
		clear(made)
		clear(dropped)
		b := &pgx.Batch{}
		for i, w := range ws {
			b.Queue(s.coll.lockRows, lk[i].locked, w.kind, lk[i].order)
			b.Queue(w.sql, w.args...)
			if w.drop {
				b.Queue(s.coll.dropEmpty, lk[i].locked, w.kind, lk[i].order)
			}
		}
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		for i, w := range ws {
			if err := keyBits(br, &made[i], true); err != nil {
				return err
			}
			if err := w.scan(br); err != nil {
				return err
			}
			if w.drop {
				if err := keyBits(br, &dropped[i], false); err != nil {
					return err
				}
			}
		}
		return br.Close()
	})
	if err != nil {
		return err
	}
	for i, w := range ws {
		for j := range w.keys {
			switch bit := keyBit(j + 1); {
			case (dropped[i]&^made[i])&bit != 0:
				backends.MarkEmptied(ops[i], j)
			case (made[i]&^dropped[i])&bit != 0:
				backends.MarkCreated(ops[i], j)
			}
		}
		if w.after != nil {
			errs[i] = w.after()
		}
	}
	return nil
}

// keyBits reads the next result of a batch into bits: a row per key, its
// place (keyBit), and with inserted whether step 1 inserted its row, in
// which case only the inserted ones count.
func keyBits(br pgx.BatchResults, bits *uint64, inserted bool) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	var at int
	var ins bool
	dest := []any{&at}
	if inserted {
		dest = append(dest, &ins)
	}
	_, err = pgx.ForEachRow(rows, dest, func() error {
		if !inserted || ins {
			*bits |= keyBit(at)
		}
		return nil
	})
	return err
}

// keyWrite is w on one key, k: its statement takes the key as $1, then
// w.args, and answers one row, WRONGTYPE and then dest. It fills w's
// keys, scan and after.
func keyWrite(k any, w nativeWrite, dest ...any) nativeWrite {
	wrong := new(bool)
	row := append([]any{wrong}, dest...)
	w.keys, w.args = []any{k}, append([]any{k}, w.args...)
	w.scan = func(br pgx.BatchResults) error { return br.QueryRow().Scan(row...) }
	w.after = func() error { return wrongType(nil, *wrong) }
	return w
}

// writeKey runs w on key alone (keyWrite).
func (s *KV) writeKey(ctx context.Context, op backends.Op, key string, w nativeWrite, dest ...any) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	return s.write(ctx, op, keyWrite(k, w, dest...))
}

// popWrite is a pop of up to count members of the key k (LPOP, RPOP,
// ZPOPMIN, ZPOPMAX; a negative count: one) with sql, which takes the key
// and the count as $1 and $2 and answers a row per member it popped, in
// the order they go: WRONGTYPE, whether the key held kind, the member
// (NULL in the one row of a pop of none) and then val. found is set from
// the rows; reset empties the Op's result and add appends the member of
// the row just read, with val (the batch may run again).
func popWrite(k any, kind byte, sql string, count int64, found *bool, val any, reset func(), add func(member []byte)) nativeWrite {
	if count < 0 {
		count = 1
	}
	var wrong, held bool
	var member []byte
	return nativeWrite{keys: []any{k}, kind: kind, drop: true, sql: sql, args: []any{k, count},
		scan: func(br pgx.BatchResults) error {
			*found, wrong = false, false
			reset()
			rows, err := br.Query()
			if err != nil {
				return err
			}
			_, err = pgx.ForEachRow(rows, []any{&wrong, &held, &member, val}, func() error {
				*found = held
				if member != nil {
					add(member)
				}
				return nil
			})
			return err
		},
		after: func() error { return wrongType(nil, wrong) }}
}

// keyBit is the bit of the key at 1-based place at (array_position's), 0
// past 64.
func keyBit(at int) uint64 {
	if at < 1 || at > 64 {
		return 0
	}
	return 1 << (at - 1)
}

// readRow runs a read that answers one row into dest.
func (s *KV) readRow(ctx context.Context, op backends.Op, sql string, args []any, dest ...any) error {
	return s.do(ctx, op.Name(), func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, sql, args...).Scan(dest...)
	})
}

// readRows runs a read that answers rows (a range, or the members an
// array names), with its generic plan: a batch of genericPlansSQL and the
// statement, in one round trip. The plan PostgreSQL would make for the
// parameters (a range's bounds, an array's members) costs more to make
// than to run. scan is called for each row, after reset (the batch may run
// again).
func (s *KV) readRows(ctx context.Context, op backends.Op, sql string, args []any, reset func(), dest []any, scan func() error) error {
	return s.do(ctx, op.Name(), func(ctx context.Context) error {
		reset()
		b := &pgx.Batch{}
		b.Queue(genericPlansSQL)
		b.Queue(sql, args...)
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, dest, scan); err != nil {
			return err
		}
		return br.Close()
	})
}

// readMembers runs a read of members of a collection of kind want
// (readRows), whose statement answers a row of the key's kind with a NULL
// member, and a row per member, with val when there is one (nil: the
// rows have no more columns); add takes the member of each such row. held
// is false when the key holds no collection of want, or the read failed
// (err says which); reset empties what add filled (the batch may run
// again).
func (s *KV) readMembers(ctx context.Context, op backends.Op, want byte, sql string, args []any,
	reset func(), val any, add func(member []byte)) (held bool, err error) {
	var kind, rowKind *string
	var member []byte
	dest := []any{&rowKind, &member}
	if val != nil {
		dest = append(dest, val)
	}
	err = s.readRows(ctx, op, sql, args, reset, dest, func() error {
		if member == nil {
			kind = rowKind
		} else {
			add(member)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return holds(kind, want)
}

// counted is a read of a count of key: sql takes the key as $1, then
// args, and answers the key's kind and n (0 unless the key holds want).
func (s *KV) counted(ctx context.Context, op backends.Op, key string, want byte, sql string, n *int64, args ...any) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var kind *string
	if err := s.readRow(ctx, op, sql, append([]any{k}, args...), &kind, n); err != nil {
		return err
	}
	ok, err := holds(kind, want)
	if !ok {
		*n = 0
	}
	return err
}

// collLen is HLEN, SCARD, ZCARD and LLEN: the items counted, or a list's
// ends read.
func (s *KV) collLen(ctx context.Context, key string, op *coll.Len) error {
	if op.Type == backends.TypeList {
		return s.listLen(ctx, key, op)
	}
	return s.counted(ctx, op, key, kindOf(op.Type), s.coll.count, &op.Len)
}

// collRem is HDEL, SREM and ZREM.
func (s *KV) collRem(k any, op *coll.Rem) nativeWrite {
	sql := s.coll.hash.del
	switch op.Type {
	case backends.TypeSet:
		sql = s.coll.set.rem
	case backends.TypeZSet:
		sql = s.coll.zset.rem
	}
	return keyWrite(k, nativeWrite{kind: kindOf(op.Type), drop: true, sql: sql, args: []any{op.Members}}, &op.Removed)
}

// holds reports whether a read's row kind (nil: no live row) is want:
// false for none, WRONGTYPE for another.
func holds(kind *string, want byte) (bool, error) {
	switch {
	case kind == nil:
		return false, nil
	case len(*kind) != 1 || (*kind)[0] != want:
		return false, backends.ErrWrongType
	}
	return true, nil
}

// wrongType is a command's outcome once its statement ran: the statement's
// error, or WRONGTYPE when its first column said so.
func wrongType(err error, wrong bool) error {
	if err == nil && wrong {
		return backends.ErrWrongType
	}
	return err
}

// genericPlans makes the statements after it in the transaction run their
// generic plans. (A function call, not SET LOCAL: a utility statement
// costs several times what this does.)
const genericPlans = `set_config('plan_cache_mode', 'force_generic_plan', true)`

// genericPlansSQL is genericPlans as a statement: the first of a read's
// batch.
const genericPlansSQL = `SELECT ` + genericPlans

// $1 keys (sorted, distinct), $2 kind, $3 the command's keys in its order.
// Step 1 of a write: each key's row locked; a key without one, or with an
// expired one, gets a live row of the kind, with no expiry (an expired row
// taken over loses its items to the purge trigger, at the end of this
// statement). A live row of the kind keeps its deadline (TTL is the row's,
// and a write keeps it), and one of another kind is only locked. And
// genericPlans, once a key (set_config returns the value set), which
// spares the write a statement of its own. A row for each key of the kind:
// its place in $3, and whether this statement made it (xmax 0: inserted).
const lockRowsSQL = `
INSERT INTO {t} AS t (key, value, expires_at, kind)
SELECT k, '', 'infinity', $2::"char" FROM unnest($1::{k}[]) AS u(k)
WHERE ` + genericPlans + ` <> ''
ON CONFLICT (key) DO UPDATE
SET value = '', kind = EXCLUDED.kind,
    expires_at = CASE WHEN t.expires_at <= now() THEN 'infinity' ELSE t.expires_at END
WHERE t.expires_at <= now() OR t.kind = EXCLUDED.kind
RETURNING array_position($3::{k}[], t.key), t.xmax = 0`

// $1 keys, $2 kind, $3 the command's keys in its order. Step 3 of a write:
// the rows of the kind that have no items left are deleted (the purge
// trigger finds nothing to delete); a row for each, its place in $3.
const dropEmptySQL = `
DELETE FROM {t} AS t
WHERE t.key = ANY($1::{k}[]) AND t.kind = $2::"char"
  AND {none:t.key}
RETURNING array_position($3::{k}[], t.key)`

// hasItems expands {some:K} and {none:K} in sql: whether key K (an
// expression) has items, or has none. Not an EXISTS: its plan may read the
// table from its start until it finds one of the key's rows when the
// statistics say most rows are the key's (a table of one large
// collection); ORDER BY member LIMIT 1 reads the primary key's first
// entry of the key.
func hasItems(sql string) string {
	return itemsMacro.ReplaceAllStringFunc(sql, func(m string) string {
		sub := itemsMacro.FindStringSubmatch(m)
		test := "IS NOT NULL"
		if sub[1] == "none" {
			test = "IS NULL"
		}
		return "(SELECT true FROM {i} WHERE key = " + sub[2] + "::{k} ORDER BY member LIMIT 1) " + test
	})
}

var itemsMacro = regexp.MustCompile(`\{(some|none):([^{}]+)\}`)

// liveKind is the CTE h a write's statement starts with: the kind of the
// live row of $1, none when there is none.
const liveKind = `h AS (SELECT kind FROM {t} WHERE key = $1::{k} AND expires_at > now())`

// rowKind is a read's first column: the kind of $1's live row, as text
// (NULL: none).
const rowKind = `(SELECT kind::text FROM {t} WHERE key = $1::{k} AND expires_at > now())`

// $1 key. HLEN, SCARD, ZCARD: the key's items counted.
const countSQL = `SELECT {kind}, (SELECT count(*) FROM {i} WHERE key = $1::{k})`

// removeSQL is a removal from a collection of kind: $1 key, cond the
// members', with CTEs of with before. WRONGTYPE, and how many it removed.
func removeSQL(kind byte, with, cond string) string {
	return strings.NewReplacer("{with}", with, "{cond}", cond, "{is}", string(kind)).Replace(`
WITH {h}{with},
d AS (
    DELETE FROM {i}
    WHERE key = $1::{k} AND {cond} AND EXISTS (SELECT FROM h WHERE kind = '{is}')
    RETURNING true
)
SELECT coalesce((SELECT kind <> '{is}' FROM h), false), (SELECT count(*) FROM d)`)
}

// inMembers is the removeSQL cond of HDEL, SREM and ZREM: $2 the members
// (a hash's fields).
const inMembers = `member = ANY($2::bytea[])`
