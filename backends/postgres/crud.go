package postgres

import "github.com/pgcache/pgcache/backends"

// CRUDPrefix is the RESP prefix of a table route over sourceTable
// (schema.table) on this driver's database: what server's crudPrefixer
// asks of a driver before it adds a source_table route to the route table.
func (d *Driver) CRUDPrefix(sourceTable string) (string, error) {
	t, err := parseTableName(sourceTable)
	if err != nil || t.schema == "" {
		return "", &backends.SpecError{Field: "source_table", Value: sourceTable, Reason: "must be schema.table"}
	}
	return CRUDPrefix(d.Database(), t.schema, t.name), nil
}
