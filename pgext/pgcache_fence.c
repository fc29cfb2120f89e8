/*
 * pgcache_fence: the fence trigger of pgcache, in C.
 *
 * pgcache's L1 caches rows of PostgreSQL tables; a row trigger on each
 * cached table logs the keys every write touches into pgcache.fence_log,
 * and pgcache's relay publishes them as invalidation fences
 * (docs/architecture.md, "Fences"). The trigger pgcache installs where
 * this extension is not available is PL/pgSQL; this is the same trigger
 * without the PL/pgSQL interpreter and the INSERT's executor: it forms the
 * log row itself and appends it to the heap. On pgbench UPDATEs that is the
 * difference between a fifth and a twentieth of the writers' throughput.
 *
 * The log row is what the PL/pgSQL trigger writes, byte for byte:
 *   (tbl, jsonb_build_array(NEW key))          for an INSERT,
 *   (tbl, jsonb_build_array(NEW key, OLD key)) for an UPDATE,
 *   (tbl, jsonb_build_array(OLD key))          for a DELETE,
 * where a key of one column is its value and a key of several columns is
 * jsonb_build_array of them. The JSON comes from PostgreSQL's own
 * jsonb_build_array, called with the key columns' types, so every type
 * renders as it does in SQL.
 *
 * Use: AFTER INSERT OR UPDATE OR DELETE ... FOR EACH ROW EXECUTE FUNCTION
 * pgcache.fence_row('schema.table', 'keycol1' [, 'keycol2' ...]).
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(pgcache_fence_row);

/*
 * What a trigger needs for every row. It is built once per trigger and
 * backend, kept in CacheMemoryContext and checked on every call against
 * the trigger (its arguments may be replaced by CREATE OR REPLACE TRIGGER)
 * and the table (a key column's type may change): a single-row UPDATE
 * would otherwise pay for building it again, which cost more than the
 * rest of the function.
 */
typedef struct FenceState
{
	Oid			tgoid;			/* hash key: the trigger */
	bool		valid;
	Oid			relid;			/* the table the trigger is on */
	int			nargs;
	char	  **args;			/* the trigger's arguments, as built from */
	Datum		tbl;			/* the table's name in fences, as text */
	int			nkeys;
	AttrNumber *attnums;		/* the key columns */
	Oid		   *types;			/* and their types */
	FmgrInfo	inner;			/* jsonb_build_array(key columns...), composite keys */
	FmgrInfo	outer1;			/* jsonb_build_array(key) */
	FmgrInfo	outer2;			/* jsonb_build_array(key, key) */
} FenceState;

static HTAB *states;

/*
 * logid is pgcache.fence_log, looked up when first needed and again after
 * any invalidation of it (a DROP, or a whole relcache reset).
 */
static Oid	logid = InvalidOid;

static void
relcache_changed(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == logid)
		logid = InvalidOid;
}

static Oid
fence_log(void)
{
	if (!OidIsValid(logid))
	{
		Oid			id = get_relname_relid("fence_log", get_namespace_oid("pgcache", false));

		if (!OidIsValid(id))
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
							errmsg("pgcache.fence_log does not exist"),
							errhint("Run pgcache attach again.")));
		logid = id;
	}
	return logid;
}

/*
 * build_array_fn prepares a call of jsonb_build_array over n arguments of
 * the given types. The function reads its argument types from the call's
 * expression, so the FmgrInfo carries one made of typed NULL constants.
 */
