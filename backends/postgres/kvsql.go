package postgres

import "strings"

// kvSQL are the statements of one kv table. Each is one statement, so each
// operation is atomic and one round trip; pgx prepares each on first use on
// every connection and reuses it after (its statement cache).
//
// The database's clock decides expiry: deadlines are computed with now()
// (the transaction's start) and reads check expires_at > now(). A row past
// its deadline is absent to every statement, even before the sweeper
// deletes it. A deadline is written as
//
//	coalesce(now() + $ttl::interval, $at::timestamptz, 'infinity')
//
// with $ttl set for a relative TTL, $at for an absolute one, neither for
// none.
type kvSQL struct {
	get, mget                    string
	set, setNX, setXX, setGet    string
	setMade, upsertMade          string // set and upsert, saying which keys they made (madeSQL)
	upsert, del, exists          string
	getDel, getEx, incr, incrWhy string
	expire, persist, ttl, lock   string
	sweep, sweepKeys, nextExpiry string
	expired                      string // sweepSQL alone, for KV.LogExpiries to extend
}

// kvStatements fills the statement templates: {t} is the quoted table and
// {k} the key's SQL type.
func kvStatements(table string, k keyType) kvSQL {
	r := strings.NewReplacer("{t}", table, "{k}", k.sqlType)
	return kvSQL{
		get:     r.Replace(getSQL),
		mget:    r.Replace(mgetSQL),
		set:     r.Replace(setSQL),
		setNX:   r.Replace(setNXSQL),
		setXX:   r.Replace(setXXSQL),
		setGet:  r.Replace(setGetSQL),
		upsert:  r.Replace(upsertSQL),
		del:     r.Replace(delSQL),
		exists:  r.Replace(existsSQL),
		getDel:  r.Replace(getDelSQL),
		getEx:   r.Replace(getExSQL),
		incr:    r.Replace(incrSQL),
		incrWhy: r.Replace(incrWhySQL),
		expire:  r.Replace(expireSQL),
		persist: r.Replace(persistSQL),
		ttl:     r.Replace(ttlSQL),
		lock:    r.Replace(lockSQL),

		setMade:    r.Replace(setSQL + "\nRETURNING " + madeSQL),
		upsertMade: r.Replace(upsertSQL + "\nRETURNING array_position($1::{k}[], t.key), " + madeSQL),

		expired:    r.Replace(sweepSQL),
		nextExpiry: r.Replace(nextExpirySQL),
		sweep:      r.Replace(sweepSQL + ` SELECT count(*) FROM expired`),
		sweepKeys:  r.Replace(sweepSQL + ` SELECT key::text FROM expired`),
	}
}

// $1 key. kind tells a string from a collection, which GET refuses.
const getSQL = `SELECT value, kind FROM {t} WHERE key = $1::{k} AND expires_at > now()`

// $1 keys. One round trip whatever the number of keys; the caller puts the
// rows back in the order of the keys (MGET answers nil for a collection).
const mgetSQL = `SELECT key::text, value, kind FROM {t} WHERE key = ANY($1::{k}[]) AND expires_at > now()`

// $1 key, $2 value, $3 ttl, $4 at, $5 keepttl. The upsert of "Postgres as a Key-Value Store";
// KEEPTTL keeps the deadline of a live row (a new or expired one gets none).
// A SET replaces whatever the key held: a collection's items go with its
// kind (the purge trigger, collschema.go).
const setSQL = `
INSERT INTO {t} AS t (key, value, expires_at)
VALUES ($1::{k}, $2::bytea, coalesce(now() + $3::interval, $4::timestamptz, 'infinity'))
ON CONFLICT (key) DO UPDATE
SET value      = EXCLUDED.value,
    expires_at = CASE WHEN $5::bool AND t.expires_at > now() THEN t.expires_at
                      ELSE EXCLUDED.expires_at END,
    kind       = 's'`

// madeSQL is a RETURNING column of an upsert into {t} AS t: whether the
// statement made the row's key, which did not exist before it. Either it
// inserted the row (xmax 0: no row was there), or it took over one whose
// deadline had passed (the sweeper deletes those only every sweep_interval),
// as Redis's write of an expired key makes it anew. The upsert cannot return
// the row it overwrote (RETURNING OLD is PostgreSQL 18), so that row is read
// as of the statement's start (wasExpiredSQL): when another write of the key
// commits between that start and the statement's lock on the row, the answer
// is as of the start (two writers that both take over one expired row both
// say they made it). The plain SET asks only while someone listens
// (backends.SetOptions.AskCreated): the lookup is the statement's second.
const madeSQL = `(t.xmax = 0 OR ` + wasExpiredSQL + `)`

