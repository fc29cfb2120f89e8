package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// Hashes' native commands (collnative.go). A field's score is its number
// in the hash's sequence (putFieldsSQL): a new field gets the next one, a
// field that is there keeps its own, so HGETALL reads back in the order
// the fields came.

// hashSQL are the statements of the hash commands.
type hashSQL struct {
	get, getLen, getMany, set, setNX, del, incr, cas string
}

// hashSet is HSET and HMSET.
func (s *KV) hashSet(k any, op *coll.HSet) nativeWrite {
	fields, values := lastValues(op.Pairs)
	return keyWrite(k, nativeWrite{kind: kindHash, sql: s.coll.hash.set, args: []any{fields, values}}, &op.Added)
}

// lastValues are the fields of HSET's pairs, each once, in the order they
// first come, and the value each is given last: what HSET stores (ON
// CONFLICT cannot change a row twice in one statement).
func lastValues(pairs [][]byte) (fields, values [][]byte) {
	at := make(map[string]int, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		if j, ok := at[string(pairs[i])]; ok {
			values[j] = value(pairs[i+1])
			continue
		}
		at[string(pairs[i])] = len(fields)
		fields, values = append(fields, pairs[i]), append(values, value(pairs[i+1]))
	}
	return fields, values
}

// hashSetNX is HSETNX.
func (s *KV) hashSetNX(k any, op *coll.HSetNX) nativeWrite {
	return keyWrite(k, nativeWrite{kind: kindHash, sql: s.coll.hash.setNX,
		args: []any{op.Field, value(op.Value)}}, &op.Added)
}

// field reads one field of key's hash into dest: its value (with getSQL),
// or its length (getLenSQL); nil when it is not there. held is false when
// the key holds no hash: dest is then to be ignored.
func (s *KV) field(ctx context.Context, op backends.Op, key string, name []byte, sql string, dest any) (held bool, err error) {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return false, err
	}
	var kind *string
	if err := s.readRow(ctx, op, sql, []any{k, name}, &kind, dest); err != nil {
		return false, err
	}
	return holds(kind, kindHash)
}

// hashGet is HGET.
func (s *KV) hashGet(ctx context.Context, key string, op *coll.HGet) error {
	var val []byte
	held, err := s.field(ctx, op, key, op.Field, s.coll.hash.get, &val)
	op.Value, op.Found = val, held && val != nil
	return err
}

// hashMGet is HMGET.
func (s *KV) hashMGet(ctx context.Context, key string, op *coll.HMGet) error {
	op.Values = op.Values[:0]
	if len(op.Fields) == 1 {
		var val []byte
		held, err := s.field(ctx, op, key, op.Fields[0], s.coll.hash.get, &val)
		if !held {
			val = nil
		}
		op.Values = append(op.Values, val)
		return err
	}
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var val []byte
	vals := make(map[string][]byte, len(op.Fields))
	held, err := s.readMembers(ctx, op, kindHash, s.coll.hash.getMany, []any{k, op.Fields}, func() { clear(vals) },
		&val, func(member []byte) { vals[string(member)] = val })
	if err != nil {
		return err
	}
	if !held {
		clear(vals)
	}
	for _, f := range op.Fields {
		op.Values = append(op.Values, vals[string(f)]) // nil when missing
	}
	return nil
}

// hashExists is HEXISTS.
func (s *KV) hashExists(ctx context.Context, key string, op *coll.Has) error {
	var n *int64
	held, err := s.field(ctx, op, key, op.Members[0], s.coll.hash.getLen, &n)
	op.Found = append(op.Found[:0], held && n != nil)
	return err
}

// hashStrLen is HSTRLEN.
func (s *KV) hashStrLen(ctx context.Context, key string, op *coll.HGet) error {
	var n *int64
	held, err := s.field(ctx, op, key, op.Field, s.coll.hash.getLen, &n)
	op.Len = 0
	if held && n != nil {
		op.Len = *n
	}
	return err
}

