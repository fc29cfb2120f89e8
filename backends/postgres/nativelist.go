package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends/coll"
)

// Lists' native commands (collnative.go). An element's member is its
// position (listPosition: big-endian, sign bit flipped, so that bytea
// order is position order), and a list's positions are contiguous: every
// change here is at an end (a push takes the position before the first or
// after the last, a pop or LTRIM removes from the ends, LSET keeps the
// position), and the generic path rewrites a list it changed from 0. So a
// list's length is last - first + 1 and its i-th element is at first + i:
// LLEN, LINDEX, LSET and the length LPUSH answers are index probes, and a
// push or a pop touches one end, whatever the length: a queue costs O(1)
// a message.

// listSQL are the statements of the list commands.
type listSQL struct {
	push, count, index, rng, set, trim, move string
	pop, bpop                                [2]string // [from the right]
}

// listPush is LPUSH, RPUSH, LPUSHX and RPUSHX.
func (s *KV) listPush(k any, op *coll.Push) nativeWrite {
	return keyWrite(k, nativeWrite{kind: kindList, drop: op.X, sql: s.coll.list.push,
		args: []any{op.Elems, op.End == coll.Left, op.X}}, &op.Len)
}

// listPop is LPOP and RPOP, with or without a count.
func (s *KV) listPop(k any, op *coll.Pop) nativeWrite {
	var elem []byte
	return popWrite(k, kindList, s.coll.list.pop[index(op.End == coll.Right)], op.Count, &op.Found, &elem,
		func() { op.Elems = op.Elems[:0] },
		func([]byte) { op.Elems = append(op.Elems, value(elem)) })
}

// listLen is LLEN: the list's ends, read from the primary key.
func (s *KV) listLen(ctx context.Context, key string, op *coll.Len) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var kind *string
	var first, last []byte
	if err := s.readRow(ctx, op, s.coll.list.count, []any{k}, &kind, &first, &last); err != nil {
		return err
	}
	op.Len = 0
	if ok, err := holds(kind, kindList); !ok || first == nil {
		return err
	}
	if len(first) != 8 || len(last) != 8 {
		return fmt.Errorf("%s: llen: list %q has an element whose member is no position", s.where, key)
	}
	op.Len = positionOf(last) - positionOf(first) + 1
	return nil
}

// positionOf is the position a list element's member says (listPosition).
func positionOf(member []byte) int64 {
	return int64(binary.BigEndian.Uint64(member) ^ 1<<63)
}

// listIndex is LINDEX; one whose index is not a number (which Redis
// reports only for a list) is left to the generic path.
func (s *KV) listIndex(ctx context.Context, key string, op *coll.LIndex) error {
	if op.BadIndex != nil {
		return errNotNative
	}
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	var kind *string
	var elem []byte
	if err := s.readRow(ctx, op, s.coll.list.index, []any{k, clampRank(op.Index)}, &kind, &elem); err != nil {
		return err
	}
	ok, err := holds(kind, kindList)
	op.Elem, op.Found = nil, ok && elem != nil
	if op.Found {
		op.Elem = elem
	}
	return err
}

// listRange is LRANGE.
func (s *KV) listRange(ctx context.Context, key string, op *coll.LRange) error {
	k, err := s.keyParam(ctx, op, key)
	if err != nil {
		return err
	}
	type elem struct{ at, val []byte }
	var elems []elem
	var val []byte
	held, err := s.readMembers(ctx, op, kindList, s.coll.list.rng, []any{k, clampRank(op.Start), clampRank(op.Stop)},
		func() { elems = elems[:0] }, &val, func(member []byte) { elems = append(elems, elem{member, val}) })
	op.Elems = nil
	if !held || len(elems) == 0 {
		return err
	}
	slices.SortFunc(elems, func(a, b elem) int { return bytes.Compare(a.at, b.at) })
	op.Elems = make([][]byte, len(elems))
	for i, e := range elems {
		op.Elems[i] = e.val
	}
	return nil
}

// listSet is LSET; one whose index is not a number is left to the generic
// path.
func (s *KV) listSet(ctx context.Context, key string, op *coll.LSet) error {
	if op.BadIndex != nil {
		return errNotNative
	}
	var exists, set bool
	err := s.writeKey(ctx, op, key, nativeWrite{kind: kindList, drop: true, sql: s.coll.list.set,
		args: []any{clampRank(op.Index), value(op.Elem)}}, &exists, &set)
	switch {
	case err != nil:
		return err
	case !exists:
		return coll.ErrNoSuchKey
	case !set:
		return coll.ErrIndexRange
	}
	return nil
}

