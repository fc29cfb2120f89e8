package postgres

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
)

// Collections in a kv table. A key's row says what it holds (kind) and
// until when (expires_at), as for a string; a collection's members are rows
// of the table's items table, one per member:
//
//	key     the collection's key, of the kv table's key type
//	member  a hash's field, a set's or sorted set's member; a list
//	        element's position, 8 bytes big-endian, with the sign bit
//	        flipped so that bytea order is position order
//	score   a sorted set member's score (NULL otherwise)
//	value   a hash field's value, a list element (NULL otherwise)
//
// with (key, member) the primary key and a partial index on (key, score,
// member) for sorted sets: ZRANGEBYSCORE of a million-member set reads
// only its range. A collection's row exists exactly while it has members:
// the command that removes the last one deletes the row. A list's
// positions are contiguous (a change is at an end, or rewrites the list
// from 0), so its length and its i-th element are read from its ends
// (nativelist.go).
//
// Items never outlive their collection: a trigger on the kv table deletes
// a collection's items when its row is deleted (DEL, the sweeper, an
// EXPIRE in the past, a flush, plain SQL), or becomes a string or another
// type, or is taken over after it expired (SET, or HSET of an expired
// hash). The trigger's WHEN is false for a string's row, so strings pay
// nothing for it.

// The kv table's kinds: what a key holds.
const (
	kindString byte = 's'
	kindHash   byte = 'h'
	kindList   byte = 'l'
	kindSet    byte = 't'
	kindZSet   byte = 'z'
)

// kindOf is the kind of a type of collection.
func kindOf(t backends.Type) byte {
	switch t {
	case backends.TypeHash:
		return kindHash
	case backends.TypeList:
		return kindList
	case backends.TypeSet:
		return kindSet
	case backends.TypeZSet:
		return kindZSet
	}
	return kindString
}

// typeOf is the type a kind names.
func typeOf(kind byte) backends.Type {
	switch kind {
	case kindHash:
		return backends.TypeHash
	case kindList:
		return backends.TypeList
	case kindSet:
		return backends.TypeSet
	case kindZSet:
		return backends.TypeZSet
	}
	return backends.TypeString
}

// itemsTable is the items table of kv table t: <name>_items beside it, or,
// for a name too long for PostgreSQL's 63 bytes, its start and a hash of
// the whole.
func itemsTable(t tableName) tableName {
	return tableName{schema: t.schema, name: derivedName(t, "_items")}
}

// derivedName is t's name with suffix, shortened (with a hash of the
// whole) to fit in an identifier.
func derivedName(t tableName, suffix string) string {
	const maxIdent = 63
	if len(t.name)+len(suffix) <= maxIdent {
		return t.name + suffix
	}
	h := fnv.New32a()
	h.Write([]byte(t.name))
	short := fmt.Sprintf("_%08x", h.Sum32())
	return t.name[:maxIdent-len(short)-len(suffix)] + short + suffix
}

// createItemsSQL: %s UNLOGGED or "", the items table, the key's column type.
const createItemsSQL = `
CREATE %sTABLE IF NOT EXISTS %s (
    key    %s    NOT NULL,
    member bytea NOT NULL,
    score  float8,
    value  bytea,
    PRIMARY KEY (key, member)
) WITH (
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0.01
)`

// createScoreIndexSQL: the index, the items table.
const createScoreIndexSQL = `CREATE INDEX IF NOT EXISTS %s ON %s (key, score, member) WHERE score IS NOT NULL`

// purgeFunctionSQL: the function, the items table. It runs with the
// writer's rights: deleting a key of the kv table needs deleting its items.
const purgeFunctionSQL = `
CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  DELETE FROM %s WHERE key = OLD.key;
  RETURN NULL;
END $fn$`

// The purge triggers, by name; each is created once (PostgreSQL 13 has no
// CREATE OR REPLACE TRIGGER). %s: the trigger, the kv table, the function.
var purgeTriggers = []struct{ name, ddl string }{
	{"pgcache_items_purge_del", `CREATE TRIGGER %s AFTER DELETE ON %s FOR EACH ROW
        WHEN (OLD.kind <> 's') EXECUTE FUNCTION %s()`},
	{"pgcache_items_purge_upd", `CREATE TRIGGER %s AFTER UPDATE ON %s FOR EACH ROW
        WHEN (OLD.kind <> 's' AND (NEW.kind <> OLD.kind OR OLD.expires_at <= now())) EXECUTE FUNCTION %s()`},
}

// purgeFunction names t's purge function, beside t.
func purgeFunction(t tableName) string {
	return pgx.Identifier{t.schema, derivedName(t, "_purge_items")}.Sanitize()
}

// createItems makes t's items table, its score index, and the purge
// triggers, in tx (which holds t's create lock).
func createItems(ctx context.Context, tx pgx.Tx, t tableName, k keyType, unlogged string) error {
	items := itemsTable(t)
	stmts := []string{
		fmt.Sprintf(createItemsSQL, unlogged, items.ident(), k.columnDDL),
		fmt.Sprintf(createScoreIndexSQL, pgx.Identifier{derivedName(items, "_score")}.Sanitize(), items.ident()),
		fmt.Sprintf(purgeFunctionSQL, purgeFunction(t), items.ident()),
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	for _, tr := range purgeTriggers {
		var exists bool
		if err := tx.QueryRow(ctx, hasTriggerSQL, t.ident(), tr.name).Scan(&exists); err != nil {
			return err
		}
		if exists {
			continue
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(tr.ddl, pgx.Identifier{tr.name}.Sanitize(), t.ident(), purgeFunction(t))); err != nil {
			return err
		}
	}
	return nil
}

// $1 table, $2 trigger name.
const hasTriggerSQL = `SELECT EXISTS (SELECT FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $2)`

// itemsReady reports whether t's items table and purge triggers are there.
func itemsReady(ctx context.Context, q querier, t tableName) (bool, error) {
	rows, err := q.Query(ctx, itemsReadySQL, itemsTable(t).ident(), t.ident())
	if err != nil {
		return false, err
	}
	ready, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	return ready, err
}

// $1 items table, $2 kv table.
const itemsReadySQL = `
SELECT to_regclass($1) IS NOT NULL
   AND (SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass($2) AND tgname LIKE 'pgcache_items_purge_%') = 2`
