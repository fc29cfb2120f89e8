package bench

import (
	"github.com/pgcache/pgcache/bench/keys"
	"github.com/pgcache/pgcache/bench/payload"
)

// service is the server an engine's route stores in.
type service uint8

const (
	svcMemory service = iota
	svcValkey
	svcPostgres
)

// Engine is one storage paradigm of the published comparison (plus ours), served by one
// pgcache route. The bench drives the route through pgcache's fronts, never
// the store directly.
type Engine struct {
	Name    string
	Storage string    // what it is, for the report
	KeyKind keys.Kind // the column of the keys file it reads
	Route   string    // the route's name: HTTP /{Route}/get?id=K
	Prefix  string    // the route's RESP prefix: GET {Prefix}K

	service service
	// table is a table engine's table (rows served by primary key, SET
	// upserts a JSON object); nil for kv engines.
	table *rowTable
	// kvTable is the kv table a postgres kv engine owns: dropped before each
	// run, so every SET phase inserts into an empty table.
	kvTable string
	// route are the route's options beyond name, prefix and backend.
	route map[string]any
	// l1 is set for the engine that needs the route option `l1`, which a
	// pgcache may not accept yet (then the engine is unavailable).
	l1 bool
}

// L1 size and lifetime of the tiered engine. Fences keep entries correct;
// the TTL makes the tier refill now and then, as a sidecar's would.
//
// A SET does not fill the L1 (a write fences its key), so the tier serves
// a key from memory from its second GET on: its GET phase measures the L1
// once the warmup (medium, long, or --warmup) has read every key, and
// mostly PostgreSQL in a quick run, whose 5 s read each key about once.
const (
	tieredL1Bytes = "256MiB"
	tieredL1TTL   = "60s"
)

// engines in the order they run, the order of the published comparison and then ours.
var engines = []*Engine{
	{
		Name: "memory", Storage: "otter in-process cache, vtproto value",
		KeyKind: keys.UUIDv7, Route: "memory", Prefix: "mem:", service: svcMemory,
	},
	{
		Name: "valkey", Storage: "Valkey/Redis kv, vtproto value, ULID key",
		KeyKind: keys.ULID, Route: "valkey", Prefix: "vk:", service: svcValkey,
	},
	{
		Name: "standard-postgresql", Storage: "table public.users_standard: uuid primary key, a column per field",
		KeyKind: keys.UUIDv7, Route: "standard", Prefix: "pgs:", service: svcPostgres,
		table: &usersStandard, route: map[string]any{"source_table": usersStandard.name},
	},
	{
		Name: "optimized-postgresql", Storage: "UNLOGGED kv table, fillfactor 70, uuid key, vtproto bytea",
		KeyKind: keys.UUIDv7, Route: "optimized", Prefix: "pgo:", service: svcPostgres, kvTable: "bench_optimized",
		route: map[string]any{"table": "bench_optimized", "durability": "unlogged", "key_type": "uuid"},
	},
	{
		Name: "postgres-tsid", Storage: "table public.users_tsid: bigint TSID primary key, a column per field",
		KeyKind: keys.TSID, Route: "tsid", Prefix: "pgt:", service: svcPostgres,
		table: &usersTSID, route: map[string]any{"source_table": usersTSID.name},
	},
	{
		Name: "async-postgresql", Storage: "kv table, synchronous_commit=off, uuid key, vtproto bytea",
		KeyKind: keys.UUIDv7, Route: "async", Prefix: "pga:", service: svcPostgres, kvTable: "bench_async",
		route: map[string]any{"table": "bench_async", "durability": "async", "key_type": "uuid"},
	},
	{
		Name: "tiered-postgresql", Storage: "optimized-postgresql behind a coherent L1 (" + tieredL1Bytes + ", ttl " + tieredL1TTL + ")",
		KeyKind: keys.UUIDv7, Route: "tiered", Prefix: "pgl1:", service: svcPostgres, kvTable: "bench_tiered",
		route: map[string]any{"table": "bench_tiered", "durability": "unlogged", "key_type": "uuid",
			"l1": map[string]any{"max_bytes": tieredL1Bytes, "ttl": tieredL1TTL}},
		l1: true,
	},
}

// EngineNames lists the engines in run order.
func EngineNames() []string {
	names := make([]string, len(engines))
	for i, e := range engines {
		names[i] = e.Name
	}
	return names
}

func engineByName(name string) *Engine {
	for _, e := range engines {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// value is the SET value of key i: a JSON row for table engines, vtproto
// bytes for the others.
func (e *Engine) value(i int, key string) []byte {
	if e.table != nil {
		return payload.JSON(i, key)
	}
	return payload.Proto(i, key)
}

// check verifies a value read back.
func (e *Engine) check(b []byte, i int, key string) error {
	if e.table != nil {
		return payload.CheckJSON(b, i, key)
	}
	return payload.CheckProto(b, i, key)
}
