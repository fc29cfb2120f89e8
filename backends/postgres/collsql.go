package postgres

import "strings"

// collSQL are the statements of a kv table's collections (collschema.go):
// {t} is the kv table, {i} its items table, {k} the key's SQL type.
type collSQL struct {
	load, loadLocked, loadOne     string
	lockKeys                      string
	createRow, updateRow, delRow  string
	putItems, putFields, delItems string
	delAll, copyIn                string

	// The commands' own statements (collnative.go).
	lockRows, dropEmpty string
	count               string // HLEN, SCARD, ZCARD: countSQL
	hash                hashSQL
	set                 setsSQL
	zset                zsetSQL
	list                listSQL
}

func collStatements(t, items string, k keyType) collSQL {
	r := strings.NewReplacer("{t}", t, "{i}", items, "{k}", k.sqlType)
	// The commands' statements have macros too, expanded first: {h} and
	// {kind} (which name the table) and {flip}.
	macros := strings.NewReplacer("{h}", liveKind, "{kind}", rowKind, "{flip}", "(-9223372036854775808)::int8")
	fill := func(sql string) string { return r.Replace(macros.Replace(hasItems(sql))) }
	z, l := zsetStatements(), listStatements()
	for _, arr := range []*[2]string{&z.byScore, &z.byLex, &z.byLexTo, &z.byRank, &z.byRankN, &z.remRank, &z.pop, &l.pop, &l.bpop} {
		arr[0], arr[1] = fill(arr[0]), fill(arr[1])
	}
	for _, one := range []*string{&z.add, &z.addXX, &z.cas, &z.rem, &z.score, &z.scores, &z.countScore, &z.rank, &z.revRank,
		&z.remScore, &z.remLex, &z.remLexTo, &z.remRankN,
		&l.push, &l.count, &l.index, &l.rng, &l.set, &l.trim, &l.move} {
		*one = fill(*one)
	}
	return collSQL{
		load:       r.Replace(loadSQL),
		loadLocked: r.Replace(loadSQL + ` FOR UPDATE OF h`),
		loadOne:    r.Replace(loadOneSQL),
		lockKeys:   r.Replace(lockKeyRowsSQL),
		createRow:  r.Replace(createRowSQL),
		updateRow:  r.Replace(updateRowSQL),
		delRow:     r.Replace(delRowSQL),
		putItems:   r.Replace(putItemsSQL),
		putFields:  r.Replace(putFieldsSQL),
		delItems:   r.Replace(delItemsSQL),
		delAll:     r.Replace(delAllItemsSQL),
		copyIn:     r.Replace(copyItemsSQL),

		lockRows:  fill(lockRowsSQL),
		dropEmpty: fill(dropEmptySQL),
		count:     fill(countSQL),
		hash: hashSQL{get: fill(hashGetSQL), getLen: fill(hashGetLenSQL), getMany: fill(hashGetManySQL),
			set: fill(hashSetSQL), setNX: fill(hashSetNXSQL),
			del: fill(removeSQL(kindHash, "", inMembers)), incr: fill(hashIncrSQL), cas: fill(hashCASSQL)},
		set: setsSQL{add: fill(setAddSQL), rem: fill(removeSQL(kindSet, "", inMembers)), has: fill(setHasSQL),
			hasMany: fill(setHasManySQL)},
		zset: z,
		list: l,
	}
}

// loadColumns are what a load answers per row (loadRows reads them): a
// row h of the kv table, with its remaining microseconds (-1 for none)
// from now(), and an item i of its collection.
const loadColumns = `
SELECT h.key::text, h.kind, h.value,
       CASE WHEN h.expires_at = 'infinity' THEN -1
            ELSE floor(extract(epoch FROM h.expires_at - now()) * 1000000)::int8 END,
       i.member, i.score, i.value`

// $1 keys. The live rows of keys and a collection's items, one row each,
// in the collection's order (loadColumns); a string's row comes once,
// with NULL items. One statement, so one snapshot: the items are the
// rows'. The order is by score, then member: a sorted set's, a hash's
// fields in the order they were added (their score is a sequence: Redis
// answers a small hash in that order), a list's positions, a set's
// members.
const loadSQL = loadColumns + `
FROM {t} AS h
LEFT JOIN {i} AS i ON i.key = h.key AND h.kind <> 's'
WHERE h.key = ANY($1::{k}[]) AND h.expires_at > now()
ORDER BY h.key, i.score, i.member`

