package valkey

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// stats are the driver's counters, for INFO and /metrics.
type stats struct {
	hits      atomic.Int64 // cached reads answered from the client cache (valkey-go's IsCacheHit)
	misses    atomic.Int64 // cached reads that went to the server
	refetches atomic.Int64 // cached reads sent around the client cache: a write overtook their fill
	errors    atomic.Int64 // calls that failed, but for the caller's own cancellation
}

func (s *stats) cached(hit bool) {
	if hit {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
}

// Collectors are the driver's Prometheus metrics, labelled backend=<name>.
// They read the counters when scraped.
func (d *Driver) Collectors() []prometheus.Collector {
	labels := prometheus.Labels{"backend": d.name}
	counter := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pgcache_valkey_" + name, Help: help, ConstLabels: labels,
		}, func() float64 { return float64(v.Load()) })
	}
	cs := []prometheus.Collector{
		counter("errors_total", "Valkey backend calls that failed.", &d.stats.errors),
	}
	if c := d.cache; c != nil {
		cs = append(cs,
			counter("client_cache_hits_total", "Reads answered from the Valkey client-side cache.", &d.stats.hits),
			counter("client_cache_misses_total", "Cached reads that went to the Valkey server.", &d.stats.misses),
			counter("client_cache_refetches_total", "Cached reads sent to the server uncached because a write of this process overtook their fill.", &d.stats.refetches),
			counter("client_cache_evictions_total", "Client-side cache entries evicted to stay under max_bytes.", &c.evictions),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "pgcache_valkey_client_cache_bytes", Help: "Bytes held by the Valkey client-side cache.", ConstLabels: labels,
			}, func() float64 { return float64(c.used.Load()) }),
		)
	}
	return cs
}

// Info adds the driver's lines to INFO.
func (d *Driver) Info(context.Context) [][2]string {
	p := "backend_" + d.name + "_"
	mode := "connecting"
	if c := d.client.Load(); c != nil {
		mode = string(c.Mode())
	}
	lines := [][2]string{
		{p + "mode", mode},
		{p + "errors", strconv.FormatInt(d.stats.errors.Load(), 10)},
	}
	c := d.cache
	if c == nil {
		return append(lines, [2]string{p + "client_cache", "off"})
	}
	return append(lines,
		[2]string{p + "client_cache", "on"},
		[2]string{p + "client_cache_hits", strconv.FormatInt(d.stats.hits.Load(), 10)},
		[2]string{p + "client_cache_misses", strconv.FormatInt(d.stats.misses.Load(), 10)},
		[2]string{p + "client_cache_refetches", strconv.FormatInt(d.stats.refetches.Load(), 10)},
		[2]string{p + "client_cache_dropped_fills", strconv.FormatInt(c.dropped.Load(), 10)},
		[2]string{p + "client_cache_evictions", strconv.FormatInt(c.evictions.Load(), 10)},
		[2]string{p + "client_cache_entries", strconv.Itoa(c.entries())},
		[2]string{p + "client_cache_used_bytes", strconv.FormatInt(c.used.Load(), 10)},
		[2]string{p + "client_cache_max_bytes", strconv.FormatInt(c.maxBytes, 10)},
	)
}
