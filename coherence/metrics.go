package coherence

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics exports a coordinator's fences, listener, relay and tiers, read
// on each scrape. Labels: backend (the driver) and route (a tier).
type Metrics struct {
	backend string
	c       *Coordinator
}

// NewMetrics returns the collector of c, which serves backend.
func NewMetrics(backend string, c *Coordinator) *Metrics { return &Metrics{backend: backend, c: c} }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("pgcache_l1_"+name, help, labels, nil)
}

var (
	descFences       = desc("fences_received_total", "Fences recorded, by kind (key, table, all).", "backend", "kind")
	descListenerUp   = desc("listener_online", "1 while fences are received and L1 is in use.", "backend")
	descListenerStat = desc("listener_state", "The listener's state (1 for the current one).", "backend", "state")
	descReconnects   = desc("listener_reconnects_total", "LISTEN connections made after the first.", "backend")
	descNotes        = desc("listener_notifications_total", "Notifications received on the fence channel.", "backend")
	descLocal        = desc("listener_local_fences_total", "Fence notifications applied from this instance's relay as it drained them, before their NOTIFY.", "backend")
	descEchoes       = desc("listener_echoes_total", "Notifications skipped as the NOTIFY of fences already applied from this instance's relay.", "backend")
	descNewer        = desc("listener_newer_payloads_total", "Fences of a payload version newer than this build reads, each taken as a whole-cache fence (an upgrade in progress).", "backend")
	descLag          = desc("fence_lag_seconds", "The last canary's time from the fence log to this listener.", "backend")
	descQueue        = desc("notify_queue_usage_ratio", "pg_notification_queue_usage(): the NOTIFY queue's fill.", "backend")
	descRelayActive  = desc("relay_active", "1 while this instance relays the fence log.", "backend")
	descRelayRows    = desc("relay_rows_total", "Fence log rows this instance published.", "backend")
	descRelayDrains  = desc("relay_drains_total", "Drains of the fence log that published rows (one transaction, one NOTIFY batch each).", "backend")
	descRelayVacuums = desc("relay_vacuums_total", "Vacuums of the fence log run by this instance's relay.", "backend")
	descTier         = desc("requests_total", "L1 reads by result: hit, miss, bypass (fences may be missed), stale (a fenced entry refused).", "backend", "route", "result")
	descFills        = desc("fills_total", "Backend reads offered to L1: stored, or fenced (dropped: a fence came after the read's token).", "backend", "route", "result")
	descCoalesced    = desc("coalesced_total", "Reads that waited for another read of the same key.", "backend", "route")
	descRefreshed    = desc("refreshed_total", "Rows read again after another writer's fence dropped their entry (l1.refresh).", "backend", "route")
	descEntries      = desc("entries", "Entries held by L1.", "backend", "route")
	descHitRatio     = desc("hit_ratio", "hits / (hits + misses + bypassed) since start.", "backend", "route")
)

// Describe sends every metric's description.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFences, descListenerUp, descListenerStat, descReconnects, descNotes, descLocal, descEchoes, descNewer, descLag,
		descQueue, descRelayActive, descRelayRows, descRelayDrains, descRelayVacuums, descTier, descFills, descCoalesced, descRefreshed, descEntries, descHitRatio} {
		ch <- d
	}
}

