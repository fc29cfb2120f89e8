package postgres

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/pgcache/pgcache/backends/coll"
)

// Sorted sets' ranges and pops (collnative.go). A range by score reads the
// score index from its min (or its max, REV) and stops after LIMIT's
// members: ZRANGEBYSCORE … LIMIT 0 100 of a million-member set reads 100
// index entries. A range by member (BYLEX) reads the primary key, whose
// order is the members' bytes: Redis's order when every member has the
// same score, the only case BYLEX is defined for. A range by rank reads
// from the end its ranks count from; only a range whose ends count from
// different ends (0 -1) counts the set first.

// rankBound bounds a rank or an index far beyond any collection's size,
// so that sums with it stay within int64.
const rankBound = 1 << 62

func clampRank(r int64) int64 { return min(max(r, -rankBound), rankBound) }

// rankWindow says how to read ranks start to stop (0-based, negative from
// the end) of a set without counting it. When both count from the same
// end: an offset and a limit from that end, flip being true when that is
// the other end than the ranks' own. counted
// is true when one is negative and the other is not: the statement counts
// the set (byRankN).
func rankWindow(start, stop int64) (offset, limit int64, flip, counted bool) {
	start, stop = clampRank(start), clampRank(stop)
	switch {
	case start >= 0 && stop >= 0:
		return start, max(stop-start+1, 0), false, false
	case start < 0 && stop < 0:
		return -stop - 1, max(stop-start+1, 0), true, false
	}
	return 0, 0, false, true
}

// lexBounds are a LexRange as the statements take it: a lower bound,
// included (an excluded member m is m and a 0 byte, the least member after
// it; the empty member is the least of all), and an upper one, excluded
// when maxEx, or none (bounded false). A range that cannot hold a member
// ('+' as its min, '-' as its max) is bounded by the empty member,
// excluded.
func lexBounds(r coll.LexRange) (min, max []byte, maxEx, bounded bool) {
	if r.Min.Inf > 0 || r.Max.Inf < 0 {
		return []byte{}, []byte{}, true, true
	}
	min = []byte{}
	if r.Min.Inf == 0 {
		min = []byte(r.Min.Member)
		if r.Min.Excl {
			min = append(min, 0)
		}
	}
	if r.Max.Inf > 0 {
		return min, nil, false, false
	}
	return min, []byte(r.Max.Member), r.Max.Excl, true
}

// limitArgs are LIMIT's offset and count as the range statements take
// them: a negative offset lists nothing, a negative count all (NULL).
func limitArgs(offset, count int64) (off int64, lim any) {
	switch {
	case offset < 0:
		return 0, int64(0)
	case count < 0:
		return offset, nil
	}
	return offset, count
}

func index(b bool) int {
	if b {
		return 1
	}
	return 0
}

// zsetRange is ZRANGE and its older forms; ZRANGESTORE is left to the
// generic path.
func (s *KV) zsetRange(ctx context.Context, keys []string, op *coll.ZRange) error {
	if op.Store {
		return errNotNative
	}
	k, err := s.keyParam(ctx, op, keys[0])
	if err != nil {
		return err
	}
	rev := index(op.Rev)
	var sql string
	var args []any
	switch op.By {
	case coll.ByScore:
		min, max := scoreBounds(op.Score)
		off, lim := limitArgs(op.Offset, op.Count)
		sql, args = s.coll.zset.byScore[rev], []any{k, min, max, off, lim}
	case coll.ByLex:
		off, lim := limitArgs(op.Offset, op.Count)
		min, max, maxEx, bounded := lexBounds(op.Lex)
		sql, args = s.coll.zset.byLex[rev], []any{k, min, off, lim}
		if bounded {
			sql, args = s.coll.zset.byLexTo[rev], append(args, max, maxEx)
		}
	default:
		offset, limit, flip, counted := rankWindow(op.Start, op.Stop)
		if counted {
			sql, args = s.coll.zset.byRankN[rev], []any{k, clampRank(op.Start), clampRank(op.Stop)}
		} else {
			sql, args = s.coll.zset.byRank[index(op.Rev != flip)], []any{k, offset, limit}
		}
	}
	var score *float64
	held, err := s.readMembers(ctx, op, kindZSet, sql, args, func() { op.Result = op.Result[:0] },
		&score, func(member []byte) { op.Result = append(op.Result, coll.ZEntry{Member: string(member), Score: *score}) })
	if !held {
		op.Result = op.Result[:0]
		return err
	}
	// In the set's order, and the other way round for REV.
	slices.SortFunc(op.Result, func(a, b coll.ZEntry) int {
		if op.By != coll.ByLex {
			if c := cmp.Compare(a.Score, b.Score); c != 0 {
				return c
			}
		}
		return strings.Compare(a.Member, b.Member)
	})
	if op.Rev {
		slices.Reverse(op.Result)
	}
	return nil
}