// hashIncrBy is HINCRBY, computed by the statement. When it refuses (the
// field is not an integer, or the sum would overflow), Run on a hash of
// just that field, as the statement read it, says which error Redis gives.
func (s *KV) hashIncrBy(ctx context.Context, key string, op *coll.HIncrBy) error {
	var result *int64
	var old []byte
	err := s.writeKey(ctx, op, key, nativeWrite{kind: kindHash, sql: s.coll.hash.incr,
		args: []any{op.Field, op.Incr}}, &result, &old)
	if err != nil {
		return err
	}
	if result != nil {
		op.Result = *result
		return nil
	}
	h := coll.NewHash()
	if old != nil {
		h.Set(string(op.Field), old)
	}
	if err := op.Run(oneValue(key, h)); err != nil {
		return err
	}
	return fmt.Errorf("%s: hincrby: the statement refused %q, which Run takes", s.where, old)
}

// oneValue is a View of one key holding v (nil: absent).
func oneValue(key string, v backends.Value) *coll.Slots {
	slots := coll.NewSlots([]string{key}, nil)
	slots.Load(0, v, false)
	return slots
}

// hashIncrByFloat is HINCRBYFLOAT: Run on a hash of the one field as it is
// read, and the result written if the field is still as read (hashCASSQL),
// again otherwise. Long double arithmetic, formatted as Redis formats it,
// is Run's.
func (s *KV) hashIncrByFloat(ctx context.Context, key string, op *coll.HIncrByFloat) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	for range casAttempts {
		var old []byte
		held, err := s.field(ctx, op, key, op.Field, s.coll.hash.get, &old)
		if err != nil {
			return err
		}
		if !held {
			old = nil // an expired hash's field
		}
		var h backends.Value
		if old != nil {
			one := coll.NewHash()
			one.Set(string(op.Field), old)
			h = one
		}
		view := oneValue(key, h)
		if err := op.Run(view); err != nil {
			return err
		}
		after, _ := view.Value(0)
		val, _ := after.(*coll.Hash).Get(string(op.Field))
		var applied bool
		err = s.write(ctx, op, nativeWrite{keys: []any{k}, kind: kindHash, drop: true, sql: s.coll.hash.cas,
			args: []any{k, op.Field, old, val},
			scan: func(br pgx.BatchResults) error { return br.QueryRow().Scan(&applied) }})
		if err != nil || applied {
			return err
		}
	}
	return errNotNative // kept changing: the generic path's lock settles it
}

// $1 key, $2 field. HGET: the field's value (NULL: not there).
const hashGetSQL = `SELECT {kind}, (SELECT value FROM {i} WHERE key = $1::{k} AND member = $2::bytea)`

// $1 key, $2 field. HEXISTS, HSTRLEN: the length of the field's value.
const hashGetLenSQL = `SELECT {kind}, (SELECT octet_length(value)::int8 FROM {i} WHERE key = $1::{k} AND member = $2::bytea)`

// $1 key, $2 fields. HMGET: a row of the key's kind, and one per field
// there, with its value.
const hashGetManySQL = `
SELECT {kind}, NULL::bytea, NULL::bytea
UNION ALL
SELECT NULL, member, value FROM {i} WHERE key = $1::{k} AND member = ANY($2::bytea[])`

// $1 key, $2 fields (distinct), $3 values. HSET: the fields written as
// putFieldsSQL writes them; the count of those that were not there.
const hashSetSQL = `
WITH {h},
u AS (
    SELECT m, v, o FROM unnest($2::bytea[], $3::bytea[]) WITH ORDINALITY AS u(m, v, o)
    WHERE EXISTS (SELECT FROM h WHERE kind = 'h')
), base AS (
    SELECT coalesce(max(score), 0) AS n FROM {i} WHERE key = $1::{k} AND score IS NOT NULL
), put AS (
    INSERT INTO {i} AS i (key, member, score, value)
    SELECT $1::{k}, u.m, base.n + u.o, u.v FROM u, base
    ON CONFLICT (key, member) DO UPDATE SET value = EXCLUDED.value
)
SELECT coalesce((SELECT kind <> 'h' FROM h), false),
       (SELECT count(*) FROM u WHERE NOT EXISTS (SELECT FROM {i} WHERE key = $1::{k} AND member = u.m))`

