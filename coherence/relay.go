package coherence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// Relay timing.
const (
	// DefaultRelayInterval is how far apart drains start under steady
	// writes (start to start, so a slow drain does not widen the gap), and
	// how long an empty log goes unlooked at: about the most a fence waits
	// in the log. A drain costs the relay's backend, pgcache and every
	// listener a wake-up each, whether it carries 10 fences or 100; a
	// wider spacing saves relay CPU but every fence waits a whole cycle,
	// and CLIENT TRACKING's commit-to-push lag grows with it. On a busy
	// host a drain's two round trips take about as long as 5 ms, so drains
	// run back to back there (docs/performance.md has the measurements).
	DefaultRelayInterval = 5 * time.Millisecond
	// relayBatch bounds the rows one drain takes, so one transaction never
	// holds many row locks.
	relayBatch = 10000
	// relayLockRetry is how often a standby relay tries to take over.
	relayLockRetry = time.Second
	// vacuumEvery is how many drained rows the relay lets pile up as dead
	// tuples before it vacuums the log itself. Each drain scans the log
	// from its first page, dead tuples included, and autovacuum comes by
	// once a minute at most, so under steady writes a drain scanned
	// hundreds of dead pages for a few dozen live rows; vacuumed every
	// 2,000 rows, the log stops growing (docs/performance.md).
	vacuumEvery = 2000
)

// relayLockKey is the advisory lock that makes one relay per database
// active ("pgcache" in ASCII).
const relayLockKey int64 = 0x70676361636865

// canaryTable marks a canary row in the fence log.
const canaryTable = "#canary"

// RelayStats count the relay's work.
type RelayStats struct {
	Active        atomic.Bool  // this instance holds the relay lock
	Drains        atomic.Int64 // drains that found rows
	Rows          atomic.Int64 // fence log rows published
	Notifications atomic.Int64 // NOTIFYs sent
	Vacuums       atomic.Int64 // vacuums of the log
}

// Relay drains the fence log and publishes it over NOTIFY. Every instance
// runs one; an advisory lock lets one at a time be active, and another takes
// over within relayLockRetry when it goes away.
type Relay struct {
	conn     *pgx.ConnConfig
	interval time.Duration
	log      *zap.Logger
	Stats    RelayStats

	// held are canaries drained in a full batch: they go out only with a
	// batch that emptied the log, so a canary never overtakes a fence that
	// was logged before it.
	held []string

	// at: the log has its at column (see hasAt), as last looked up at
	// atChecked.
	at        bool
	atChecked time.Time

	// id and drains name each drain in its payloads ("d", see
	// PayloadVersion).
	id     string
	drains uint64
	// floor is when this session's last drain that took rows began, if it
	// and every drain since took all they could see (unix microseconds; 0:
	// none): every fence the next drain takes committed after it (see
	// PayloadVersion's "a").
	floor int64
	// local handles a drain's fence payloads in this instance as soon as
	// the drain takes them (the coordinator's Listener.applyLocal), with
	// the time before which every fence committed has now been taken (zero
	// when the drain left some in the log); nil: this instance hears of
	// them by NOTIFY like the others.
	local func(payloads []string, through time.Time)
}

// NewRelay returns a relay; Run starts it.
func NewRelay(conn *pgx.ConnConfig, interval time.Duration, log *zap.Logger) *Relay {
	if interval <= 0 {
		interval = DefaultRelayInterval
	}
	var id [6]byte
	rand.Read(id[:])
	return &Relay{conn: conn, interval: interval, log: log, id: hex.EncodeToString(id[:])}
}