// wasExpiredSQL: whether the row of t.key was there and expired when the
// statement started (see madeSQL).
const wasExpiredSQL = `coalesce((SELECT o.expires_at <= now() FROM {t} AS o WHERE o.key = t.key), false)`

// $1 key, $2 value, $3 ttl, $4 at. SET NX as "Postgres as a Key-Value Store" writes it: an
// expired row still owns its key, so the conflict takes it over instead of
// doing nothing; a live row makes the statement return no row. Concurrent
// callers queue on the key's index entry, and each sees the winner's row.
const setNXSQL = `
INSERT INTO {t} AS t (key, value, expires_at)
VALUES ($1::{k}, $2::bytea, coalesce(now() + $3::interval, $4::timestamptz, 'infinity'))
ON CONFLICT (key) DO UPDATE
SET value      = EXCLUDED.value,
    expires_at = EXCLUDED.expires_at,
    kind       = 's'
WHERE t.expires_at <= now()
RETURNING true`

// $1 key, $2 value, $3 ttl, $4 at, $5 keepttl. SET XX: only a live row.
const setXXSQL = `
UPDATE {t}
SET value      = $2::bytea,
    expires_at = CASE WHEN $5::bool THEN expires_at
                      ELSE coalesce(now() + $3::interval, $4::timestamptz, 'infinity') END,
    kind       = 's'
WHERE key = $1::{k} AND expires_at > now()
RETURNING true`

// $1 key, $2 value, $3 ttl, $4 at, $5 keepttl, $6 condition (0 always,
// 1 NX, 2 XX). SET … GET, which must return the value it replaced.
//
// ON CONFLICT cannot return the row it updated as it was before (RETURNING
// OLD is PostgreSQL 18), so the statement locks the current row first (old:
// FOR UPDATE waits for a concurrent writer and then reads its committed
// version), and writes with a plain UPDATE of that row, or an INSERT when
// there was none. The one gap: a row another session inserts after this
// statement's snapshot is invisible to old, so the INSERT meets it and
// does nothing. The statement then reports neither a row nor a write
// (had_row false, stored false) and the caller runs it again, with a new
// snapshot that sees the row. A live collection is not replaced: the
// fifth column says so, and the caller answers WRONGTYPE.
const setGetSQL = `
WITH old AS (
    SELECT value, expires_at, expires_at > now() AS live, kind
    FROM {t}
    WHERE key = $1::{k}
    FOR UPDATE
), ins AS (
    INSERT INTO {t} (key, value, expires_at)
    SELECT $1::{k}, $2::bytea, coalesce(now() + $3::interval, $4::timestamptz, 'infinity')
    WHERE NOT EXISTS (SELECT FROM old) AND $6::int <> 2
    ON CONFLICT (key) DO NOTHING
    RETURNING true
), upd AS (
    UPDATE {t} AS t
    SET value      = $2::bytea,
        expires_at = CASE WHEN $5::bool AND old.live THEN old.expires_at
                          ELSE coalesce(now() + $3::interval, $4::timestamptz, 'infinity') END,
        kind       = 's'
    FROM old
    WHERE t.key = $1::{k}
      AND (NOT old.live OR old.kind = 's')
      AND CASE $6::int WHEN 1 THEN NOT old.live WHEN 2 THEN old.live ELSE true END
    RETURNING true
)
SELECT (SELECT value FROM old WHERE live),
       EXISTS (SELECT FROM old WHERE live),
       EXISTS (SELECT FROM ins) OR EXISTS (SELECT FROM upd),
       EXISTS (SELECT FROM old),
       EXISTS (SELECT FROM old WHERE live AND kind <> 's')`

// $1 keys, $2 values, $3 lifetimes in microseconds (-1: none), sorted by
// key and without duplicates (ON CONFLICT cannot update a row twice in one
// statement; sorted, concurrent upserts lock their rows in the same order
// and cannot deadlock). MSET, and the plain SETs that queued while the
// pool was busy.
const upsertSQL = `
INSERT INTO {t} AS t (key, value, expires_at)
SELECT k, v, CASE WHEN ttl < 0 THEN 'infinity' ELSE now() + ttl * interval '1 microsecond' END
FROM unnest($1::{k}[], $2::bytea[], $3::int8[]) AS u(k, v, ttl)
ON CONFLICT (key) DO UPDATE
SET value      = EXCLUDED.value,
    expires_at = EXCLUDED.expires_at,
    kind       = 's'`

