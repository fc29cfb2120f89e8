package backends

// CRUDMark starts every key that names a row of a table route:
// CRUD:<db>.<schema>.<table>:<primary key> (pg_local_cache's spelling). A
// key starting with it belongs to the table route it names or to no route:
// never to a catch-all or another prefix, where it would be stored as an
// unrelated key and read back as nothing.
const CRUDMark = "CRUD:"