// Run relays until ctx ends, reconnecting with backoff.
func (r *Relay) Run(ctx context.Context) {
	backoff := minBackoff
	for ctx.Err() == nil {
		started := time.Now()
		err := r.session(ctx)
		r.Stats.Active.Store(false)
		if ctx.Err() != nil {
			return
		}
		if noLogYet(err) {
			// A fresh database: the listener's first connect creates the
			// log (Setup), and the relay starts with it. Nothing is wrong.
			r.log.Debug("fence relay: waiting for the fence log to be created", zap.Error(err))
			if !sleep(ctx, minBackoff) {
				return
			}
			continue
		}
		r.log.Warn("fence relay: reconnecting", zap.Error(err))
		if time.Since(started) > maxBackoff {
			backoff = minBackoff
		}
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// noLogYet reports the error of a session that found no fence log: the
// database has not been set up by pgcache yet.
func noLogYet(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") // undefined_table, invalid_schema_name
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (r *Relay) session(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, r.conn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// A drain that took rows commits a transaction; with synchronous_commit
	// on, each would wait for a WAL flush of its own, competing with the
	// writers' commits for the disk (a second flush per write at one
	// writer). It need not wait: a drain lost in a crash is lost together
	// with the UNLOGGED log it took rows from, and every listener fences
	// its whole cache when it reconnects after the crash. Its NOTIFYs are
	// delivered at commit, as they would be otherwise.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = off"); err != nil {
		return fmt.Errorf("synchronous_commit: %w", err)
	}
	for {
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", relayLockKey).Scan(&got); err != nil {
			return fmt.Errorf("relay lock: %w", err)
		}
		if got {
			break
		}
		if !sleep(ctx, relayLockRetry) {
			return ctx.Err()
		}
	}
	r.Stats.Active.Store(true)
	r.log.Info("fence relay active")
	r.floor = 0
	vctx, stopVacuum := context.WithCancel(ctx)
	vacuum, vacuumed := make(chan struct{}, 1), make(chan struct{})
	go r.vacuumer(vctx, vacuum, vacuumed)
	defer func() { stopVacuum(); <-vacuumed }()
	busy := true // the log may hold rows from before this session
	dead := 0    // rows drained since the log was last vacuumed
	for {
		if dead >= vacuumEvery {
			select {
			case vacuum <- struct{}{}:
			default: // one is running: it sees these rows too
			}
			dead = 0
		}
		if !busy {
			// An idle relay looks without a transaction: one round trip.
			if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+Schema+".fence_log)").Scan(&busy); err != nil {
				return fmt.Errorf("look at the log: %w", err)
			}
		}
		wait := r.interval
		if busy {
			began := time.Now()
			n, err := r.drain(ctx, conn)
			if err != nil {
				return fmt.Errorf("drain: %w", err)
			}
			busy, dead = n > 0, dead+n
			if n == relayBatch {
				continue // more waiting: drain on
			}
			if busy {
				if wait = r.interval - time.Since(began); wait <= 0 {
					continue
				}
			}
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// vacuumer vacuums the log on a connection of its own each time kick
// fires, until ctx ends; then it closes done. On its own connection a
// vacuum (up to 18 ms under the coherence bench's writers, twice a second)
// never holds up a drain. VACUUM's lock does not conflict with the
// writers' INSERTs or the drain's DELETE. TRUNCATE false: giving pages
// back to the file system would take a lock that makes the writers wait.
// A failed vacuum is logged and tried again at the next kick.
func (r *Relay) vacuumer(ctx context.Context, kick <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		var err error
		if conn == nil {
			conn, err = pgx.ConnectConfig(ctx, r.conn)
		}
		if err == nil {
			_, err = conn.Exec(ctx, "VACUUM (TRUNCATE false) "+Schema+".fence_log")
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.log.Warn("fence relay: vacuum of the log failed", zap.Error(err))
			if conn != nil {
				conn.Close(ctx)
				conn = nil
			}
		default:
			r.Stats.Vacuums.Add(1)
		}
	}
}

// drain moves up to relayBatch rows from the log to NOTIFYs in one
// transaction: the rows are deleted only if the notifications are sent.
//
// DELETE … RETURNING takes exactly the rows of committed writers. A writer
// still in flight is invisible here and is drained by a later pass, so no
// fence is skipped, and every fence is published after its write commits.
func (r *Relay) drain(ctx context.Context, conn *pgx.Conn) (int, error) {
	// Two round trips: BEGIN with the DELETE, the NOTIFYs with the COMMIT.
	// An error leaves the transaction open: the session ends on it and
	// closes the connection, which rolls it back.
	take := &pgx.Batch{}
	take.Queue("BEGIN")
	// ctid = ANY (ARRAY(…)), not ctid IN (…): the planner joins an IN
	// with a TID scan per row, and each of those asks the kernel for the
	// table's size (an lseek, a syscall per fence).
	at := "NULL::bigint"
	if r.hasAt(ctx, conn) {
		at = loggedAt
	}
	rowsQ := take.Queue(`DELETE FROM `+Schema+`.fence_log WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM `+Schema+`.fence_log LIMIT $1))
		RETURNING tbl, keys, `+at+`, `+micros(`statement_timestamp()`), relayBatch)
	r.drains++
	b := batch{drain: r.id + ":" + strconv.FormatUint(r.drains, 10)}
	n := 0
	rowsQ.Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var tbl string
			var keys []byte
			var at *int64
			if err := rows.Scan(&tbl, &keys, &at, &b.drained); err != nil {
				return err
			}
			b.add(tbl, keys, at)
			n++
		}
		return rows.Err()
	})
	sent := time.Now() // the DELETE's snapshot is taken after this
	if err := conn.SendBatch(ctx, take).Close(); err != nil {
		return 0, err
	}
	b.committedAfter(r.floor)
	var through time.Time
	if n < relayBatch {
		// The log is empty as of this statement's snapshot: every fence
		// logged before the canaries has been taken, in this batch or an
		// earlier one. Canaries go out last, after this batch's fences.
		b.canaries = append(r.held, b.canaries...)
		r.held = nil
		if b.drained != 0 {
			// An empty drain returns no statement time: the floor stays
			// the start of the last drain that took all it saw and some.
			r.floor = b.drained
		}
		through = sent
		b.through = sent.UnixMicro()
	} else {
		r.held = append(r.held, b.canaries...)
		b.canaries = nil
		r.floor = 0
	}
	publish := &pgx.Batch{}
	var payloads []string
	if n > 0 || len(b.canaries) > 0 {
		payloads = b.payloads()
	}
	if r.local != nil {
		r.local(payloads[:len(payloads)-len(b.canaries)], through)
	}
	if len(payloads) > 0 {
		publish.Queue("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p", Channel, payloads)
	}
	publish.Queue("COMMIT")
	if err := conn.SendBatch(ctx, publish).Close(); err != nil {
		return 0, err
	}
	if n == 0 && len(payloads) == 0 {
		return 0, nil
	}
	r.Stats.Drains.Add(1)
	r.Stats.Rows.Add(int64(n))
	r.Stats.Notifications.Add(int64(len(payloads)))
	return n, nil
}