static void
build_array_fn(FmgrInfo *f, int n, const Oid *types, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	List	   *args = NIL;

	for (int i = 0; i < n; i++)
		args = lappend(args, makeNullConst(types[i], -1, InvalidOid));
	fmgr_info_cxt(F_JSONB_BUILD_ARRAY_ANY, f, cxt);
	f->fn_expr = (Node *) makeFuncExpr(F_JSONB_BUILD_ARRAY_ANY, JSONBOID, args,
									   InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	MemoryContextSwitchTo(old);
}

/* still_valid: st was built from this trigger, on this table as it is. */
static bool
still_valid(FenceState *st, Trigger *tg, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (!st->valid || st->relid != RelationGetRelid(rel) || st->nargs != tg->tgnargs)
		return false;
	for (int i = 0; i < st->nargs; i++)
		if (strcmp(st->args[i], tg->tgargs[i]) != 0)
			return false;
	for (int i = 0; i < st->nkeys; i++)
	{
		Form_pg_attribute a;

		if (st->attnums[i] > desc->natts)
			return false;
		a = TupleDescAttr(desc, st->attnums[i] - 1);
		if (a->attisdropped || a->atttypid != st->types[i])
			return false;
	}
	return true;
}

static FenceState *
fence_state(TriggerData *td)
{
	Trigger    *tg = td->tg_trigger;
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	FenceState *st;
	MemoryContext cxt;
	Oid			elem[2];
	bool		found;

	if (states == NULL)
	{
		HASHCTL		ctl = {.keysize = sizeof(Oid), .entrysize = sizeof(FenceState), .hcxt = CacheMemoryContext};

		states = hash_create("pgcache fence triggers", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		CacheRegisterRelcacheCallback(relcache_changed, (Datum) 0);
	}
	st = hash_search(states, &tg->tgoid, HASH_ENTER, &found);
	if (found && still_valid(st, tg, td->tg_relation))
		return st;
	if (found && st->valid)
	{
		/* Built for an older version of the trigger or table: the
		 * context of its FmgrInfos goes with it. */
		MemoryContextDelete(GetMemoryChunkContext(st->args));
	}
	st->valid = false;
	if (tg->tgnargs < 2)
		elog(ERROR, "pgcache.fence_row: expected the table's name and its key columns as arguments");

	cxt = AllocSetContextCreate(CacheMemoryContext, "pgcache fence trigger", ALLOCSET_SMALL_SIZES);
	st->relid = RelationGetRelid(td->tg_relation);
	st->nargs = tg->tgnargs;
	st->args = MemoryContextAlloc(cxt, st->nargs * sizeof(char *));
	for (int i = 0; i < st->nargs; i++)
		st->args[i] = MemoryContextStrdup(cxt, tg->tgargs[i]);
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		st->tbl = PointerGetDatum(cstring_to_text(tg->tgargs[0]));
		MemoryContextSwitchTo(old);
	}
	st->nkeys = tg->tgnargs - 1;
	st->attnums = MemoryContextAlloc(cxt, st->nkeys * sizeof(AttrNumber));
	st->types = MemoryContextAlloc(cxt, st->nkeys * sizeof(Oid));
	for (int i = 0; i < st->nkeys; i++)
	{
		int			a = SPI_fnumber(desc, tg->tgargs[i + 1]);

		if (a <= 0)
		{
			MemoryContextDelete(cxt);
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
							errmsg("pgcache.fence_row: column \"%s\" of %s does not exist",
								   tg->tgargs[i + 1], tg->tgargs[0]),
							errhint("Run pgcache attach again.")));
		}
		st->attnums[i] = a;
		st->types[i] = TupleDescAttr(desc, a - 1)->atttypid;
	}
	if (st->nkeys > 1)
		build_array_fn(&st->inner, st->nkeys, st->types, cxt);
	elem[0] = elem[1] = st->nkeys > 1 ? JSONBOID : st->types[0];
	build_array_fn(&st->outer1, 1, elem, cxt);
	build_array_fn(&st->outer2, 2, elem, cxt);
	st->valid = true;
	return st;
}

/* key is a row's key: its one column, or jsonb_build_array of its columns. */
static Datum
key(FenceState *st, HeapTuple row, TupleDesc desc)
{
	bool		isnull;

	if (st->nkeys == 1)
		return heap_getattr(row, st->attnums[0], desc, &isnull);
	{
		LOCAL_FCINFO(call, FUNC_MAX_ARGS);
		Datum		result;

		InitFunctionCallInfoData(*call, &st->inner, st->nkeys, InvalidOid, NULL, NULL);
		for (int i = 0; i < st->nkeys; i++)
		{
			call->args[i].value = heap_getattr(row, st->attnums[i], desc, &isnull);
			call->args[i].isnull = isnull;
		}
		result = FunctionCallInvoke(call);
		return result;
	}
}

Datum
pgcache_fence_row(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	FenceState *st;
	Datum		keys[2];
	int			n = 0;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	Relation	log;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "pgcache.fence_row: not called as a trigger");
	if (!TRIGGER_FIRED_FOR_ROW(td->tg_event) || !TRIGGER_FIRED_AFTER(td->tg_event))
		elog(ERROR, "pgcache.fence_row: must be an AFTER ... FOR EACH ROW trigger");

	st = fence_state(td);
	desc = RelationGetDescr(td->tg_relation);
	if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		keys[n++] = key(st, td->tg_trigtuple, desc);
	else if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		keys[n++] = key(st, td->tg_newtuple, desc);
		keys[n++] = key(st, td->tg_trigtuple, desc);
	}
	else if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
		keys[n++] = key(st, td->tg_trigtuple, desc);
	else
		elog(ERROR, "pgcache.fence_row: fires on INSERT, UPDATE and DELETE only");

	values[0] = st->tbl;
	values[1] = n == 1 ? FunctionCall1(&st->outer1, keys[0])
		: FunctionCall2(&st->outer2, keys[0], keys[1]);

	log = table_open(fence_log(), RowExclusiveLock);
	simple_heap_insert(log, heap_form_tuple(RelationGetDescr(log), values, nulls));
	table_close(log, NoLock);
	return PointerGetDatum(NULL);
}
