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
	add, addXX, cas, rem, score, scores string
	countScore, rank, revRank           string

	// Ranges: [0] up, [1] REV; byLexTo with an upper bound.
	byScore, byLex, byLexTo, byRank, byRankN [2]string

	remScore, remLex, remLexTo, remRankN string
	remRank                              [2]string // [1]: ranks from the top
	pop                                  [2]string // [1]: ZPOPMAX
}

// zsetAdd is ZADD without INCR (zsetIncr is ZADD INCR and ZINCRBY). A
// request that names a member twice (each pair applies in turn) or gives
// a score of -0 (which Redis turns into 0 while the set is small, as the
// generic path's Run does) is left to the generic path (planned).
func (s *KV) zsetAdd(k any, op *coll.ZAdd) nativeWrite {
	op.Done, op.Score = false, 0
	w := nativeWrite{kind: kindZSet, sql: s.coll.zset.add, args: []any{op.Members, op.Scores, op.NX, op.GT, op.LT}}
	if op.XX {
		w.drop, w.sql, w.args = true, s.coll.zset.addXX, []any{op.Members, op.Scores, op.GT, op.LT}
	}
	written := new(int64)
	w = keyWrite(k, w, &op.Added, written)
	wrong := w.after
	w.after = func() error {
		op.Updated = *written - op.Added
		return wrong()
	}
	return w
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
// (zsetCASSQL), again otherwise. Go's addition gives inf where a sum
// overflows, as Redis's does; PostgreSQL's refuses it.
func (s *KV) zsetIncr(ctx context.Context, key string, op *coll.ZAdd) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	member := op.Members[0]
	for range casAttempts {
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
	return errNotNative // kept changing: the generic path's lock settles it
}

// scores reads the named members' scores, by member.
func (s *KV) scores(ctx context.Context, op backends.Op, k any, members [][]byte) (map[string]float64, error) {
	out := make(map[string]float64, len(members))
	var score *float64
	if len(members) == 1 {
		var kind *string
		if err := s.readRow(ctx, op, s.coll.zset.score, []any{k, members[0]}, &kind, &score); err != nil {
			return nil, err
		}
		if ok, err := holds(kind, kindZSet); !ok {
			return nil, err
		}
		if score != nil {
			out[string(members[0])] = *score
		}
		return out, nil
	}
	held, err := s.readMembers(ctx, op, kindZSet, s.coll.zset.scores, []any{k, members}, func() { clear(out) },
		&score, func(member []byte) { out[string(member)] = *score })
	if !held {
		return nil, err
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

// scoreBounds are a ScoreRange as the statements take it, both ends
// included: an excluded end is the next float inward, which no score lies
// between (scores are float8 in the table too). An excluded inf leaves no
// score in the range (+inf, -inf).
func scoreBounds(r coll.ScoreRange) (min, max float64) {
	min, max = r.Min, r.Max
	if r.MinEx {
		min = math.Nextafter(min, math.Inf(1))
		if math.IsInf(r.Min, 1) {
			return math.Inf(1), math.Inf(-1)
		}
	}
	if r.MaxEx {
		max = math.Nextafter(max, math.Inf(-1))
		if math.IsInf(r.Max, -1) {
			return math.Inf(1), math.Inf(-1)
		}
	}
	return min, max
}

// zsetCount is ZCOUNT: the range's index entries counted.
func (s *KV) zsetCount(ctx context.Context, key string, op *coll.ZCount) error {
	min, max := scoreBounds(op.Range)
	return s.counted(ctx, op, key, kindZSet, s.coll.zset.countScore, &op.Count, min, max)
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
	var kind *string
	var score *float64
	if err := s.readRow(ctx, op, sql, []any{k, op.Member}, &kind, &score, &op.Rank); err != nil {
		return err
	}
	ok, err := holds(kind, kindZSet)
	op.Found = ok && score != nil
	return err
}

// $1 key, $2 members, $3 scores (distinct members, no NaN), $4 NX, $5 GT,
// $6 LT. ZADD without XX or INCR: the members not there before (all of
// them are added), and the members written (added, or given a new score).
const zsetAddSQL = `
WITH {h},
w AS (
    INSERT INTO {i} AS i (key, member, score)
    SELECT $1::{k}, u.m, u.s FROM unnest($2::bytea[], $3::float8[]) AS u(m, s)
    WHERE EXISTS (SELECT FROM h WHERE kind = 'z')
    ON CONFLICT (key, member) DO UPDATE SET score = EXCLUDED.score
    WHERE NOT $4::bool AND i.score <> EXCLUDED.score
      AND NOT ($5::bool AND EXCLUDED.score <= i.score) AND NOT ($6::bool AND EXCLUDED.score >= i.score)
    RETURNING true
)
SELECT coalesce((SELECT kind <> 'z' FROM h), false),
       (SELECT count(*) FROM unnest($2::bytea[]) AS u(m) WHERE NOT EXISTS (SELECT FROM {i} WHERE key = $1::{k} AND member = u.m)),
       (SELECT count(*) FROM w)`

// $1 key, $2 members, $3 scores (distinct members, no NaN), $4 GT, $5 LT.
// ZADD XX: no member added, and those given a new score.
const zsetAddXXSQL = `
WITH {h},
w AS (
    UPDATE {i} AS i SET score = u.s
    FROM unnest($2::bytea[], $3::float8[]) AS u(m, s)
    WHERE i.key = $1::{k} AND i.member = u.m AND EXISTS (SELECT FROM h WHERE kind = 'z') AND i.score <> u.s
      AND NOT ($4::bool AND u.s <= i.score) AND NOT ($5::bool AND u.s >= i.score)
    RETURNING true
)
SELECT coalesce((SELECT kind <> 'z' FROM h), false), 0::int8, (SELECT count(*) FROM w)`

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

// $1 key, $2 member. ZSCORE: its score.
const zsetScoreSQL = `SELECT {kind}, (SELECT score FROM {i} WHERE key = $1::{k} AND member = $2::bytea)`

// $1 key, $2 members. ZMSCORE: a row of the key's kind, and one per member
// in the set, with its score.
const zsetScoresSQL = `
SELECT {kind}, NULL::bytea, NULL::float8
UNION ALL
SELECT NULL, member, score FROM {i} WHERE key = $1::{k} AND member = ANY($2::bytea[])`

// inScore is the condition of a score range: $2 to $3, both included
// (scoreBounds). The index reads from the one to the other.
const inScore = `score >= $2::float8 AND score <= $3::float8`

// $1 key, $2 and $3 a score range (inScore). ZCOUNT: the range's index entries
// counted.
const zsetCountScoreSQL = `SELECT {kind}, (SELECT count(*) FROM {i} WHERE key = $1::{k} AND {inScore})`

// $1 key, $2 member. ZRANK (ZREVRANK: > for <): the member's score, and
// how many come before it.
const zsetRankSQL = `
SELECT {kind}, m.score,
       (SELECT count(*) FROM {i} AS i
        WHERE i.key = $1::{k} AND i.score IS NOT NULL AND (i.score, i.member) < (m.score, $2::bytea))
FROM (SELECT (SELECT score FROM {i} WHERE key = $1::{k} AND member = $2::bytea) AS score) AS m`