// zsetRemRange is ZREMRANGEBYSCORE, ZREMRANGEBYLEX and ZREMRANGEBYRANK.
func (s *KV) zsetRemRange(ctx context.Context, key string, op *coll.ZRemRange) error {
	w := nativeWrite{kind: kindZSet, drop: true}
	switch op.By {
	case coll.ByScore:
		min, max := scoreBounds(op.Score)
		w.sql, w.args = s.coll.zset.remScore, []any{min, max}
	case coll.ByLex:
		min, max, maxEx, bounded := lexBounds(op.Lex)
		w.sql, w.args = s.coll.zset.remLex, []any{min}
		if bounded {
			w.sql, w.args = s.coll.zset.remLexTo, append(w.args, max, maxEx)
		}
	default:
		offset, limit, flip, counted := rankWindow(op.Start, op.Stop)
		w.sql, w.args = s.coll.zset.remRank[index(flip)], []any{offset, limit}
		if counted {
			w.sql, w.args = s.coll.zset.remRankN, []any{clampRank(op.Start), clampRank(op.Stop)}
		}
	}
	return s.writeKey(ctx, op, key, w, &op.Removed)
}

// zsetPop is ZPOPMIN and ZPOPMAX.
func (s *KV) zsetPop(k any, op *coll.ZPop) nativeWrite {
	var score *float64
	return popWrite(k, kindZSet, s.coll.zset.pop[index(op.Max)], op.Count, &op.Found, &score,
		func() { op.Popped = op.Popped[:0] },
		func(member []byte) { op.Popped = append(op.Popped, coll.ZEntry{Member: string(member), Score: *score}) })
}

// zsetRangeSQL is a range statement: $1 key, cond the members', order
// their order (with {dir}), offset and limit LIMIT's, with the CTEs of
// with before. A row of the key's kind, and one per member (with its
// score) in the range, in no particular order.
func zsetRangeSQL(with, cond, order, offset, limit string) string {
	return strings.NewReplacer("{with}", with, "{cond}", cond, "{offset}", offset, "{limit}", limit,
		"{order}", order).Replace(`{with}
SELECT {kind}, NULL::bytea, NULL::float8
UNION ALL
(SELECT NULL, member, score FROM {i}
 WHERE key = $1::{k} AND {cond}
 ORDER BY {order}
 OFFSET {offset} LIMIT {limit})`)
}

// The orders of a range: by score then member, or by member alone (BYLEX).
const (
	byScoreOrder  = "score{dir}, member{dir}"
	byMemberOrder = "member{dir}"
)

// $2 min: the members from min (the empty member: all).
const fromMember = `member >= $2::bytea`

// rankSpan: $2 start, $3 stop (within ±rankBound), made ranks a to b of
// the set's n members, from the end they count from (ZRANGE 0 -1).
const rankSpan = `n AS (SELECT count(*) AS n FROM {i} WHERE key = $1::{k}),
sp AS (
    SELECT greatest(CASE WHEN $2::int8 < 0 THEN $2::int8 + n ELSE $2::int8 END, 0) AS a,
           least(CASE WHEN $3::int8 < 0 THEN $3::int8 + n ELSE $3::int8 END, n - 1) AS b
    FROM n
)`

