-- pgcache_fence 1.0 -> 1.1: no SQL changes. The 1.1 build fills the fence
-- log's at column (the time a row was logged), and finds the log's columns
-- by name; the version tells pgcache that the build installed on the
-- server does (coherence/attach.go adds the column only then).
\echo Use "ALTER EXTENSION pgcache_fence UPDATE" to load this file. \quit