// $1 keys. Expired rows are deleted too, but only live ones count.
const delSQL = `
WITH d AS (
    DELETE FROM {t} WHERE key = ANY($1::{k}[])
    RETURNING expires_at > now() AS live
)
SELECT count(*) FILTER (WHERE live) FROM d`

// $1 keys. A key named twice counts twice, as in Redis.
const existsSQL = `
SELECT count(*)
FROM unnest($1::{k}[]) AS u(k)
JOIN {t} AS t ON t.key = u.k
WHERE t.expires_at > now()`

// $1 key. GETDEL of a string; a live collection is left as it is, and the
// third column says so (WRONGTYPE).
const getDelSQL = `
WITH cur AS (
    SELECT kind, expires_at > now() AS live FROM {t} WHERE key = $1::{k} FOR UPDATE
), d AS (
    DELETE FROM {t} AS t USING cur
    WHERE t.key = $1::{k} AND (cur.kind = 's' OR NOT cur.live)
    RETURNING t.value, cur.live AND cur.kind = 's' AS live
)
SELECT (SELECT value FROM d), coalesce((SELECT live FROM d), false),
       coalesce((SELECT live AND kind <> 's' FROM cur), false)`

// $1 key, $2 ttl, $3 at; neither is PERSIST. A deadline in the past leaves
// an expired row: absent from then on, deleted by the sweeper. GETEX of a
// collection changes nothing: the second column says it is one.
const getExSQL = `
WITH cur AS (
    SELECT kind FROM {t} WHERE key = $1::{k} AND expires_at > now() FOR UPDATE
), upd AS (
    UPDATE {t} AS t
    SET expires_at = coalesce(now() + $2::interval, $3::timestamptz, 'infinity')
    FROM cur
    WHERE t.key = $1::{k} AND cur.kind = 's'
    RETURNING t.value
)
SELECT (SELECT value FROM upd), EXISTS (SELECT FROM cur WHERE kind <> 's')
WHERE EXISTS (SELECT FROM cur)`

// $1 key, $2 delta. INCRBY with Redis's rules: the value must be a decimal
// integer as backends.ParseInt reads it (no sign but minus, no leading
// zeros, at most 20 bytes, within int64), the sum must stay within int64,
// and an absent or expired key counts as 0 with no expiry; a live key
// keeps its deadline.
//
// One upsert, like the counter of "Postgres as a Key-Value Store": concurrent increments queue on
// the row lock, and each adds to the value the previous one committed, so
// none is lost. When the value is not an integer or the sum would overflow,
// the WHERE refuses the update and no row comes back; nothing was written,
// and incrWhySQL tells the caller which error to report. The second column
// is madeSQL's answer, its lookup made only when the row could have been
// taken over: it holds just the increment, with no deadline.
const incrSQL = `
INSERT INTO {t} AS t (key, value, expires_at)
VALUES ($1::{k}, convert_to($2::int8::text, 'UTF8'), 'infinity')
ON CONFLICT (key) DO UPDATE
SET value      = CASE WHEN t.expires_at <= now() THEN EXCLUDED.value
                      ELSE convert_to((encode(t.value, 'escape')::numeric + $2::int8)::text, 'UTF8') END,
    expires_at = CASE WHEN t.expires_at <= now() THEN 'infinity' ELSE t.expires_at END,
    kind       = 's'
WHERE t.expires_at <= now()
   OR t.kind = 's' AND CASE WHEN octet_length(t.value) BETWEEN 1 AND 20
            AND encode(t.value, 'escape') ~ '^(0|-?[1-9][0-9]*)$'
           THEN encode(t.value, 'escape')::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
            AND encode(t.value, 'escape')::numeric + $2::int8 BETWEEN -9223372036854775808 AND 9223372036854775807
      END
RETURNING convert_from(value, 'UTF8')::int8,
          CASE WHEN t.xmax = 0 THEN true
               WHEN t.expires_at <> 'infinity' OR t.value <> convert_to($2::int8::text, 'UTF8') THEN false
               ELSE ` + wasExpiredSQL + ` END`

