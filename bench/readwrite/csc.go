package readwrite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/valkey-io/valkey-go"
)

// runCSC is the pgcache-csc stack: the pgcache stack's servers, route,
// rows and writers, with readers that keep rows in their own memory:
// valkey-go's DoCache of GET, client-side caching on (its default), each
// app client (o.CSCClients of them, spread over the instances) with its own
// cache, invalidated by pgcache's CLIENT TRACKING pushes. After the
// writers stop and fences settle, the instances' L1s are audited as in
// the pgcache stack, and so is every app client's cache: each row read
// again with DoCache, and a value served from the app's memory that
// differs from the row is stale.
func (r *run) runCSC(ctx context.Context) (_ *stackResult, err error) {
	insts, clients, stop, err := r.startInstances(ctx, StackCSC)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	lag := newInvalLag(r.rowPrefix, r.o.Rows, r.o.CSCClients+r.o.cscDeaf)
	var apps []*appClient
	defer func() {
		for _, a := range apps {
			a.c.Close()
		}
	}()
	for i := range r.o.CSCClients + r.o.cscDeaf {
		a := &appClient{deaf: i >= r.o.CSCClients}
		opt := valkey.ClientOption{
			InitAddress:     []string{insts[i%len(insts)].Addr("resp")},
			OnInvalidations: func(keys []valkey.ValkeyMessage) { lag.invalidated(i, keys) },
		}
		if a.deaf {
			opt.NewCacheStoreFn = newDeafStore
		}
		if a.c, err = valkey.NewClient(opt); err != nil {
			return nil, fmt.Errorf("app client %d: %w", i, err)
		}
		apps = append(apps, a)
	}
	res := &stackResult{static: r.o.CSCStaticTTL}
	if !res.static {
		// valkey-go's default DoCache is a transaction; a pgcache that
		// refuses it on the table route gets the GET alone, and says so.
		c := apps[0].c
		err := c.DoCache(ctx, cachedGet(c, r.rowKey(1), false), r.o.CSCTTL).Error()
		switch {
		case errors.Is(err, valkey.ErrDoCacheAborted):
			res.static = true
			res.note = "pgcache refused valkey-go's default DoCache (CLIENT CACHING YES, MULTI, PTTL, GET, EXEC) on the table route " +
				"(valkey-go hides why; redis-cli MULTI/GET/EXEC shows it): the readers sent GET alone (valkey-go's ToStaticTTL, as --csc-static-ttl)"
		case err != nil:
			return nil, fmt.Errorf("app client 0: %w", err)
		}
	}
	readApp := func(ctx context.Context, app int, id int64) (bool, error) {
		c := apps[app].c
		began := time.Now()
		res := c.DoCache(ctx, cachedGet(c, r.rowKey(id), res.static), r.o.CSCTTL)
		if err := res.Error(); err != nil {
			if valkey.IsValkeyNil(err) {
				err = fmt.Errorf("row %d: GET answered nil", id)
			}
			return false, err
		}
		hit := res.IsCacheHit()
		if !hit {
			lag.filled(app, id, began)
		}
		return hit, nil
	}
	read := func(ctx context.Context, reader int, id int64) (bool, error) {
		return readApp(ctx, reader%len(apps), id)
	}
	write := lag.wrap(r.pgcacheWriter(clients))
	// The warmup fills every app client's cache with every row, as the
	// other stacks' warmups leave theirs: reader i alone would fill
	// client i mod n only, and the run would start with the caches a
	// quarter full.
	warmAll := func(ctx context.Context, reader int, id int64) (bool, error) {
		for app := range apps {
			if _, err := readApp(ctx, app, id); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	if err := r.warm(ctx, warmAll); err != nil {
		return nil, err
	}
	before, _, err := scrapePushLag(ctx, insts)
	if err != nil {
		return nil, err
	}
	lag.on.Store(true)
	res.load = runLoad(ctx, r.o, read, write, r.o.Progress, StackCSC)
	res.hitRatio = ratio(res.load.hits, res.load.reads)
	if err := waitSettled(ctx, insts, time.Now(), r.o.SettleTimeout); err != nil {
		return nil, err
	}
	after, exported, err := scrapePushLag(ctx, insts)
	if err != nil {
		return nil, err
	}
	lag.on.Store(false)
	if res.pushLag, err = pushLagOf(before, after, exported); err != nil {
		return nil, err
	}
	res.clientLag = lag.result()
	for i, in := range insts {
		entries, stale, err := r.auditL1(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("%s instance %d: %w", StackCSC, i, err)
		}
		res.l1Entries += entries
		res.l1Stale += stale
	}
	if res.apps, err = r.auditApps(ctx, apps, res.static); err != nil {
		return nil, err
	}
	res.entries, res.stale = res.l1Entries, res.l1Stale
	for _, a := range res.apps {
		res.entries += a.Cached
		res.stale += a.Stale
	}
	return res, nil
}

// cachedGet is the readers' cacheable GET of key; static sends it alone
// (valkey-go's ToStaticTTL), else in valkey-go's default transaction.
func cachedGet(c valkey.Client, key string, static bool) valkey.Cacheable {
	cmd := c.B().Get().Key(key).Cache()
	if static {
		cmd = cmd.ToStaticTTL()
	}
	return cmd
}

// appClient is one application's valkey-go client, its cache its own.
type appClient struct {
	c    valkey.Client
	deaf bool // its cache ignores invalidations (tests)
}

// AppAudit is what the audit found in one app client's cache.
type AppAudit struct {
	Cached int  `json:"cached"` // rows the audit's DoCache served from the app's memory
	Stale  int  `json:"stale"`  // of those, values that differ from the row
	Deaf   bool `json:"deaf,omitempty"`
}

// auditApps reads every row with DoCache from every app client, a batch
// at a time, and compares each value served from the app's memory with
// the row in PostgreSQL, read once per batch for all the clients. A read
// that missed is the server's answer, audited with its L1; it fills the
// cache, which no longer matters.
func (r *run) auditApps(ctx context.Context, apps []*appClient, static bool) ([]AppAudit, error) {
	out := make([]AppAudit, len(apps))
	for i, a := range apps {
		out[i].Deaf = a.deaf
	}
	ids := make([]int64, 0, auditBatch)
	rows := make(map[int64]string, auditBatch)
	cmds := make([]valkey.CacheableTTL, 0, auditBatch)
	for first := int64(1); first <= int64(r.o.Rows); first += auditBatch {
		ids, cmds = ids[:0], cmds[:0]
		clear(rows)
		for id := first; id < first+auditBatch && id <= int64(r.o.Rows); id++ {
			ids = append(ids, id)
		}
		q, err := r.env.db.Query(ctx, rowsJSON, ids)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		for q.Next() {
			var id int64
			var row string
			if err := q.Scan(&id, &row); err != nil {
				q.Close()
				return nil, fmt.Errorf("audit: %w", err)
			}
			rows[id] = row
		}
		q.Close()
		if err := q.Err(); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		for i, a := range apps {
			cmds = cmds[:0]
			for _, id := range ids {
				cmds = append(cmds, valkey.CT(cachedGet(a.c, r.rowKey(id), static), r.o.CSCTTL))
			}
			for j, res := range a.c.DoMultiCache(ctx, cmds...) {
				if !res.IsCacheHit() {
					continue
				}
				out[i].Cached++
				v, err := res.ToString()
				if row, ok := rows[ids[j]]; err != nil || !ok || v != row {
					out[i].Stale++
					r.noteStale(fmt.Sprintf("app client %d", i), ids[j], v, row)
				}
			}
		}
	}
	return out, nil
}

// invalLag measures the lag from a writer's commit to an app client's
// invalidation callback (valkey-go's OnInvalidations) for the row it
// wrote, as the app sees it. The commit time is when the writer's call
// returned, a little after the commit itself.
//
// An invalidation is put down to the row's last write W only when it can
// be: W has returned (a write still under way is no time to measure
// from), and the value the app client had cached was read from a read
// begun before W began (a value read after that may be W's own, and its
// invalidation another's: a later write's, or the one pgcache sends right
// after a read of a route it does not track). Others are counted as
// unattributed.
//
// A read that missed notes when it began (filledAt) once it has returned;
// its invalidation may have been handled before that, so a read begun
// before the row's last invalidation notes nothing: the value it cached is
// gone. Every invalidation clears the note, so a second one of the same
// write is not measured again.
type invalLag struct {
	prefix     string
	start, end []atomic.Int64   // by row: UnixNano when its last write began and returned
	filledAt   [][]atomic.Int64 // by app and row: UnixNano when the read that cached it began; 0: none
	invalAt    [][]atomic.Int64 // by app and row: UnixNano of its last invalidation
	on         atomic.Bool

	mu           sync.Mutex
	h            *hdrhistogram.Histogram // microseconds
	unattributed int64
	dropAll      int64
}

func newInvalLag(prefix string, rows, apps int) *invalLag {
	l := &invalLag{prefix: prefix,
		start: make([]atomic.Int64, rows+1), end: make([]atomic.Int64, rows+1),
		filledAt: make([][]atomic.Int64, apps), invalAt: make([][]atomic.Int64, apps),
		h: hdrhistogram.New(1, 600_000_000, 3)}
	for i := range l.filledAt {
		l.filledAt[i] = make([]atomic.Int64, rows+1)
		l.invalAt[i] = make([]atomic.Int64, rows+1)
	}
	return l
}

// wrap times w's writes.
func (l *invalLag) wrap(w writeFunc) writeFunc {
	return func(ctx context.Context, id int64) error {
		l.start[id].Store(time.Now().UnixNano())
		err := w(ctx, id)
		if err == nil {
			l.end[id].Store(time.Now().UnixNano())
		}
		return err
	}
}

// filled notes that app's read of id, begun at began, missed and has
// returned: its value is in the app's cache unless an invalidation came
// after the read began.
func (l *invalLag) filled(app int, id int64, began time.Time) {
	if t := began.UnixNano(); t > l.invalAt[app][id].Load() {
		l.filledAt[app][id].Store(t)
	}
}

// invalidated is app's OnInvalidations.
func (l *invalLag) invalidated(app int, keys []valkey.ValkeyMessage) {
	now := time.Now().UnixNano()
	if keys == nil {
		l.invalidate(app, 0, true, now)
		return
	}
	for _, k := range keys {
		s, _ := k.ToString()
		id, err := strconv.ParseInt(strings.TrimPrefix(s, l.prefix), 10, 64)
		if err != nil || id < 1 || id >= int64(len(l.end)) {
			id = -1
		}
		l.invalidate(app, id, false, now)
	}
}

// invalidate handles app's invalidation of row id (-1: not a row's key;
// all: of everything) at now. It keeps the notes while the lag is not
// measured too (warmup, audit): a note the warmup left would be taken for
// a later read's.
func (l *invalLag) invalidate(app int, id int64, all bool, now int64) {
	on := l.on.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case all:
		for i := range l.filledAt[app] {
			l.filledAt[app][i].Store(0)
			l.invalAt[app][i].Store(now)
		}
		if on {
			l.dropAll++
		}
		return
	case id < 0:
		if on {
			l.unattributed++
		}
		return
	}
	l.invalAt[app][id].Store(now)
	filled := l.filledAt[app][id].Swap(0)
	began, ended := l.start[id].Load(), l.end[id].Load()
	switch {
	case !on:
	case ended == 0 || began > ended || filled == 0 || filled >= began:
		l.unattributed++
	default:
		l.h.RecordValue(max((now-ended)/1000, 1))
	}
}

// ClientLag is the commit-to-invalidation lag as the app clients saw it.
type ClientLag struct {
	Samples      int64   `json:"samples"`
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`
	MaxMs        float64 `json:"max_ms"`
	Unattributed int64   `json:"unattributed"`
	DropAll      int64   `json:"drop_all"` // "drop everything" pushes
}

func (l *invalLag) result() *ClientLag {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &ClientLag{
		Samples: l.h.TotalCount(),
		P50ms:   float64(l.h.ValueAtQuantile(50)) / 1000, P99ms: float64(l.h.ValueAtQuantile(99)) / 1000,
		MaxMs: float64(l.h.Max()) / 1000, Unattributed: l.unattributed, DropAll: l.dropAll,
	}
}

// deafStore is a client-side cache that ignores invalidations: an app
// whose cache the audit must find stale (tests).
type deafStore struct{ valkey.CacheStore }

func newDeafStore(valkey.CacheStoreOption) valkey.CacheStore {
	return deafStore{valkey.NewSimpleCacheAdapter(mapCache{})}
}

func (deafStore) Delete([]valkey.ValkeyMessage) {}

// mapCache is valkey.SimpleCache on a map; NewSimpleCacheAdapter locks
// around it.
type mapCache map[string]valkey.ValkeyMessage

func (m mapCache) Get(k string) valkey.ValkeyMessage    { return m[k] }
func (m mapCache) Set(k string, v valkey.ValkeyMessage) { m[k] = v }
func (m mapCache) Del(k string)                         { delete(m, k) }
func (m mapCache) Flush()                               { clear(m) }
