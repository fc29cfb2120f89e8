package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgcache/pgcache/bench/keys"
)

// rowTable is a table engine's table: the UserData fields as columns,
// keyed by a UUIDv7 (uuid) or a TSID (bigint), holding background rows
// besides the keys the bench writes.
//
// Background rows are made by SQL from their number alone, with
// timestamps from bgEpoch on, one millisecond apart; the bench's keys are
// made now. So every row keyed before bgCutoff is a background row and
// every row after it was written by a bench run: a run deletes the latter
// and keeps the former, which are costly to make (10,000,000 for long).
type rowTable struct {
	name    string // schema.table
	keyType string // uuid | bigint
}

var (
	usersStandard = rowTable{name: "public.users_standard", keyType: "uuid"}
	usersTSID     = rowTable{name: "public.users_tsid", keyType: "bigint"}
)

var (
	bgEpoch  = time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC) // after keys.TSIDEpoch, so TSIDs are positive
	bgCutoff = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
)

// maxBackgroundRows keeps background rows, one per millisecond, before bgCutoff.
const maxBackgroundRows = int64(360 * 24 * time.Hour / time.Millisecond)

// bgBatch is how many background rows one INSERT makes: progress is shown
// and Ctrl-C is honoured between batches.
const bgBatch = 500_000

// columns are the table's columns after the key, as payload.JSON names them.
const columns = `name text NOT NULL, email text NOT NULL, age integer NOT NULL,
	created_at timestamptz NOT NULL, tags text[] NOT NULL, active boolean NOT NULL, score double precision NOT NULL`

// wantColumns is what information_schema says of a table made with columns.
var wantColumns = []string{"id", "name", "email", "age", "created_at", "tags", "active", "score"}

// ident quotes schema.table.
func (t *rowTable) ident() string {
	return pgx.Identifier(strings.Split(t.name, ".")).Sanitize()
}

// cutoff is the first key a bench run can have written, as SQL text.
func (t *rowTable) cutoff() string {
	ms := bgCutoff.UnixMilli()
	if t.keyType == "bigint" {
		return fmt.Sprint(keys.TSIDAt(bgCutoff.Sub(keys.TSIDEpoch).Milliseconds(), 0))
	}
	h := fmt.Sprintf("%012x", ms)
	return h[:8] + "-" + h[8:12] + "-7000-8000-000000000000"
}

// keyExpr makes background row i's key from ts, its milliseconds since
// 1970, and h, an md5 of i: a UUIDv7 (48 bits of time, version 7, 12 bits,
// variant 10, 62 bits) or a TSID (time since the TSID epoch << 22 | i).
func (t *rowTable) keyExpr() string {
	if t.keyType == "bigint" {
		return fmt.Sprintf("((ts - %d) << 22) | (i & 4194303)", keys.TSIDEpoch.UnixMilli())
	}
	return "(lpad(to_hex(ts), 12, '0') || '7' || substr(h, 1, 3) || '8' || substr(h, 4, 15))::uuid"
}

// prepare makes the table hold exactly rows background rows and none of a
// bench run's: it creates and fills it when needed, else deletes the rows of
// earlier runs. A table of that name with other columns is an error, not
// something to drop.
func (t *rowTable) prepare(ctx context.Context, pool *pgxpool.Pool, rows int64, note io.Writer) error {
	if _, err := pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (id %s NOT NULL, %s)`, t.ident(), t.keyType, columns)); err != nil {
		return fmt.Errorf("%s: create: %w", t.name, err)
	}
	if err := t.checkColumns(ctx, pool); err != nil {
		return err
	}
	// A fill stopped halfway leaves too few rows, or all of them and no
	// primary key yet: either way it is done again.
	var have int64
	var keyed bool
	err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %s WHERE id < '%s'),
		EXISTS (SELECT 1 FROM pg_index WHERE indrelid = '%s'::regclass AND indisprimary)`,
		t.ident(), t.cutoff(), t.ident())).Scan(&have, &keyed)
	if err != nil {
		return fmt.Errorf("%s: count: %w", t.name, err)
	}
	if have != rows || !keyed {
		return t.fill(ctx, pool, rows, note)
	}
	return t.reset(ctx, pool)
}

func (t *rowTable) checkColumns(ctx context.Context, pool *pgxpool.Pool) error {
	schema, name, _ := strings.Cut(t.name, ".")
	rows, err := pool.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, schema, name)
	if err != nil {
		return fmt.Errorf("%s: columns: %w", t.name, err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("%s: columns: %w", t.name, err)
	}
	if strings.Join(got, ",") != strings.Join(wantColumns, ",") {
		return fmt.Errorf("%s exists with columns (%s), not the bench's (%s): drop it, or point --pg-dsn at another database",
			t.name, strings.Join(got, ", "), strings.Join(wantColumns, ", "))
	}
	return nil
}

// fill empties the table and makes its background rows. The primary key
// is built after the rows, in one sort, which is much faster than keeping
// it up to date row by row.
func (t *rowTable) fill(ctx context.Context, pool *pgxpool.Pool, rows int64, note io.Writer) error {
	_, tbl, _ := strings.Cut(t.name, ".")
	pkey := pgx.Identifier{tbl + "_pkey"}.Sanitize()
	for _, sql := range []string{
		fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s`, t.ident(), pkey),
		fmt.Sprintf(`TRUNCATE %s`, t.ident()),
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	insert := fmt.Sprintf(`INSERT INTO %s (id, name, email, age, created_at, tags, active, score)
		SELECT %s, 'user-' || i, 'user' || i || '@example.com', 18 + i %% 60,
			to_timestamp(ts / 1000.0), ARRAY['bench', 'background'], i %% 3 <> 0, (i %% 1000) / 10.0
		FROM generate_series($1::bigint, $2::bigint) AS i, md5(i::text) AS h, LATERAL (SELECT $3::bigint + i AS ts) AS t`,
		t.ident(), t.keyExpr())
	start := time.Now()
	for lo := int64(0); lo < rows; lo += bgBatch {
		hi := min(lo+bgBatch, rows) - 1
		if _, err := pool.Exec(ctx, insert, lo, hi, bgEpoch.UnixMilli()); err != nil {
			return fmt.Errorf("%s: background rows: %w", t.name, err)
		}
		fmt.Fprintf(note, "  %s: %s of %s background rows (%s)\n", t.name, humanize.Comma(hi+1), humanize.Comma(rows), time.Since(start).Round(time.Second))
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	defer conn.Release()
	for _, sql := range []string{
		`SET maintenance_work_mem = '1GB'`, // one big sort for the primary key
		fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %s PRIMARY KEY (id)`, t.ident(), pkey),
		`RESET maintenance_work_mem`,
		fmt.Sprintf(`VACUUM (ANALYZE) %s`, t.ident()),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	if rows > 0 {
		fmt.Fprintf(note, "  %s: %s background rows ready in %s\n", t.name, humanize.Comma(rows), time.Since(start).Round(time.Second))
	}
	return nil
}

// reset deletes what bench runs wrote, keeping the background rows, and
// vacuums so the next SET phase finds the same table a fresh one would.
func (t *rowTable) reset(ctx context.Context, pool *pgxpool.Pool) error {
	tag, err := pool.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE id >= '%s'`, t.ident(), t.cutoff()))
	if err != nil {
		return fmt.Errorf("%s: delete the rows of earlier runs: %w", t.name, err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf(`VACUUM (ANALYZE) %s`, t.ident())); err != nil {
		return fmt.Errorf("%s: vacuum: %w", t.name, err)
	}
	return nil
}