// listTrim is LTRIM.
func (s *KV) listTrim(ctx context.Context, key string, op *coll.LTrim) error {
	return s.writeKey(ctx, op, key, nativeWrite{kind: kindList, drop: true, sql: s.coll.list.trim,
		args: []any{clampRank(op.Start), clampRank(op.Stop)}})
}

// listMove is LMOVE and RPOPLPUSH: both rows locked in key order. One key
// named twice rotates its list (or, from and to the same end, leaves it
// as it is).
func (s *KV) listMove(ctx context.Context, keys []string, op *coll.LMove) error {
	ks, err := s.keyParams(ctx, op, keys)
	if err != nil {
		return err
	}
	same := keys[0] == keys[1]
	var srcWrong, found, dstWrong bool
	var elem []byte
	err = s.write(ctx, op, nativeWrite{keys: ks, kind: kindList, drop: true, sql: s.coll.list.move,
		args: []any{ks[0], ks[1], op.From == coll.Left, op.To == coll.Left, same && op.From == op.To},
		scan: func(br pgx.BatchResults) error {
			return br.QueryRow().Scan(&srcWrong, &found, &dstWrong, &elem)
		}})
	op.Elem, op.Found = nil, false
	switch {
	case err != nil:
		return err
	case srcWrong:
		return wrongType(nil, true)
	case !found:
		return nil
	case dstWrong:
		return wrongType(nil, true)
	}
	op.Elem, op.Found = value(elem), true
	return nil
}

// listBPop is BLPOP and BRPOP's attempt: a pop from the first of the keys
// that holds a list. A key of another type before it fails the command,
// unless the waiter woke the Op (Woken), which passes over it.
func (s *KV) listBPop(ctx context.Context, keys []string, op *coll.BPop) error {
	ks, err := s.keyParams(ctx, op, keys)
	if err != nil {
		return err
	}
	var wrong bool
	var at *int64
	var elem []byte
	err = s.write(ctx, op, nativeWrite{keys: ks, kind: kindList, drop: true, sql: s.coll.list.bpop[index(op.End == coll.Right)],
		args: []any{s.key.array(ks), op.Woken},
		scan: func(br pgx.BatchResults) error { return br.QueryRow().Scan(&wrong, &at, &elem) }})
	op.Found, op.Key, op.Elems = false, nil, op.Elems[:0]
	if err = wrongType(err, wrong); err != nil || at == nil {
		return err
	}
	op.Found, op.Key, op.Elems = true, slices.Clone(op.Args[op.KeyAt[*at-1]]), append(op.Elems, value(elem))
	return nil
}

// listEnds is a CTE, name(lo, hi, first, last): the positions of the first
// and last elements of the list at key (a parameter), and their members;
// NULLs when it has none, or is not a list (gate: the CTE of its row's
// kind).
func listEnds(name, key, gate string) string {
	return strings.NewReplacer("{name}", name, "{key}", key, "{gate}", gate).Replace(`{name} AS (
    SELECT ('x' || encode(first, 'hex'))::bit(64)::int8 # {flip} AS lo,
           ('x' || encode(last, 'hex'))::bit(64)::int8 # {flip} AS hi,
           first, last
    FROM (SELECT (SELECT member FROM {i} WHERE key = {key}::{k} AND EXISTS (SELECT FROM {gate} WHERE kind = 'l')
                  ORDER BY member LIMIT 1) AS first,
                 (SELECT member FROM {i} WHERE key = {key}::{k} AND EXISTS (SELECT FROM {gate} WHERE kind = 'l')
                  ORDER BY member DESC LIMIT 1) AS last) AS m
)`)
}

// position is the member of a position (listPosition).
func position(pos string) string { return "int8send((" + pos + ") # {flip})" }