// $1 key, $2 field, $3 value. HSETNX.
const hashSetNXSQL = `
WITH {h},
base AS (
    SELECT coalesce(max(score), 0) AS n FROM {i} WHERE key = $1::{k} AND score IS NOT NULL
), put AS (
    INSERT INTO {i} (key, member, score, value)
    SELECT $1::{k}, $2::bytea, base.n + 1, $3::bytea FROM base
    WHERE EXISTS (SELECT FROM h WHERE kind = 'h')
    ON CONFLICT (key, member) DO NOTHING
    RETURNING true
)
SELECT coalesce((SELECT kind <> 'h' FROM h), false), EXISTS (SELECT FROM put)`

// $1 key, $2 field, $3 increment. HINCRBY with Redis's rules, as incrSQL
// has them: a missing field counts as 0, a value must be a decimal integer
// as backends.ParseInt reads it, and the sum must stay within int64. The
// new value, or NULL when refused (nothing written), and the old value.
const hashIncrSQL = `
WITH {h},
cur AS (
    SELECT value AS v FROM {i}
    WHERE key = $1::{k} AND member = $2::bytea AND EXISTS (SELECT FROM h WHERE kind = 'h')
), old AS (
    SELECT CASE WHEN NOT EXISTS (SELECT FROM cur) THEN 0::numeric
                WHEN octet_length(c.v) BETWEEN 1 AND 20 AND encode(c.v, 'escape') ~ '^(0|-?[1-9][0-9]*)$'
                THEN encode(c.v, 'escape')::numeric END AS n
    FROM (SELECT (SELECT v FROM cur) AS v) AS c
), sum AS (
    SELECT (n + $3::int8)::int8 AS n FROM old
    WHERE n BETWEEN -9223372036854775808 AND 9223372036854775807
      AND n + $3::int8 BETWEEN -9223372036854775808 AND 9223372036854775807
), base AS (
    SELECT coalesce(max(score), 0) AS n FROM {i} WHERE key = $1::{k} AND score IS NOT NULL
), put AS (
    INSERT INTO {i} AS i (key, member, score, value)
    SELECT $1::{k}, $2::bytea, base.n + 1, convert_to(sum.n::text, 'UTF8') FROM sum, base
    WHERE EXISTS (SELECT FROM h WHERE kind = 'h')
    ON CONFLICT (key, member) DO UPDATE SET value = EXCLUDED.value
)
SELECT coalesce((SELECT kind <> 'h' FROM h), false), (SELECT n FROM sum), (SELECT v FROM cur)`

// $1 key, $2 field, $3 its value as read (NULL: absent), $4 its new
// value. The field is written only if it still has the value read: true
// when it was.
const hashCASSQL = `
WITH {h},
ok AS (
    SELECT FROM h
    WHERE kind = 'h'
      AND (SELECT value FROM {i} WHERE key = $1::{k} AND member = $2::bytea) IS NOT DISTINCT FROM $3::bytea
), base AS (
    SELECT coalesce(max(score), 0) AS n FROM {i} WHERE key = $1::{k} AND score IS NOT NULL
), put AS (
    INSERT INTO {i} AS i (key, member, score, value)
    SELECT $1::{k}, $2::bytea, base.n + 1, $4::bytea FROM ok, base
    ON CONFLICT (key, member) DO UPDATE SET value = EXCLUDED.value
)
SELECT EXISTS (SELECT FROM ok)`
