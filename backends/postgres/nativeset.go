package postgres

import (
	"context"

	"github.com/pgcache/pgcache/backends/coll"
)

// Sets' native commands (collnative.go): a member is an item with no
// score and no value.

// setsSQL are the statements of the set commands.
type setsSQL struct {
	add, rem, has, hasMany string
}

// setAdd is SADD: concurrent SADDs of one set queue on its row, so each
// counts exactly the members it added.
func (s *KV) setAdd(k any, op *coll.SAdd) nativeWrite {
	return keyWrite(k, nativeWrite{kind: kindSet, sql: s.coll.set.add, args: []any{op.Members}}, &op.Added)
}

// setIsMember is SISMEMBER and SMISMEMBER.
func (s *KV) setIsMember(ctx context.Context, key string, op *coll.Has) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	op.Found = op.Found[:0]
	if len(op.Members) == 1 {
		var kind *string
		var in bool
		if err := s.readRow(ctx, op, s.coll.set.has, []any{k, op.Members[0]}, &kind, &in); err != nil {
			return err
		}
		ok, err := holds(kind, kindSet)
		op.Found = append(op.Found, ok && in)
		return err
	}
	in := make(map[string]bool, len(op.Members))
	ok, err := s.readMembers(ctx, op, kindSet, s.coll.set.hasMany, []any{k, op.Members}, func() { clear(in) },
		nil, func(member []byte) { in[string(member)] = true })
	if err != nil {
		return err
	}
	for _, m := range op.Members {
		op.Found = append(op.Found, ok && in[string(m)])
	}
	return nil
}

// $1 key, $2 members. SADD: the members that were not there, counted.
const setAddSQL = `
WITH {h},
ins AS (
    INSERT INTO {i} (key, member)
    SELECT $1::{k}, m FROM unnest($2::bytea[]) AS u(m)
    WHERE EXISTS (SELECT FROM h WHERE kind = 't')
    ON CONFLICT (key, member) DO NOTHING
    RETURNING true
)
SELECT coalesce((SELECT kind <> 't' FROM h), false), (SELECT count(*) FROM ins)`

// $1 key, $2 member. SISMEMBER: whether it is in the set.
const setHasSQL = `SELECT {kind}, EXISTS (SELECT FROM {i} WHERE key = $1::{k} AND member = $2::bytea)`

// $1 key, $2 members. SMISMEMBER: a row of the key's kind, and one per
// member in the set.
const setHasManySQL = `
SELECT {kind}, NULL::bytea
UNION ALL
SELECT NULL, member FROM {i} WHERE key = $1::{k} AND member = ANY($2::bytea[])`
