package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// statsTimeout bounds the catalog query of a scrape or an INFO: a slow
// database makes the table figures go missing, never the scrape hang.
const statsTimeout = 2 * time.Second

// tableStatsSQL reads the health figures "Postgres as a Key-Value Store" says to watch, for the
// tables named in $1 (as to_regclass reads them).
const tableStatsSQL = `
SELECT u.i, s.n_live_tup, s.n_dead_tup, s.n_tup_upd, s.n_tup_hot_upd,
       pg_total_relation_size(s.relid)
FROM unnest($1::text[]) WITH ORDINALITY AS u(name, i)
JOIN pg_stat_user_tables s ON s.relid = to_regclass(u.name)`

// tableStats are one table's figures.
type tableStats struct {
	label                   string // the table as the route names it
	live, dead, upd, hotUpd int64
	size                    int64 // bytes, indexes and TOAST included
}

// hotPercent is the share of updates that were HOT (touched no index).
func (s tableStats) hotPercent() float64 {
	if s.upd == 0 {
		return 0
	}
	return 100 * float64(s.hotUpd) / float64(s.upd)
}

// label is a table as a metric label: the route's spelling, unquoted.
func (t tableName) label() string {
	if t.schema == "" {
		return t.name
	}
	return t.schema + "." + t.name
}

// tables returns the open routes' tables, each once.
func (d *Driver) tables() (labels, idents []string, kvs map[string]*KV) {
	seen := map[string]bool{}
	kvs = map[string]*KV{}
	for _, s := range d.openStores() {
		b := s.core()
		l := b.table.label()
		if kv, ok := s.(*KV); ok {
			kvs[l] = kv
		}
		if seen[l] {
			continue
		}
		seen[l] = true
		labels = append(labels, l)
		idents = append(idents, b.table.ident())
	}
	return labels, idents, kvs
}

// tableStats queries the open routes' tables.
func (d *Driver) tableStats(ctx context.Context) ([]tableStats, error) {
	labels, idents, _ := d.tables()
	if len(labels) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	rows, err := d.pool.Query(ctx, tableStatsSQL, idents)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []tableStats
	for rows.Next() {
		var i int64
		var s tableStats
		if err := rows.Scan(&i, &s.live, &s.dead, &s.upd, &s.hotUpd, &s.size); err != nil {
			return nil, err
		}
		s.label = labels[i-1]
		out = append(out, s)
	}
	return out, rows.Err()
}

// pools returns the driver's pools by name.
func (d *Driver) pools() map[string]*pgxpool.Pool {
	out := map[string]*pgxpool.Pool{"standard": d.pool}
	d.mu.Lock()
	if d.async != nil {
		out["async"] = d.async
	}
	d.mu.Unlock()
	return out
}

// Collectors returns the driver's Prometheus collector.
func (d *Driver) Collectors() []prometheus.Collector { return []prometheus.Collector{newCollector(d)} }

// collector gathers the driver's figures at scrape time: pool statistics
// from pgxpool, sweep counters, and table health from the statistics
// views. Every metric carries backend=<driver name> as a constant label,
// so two postgres drivers register side by side.
type collector struct {
	d *Driver

	up                                         *prometheus.Desc
	live, dead, size, hotPct, updates, hotUpds *prometheus.Desc
	sweeps, swept, shared, sharedSets          *prometheus.Desc
	acquired, idle, total, maxConns            *prometheus.Desc
	acquires, acquireSeconds, emptyAcquires    *prometheus.Desc
}