// rankMembers are the members of ranks $2 + 1 to $2 + $3 from the end
// {dir} says; rankSpanMembers those of the span rankSpan made.
const (
	rankMembers = `member = ANY (ARRAY(
        SELECT member FROM {i} WHERE key = $1::{k} AND score IS NOT NULL
        ORDER BY score{dir}, member{dir} OFFSET $2::int8 LIMIT $3::int8))`
	rankSpanMembers = `member = ANY (ARRAY(
        SELECT member FROM {i} WHERE key = $1::{k} AND score IS NOT NULL
        ORDER BY score, member OFFSET (SELECT a FROM sp) LIMIT (SELECT greatest(b - a + 1, 0) FROM sp)))`
)

// $1 key, $2 count. ZPOPMIN ({dir} DESC: ZPOPMAX): the members popped, in
// the order they go; found says the key held a sorted set.
const zsetPopSQL = `
WITH {h},
d AS (
    DELETE FROM {i}
    WHERE key = $1::{k} AND member = ANY (ARRAY(
        SELECT member FROM {i}
        WHERE key = $1::{k} AND score IS NOT NULL AND EXISTS (SELECT FROM h WHERE kind = 'z')
        ORDER BY score{dir}, member{dir} LIMIT $2::int8))
    RETURNING member, score
)
SELECT w.wrong, w.found, d.member, d.score
FROM (SELECT coalesce((SELECT kind <> 'z' FROM h), false) AS wrong,
             EXISTS (SELECT FROM h WHERE kind = 'z') AND {some:$1} AS found) AS w
LEFT JOIN d ON true
ORDER BY d.score{dir}, d.member{dir}`

// zsetStatements fills zsetSQL's templates (before the table's names).
func zsetStatements() zsetSQL {
	var z zsetSQL
	dirs := [2]string{"", " DESC"}
	for i, dir := range dirs {
		d := strings.NewReplacer("{dir}", dir)
		z.byScore[i] = d.Replace(zsetRangeSQL("", inScore, byScoreOrder, "$4::int8", "$5::int8"))
		z.byLex[i] = d.Replace(zsetRangeSQL("", fromMember, byMemberOrder, "$3::int8", "$4::int8"))
		z.byLexTo[i] = d.Replace(zsetRangeSQL("",
			fromMember+` AND member <= $5::bytea AND NOT ($6::bool AND member = $5::bytea)`,
			byMemberOrder, "$3::int8", "$4::int8"))
		z.byRank[i] = d.Replace(zsetRangeSQL("", "score IS NOT NULL", byScoreOrder, "$2::int8", "$3::int8"))
		z.byRankN[i] = d.Replace(zsetRangeSQL("WITH "+rankSpan, "score IS NOT NULL", byScoreOrder,
			"(SELECT a FROM sp)", "(SELECT greatest(b - a + 1, 0) FROM sp)"))
		z.remRank[i] = d.Replace(removeSQL(kindZSet, "", rankMembers))
		z.pop[i] = d.Replace(zsetPopSQL)
	}
	z.remScore = removeSQL(kindZSet, "", inScore)
	z.remLex = removeSQL(kindZSet, "", fromMember)
	z.remLexTo = removeSQL(kindZSet, "", fromMember+` AND member <= $3::bytea AND NOT ($4::bool AND member = $3::bytea)`)
	z.remRankN = removeSQL(kindZSet, ",\n"+rankSpan, rankSpanMembers)
	z.add, z.addXX, z.cas, z.rem, z.score, z.scores = zsetAddSQL, zsetAddXXSQL, zsetCASSQL, removeSQL(kindZSet, "", inMembers), zsetScoreSQL, zsetScoresSQL
	z.countScore = strings.ReplaceAll(zsetCountScoreSQL, "{inScore}", inScore)
	z.rank, z.revRank = zsetRankSQL, strings.Replace(zsetRankSQL, "(i.score, i.member) <", "(i.score, i.member) >", 1)
	return z
}
