package readwrite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/pgcache/pgcache/bench/instance"
)

// The admin API's L1 listing (httpapi/debug_l1.go).
const (
	l1Path          = "/debug/l1?route=" + routeName
	headerL1Proven  = "Pgcache-L1-Proven"
	headerL1Entries = "Pgcache-L1-Entries"
)

// auditBatch is how many listed entries are compared with PostgreSQL in
// one query: the audit holds no more than this at a time.
const auditBatch = 1000

// waitSettled waits until every instance has received every fence logged
// before mark: its listing's Proven header is after mark.
func waitSettled(ctx context.Context, insts []instance.Instance, mark time.Time, limit time.Duration) error {
	return waitFor(ctx, limit, "fences to settle", func() bool {
		for _, in := range insts {
			p, err := l1Proven(ctx, in)
			if err != nil || !p.After(mark) {
				return false
			}
		}
		return true
	})
}

// l1Proven asks an instance for its listing's headers only.
func l1Proven(ctx context.Context, in instance.Instance) (time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+in.Addr("admin")+l1Path, nil)
	if err != nil {
		return time.Time{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return time.Time{}, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return time.Time{}, fmt.Errorf("HEAD %s: %s", l1Path, resp.Status)
	}
	p := resp.Header.Get(headerL1Proven)
	if p == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, p)
}

// auditL1 reads an instance's L1 through its admin API and compares every
// entry with the row in PostgreSQL, a batch at a time. An entry whose row
// is gone, or whose text differs, is stale.
func (r *run) auditL1(ctx context.Context, in instance.Instance) (entries, stale int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+in.Addr("admin")+l1Path, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("GET %s: %w", l1Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET %s: %s", l1Path, resp.Status)
	}
	ids := make([]int64, 0, auditBatch)
	cached := make(map[int64]string, auditBatch)
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		rows, err := r.env.db.Query(ctx, rowsJSON, ids)
		if err != nil {
			return err
		}
		defer rows.Close()
		found := 0
		for rows.Next() {
			var id int64
			var row string
			if err := rows.Scan(&id, &row); err != nil {
				return err
			}
			found++
			if cached[id] != row {
				stale++
				r.noteStale(fmt.Sprintf("L1 of %s", in.Addr("resp")), id, cached[id], row)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		stale += len(ids) - found // rows gone
		if len(ids) > found {
			r.noteStale(fmt.Sprintf("L1 of %s", in.Addr("resp")), -1, "", "(rows gone)")
		}
		ids = ids[:0]
		clear(cached)
		return nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e struct {
			Route string
			Key   *string
			Value *string
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return entries, stale, fmt.Errorf("listing line %.200q: %w", sc.Text(), err)
		}
		if e.Key == nil || e.Value == nil {
			return entries, stale, fmt.Errorf("listing line %.200q: a row key and its JSON are text", sc.Text())
		}
		id, err := strconv.ParseInt(*e.Key, 10, 64)
		if err != nil {
			return entries, stale, fmt.Errorf("listing line %.200q: key: %w", sc.Text(), err)
		}
		if _, dup := cached[id]; dup {
			return entries, stale, fmt.Errorf("row %d listed twice", id)
		}
		entries++
		ids = append(ids, id)
		cached[id] = *e.Value
		if len(ids) == auditBatch {
			if err := flush(); err != nil {
				return entries, stale, fmt.Errorf("audit: %w", err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return entries, stale, fmt.Errorf("GET %s: %w", l1Path, err)
	}
	if err := flush(); err != nil {
		return entries, stale, fmt.Errorf("audit: %w", err)
	}
	if n := resp.Trailer.Get(headerL1Entries); n != strconv.Itoa(entries) {
		return entries, stale, fmt.Errorf("GET %s: the listing was cut (%d entries read, trailer %q)", l1Path, entries, n)
	}
	return entries, stale, nil
}

// maxStaleNotes bounds the stale entries a stack's record names.
const maxStaleNotes = 5

// noteStale names a stale entry (id -1: not one row) in the record of the
// stack being audited, up to maxStaleNotes: what to look at when a stack
// that should have none has some.
func (r *run) noteStale(where string, id int64, cached, row string) {
	if len(r.staleNotes) < maxStaleNotes {
		r.staleNotes = append(r.staleNotes, fmt.Sprintf("%s: row %d: cached %.200q, PostgreSQL %.200q", where, id, cached, row))
	}
}

// l1Stats adds up the rows route's L1 counters of every instance, read
// from INFO's backends section (l1_rows_hits, …).
func l1Stats(ctx context.Context, clients []valkey.Client) (instance.L1Reads, error) {
	var t instance.L1Reads
	for _, c := range clients {
		info, err := c.Do(ctx, c.B().Info().Section("backends").Build()).ToString()
		if err != nil {
			return t, fmt.Errorf("INFO: %w", err)
		}
		r, err := instance.ParseL1Reads(info, routeName)
		if err != nil {
			return t, err
		}
		t = t.Plus(r)
	}
	return t, nil
}