func newCollector(d *Driver) *collector {
	cl := prometheus.Labels{"backend": d.name}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("pgcache_postgres_"+name, help, labels, cl)
	}
	return &collector{
		d:              d,
		up:             desc("up", "1 if the last scrape could read the table statistics, else 0."),
		live:           desc("table_live_rows", "Estimated live rows (pg_stat_user_tables.n_live_tup).", "table"),
		dead:           desc("table_dead_rows", "Estimated dead row versions (n_dead_tup).", "table"),
		size:           desc("table_size_bytes", "Table size with indexes and TOAST (pg_total_relation_size).", "table"),
		hotPct:         desc("table_hot_update_percent", "Share of updates that were HOT, in percent (n_tup_hot_upd / n_tup_upd).", "table"),
		updates:        desc("table_updates_total", "Rows updated (n_tup_upd).", "table"),
		hotUpds:        desc("table_hot_updates_total", "Rows updated HOT (n_tup_hot_upd).", "table"),
		sweeps:         desc("sweeps_total", "Sweeps of expired rows by this process, by result (ran, skipped: another session was sweeping, failed).", "table", "result"),
		swept:          desc("swept_rows_total", "Expired rows deleted by this process's sweeps.", "table"),
		shared:         desc("shared_reads_total", "Single-key reads answered by a query shared with concurrent reads (the pool was busy).", "table"),
		sharedSets:     desc("shared_sets_total", "Plain SETs stored by an upsert shared with concurrent SETs (the pool was busy).", "table"),
		acquired:       desc("pool_acquired_conns", "Connections in use.", "pool"),
		idle:           desc("pool_idle_conns", "Idle connections.", "pool"),
		total:          desc("pool_total_conns", "Open connections (acquired, idle and being opened).", "pool"),
		maxConns:       desc("pool_max_conns", "The pool's bound (max_conns).", "pool"),
		acquires:       desc("pool_acquires_total", "Connections acquired from the pool.", "pool"),
		acquireSeconds: desc("pool_acquire_seconds_total", "Time spent acquiring connections.", "pool"),
		emptyAcquires:  desc("pool_empty_acquires_total", "Acquires that waited because the pool had no idle connection.", "pool"),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.live, c.dead, c.size, c.hotPct, c.updates, c.hotUpds,
		c.sweeps, c.swept, c.shared, c.sharedSets, c.acquired, c.idle, c.total, c.maxConns, c.acquires, c.acquireSeconds, c.emptyAcquires} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for name, p := range c.d.pools() {
		st := p.Stat()
		gauge(c.acquired, float64(st.AcquiredConns()), name)
		gauge(c.idle, float64(st.IdleConns()), name)
		gauge(c.total, float64(st.TotalConns()), name)
		gauge(c.maxConns, float64(st.MaxConns()), name)
		counter(c.acquires, float64(st.AcquireCount()), name)
		counter(c.acquireSeconds, st.AcquireDuration().Seconds(), name)
		counter(c.emptyAcquires, float64(st.EmptyAcquireCount()), name)
	}
	_, _, kvs := c.d.tables()
	for label, kv := range kvs {
		st := &kv.sweepStats
		counter(c.sweeps, float64(st.runs.Load()), label, "ran")
		counter(c.sweeps, float64(st.skipped.Load()), label, "skipped")
		counter(c.sweeps, float64(st.failed.Load()), label, "failed")
		counter(c.swept, float64(st.deleted.Load()), label)
		counter(c.sharedSets, float64(kv.sets.shared.Load()), label)
	}
	for label, n := range c.d.sharedReads() {
		counter(c.shared, float64(n), label)
	}
	stats, err := c.d.tableStats(context.Background())
	if err != nil {
		gauge(c.up, 0)
		return
	}
	gauge(c.up, 1)
	for _, s := range stats {
		gauge(c.live, float64(s.live), s.label)
		gauge(c.dead, float64(s.dead), s.label)
		gauge(c.size, float64(s.size), s.label)
		gauge(c.hotPct, s.hotPercent(), s.label)
		counter(c.updates, float64(s.upd), s.label)
		counter(c.hotUpds, float64(s.hotUpd), s.label)
	}
}

// sharedReads sums the shared reads of the open routes per table.
func (d *Driver) sharedReads() map[string]int64 {
	out := map[string]int64{}
	for _, s := range d.openStores() {
		l := s.core().table.label()
		switch s := s.(type) {
		case *KV:
			out[l] += s.gets.shared.Load() + s.getTTLs.shared.Load()
		case *Table:
			out[l] += s.gets.shared.Load()
		}
	}
	return out
}

// Info reports the same figures for INFO, as backend_<name>_… fields.
func (d *Driver) Info(ctx context.Context) [][2]string {
	p := "backend_" + d.name + "_"
	var out [][2]string
	add := func(field string, v any) { out = append(out, [2]string{p + field, fmt.Sprint(v)}) }
	add("database", d.database)
	pools := d.pools()
	for _, name := range []string{"standard", "async"} {
		pool, ok := pools[name]
		if !ok {
			continue
		}
		st := pool.Stat()
		add(name+"_pool_acquired_conns", st.AcquiredConns())
		add(name+"_pool_idle_conns", st.IdleConns())
		add(name+"_pool_total_conns", st.TotalConns())
		add(name+"_pool_max_conns", st.MaxConns())
		add(name+"_pool_acquires", st.AcquireCount())
		add(name+"_pool_acquire_seconds", strconv.FormatFloat(st.AcquireDuration().Seconds(), 'f', 3, 64))
	}
	var shared int64
	for _, n := range d.sharedReads() {
		shared += n
	}
	add("shared_reads", shared)
	shared = 0
	_, _, kvs := d.tables()
	for _, kv := range kvs {
		shared += kv.sets.shared.Load()
	}
	add("shared_sets", shared)
	stats, err := d.tableStats(ctx)
	if err != nil {
		add("up", 0)
		return out
	}
	add("up", 1)
	for _, s := range stats {
		t := "table_" + s.label + "_"
		add(t+"live_rows", s.live)
		add(t+"dead_rows", s.dead)
		add(t+"size_bytes", s.size)
		add(t+"hot_update_percent", strconv.FormatFloat(s.hotPercent(), 'f', 1, 64))
	}
	return out
}
