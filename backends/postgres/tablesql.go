package postgres

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// buildTableShape writes a table route's statements from its catalog
// description.
//
// Key values travel as text and are cast to the key columns' types by the
// statement ($1::text::integer), so every key type works the same way, a
// value that does not parse is refused by the cast (a key error), and the
// comparison is on the column's own type, so the primary key index serves
// it. Several keys travel as one text array per key column, unnested WITH
// ORDINALITY so each row comes back with the position of its key.
//
// Writes read the row with json_populate_record(null::table, $1), which
// maps the object's fields to columns by name and casts each value to the
// column's type. Generated columns are never written; an identity column
// GENERATED ALWAYS is written with OVERRIDING SYSTEM VALUE, since the key
// names the row.
func buildTableShape(rel relation) *tableShape {
	t := rel.qualified()
	sh := &tableShape{rel: rel}
	var pkNames, rowKey, params, arrays, aliases, unnested []string
	for i, ci := range rel.pk {
		c := rel.columns[ci]
		sh.pk = append(sh.pk, c)
		name := ident(c.name)
		pkNames = append(pkNames, name)
		rowKey = append(rowKey, "t."+name)
		params = append(params, fmt.Sprintf("$%d::text::%s", i+1, c.baseType))
		arrays = append(arrays, fmt.Sprintf("$%d::text[]", i+1))
		aliases = append(aliases, fmt.Sprintf("k%d", i+1))
		unnested = append(unnested, fmt.Sprintf("k.k%d::%s", i+1, c.baseType))
	}
	tKey := "(" + strings.Join(rowKey, ", ") + ")"
	byParams := tKey + " = (" + strings.Join(params, ", ") + ")"
	keys := fmt.Sprintf("unnest(%s) WITH ORDINALITY AS k(%s, i)", strings.Join(arrays, ", "), strings.Join(aliases, ", "))
	byKeys := tKey + " = (" + strings.Join(unnested, ", ") + ")"

	sh.get = fmt.Sprintf(`SELECT row_to_json(t)::text FROM %s AS t WHERE %s`, t, byParams)
	sh.getDel = fmt.Sprintf(`DELETE FROM %s AS t WHERE %s RETURNING row_to_json(t)::text`, t, byParams)
	sh.mget = fmt.Sprintf(`SELECT k.i, row_to_json(t)::text FROM %s JOIN %s AS t ON %s`, keys, t, byKeys)
	sh.lockMany = sh.mget + ` ORDER BY k.i FOR UPDATE OF t`
	sh.exists = fmt.Sprintf(`SELECT count(*) FROM %s JOIN %s AS t ON %s`, keys, t, byKeys)
	sh.del = fmt.Sprintf(`WITH d AS (DELETE FROM %s AS t USING %s WHERE %s RETURNING 1) SELECT count(*) FROM d`, t, keys, byKeys)

	var cols, sets, rSets, rKey []string
	overriding := ""
	for _, c := range rel.columns {
		if c.generated {
			continue
		}
		name := ident(c.name)
		cols = append(cols, name)
		if c.identity == 'a' {
			overriding = " OVERRIDING SYSTEM VALUE"
		}
		if c.pkPos == 0 {
			sets = append(sets, name+" = EXCLUDED."+name)
			rSets = append(rSets, name+" = r."+name)
		}
	}
	for _, name := range pkNames {
		rKey = append(rKey, "r."+name)
	}
	if len(rSets) == 0 { // every column is in the key: an update rewrites the key as it is
		rSets = []string{pkNames[0] + " = r." + pkNames[0]}
	}
	record := fmt.Sprintf("json_populate_record(null::%s, $1::json)", t)
	insert := fmt.Sprintf(`INSERT INTO %s AS t (%s)%s SELECT %s FROM %s ON CONFLICT (%s)`,
		t, strings.Join(cols, ", "), overriding, strings.Join(cols, ", "), record, strings.Join(pkNames, ", "))
	if len(sets) == 0 {
		sh.upsert = insert + " DO NOTHING"
	} else {
		sh.upsert = insert + " DO UPDATE SET " + strings.Join(sets, ", ")
	}
	sh.insert = insert + " DO NOTHING RETURNING true"
	sh.update = fmt.Sprintf(`UPDATE %s AS t SET %s FROM %s AS r WHERE %s = (%s) RETURNING true`,
		t, strings.Join(rSets, ", "), record, tKey, strings.Join(rKey, ", "))
	return sh
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }
