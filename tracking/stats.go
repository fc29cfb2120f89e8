package tracking

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// source is where an invalidation came from, a label of the tracking
// metrics.
type source uint8

const (
	srcWrite     source = iota // a write through pgcache
	srcFlush                   // FLUSHDB, FLUSHALL
	srcTableFull               // the tracking table over tracking-table-max-keys
	srcUnseen                  // a key no backend reports, bounced after its read
	srcPostgres                // Outside.Source: PostgreSQL fences
	srcValkey                  // Valkey client-cache invalidations
	srcExpiry                  // the memory store's expiry
	srcEviction                // the memory store's eviction
	srcReload                  // a reload that sent keys to other backends
	srcOther                   // an Outside.Source not listed here
	numSources
	srcNone = numSources // not counted (the caller counts)
)

var sourceNames = [numSources]string{
	"write", "flush", "table-full", "unseen", "postgres", "valkey", "expiry", "eviction", "reload", "other",
}

// sourceOf maps an Outside.Source to its label.
func sourceOf(name string) source {
	for s := srcPostgres; s <= srcEviction; s++ {
		if sourceNames[s] == name {
			return s
		}
	}
	return srcOther
}

// commitToPushBuckets are the lag histogram's bounds, in seconds: 0.5 ms
// to 16 s, with steps of 5–10 ms between 10 and 100 ms, where a drain
// spacing of 10 ms and a busy host put the tail, so a p99 read from the
// buckets is not a guess across a bucket twice as wide as the one below.
var commitToPushBuckets = []float64{
	0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075,
	0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.045, 0.050,
	0.060, 0.070, 0.080, 0.090, 0.100, 0.125, 0.150, 0.200, 0.300, 0.500,
	1, 2, 4, 8, 16,
}

// stats are CLIENT TRACKING's counters, exported on /metrics. They
// move only when an invalidation is queued, so nothing costs while no
// client tracks.
type stats struct {
	invalidations [numSources]atomic.Int64 // keys sent, once per client told
	dropAll       [numSources]atomic.Int64 // "drop everything" nulls sent
	lag           prometheus.Histogram     // a report's commit to its push queued
}

func (st *stats) init() {
	st.lag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "pgcache_tracking_commit_to_push_seconds",
		Help:    "Time from a change's commit at its source (PostgreSQL's clock for a fence) to its invalidation queued for the tracking clients, once per report that pushed.",
		Buckets: commitToPushBuckets,
	})
}

// Collectors exports the tracker's gauges and counters, read at scrape
// time.
func (t *Tracker) Collectors() []prometheus.Collector {
	st := &t.stats
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pgcache_tracking_clients",
			Help: "RESP clients with CLIENT TRACKING on.",
		}, func() float64 { return float64(t.on.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pgcache_tracking_keys",
			Help: "Keys in the tracking table (bounded by tracking-table-max-keys).",
		}, func() float64 {
			keys, _, _ := t.Counts()
			return float64(keys)
		}),
		st.lag,
	}
	for s := range numSources {
		label := prometheus.Labels{"source": sourceNames[s]}
		cs = append(cs,
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "pgcache_tracking_invalidations_total",
				Help:        "Keys invalidated for tracking clients, once per client told, by where the change came from.",
				ConstLabels: label,
			}, func() float64 { return float64(st.invalidations[s].Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "pgcache_tracking_drop_all_total",
				Help:        "\"Drop everything\" invalidations (a null) sent to tracking clients, by cause.",
				ConstLabels: label,
			}, func() float64 { return float64(st.dropAll[s].Load()) }),
		)
	}
	return cs
}
