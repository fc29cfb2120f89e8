package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
)

// action is what a data request asks for, as labelled in metrics.
type action uint8

const (
	actionOther action = iota // unknown route or action, or a request fasthttp could not parse
	actionGet
	actionSet
	actionDel
	actionMGet
	numActions
)

var actionNames = [numActions]string{"other", "get", "set", "del", "mget"}

// statusClasses label responses by the first digit of their status.
var statusClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// metrics are the data API's HTTP-level counters. The backend operations
// behind them are counted per route by route.Metrics; these count what
// clients saw, including requests that never reached a backend. Keys and
// route names typed by clients are never labels: neither is bounded.
type metrics struct {
	requests [numActions][len(statusClasses)]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pgcache_http_requests_total",
		Help: "Data API requests by action (get, set, del, mget, other) and status class (2xx, 4xx, …).",
	}, []string{"action", "code"})
	if reg != nil {
		reg.MustRegister(vec)
	}
	m := &metrics{}
	// Resolve every series up front: a request pays an array index, not a
	// label lookup, and every series is exported from the start.
	for a := range numActions {
		for c, class := range statusClasses {
			m.requests[a][c] = vec.WithLabelValues(actionNames[a], class)
		}
	}
	return m
}

// count records one answered request.
func (m *metrics) count(a action, status int) {
	c := status/100 - 1
	if c < 0 || c >= len(statusClasses) {
		c = len(statusClasses) - 1 // not a valid status: the server's fault
	}
	m.requests[a][c].Inc()
}
