package postgres

import (
	"context"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
)

// Sorted sets' native commands on members and counts (collnative.go);
// the ranges and pops are in nativezrange.go. A member's score is its
// item's score, which the partial index orders as Redis orders a sorted
// set: by score, then by member's bytes (bytea compares as memcmp, then
// by length, as Go compares strings).

// zsetSQL are the statements of the sorted set commands.
type zsetSQL struct {
	add, cas, rem, scores, count, countScore, rank, revRank string
	byScore, byLex, byLexTo, byRank, byRankN                [2]string // [rev]; byLexTo: with an upper bound
	remScore, remLex, remLexTo, remRankN                    string
	remRank                                                 [2]string // [from the top]
	pop                                                     [2]string // [max]
}

// zsetAdd is ZADD and ZINCRBY. A request that names a member twice (each
// pair applies in turn) or gives a score of -0 (which Redis turns into 0
// while the set is small, as the generic path's Run does) is left to the
// generic path.
func (s *KV) zsetAdd(ctx context.Context, key string, op *coll.ZAdd) error {
	if !plainPairs(op) {
		return errNotNative
	}
	if op.Incr {
		return s.zsetIncr(ctx, key, op)
	}
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	op.Done, op.Score = false, 0
	var wrong bool
	err = s.write(ctx, op, nativeWrite{keys: []any{k}, kind: kindZSet, drop: op.XX, sql: s.coll.zset.add,
		args: []any{k, op.Members, op.Scores, op.NX, op.XX, op.GT, op.LT},
		scan: func(br pgx.BatchResults) error { return br.QueryRow().Scan(&wrong, &op.Added, &op.Updated) }})
	return wrongType(err, wrong)
}

// plainPairs reports whether ZADD's pairs name distinct members, none
// with a score of -0.
func plainPairs(op *coll.ZAdd) bool {
	for _, s := range op.Scores {
		if s == 0 && math.Signbit(s) {
			return false
		}
	}
	if len(op.Members) == 1 {
		return true
	}
	seen := make(map[string]struct{}, len(op.Members))
	for _, m := range op.Members {
		if _, dup := seen[string(m)]; dup {
			return false
		}
		seen[string(m)] = struct{}{}
	}
	return true
}

// zsetIncr is ZADD … INCR and ZINCRBY: Run on a set of the one member as
// it is read, and its new score written if it still has the score read
// (casSQL), again otherwise. Go's addition gives inf where a sum
// overflows, as Redis's does; PostgreSQL's refuses it.
func (s *KV) zsetIncr(ctx context.Context, key string, op *coll.ZAdd) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	member := op.Members[0]
	for range maxSetRetries {
		scores, err := s.scores(ctx, op, k, op.Members)
		if err != nil {
			return err
		}
		var z backends.Value
		old, found := scores[string(member)]
		var oldParam *float64
		if found {
			one := coll.NewZSet()
			one.Add(string(member), old)
			z, oldParam = one, &old
		}
		if err := op.Run(oneValue(key, z)); err != nil {
			return err
		}
		if !op.Done || found && op.Score == old {
			return nil // nothing to write: as read, the command changes nothing
		}
		var applied bool
		err = s.write(ctx, op, nativeWrite{keys: []any{k}, kind: kindZSet, drop: true, sql: s.coll.zset.cas,
			args: []any{k, member, oldParam, op.Score},
			scan: func(br pgx.BatchResults) error { return br.QueryRow().Scan(&applied) }})
		if err != nil || applied {
			return err
		}
	}
	return opError(ctx, s.where, op.Name(), errContention)
}

// scores reads the named members' scores, by member.
func (s *KV) scores(ctx context.Context, op backends.Op, k any, members [][]byte) (map[string]float64, error) {
	var wrong bool
	var found [][]byte
	var scores []float64
	err := s.readRow(ctx, op, s.coll.zset.scores, []any{k, members}, &wrong, &found, &scores)
	if err = wrongType(err, wrong); err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(found))
	for i, m := range found {
		out[string(m)] = scores[i]
	}
	return out, nil
}

// zsetScore is ZSCORE.
func (s *KV) zsetScore(ctx context.Context, key string, op *coll.ZScore) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	scores, err := s.scores(ctx, op, k, [][]byte{op.Member})
	if err != nil {
		return err
	}
	op.Score, op.Found = scores[string(op.Member)]
	return nil
}

// zsetMScore is ZMSCORE.
func (s *KV) zsetMScore(ctx context.Context, key string, op *coll.ZMScore) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	scores, err := s.scores(ctx, op, k, op.Members)
	if err != nil {
		return err
	}
	op.Scores, op.Found = op.Scores[:0], op.Found[:0]
	for _, m := range op.Members {
		score, ok := scores[string(m)]
		op.Scores, op.Found = append(op.Scores, score), append(op.Found, ok)
	}
	return nil
}

// zsetRem is ZREM.
func (s *KV) zsetRem(ctx context.Context, key string, op *coll.ZRem) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var wrong bool
	err = s.write(ctx, op, nativeWrite{keys: []any{k}, kind: kindZSet, drop: true, sql: s.coll.zset.rem,
		args: []any{k, op.Members},
		scan: func(br pgx.BatchResults) error { return br.QueryRow().Scan(&wrong, &op.Removed) }})
	return wrongType(err, wrong)
}

