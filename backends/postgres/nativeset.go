package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends/coll"
)

// Sets' native commands (collnative.go): a member is an item with no
// score and no value.

// setsSQL are the statements of the set commands.
type setsSQL struct {
	add, rem, has, count string
}

// setAdd is SADD: concurrent SADDs of one set queue on its row, so each
// counts exactly the members it added.
func (s *KV) setAdd(ctx context.Context, key string, op *coll.SAdd) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var wrong bool
	err = s.write(ctx, op, nativeWrite{keys: []any{k}, kind: kindSet, sql: s.coll.set.add,
		args: []any{k, op.Members},
		scan: func(br pgx.BatchResults) error { return br.QueryRow().Scan(&wrong, &op.Added) }})
	return wrongType(err, wrong)
}

// setRem is SREM.
func (s *KV) setRem(ctx context.Context, key string, op *coll.SRem) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var wrong bool
	err = s.write(ctx, op, nativeWrite{keys: []any{k}, kind: kindSet, drop: true, sql: s.coll.set.rem,
		args: []any{k, op.Members},
		scan: func(br pgx.BatchResults) error { return br.QueryRow().Scan(&wrong, &op.Removed) }})
	return wrongType(err, wrong)
}

// setIsMember is SISMEMBER and SMISMEMBER.
func (s *KV) setIsMember(ctx context.Context, key string, op *coll.SIsMember) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var wrong bool
	var found [][]byte
	err = s.readRow(ctx, op, s.coll.set.has, []any{k, op.Members}, &wrong, &found)
	if err = wrongType(err, wrong); err != nil {
		return err
	}
	in := make(map[string]bool, len(found))
	for _, m := range found {
		in[string(m)] = true
	}
	op.Found = op.Found[:0]
	for _, m := range op.Members {
		op.Found = append(op.Found, in[string(m)])
	}
	return nil
}

// setCard is SCARD.
func (s *KV) setCard(ctx context.Context, key string, op *coll.SCard) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var wrong bool
	err = s.readRow(ctx, op, s.coll.set.count, []any{k}, &wrong, &op.Card)
	return wrongType(err, wrong)
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

// $1 key, $2 members. SREM.
const setRemSQL = `
WITH {h},
d AS (
    DELETE FROM {i}
    WHERE key = $1::{k} AND member = ANY($2::bytea[]) AND EXISTS (SELECT FROM h WHERE kind = 't')
    RETURNING true
)
SELECT coalesce((SELECT kind <> 't' FROM h), false), (SELECT count(*) FROM d)`

// $1 key, $2 members. SISMEMBER, SMISMEMBER: those in the set.
const setHasSQL = `
WITH {h}
SELECT coalesce((SELECT kind <> 't' FROM h), false),
       array(SELECT member FROM {i}
             WHERE key = $1::{k} AND member = ANY($2::bytea[]) AND EXISTS (SELECT FROM h WHERE kind = 't'))`

// $1 key. SCARD.
const setCountSQL = `
WITH {h}
SELECT coalesce((SELECT kind <> 't' FROM h), false),
       (SELECT count(*) FROM {i} WHERE key = $1::{k} AND EXISTS (SELECT FROM h WHERE kind = 't'))`
