-- pgcache_fence 1.0: the row trigger function pgcache attach uses when
-- this extension is installed (pgcache_fence.c).
\echo Use "CREATE EXTENSION pgcache_fence" to load this file. \quit

CREATE FUNCTION fence_row() RETURNS trigger
AS 'MODULE_PATHNAME', 'pgcache_fence_row'
LANGUAGE C;