// zsetCard is ZCARD.
func (s *KV) zsetCard(ctx context.Context, key string, op *coll.ZCard) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var wrong bool
	err = s.readRow(ctx, op, s.coll.zset.count, []any{k}, &wrong, &op.Card)
	return wrongType(err, wrong)
}

// zsetCount is ZCOUNT: the range's index entries counted.
func (s *KV) zsetCount(ctx context.Context, key string, op *coll.ZCount) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var wrong bool
	r := op.Range
	err = s.readRow(ctx, op, s.coll.zset.countScore, []any{k, r.Min, r.Max, r.MinEx, r.MaxEx}, &wrong, &op.Count)
	return wrongType(err, wrong)
}

// zsetRank is ZRANK and ZREVRANK: the members before it counted.
func (s *KV) zsetRank(ctx context.Context, key string, op *coll.ZRank) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	sql := s.coll.zset.rank
	if op.Rev {
		sql = s.coll.zset.revRank
	}
	var wrong bool
	err = s.readRow(ctx, op, sql, []any{k, op.Member}, &wrong, &op.Found, &op.Rank)
	return wrongType(err, wrong)
}

// $1 key, $2 members, $3 scores (distinct members, no NaN), $4 NX, $5 XX,
// $6 GT, $7 LT. ZADD without INCR: the members added, and those whose
// score changed.
const zsetAddSQL = `
WITH {h},
u AS (
    SELECT u.m, u.s, i.score AS old
    FROM unnest($2::bytea[], $3::float8[]) AS u(m, s)
    LEFT JOIN {i} AS i ON i.key = $1::{k} AND i.member = u.m
    WHERE EXISTS (SELECT FROM h WHERE kind = 'z')
), upd AS (
    UPDATE {i} AS i SET score = u.s FROM u
    WHERE i.key = $1::{k} AND i.member = u.m AND NOT $4::bool AND u.s <> u.old
      AND NOT ($6::bool AND u.s <= u.old) AND NOT ($7::bool AND u.s >= u.old)
    RETURNING true
), ins AS (
    INSERT INTO {i} (key, member, score)
    SELECT $1::{k}, m, s FROM u WHERE old IS NULL AND NOT $5::bool
    RETURNING true
)
SELECT coalesce((SELECT kind <> 'z' FROM h), false), (SELECT count(*) FROM ins), (SELECT count(*) FROM upd)`

// $1 key, $2 member, $3 its score as read (NULL: absent), $4 its new
// score. The member is written only if it still has the score read: true
// when it was.
const zsetCASSQL = `
WITH {h},
ok AS (
    SELECT FROM h
    WHERE kind = 'z'
      AND (SELECT score FROM {i} WHERE key = $1::{k} AND member = $2::bytea) IS NOT DISTINCT FROM $3::float8
), put AS (
    INSERT INTO {i} (key, member, score)
    SELECT $1::{k}, $2::bytea, $4::float8 FROM ok
    ON CONFLICT (key, member) DO UPDATE SET score = EXCLUDED.score
)
SELECT EXISTS (SELECT FROM ok)`

// $1 key, $2 members. ZREM.
const zsetRemMembersSQL = `
WITH {h},
d AS (
    DELETE FROM {i}
    WHERE key = $1::{k} AND member = ANY($2::bytea[]) AND EXISTS (SELECT FROM h WHERE kind = 'z')
    RETURNING true
)
SELECT coalesce((SELECT kind <> 'z' FROM h), false), (SELECT count(*) FROM d)`

// $1 key, $2 members. ZSCORE, ZMSCORE: the members in the set, with their
// scores.
const zsetScoresSQL = `
WITH {h}
SELECT coalesce((SELECT kind <> 'z' FROM h), false), f.members, f.scores
FROM (SELECT array_agg(member) AS members, array_agg(score) AS scores
      FROM {i}
      WHERE key = $1::{k} AND member = ANY($2::bytea[]) AND EXISTS (SELECT FROM h WHERE kind = 'z')) AS f`

// $1 key. ZCARD.
const zsetCountSQL = `
WITH {h}
SELECT coalesce((SELECT kind <> 'z' FROM h), false),
       (SELECT count(*) FROM {i} WHERE key = $1::{k} AND EXISTS (SELECT FROM h WHERE kind = 'z'))`

// inScore is the condition of a score range: $2 min, $3 max, $4 and $5
// whether they are excluded. The index reads from min to max.
const inScore = `score >= $2::float8 AND score <= $3::float8
      AND NOT ($4::bool AND score = $2::float8) AND NOT ($5::bool AND score = $3::float8)`

// $1 key, score range (inScore). ZCOUNT.
const zsetCountScoreSQL = `
WITH {h}
SELECT coalesce((SELECT kind <> 'z' FROM h), false),
       (SELECT count(*) FROM {i}
        WHERE key = $1::{k} AND {inScore} AND EXISTS (SELECT FROM h WHERE kind = 'z'))`

// $1 key, $2 member. ZRANK (ZREVRANK: > for <): whether the member is
// there, and how many come before it.
const zsetRankSQL = `
WITH {h},
m AS (
    SELECT score FROM {i}
    WHERE key = $1::{k} AND member = $2::bytea AND EXISTS (SELECT FROM h WHERE kind = 'z')
)
SELECT coalesce((SELECT kind <> 'z' FROM h), false), EXISTS (SELECT FROM m),
       (SELECT count(*) FROM {i} AS i, m
        WHERE i.key = $1::{k} AND i.score IS NOT NULL AND (i.score, i.member) < (m.score, $2::bytea))`