// $1 keys. Their rows, live or not, locked in key order, as lockRowsSQL
// and upserts lock them: an atomic run's read after this statement sees
// what the writers it waited for committed (kvRows.load).
const lockKeyRowsSQL = `SELECT 1 FROM {t} WHERE key = ANY($1::{k}[]) ORDER BY key FOR UPDATE`

// $1 key, $2 the most items to read. loadSQL of one key, for a cache that
// keeps collections up to a size: it reads no more items than that.
const loadOneSQL = loadColumns + `
FROM {t} AS h
LEFT JOIN LATERAL (
    SELECT member, score, value FROM {i}
    WHERE key = h.key AND h.kind <> 's'
    ORDER BY score, member
    LIMIT $2
) AS i ON true
WHERE h.key = $1::{k} AND h.expires_at > now()
ORDER BY i.score, i.member`

// $1 key, $2 kind, $3 lifetime in microseconds (-1: none). A collection's
// row for a key that had none at the load: inserted, or taking over an
// expired row (whose items the purge trigger removes); no row back when a
// live one is there now (the run starts over).
const createRowSQL = `
INSERT INTO {t} AS t (key, value, expires_at, kind)
VALUES ($1::{k}, '', CASE WHEN $3::int8 < 0 THEN 'infinity' ELSE now() + $3::int8 * interval '1 microsecond' END, $2::"char")
ON CONFLICT (key) DO UPDATE
SET value = '', expires_at = EXCLUDED.expires_at, kind = EXCLUDED.kind
WHERE t.expires_at <= now()
RETURNING true`

// $1 key, $2 kind, $3 lifetime in microseconds (-1: none), $4 keep the
// deadline. A row read at the load (locked since) becomes a collection's;
// a change of kind purges its items (the trigger).
const updateRowSQL = `
UPDATE {t}
SET value = '', kind = $2::"char",
    expires_at = CASE WHEN $4::bool THEN expires_at
                      WHEN $3::int8 < 0 THEN 'infinity'
                      ELSE now() + $3::int8 * interval '1 microsecond' END
WHERE key = $1::{k}`

// $1 key. A row read at the load, deleted (a collection's items with it).
const delRowSQL = `DELETE FROM {t} WHERE key = $1::{k}`

// $1 key, $2 members, $3 scores, $4 values. Items written: inserted, or
// replacing those of the same member.
const putItemsSQL = `
INSERT INTO {i} AS i (key, member, score, value)
SELECT $1::{k}, m, s, v FROM unnest($2::bytea[], $3::float8[], $4::bytea[]) AS u(m, s, v)
ON CONFLICT (key, member) DO UPDATE
SET score = EXCLUDED.score, value = EXCLUDED.value`

// $1 key, $2 fields, $3 values, in the hash's order. A hash's fields
// written: a new one gets the next number of the hash's sequence (its
// score), one that is there keeps its number and takes the value.
const putFieldsSQL = `
INSERT INTO {i} AS i (key, member, score, value)
SELECT $1::{k}, u.m, base.n + u.o, u.v
FROM unnest($2::bytea[], $3::bytea[]) WITH ORDINALITY AS u(m, v, o),
     (SELECT coalesce(max(score), 0) AS n FROM {i} WHERE key = $1::{k} AND score IS NOT NULL) AS base
ON CONFLICT (key, member) DO UPDATE
SET value = EXCLUDED.value`

// $1 key, $2 members.
const delItemsSQL = `DELETE FROM {i} WHERE key = $1::{k} AND member = ANY($2::bytea[])`

// $1 key.
const delAllItemsSQL = `DELETE FROM {i} WHERE key = $1::{k}`

// $1 source, $2 destination: COPY and RENAME of a collection.
const copyItemsSQL = `
INSERT INTO {i} (key, member, score, value)
SELECT $2::{k}, member, score, value FROM {i} WHERE key = $1::{k}`
