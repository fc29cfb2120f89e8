/*
 * pgcache_fence: the fence trigger of pgcache, in C.
 *
 * pgcache's L1 caches rows of PostgreSQL tables; a row trigger on each
 * cached table logs the keys every write touches into pgcache.fence_log,
 * and pgcache's relay publishes them as invalidation fences
 * (docs/architecture.md, "Fences"). Where this extension is not installed,
 * pgcache attach installs PL/pgSQL functions instead; this is the same
 * trigger without the PL/pgSQL interpreter and the INSERT's executor: it
 * builds the log row itself and appends it to the heap.
 *
 * The log row is the PL/pgSQL trigger's:
 *   (tbl, [NEW key])          for an INSERT,
 *   (tbl, [NEW key, OLD key]) for an UPDATE,
 *   (tbl, [OLD key])          for a DELETE,
 * where a key of one column is its to_jsonb() and a key of several columns
 * the JSON array of theirs. One difference: an UPDATE that leaves the key
 * as it was, bit for bit, logs it once. (The PL/pgSQL trigger cannot tell
 * as cheaply: SQL equality is not enough, numeric 1.0 = 1.00 renders two
 * ways.)
 *
 * The log's columns are found by name, so one build serves every log
 * pgcache has made: tbl and keys, and since version 1.1 of this extension
 * at, the time the row was logged (the clock_timestamp() default of the
 * PL/pgSQL trigger's INSERT, which a heap append does not apply). A column
 * it does not know is left NULL. Version 1.0 formed a row of two values
 * whatever the log's columns, so pgcache adds at only where no 1.0 build
 * is installed (coherence/attach.go).
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
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"

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
	MemoryContext cxt;			/* holds what follows */
	Oid			relid;			/* the table the trigger is on */
	int			nargs;
	char	  **args;			/* the trigger's arguments, as built from */
	Datum		tbl;			/* the table's name in fences, as text */
	int			nkeys;
	AttrNumber *attnums;		/* the key columns, */
	Oid		   *types;			/* their types, */
	bool	   *byval;			/* and how their values are stored */
	int16	   *len;
	FmgrInfo   *to_jsonb;		/* to_jsonb() of each key column's type */
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
 * prepare_to_jsonb sets f up to call to_jsonb(anyelement) on values of
 * type typid. The function reads its argument's type from the call's
 * expression, so the FmgrInfo carries one: to_jsonb(NULL::typid).
 */
static void
prepare_to_jsonb(FmgrInfo *f, Oid typid, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);

	fmgr_info_cxt(F_TO_JSONB, f, cxt);
	f->fn_expr = (Node *) makeFuncExpr(F_TO_JSONB, JSONBOID,
									   list_make1(makeNullConst(typid, -1, InvalidOid)),
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
	bool		found;

	if (states == NULL)
	{
		HASHCTL		ctl = {.keysize = sizeof(Oid), .entrysize = sizeof(FenceState), .hcxt = CacheMemoryContext};

		/* The callback first: logid is not cached before it is in place. */
		CacheRegisterRelcacheCallback(relcache_changed, (Datum) 0);
		states = hash_create("pgcache fence triggers", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	st = hash_search(states, &tg->tgoid, HASH_ENTER, &found);
	if (found && still_valid(st, tg, td->tg_relation))
		return st;
	if (found && st->cxt != NULL)
		MemoryContextDelete(st->cxt);	/* built for an older trigger or table */
	st->valid = false;
	st->cxt = NULL;
	if (tg->tgnargs < 2)
		elog(ERROR, "pgcache.fence_row: expected the table's name and its key columns as arguments");

	cxt = AllocSetContextCreate(CacheMemoryContext, "pgcache fence trigger", ALLOCSET_SMALL_SIZES);
	st->cxt = cxt;
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
	st->byval = MemoryContextAlloc(cxt, st->nkeys * sizeof(bool));
	st->len = MemoryContextAlloc(cxt, st->nkeys * sizeof(int16));
	st->to_jsonb = MemoryContextAllocZero(cxt, st->nkeys * sizeof(FmgrInfo));
	for (int i = 0; i < st->nkeys; i++)
	{
		int			a = SPI_fnumber(desc, tg->tgargs[i + 1]);
		Form_pg_attribute att;

		if (a <= 0)
			ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
							errmsg("pgcache.fence_row: column \"%s\" of %s does not exist",
								   tg->tgargs[i + 1], tg->tgargs[0]),
							errhint("Run pgcache attach again.")));
		att = TupleDescAttr(desc, a - 1);
		st->attnums[i] = a;
		st->types[i] = att->atttypid;
		st->byval[i] = att->attbyval;
		st->len[i] = att->attlen;
		prepare_to_jsonb(&st->to_jsonb[i], att->atttypid, cxt);
	}
	st->valid = true;
	return st;
}

/*
 * push_column appends a key column's value to the array being built, as
 * to_jsonb renders it: integers and text directly (to_jsonb goes through
 * their text form and back), every other type through to_jsonb itself.
 */
