// Package bench is `pgcache bench`: the engine comparison of "PostgreSQL as a
// High-Performance Cache" (the published comparison, docs/bench.md),
// run on the user's machine through a real pgcache.
//
// # Engines
//
// Each engine is one pgcache route; the bench only ever talks to pgcache's
// HTTP and RESP fronts, never to the store behind it.
//
//	engine                route (HTTP)  RESP prefix  keys    store
//	memory                memory        mem:         uuidv7  otter, vtproto value
//	valkey                valkey        vk:          ulid    Valkey/Redis, vtproto value
//	standard-postgresql   standard      pgs:         uuidv7  public.users_standard: uuid key, a column per field, N background rows
//	optimized-postgresql  optimized     pgo:         uuidv7  kv table, UNLOGGED, fillfactor 70, key_type uuid, vtproto bytea
//	postgres-tsid         tsid          pgt:         tsid    public.users_tsid: bigint TSID key, N background rows
//	async-postgresql      async         pga:         uuidv7  kv table, durability async (synchronous_commit=off), key_type uuid
//	tiered-postgresql     tiered        pgl1:        uuidv7  optimized-postgresql behind the coherent L1
//
// The kv engines store UserData (bench/proto) encoded with vtprotobuf;
// the table engines are sent the same fields as a JSON object, which the
// route upserts, and answer the row as JSON. optimized-postgresql uses
// key_type uuid (16-byte keys, as the seed's binary UUIDv7) rather than
// text ULIDs.
//
// # A run
//
// For each engine and protocol the bench starts a pgcache of its own with
// that engine's route only, as the published comparison started its server per engine: no
// state, pool or garbage of one engine weighs on the next, and an engine
// this pgcache cannot run (a route option it refuses) is reported as
// unavailable while the others run. Before pgcache starts, the engine's
// data is reset: a kv table is dropped (the route makes it again), a row
// table loses the rows of earlier runs (background rows are kept, see
// tables.go), Valkey keys are deleted through pgcache.
//
// Then: SET every key once (vegeta at rate 0 with 250 workers, or the RESP
// driver), a warmup of GETs that is not measured (30 s for medium and long),
// GETs for the run's duration (5 s, 300 s, 600 s), and a sample of values
// read back and decoded. Vegeta's text report is printed per phase; at the
// end the summary tables, results.jsonl and report.html. For the tiered
// engine the GET phase also records the share of reads its L1 served,
// from pgcache's INFO before and after: a SET does not fill the L1, so
// without a warmup that share is what tells an L1 from PostgreSQL.
//
// # Where pgcache runs
//
// By default pgcache runs as a child process, `pgcache run` of the same
// binary, with GOMAXPROCS=min(4, CPUs) and GOMEMLIMIT=min(10GiB, half the
// memory): the published comparison's server caps, and the load generator does not share
// pgcache's scheduler or garbage collector. In-process (--server inproc,
// and the tests) is simpler but measures both together; the report says
// which was used.
//
// # Servers and caps
//
// Without --pg-dsn and --valkey-addr the bench starts throwaway PostgreSQL
// and Valkey/Redis (internal/testenv, as the postgres user when root) and
// stops them at the end, Ctrl-C included. It gives PostgreSQL the published comparison's
// tuning (shared_buffers, effective_cache_size, work_mem, WAL settings;
// durability stays on) and Valkey its cache settings, and, where systemd
// runs, puts each in a scope of CPUQuota=200% and MemoryMax=4G. Existing
// servers are left as they are. What was applied is in every record.
package bench