// micros renders a timestamptz expression as unix microseconds.
func micros(expr string) string { return `(extract(epoch FROM ` + expr + `) * 1000000)::bigint` }

// loggedAt is a row's at in unix microseconds, or NULL unless it is within
// a day of the drain: a 1.0 C trigger on a log with the column (one loaded
// before its build was replaced) writes what lay past its two values, and
// comparing such a value cannot fail where extract could.
var loggedAt = `CASE WHEN at BETWEEN statement_timestamp() - interval '1 day' AND statement_timestamp() + interval '1 day' THEN ` +
	micros("at") + ` END`

// hasAt reports whether the log has its at column (attach.go). It is
// looked up again at most once a relayLockRetry while it is missing: the
// column is added by a listener's Setup, maybe after this session began.
func (r *Relay) hasAt(ctx context.Context, conn *pgx.Conn) bool {
	if r.at || time.Since(r.atChecked) < relayLockRetry {
		return r.at
	}
	r.atChecked = time.Now()
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_attribute
		WHERE attrelid = to_regclass('`+Schema+`.fence_log') AND attname = 'at' AND NOT attisdropped)`).Scan(&r.at)
	return err == nil && r.at
}

// batch gathers drained rows by table.
type batch struct {
	canaries []string
	tables   map[string]*tableKeys
	drained  int64  // when the drain took them, unix microseconds
	drain    string // the drain's id, for its payloads
	// through is when the drain was sent, unix microseconds by the relay's
	// clock, if it took all it could see (0: it left some): every fence
	// committed before it is in this drain or an earlier one ("s").
	through int64
}

type tableKeys struct {
	whole bool
	keys  map[string]struct{} // raw JSON of each key
	at    int64               // the earliest time a fence was logged, unix microseconds; 0: none known
}

// add takes one drained row: a table's keys (nil: the whole table), logged
// at at (nil: not known).
func (b *batch) add(tbl string, keys []byte, at *int64) {
	if tbl == canaryTable {
		var tok string
		if json.Unmarshal(keys, &tok) == nil {
			b.canaries = append(b.canaries, tok)
		}
		return
	}
	if b.tables == nil {
		b.tables = map[string]*tableKeys{}
	}
	tk := b.tables[tbl]
	if tk == nil {
		tk = &tableKeys{keys: map[string]struct{}{}}
		b.tables[tbl] = tk
	}
	if at != nil && *at > 0 && (tk.at == 0 || *at < tk.at) {
		tk.at = *at
	}
	if tk.whole {
		return
	}
	var list []json.RawMessage
	if keys == nil || json.Unmarshal(keys, &list) != nil {
		tk.whole, tk.keys = true, nil // a table fence, or a row we cannot read: fence it all
		return
	}
	for _, k := range list {
		tk.keys[string(k)] = struct{}{}
	}
}

// committedAfter raises each table's time to floor (unix microseconds;
// 0: none): its fences all committed after it.
func (b *batch) committedAfter(floor int64) {
	for _, tk := range b.tables {
		if tk.at != 0 && tk.at < floor {
			tk.at = floor
		}
	}
}

// keysRoom is the most a notification's keys may bring it to: the last
// may take the drain's "s" too, and stay within maxPayload.
const keysRoom = maxPayload - len(`,"s":`) - 20

// payloads renders the batch as notifications of at most maxPayload bytes
// (see PayloadVersion): {"v":1,"t":table,"k":[keys…]}, {"v":1,"t":table}
// for a whole table, {"v":1,"c":token} for a canary, last. A key too long for any notification fences its whole table.
func (b *batch) payloads() (out []string) {
	defer func() {
		// "s" on the drain's last fence notification: once it is handled,
		// so are all the drain's fences.
		if n := len(out); b.through != 0 && n > 0 {
			out[n-1] = out[n-1][:len(out[n-1])-1] + `,"s":` + strconv.FormatInt(b.through, 10) + "}"
		}
		// Canaries last, after every fence of the batch.
		for _, tok := range b.canaries {
			out = append(out, canaryPayload(tok))
		}
	}()
	tables := make([]string, 0, len(b.tables))
	for t := range b.tables {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, tbl := range tables {
		tk := b.tables[tbl]
		at := tk.at
		if at == 0 {
			at = b.drained // fences logged without a time: when they were taken
		}
		head := payloadHead(tbl, at, b.drain)
		if tk.whole {
			out = append(out, head+"}")
			continue
		}
		keys := make([]string, 0, len(tk.keys))
		for k := range tk.keys {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var cur []byte
		flush := func() {
			if cur != nil {
				out = append(out, string(append(cur, "]}"...)))
				cur = nil
			}
		}
		if slices.ContainsFunc(keys, func(k string) bool { return len(head)+len(`,"k":[`)+len(k)+2 > keysRoom }) {
			out = append(out, head+"}") // a key that fits no notification: fence the table
			continue
		}
		for _, k := range keys {
			if cur != nil && len(cur)+1+len(k)+2 > keysRoom {
				flush()
			}
			if cur == nil {
				cur = append([]byte(head), `,"k":[`...)
				cur = append(cur, k...)
			} else {
				cur = append(append(cur, ','), k...)
			}
		}
		flush()
	}
	return out
}