static void
push_column(JsonbParseState **ps, FenceState *st, int i, Datum d)
{
	JsonbValue	v;

	switch (st->types[i])
	{
		case INT2OID:
			v.type = jbvNumeric;
			v.val.numeric = int64_to_numeric(DatumGetInt16(d));
			break;
		case INT4OID:
			v.type = jbvNumeric;
			v.val.numeric = int64_to_numeric(DatumGetInt32(d));
			break;
		case INT8OID:
			v.type = jbvNumeric;
			v.val.numeric = int64_to_numeric(DatumGetInt64(d));
			break;
		case TEXTOID:
		case VARCHAROID:
			{
				text	   *t = DatumGetTextPP(d);

				v.type = jbvString;
				v.val.string.val = VARDATA_ANY(t);
				v.val.string.len = VARSIZE_ANY_EXHDR(t);
				break;
			}
		default:
			{
				Jsonb	   *j = DatumGetJsonbP(FunctionCall1(&st->to_jsonb[i], d));

				v.type = jbvBinary;
				v.val.binary.data = &j->root;
				v.val.binary.len = VARSIZE(j) - VARHDRSZ;
				break;
			}
	}
	pushJsonbValue(ps, WJB_ELEM, &v);
}

/* push_key appends a row's key: its one column, or the array of them. */
static void
push_key(JsonbParseState **ps, FenceState *st, HeapTuple row, TupleDesc desc)
{
	bool		isnull;

	if (st->nkeys > 1)
		pushJsonbValue(ps, WJB_BEGIN_ARRAY, NULL);
	for (int i = 0; i < st->nkeys; i++)
	{
		Datum		d = heap_getattr(row, st->attnums[i], desc, &isnull);

		if (isnull)
		{
			JsonbValue	v = {.type = jbvNull};

			pushJsonbValue(ps, WJB_ELEM, &v);
		}
		else
			push_column(ps, st, i, d);
	}
	if (st->nkeys > 1)
		pushJsonbValue(ps, WJB_END_ARRAY, NULL);
}

/* same_key: the two rows' keys are equal bit for bit. */
static bool
same_key(FenceState *st, HeapTuple a, HeapTuple b, TupleDesc desc)
{
	for (int i = 0; i < st->nkeys; i++)
	{
		bool		anull,
					bnull;
		Datum		ad = heap_getattr(a, st->attnums[i], desc, &anull);
		Datum		bd = heap_getattr(b, st->attnums[i], desc, &bnull);

		if (anull != bnull || (!anull && !datumIsEqual(ad, bd, st->byval[i], st->len[i])))
			return false;
	}
	return true;
}

Datum
pgcache_fence_row(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	FenceState *st;
	JsonbParseState *ps = NULL;
	JsonbValue *keys;
	Datum		keysjson;
	TupleDesc	logdesc;
	Datum	   *values;
	bool	   *nulls;
	Relation	log;

	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "pgcache.fence_row: not called as a trigger");
	if (!TRIGGER_FIRED_FOR_ROW(td->tg_event) || !TRIGGER_FIRED_AFTER(td->tg_event))
		elog(ERROR, "pgcache.fence_row: must be an AFTER ... FOR EACH ROW trigger");

	st = fence_state(td);
	desc = RelationGetDescr(td->tg_relation);
	pushJsonbValue(&ps, WJB_BEGIN_ARRAY, NULL);
	if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		push_key(&ps, st, td->tg_trigtuple, desc);
	else if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		push_key(&ps, st, td->tg_newtuple, desc);
		if (!same_key(st, td->tg_newtuple, td->tg_trigtuple, desc))
			push_key(&ps, st, td->tg_trigtuple, desc);
	}
	else if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
		push_key(&ps, st, td->tg_trigtuple, desc);
	else
		elog(ERROR, "pgcache.fence_row: fires on INSERT, UPDATE and DELETE only");
	keys = pushJsonbValue(&ps, WJB_END_ARRAY, NULL);

	keysjson = JsonbPGetDatum(JsonbValueToJsonb(keys));
	log = table_open(fence_log(), RowExclusiveLock);
	/* relhasindex may outlive the index (an aborted CREATE INDEX leaves
	 * it set until a vacuum): it only says whether to look. */
	if (log->rd_rel->relhasindex && RelationGetIndexList(log) != NIL)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("pgcache.fence_log has an index"),
						errdetail("pgcache.fence_row appends to the log's heap alone, which would leave the index behind."),
						errhint("Drop the index: the relay reads the whole log, and writers should not pay for one.")));
	logdesc = RelationGetDescr(log);
	values = palloc0(logdesc->natts * sizeof(Datum));
	nulls = palloc(logdesc->natts * sizeof(bool));
	for (int i = 0; i < logdesc->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(logdesc, i);
		const char *name = NameStr(a->attname);

		nulls[i] = false;
		if (a->attisdropped)
			nulls[i] = true;
		else if (strcmp(name, "tbl") == 0)
			values[i] = st->tbl;
		else if (strcmp(name, "keys") == 0)
			values[i] = keysjson;
		else if (strcmp(name, "at") == 0 && a->atttypid == TIMESTAMPTZOID)
			values[i] = TimestampTzGetDatum(GetCurrentTimestamp());
		else
			nulls[i] = true;
	}
	simple_heap_insert(log, heap_form_tuple(logdesc, values, nulls));
	table_close(log, NoLock);
	return PointerGetDatum(NULL);
}
