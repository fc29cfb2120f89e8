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
	const prefix = "pgcache_resp_"
	out := []prometheus.Collector{prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: prefix + "connected_clients",
		Help: "RESP connections open now.",
	}, func() float64 { return float64(st.ConnectedClients.Load()) })}
	for _, c := range []struct {
		name, help string
		v          *atomic.Int64
	}{
		{"connections_total", "RESP connections accepted.", &st.ConnectionsTotal},
		{"rejected_connections_total", "RESP connections refused because the maximum number of clients was connected.", &st.RejectedConnections},
		{"commands_total", "RESP requests run.", &st.CommandsProcessed},
		{"protocol_errors_total", "RESP connections closed for a malformed request.", &st.ProtocolErrors},
		{"query_limit_disconnects_total", "RESP connections closed for a request over the query buffer limit.", &st.QueryLimitDisconnects},
		{"output_limit_disconnects_total", "RESP connections closed for unread replies over the output buffer limit.", &st.OutputLimitDisconnects},
		{"panics_total", "RESP connections closed after a command handler panicked.", &st.Panics},
		{"auth_failures_total", "RESP AUTH and HELLO AUTH attempts refused.", &st.AuthFailures},
	} {
		out = append(out, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: prefix + c.name, Help: c.help},
			func() float64 { return float64(c.v.Load()) }))
	}
	return out
}