// Collect reads the counters.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	c, b := m.c, m.backend
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(descFences, c.Fences.Stats.KeyFences.Load(), b, "key")
	counter(descFences, c.Fences.Stats.TableFences.Load(), b, "table")
	counter(descFences, c.Fences.Stats.AllFences.Load(), b, "all")
	state, _ := c.Listener.State()
	gauge(descListenerUp, boolf(state == StateOnline), b)
	for s := StateConnecting; s <= StateStopped; s++ {
		gauge(descListenerStat, boolf(s == state), b, s.String())
	}
	ls := &c.Listener.Stats
	counter(descReconnects, ls.Reconnects.Load(), b)
	counter(descNotes, ls.Notifications.Load(), b)
	counter(descLocal, ls.LocalFences.Load(), b)
	counter(descEchoes, ls.Echoes.Load(), b)
	counter(descNewer, ls.NewerPayloads.Load(), b)
	gauge(descLag, time.Duration(ls.FenceLagNanos.Load()).Seconds(), b)
	gauge(descQueue, QueueUsageValue(ls.QueueUsage.Load()), b)
	gauge(descRelayActive, boolf(c.Relay.Stats.Active.Load()), b)
	counter(descRelayRows, c.Relay.Stats.Rows.Load(), b)
	counter(descRelayDrains, c.Relay.Stats.Drains.Load(), b)
	counter(descRelayVacuums, c.Relay.Stats.Vacuums.Load(), b)
	for _, t := range c.Tiers() {
		r, s := t.route, &t.Stats
		hits, misses, bypassed := s.Hits.Load(), s.Misses.Load(), s.Bypassed.Load()
		counter(descTier, hits, b, r, "hit")
		counter(descTier, misses, b, r, "miss")
		counter(descTier, bypassed, b, r, "bypass")
		counter(descTier, s.Stale.Load(), b, r, "stale")
		counter(descFills, s.FillsStored.Load(), b, r, "stored")
		counter(descFills, s.FillsFenced.Load(), b, r, "fenced")
		counter(descCoalesced, s.Coalesced.Load(), b, r)
		counter(descRefreshed, s.Refreshed.Load(), b, r)
		gauge(descEntries, float64(t.cache.EstimatedSize()), b, r)
		gauge(descHitRatio, ratio(hits, hits+misses+bypassed), b, r)
	}
}

// Info returns the same figures as INFO lines.
func (m *Metrics) Info(context.Context) [][2]string {
	c, p := m.c, "l1_"+m.backend+"_"
	state, why := c.Listener.State()
	lines := [][2]string{
		{p + "listener", state.String()},
		{p + "fences_key", strconv.FormatInt(c.Fences.Stats.KeyFences.Load(), 10)},
		{p + "fences_table", strconv.FormatInt(c.Fences.Stats.TableFences.Load(), 10)},
		{p + "fences_all", strconv.FormatInt(c.Fences.Stats.AllFences.Load(), 10)},
		{p + "listener_reconnects", strconv.FormatInt(c.Listener.Stats.Reconnects.Load(), 10)},
		{p + "fence_lag_ms", strconv.FormatFloat(float64(c.Listener.Stats.FenceLagNanos.Load())/1e6, 'f', 3, 64)},
		{p + "notify_queue_usage", strconv.FormatFloat(QueueUsageValue(c.Listener.Stats.QueueUsage.Load()), 'f', 6, 64)},
		{p + "relay_active", strconv.FormatBool(c.Relay.Stats.Active.Load())},
	}
	if why != "" {
		lines = append(lines, [2]string{p + "listener_reason", why})
	}
	for _, t := range c.Tiers() {
		q, s := "l1_"+t.route+"_", &t.Stats
		hits, misses, bypassed := s.Hits.Load(), s.Misses.Load(), s.Bypassed.Load()
		lines = append(lines,
			[2]string{q + "hits", strconv.FormatInt(hits, 10)},
			[2]string{q + "misses", strconv.FormatInt(misses, 10)},
			[2]string{q + "bypassed", strconv.FormatInt(bypassed, 10)},
			[2]string{q + "hit_ratio", strconv.FormatFloat(ratio(hits, hits+misses+bypassed), 'f', 4, 64)},
			[2]string{q + "fills_stored", strconv.FormatInt(s.FillsStored.Load(), 10)},
			[2]string{q + "fills_fenced", strconv.FormatInt(s.FillsFenced.Load(), 10)},
			[2]string{q + "coalesced", strconv.FormatInt(s.Coalesced.Load(), 10)},
			[2]string{q + "refreshed", strconv.FormatInt(s.Refreshed.Load(), 10)},
			[2]string{q + "entries", strconv.Itoa(t.cache.EstimatedSize())},
		)
	}
	return lines
}

// Check reports why L1 is not in use, for /readyz.
func (m *Metrics) Check(context.Context) error {
	if s, why := m.c.Listener.State(); s != StateOnline {
		return &notOnline{state: s, why: why}
	}
	return nil
}

type notOnline struct {
	state ListenerState
	why   string
}

func (e *notOnline) Error() string {
	return "l1 off (fence listener " + e.state.String() + "): " + e.why
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