// $1 key, $2 delta. Why incrSQL refused: 'wrongtype', 'notint',
// 'overflow', or 'ok' (or no row) when the value changed since, and the
// increment may be run again. Reporting the error the value has now is as
// atomic as the refusal: the refused statement changed nothing, so the
// INCRBY takes effect here.
const incrWhySQL = `
SELECT CASE WHEN kind <> 's' THEN 'wrongtype'
            WHEN octet_length(value) BETWEEN 1 AND 20
             AND encode(value, 'escape') ~ '^(0|-?[1-9][0-9]*)$'
            THEN CASE WHEN encode(value, 'escape')::numeric NOT BETWEEN -9223372036854775808 AND 9223372036854775807
                      THEN 'notint'
                      WHEN encode(value, 'escape')::numeric + $2::int8 NOT BETWEEN -9223372036854775808 AND 9223372036854775807
                      THEN 'overflow'
                      ELSE 'ok' END
            ELSE 'notint' END
FROM {t}
WHERE key = $1::{k} AND expires_at > now()`

// $1 key, $2 ttl, $3 at, $4 condition (0 always, 1 NX, 2 XX, 3 GT, 4 LT).
// EXPIRE on a live row. No expiry is 'infinity', which makes GT and LT
// plain comparisons: nothing is later than no expiry, everything sooner.
// A deadline not in the future deletes the row, as Redis deletes the key.
const expireSQL = `
WITH cur AS (
    SELECT expires_at AS old, coalesce(now() + $2::interval, $3::timestamptz) AS new
    FROM {t}
    WHERE key = $1::{k} AND expires_at > now()
    FOR UPDATE
), ok AS (
    SELECT new FROM cur
    WHERE CASE $4::int
          WHEN 1 THEN old = 'infinity'
          WHEN 2 THEN old <> 'infinity'
          WHEN 3 THEN new > old
          WHEN 4 THEN new < old
          ELSE true END
), del AS (
    DELETE FROM {t} AS t USING ok
    WHERE t.key = $1::{k} AND ok.new <= now()
    RETURNING true
), upd AS (
    UPDATE {t} AS t SET expires_at = ok.new FROM ok
    WHERE t.key = $1::{k} AND ok.new > now()
    RETURNING true
)
SELECT EXISTS (SELECT FROM del) OR EXISTS (SELECT FROM upd)`

// $1 key. PERSIST: only a live row that has a deadline.
const persistSQL = `
UPDATE {t} SET expires_at = 'infinity'
WHERE key = $1::{k} AND expires_at > now() AND expires_at < 'infinity'
RETURNING true`

// $1 key. Remaining microseconds by the database's clock; -1 for none.
const ttlSQL = `
SELECT CASE WHEN expires_at = 'infinity' THEN -1
            ELSE floor(extract(epoch FROM expires_at - now()) * 1000000)::int8 END
FROM {t}
WHERE key = $1::{k} AND expires_at > now()`

// The batched sweep of "Postgres as a Key-Value Store": small batches, so no statement holds its
// row locks for long. With no index on expires_at the inner query reads
// the table; for a table that fits in memory that is cheap, and it is the
// price of HOT updates. expired is exactly the rows deleted: a row written
// since the inner query read it (a SET that took over the expired row) is
// checked again, and kept. The statements add a query of expired (and,
// for KV.LogExpiries, one more WITH).
const sweepSQL = `
WITH expired AS (
    DELETE FROM {t}
    WHERE ctid IN (
        SELECT ctid FROM {t}
        WHERE expires_at <= now()
        LIMIT 5000
    ) AND expires_at <= now()
    RETURNING key
)`

// How long until the next row expires, in microseconds by the database's
// clock (not above 0 for a row expired already: one that expired since
// the sweep's DELETE, or that the sweep left); NULL when none will. It
// reads the table as the sweep does, or an index on expires_at if the
// table has one.
const nextExpirySQL = `
SELECT floor(extract(epoch FROM min(expires_at) - now()) * 1000000)::int8
FROM {t}
WHERE expires_at < 'infinity'`

// sweepBatch is the LIMIT of sweepSQL: a batch this full means there may
// be more to delete.
const sweepBatch = 5000

// $1 key. The live row of a read-modify-write, locked until the
// transaction ends, with its remaining microseconds (-1 for none) and
// its kind.
const lockSQL = `
SELECT value,
       CASE WHEN expires_at = 'infinity' THEN -1
            ELSE floor(extract(epoch FROM expires_at - now()) * 1000000)::int8 END,
       kind
FROM {t}
WHERE key = $1::{k} AND expires_at > now()
FOR UPDATE`