// $1 key, $2 elements, $3 to the left, $4 only onto a list (X). The new
// length (0 when X found none).
var listPushSQL = `
WITH {h}, {ends},
ins AS (
    INSERT INTO {i} (key, member, value)
    SELECT $1::{k}, ` + position(`CASE WHEN $3::bool THEN coalesce(e.lo, 0) - u.o ELSE coalesce(e.hi, -1) + u.o END`) + `, u.v
    FROM e, unnest($2::bytea[]) WITH ORDINALITY AS u(v, o)
    WHERE EXISTS (SELECT FROM h WHERE kind = 'l') AND (e.lo IS NOT NULL OR NOT $4::bool)
)
SELECT coalesce((SELECT kind <> 'l' FROM h), false),
       (SELECT CASE WHEN e.lo IS NULL AND $4::bool THEN 0
                    ELSE coalesce(e.hi - e.lo + 1, 0) + cardinality($2::bytea[]) END FROM e)`

// $1 key, $2 count. LPOP ({dir} DESC: RPOP): the elements popped, in the
// order they go; found says the key held a list.
const listPopSQL = `
WITH {h},
d AS (
    DELETE FROM {i}
    WHERE key = $1::{k} AND member = ANY (ARRAY(
        SELECT member FROM {i}
        WHERE key = $1::{k} AND EXISTS (SELECT FROM h WHERE kind = 'l')
        ORDER BY member{dir} LIMIT $2::int8))
    RETURNING member, value
)
SELECT w.wrong, w.found, d.member, d.value
FROM (SELECT coalesce((SELECT kind <> 'l' FROM h), false) AS wrong,
             EXISTS (SELECT FROM h WHERE kind = 'l') AND {some:$1} AS found) AS w
LEFT JOIN d ON true
ORDER BY d.member{dir}`

// firstMember and lastMember are the members of $1's first and last
// elements, read from the primary key.
const (
	firstMember = `(SELECT member FROM {i} WHERE key = $1::{k} ORDER BY member LIMIT 1)`
	lastMember  = `(SELECT member FROM {i} WHERE key = $1::{k} ORDER BY member DESC LIMIT 1)`
)

// positionIn is the position of the element whose member is the value of
// expression m (listPosition).
func positionIn(m string) string {
	return "(('x' || encode(" + m + ", 'hex'))::bit(64)::int8 # {flip})"
}

// $1 key. LLEN: the members of the list's ends.
var listCountSQL = `SELECT {kind}, ` + firstMember + `, ` + lastMember

// $1 key, $2 index. LINDEX: the element at the index (negative: from the
// tail), at the first element's position plus the index.
var listIndexSQL = `
SELECT {kind}, (SELECT value FROM {i} WHERE key = $1::{k} AND member = CASE WHEN $2::int8 >= 0
    THEN ` + position(positionIn(firstMember)+` + $2::int8`) + `
    ELSE ` + position(positionIn(lastMember)+` + 1 + $2::int8`) + ` END)`

// at is the CTE p(pos, lo, hi) of a write: the position of index $2
// (negative from the tail), and the list's ends.
const at = `p AS (SELECT CASE WHEN $2::int8 >= 0 THEN lo + $2::int8 ELSE hi + 1 + $2::int8 END AS pos, lo, hi FROM e)`

// span is LRANGE's and LTRIM's $2 start and $3 stop (within ±rankBound),
// as positions a to b of the list at e(lo, hi) (a > b: none).
const span = `
    SELECT lo + greatest(CASE WHEN $2::int8 < 0 THEN $2::int8 + n ELSE $2::int8 END, 0) AS a,
           lo + least(CASE WHEN $3::int8 < 0 THEN $3::int8 + n ELSE $3::int8 END, n - 1) AS b
    FROM (SELECT lo, hi - lo + 1 AS n FROM e) AS x`

// $1 key, $2 start, $3 stop. LRANGE: a row of the key's kind, and one per
// element of the span, with its member, in no particular order.
var listRangeSQL = `
WITH {e}
SELECT {kind}, NULL::bytea, NULL::bytea
UNION ALL
SELECT NULL, i.member, i.value
FROM {i} AS i,
     (SELECT ` + position("a") + ` AS a, ` + position("b") + ` AS b
      FROM (` + span + `) AS ab) AS sp
WHERE i.key = $1::{k} AND i.member >= sp.a AND i.member <= sp.b`

