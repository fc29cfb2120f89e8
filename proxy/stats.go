package proxy

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats are the RESP server's counters, safe to read at any time. INFO
// reports them, and New registers them as Prometheus metrics.
type Stats struct {
	ConnectionsTotal       atomic.Int64 // connections accepted (not counting those refused at MaxClients)
	ConnectedClients       atomic.Int64 // connections open now
	RejectedConnections    atomic.Int64 // connections refused because MaxClients were connected
	CommandsProcessed      atomic.Int64 // requests run, malformed and unknown ones included
	ProtocolErrors         atomic.Int64 // connections closed for a malformed request
	QueryLimitDisconnects  atomic.Int64 // connections closed for a request over MaxQueryBytes
	OutputLimitDisconnects atomic.Int64 // connections closed for replies over OutputBufferLimit
	Panics                 atomic.Int64 // connections closed after a handler panicked
	AuthFailures           atomic.Int64 // AUTH and HELLO … AUTH refused
}

// collectors exports st as Prometheus metrics read at scrape time, so
// counting costs the request path nothing more than the atomic add.
func (st *Stats) collectors() []prometheus.Collector {
	counter := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	return []prometheus.Collector{
		counter("pgcache_resp_connections_total",
			"RESP connections accepted.", &st.ConnectionsTotal),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pgcache_resp_connected_clients",
			Help: "RESP connections open now.",
		}, func() float64 { return float64(st.ConnectedClients.Load()) }),
		counter("pgcache_resp_rejected_connections_total",
			"RESP connections refused because the maximum number of clients was connected.", &st.RejectedConnections),
		counter("pgcache_resp_commands_total",
			"RESP requests run.", &st.CommandsProcessed),
		counter("pgcache_resp_protocol_errors_total",
			"RESP connections closed for a malformed request.", &st.ProtocolErrors),
		counter("pgcache_resp_query_limit_disconnects_total",
			"RESP connections closed for a request over the query buffer limit.", &st.QueryLimitDisconnects),
		counter("pgcache_resp_output_limit_disconnects_total",
			"RESP connections closed for unread replies over the output buffer limit.", &st.OutputLimitDisconnects),
		counter("pgcache_resp_panics_total",
			"RESP connections closed after a command handler panicked.", &st.Panics),
		counter("pgcache_resp_auth_failures_total",
			"RESP AUTH and HELLO AUTH attempts refused.", &st.AuthFailures),
	}
}