// $1 key, $2 index, $3 element. LSET: whether the key holds a list, and
// whether the index was in it.
var listSetSQL = `
WITH {h}, {ends}, {at},
u AS (
    UPDATE {i} SET value = $3::bytea
    WHERE key = $1::{k} AND member = (SELECT ` + position("pos") + ` FROM p WHERE pos BETWEEN lo AND hi)
    RETURNING true
)
SELECT coalesce((SELECT kind <> 'l' FROM h), false), (SELECT lo IS NOT NULL FROM e), EXISTS (SELECT FROM u)`

// $1 key, $2 start, $3 stop. LTRIM: the elements before and after the
// span removed (all of them when it is empty).
var listTrimSQL = `
WITH {h}, {ends}, sp AS ({span}),
d AS (
    DELETE FROM {i}
    WHERE key = $1::{k} AND EXISTS (SELECT FROM e WHERE lo IS NOT NULL)
      AND (member < (SELECT ` + position("a") + ` FROM sp) OR member > (SELECT ` + position("b") + ` FROM sp))
)
SELECT coalesce((SELECT kind <> 'l' FROM h), false)`

// $1 source, $2 destination, $3 from the left, $4 to the left, $5 a no-op
// (one key, one end). LMOVE: whether the source is of another type,
// whether it holds a list, whether the destination is of another type,
// and the element moved (the source's end, as read: one statement moves it
// only when neither is of another type).
var listMoveSQL = `
WITH {h},
hd AS (SELECT kind FROM {t} WHERE key = $2::{k} AND expires_at > now()),
{ends}, ` + listEnds("de", "$2", "hd") + `,
src AS (
    SELECT member, value FROM {i}
    WHERE key = $1::{k} AND member = (SELECT CASE WHEN $3::bool THEN first ELSE last END FROM e)
      AND NOT EXISTS (SELECT FROM hd WHERE kind <> 'l')
), d AS (
    DELETE FROM {i}
    WHERE key = $1::{k} AND member = (SELECT member FROM src) AND NOT $5::bool
    RETURNING value
), ins AS (
    INSERT INTO {i} (key, member, value)
    SELECT $2::{k}, ` + position(`CASE WHEN $4::bool THEN coalesce(de.lo, 0) - 1 ELSE coalesce(de.hi, -1) + 1 END`) + `, d.value
    FROM d, de
)
SELECT coalesce((SELECT kind <> 'l' FROM h), false), (SELECT lo IS NOT NULL FROM e),
       coalesce((SELECT kind <> 'l' FROM hd), false), (SELECT value FROM src)`

// $1 keys (in the command's order), $2 woken. BLPOP's attempt ({dir}
// DESC: BRPOP): the first key that holds a list or (unless woken) is of
// another type, by its number in $1 from 1; WRONGTYPE when it is of
// another type; and the element popped.
const listBPopSQL = `
WITH st AS (
    SELECT u.k, u.o, t.kind
    FROM unnest($1::{k}[]) WITH ORDINALITY AS u(k, o)
    JOIN {t} AS t ON t.key = u.k AND t.expires_at > now()
    WHERE (t.kind <> 'l' AND NOT $2::bool) OR (t.kind = 'l' AND {some:u.k})
    ORDER BY u.o LIMIT 1
), p AS (
    SELECT member FROM {i} WHERE key = (SELECT k FROM st WHERE kind = 'l') ORDER BY member{dir} LIMIT 1
), d AS (
    DELETE FROM {i} WHERE key = (SELECT k FROM st) AND member = (SELECT member FROM p)
    RETURNING value
)
SELECT coalesce((SELECT kind <> 'l' FROM st), false), (SELECT o FROM st), (SELECT value FROM d)`

// listStatements fills listSQL's templates (before the table's names).
func listStatements() listSQL {
	r := strings.NewReplacer("{ends}", listEnds("e", "$1", "h"), "{at}", at, "{span}", span,
		"{e}", "e AS (SELECT "+positionIn(firstMember)+" AS lo, "+positionIn(lastMember)+" AS hi)")
	l := listSQL{push: r.Replace(listPushSQL), count: r.Replace(listCountSQL), index: r.Replace(listIndexSQL),
		rng: r.Replace(listRangeSQL), set: r.Replace(listSetSQL), trim: r.Replace(listTrimSQL), move: r.Replace(listMoveSQL)}
	for i, dir := range [2]string{"", " DESC"} {
		d := strings.NewReplacer("{dir}", dir)
		l.pop[i], l.bpop[i] = d.Replace(listPopSQL), d.Replace(listBPopSQL)
	}
	return l
}
