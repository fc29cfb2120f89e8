package proxy

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/pgcache/pgcache/backends"
)

// INFO [section [section ...]]
//
// Sections: server, clients, memory, stats, keyspace, and backends (the
// lines SetInfoFunc adds). No section, "default", "all" or "everything"
// means all of them; an unknown one is left out, so INFO of nothing known
// is empty, as in Redis.
func cmdInfo(c *conn, args [][]byte) {
	all := len(args) == 1
	want := func(name string) bool {
		if all {
			return true
		}
		for _, a := range args[1:] {
			if is(a, name) || is(a, "all") || is(a, "everything") || is(a, "default") {
				return true
			}
		}
		return false
	}
	var b infoBuilder
	s := c.s
	if want("server") {
		b.section("Server")
		b.field("redis_version", redisVersion)
		b.field("pgcache_version", s.config().Version)
		b.field("redis_mode", "standalone")
		b.field("os", runtime.GOOS+" "+runtime.GOARCH)
		b.field("arch_bits", strconv.Itoa(strconv.IntSize))
		b.field("go_version", runtime.Version())
		b.field("process_id", strconv.Itoa(os.Getpid()))
		b.field("run_id", s.runID)
		b.field("tcp_port", localPort(c))
		up := time.Since(s.started)
		b.field("uptime_in_seconds", strconv.FormatInt(int64(up/time.Second), 10))
		b.field("uptime_in_days", strconv.FormatInt(int64(up/(24*time.Hour)), 10))
	}
	if want("clients") {
		b.section("Clients")
		b.int("connected_clients", s.stats.ConnectedClients.Load())
		b.int("maxclients", int64(s.config().MaxClients))
	}
	if want("memory") {
		heap, sys := s.mem.read()
		b.section("Memory")
		b.field("used_memory", strconv.FormatUint(heap, 10))
		b.field("used_memory_human", humanize.IBytes(heap))
		b.field("used_memory_sys", strconv.FormatUint(sys, 10))
	}
	if want("stats") {
		st := &s.stats
		b.section("Stats")
		b.int("total_connections_received", st.ConnectionsTotal.Load())
		b.int("total_commands_processed", st.CommandsProcessed.Load())
		b.int("rejected_connections", st.RejectedConnections.Load())
		b.int("keyspace_hits", s.metrics.Hits.Load())
		b.int("keyspace_misses", s.metrics.Misses.Load())
		b.int("client_query_buffer_limit_disconnections", st.QueryLimitDisconnects.Load())
		b.int("client_output_buffer_limit_disconnections", st.OutputLimitDisconnects.Load())
		b.int("protocol_errors", st.ProtocolErrors.Load())
	}
	if want("keyspace") {
		b.section("Keyspace")
		if n := c.keyCount(); n > 0 {
			// expires and avg_ttl are not tracked; Redis's shape is kept for
			// the tools that parse the line.
			b.field("db0", "keys="+strconv.FormatInt(n, 10)+",expires=0,avg_ttl=0")
		}
	}
	if f := s.infoFunc.Load(); f != nil && want("backends") {
		b.section("Backends")
		for _, kv := range (*f)(s.ctx) {
			b.field(kv[0], kv[1])
		}
	}
	c.writeVerbatim(b.String())
}

// keyCount counts keys as DBSIZE does, leaving out routes that cannot.
func (c *conn) keyCount() int64 {
	var total int64
	for _, r := range c.t.Routes() {
		if s, ok := backends.As[backends.Sizer](r.Backend); ok && len(r.Prefixes) > 0 {
			if n, err := s.Len(c.s.ctx); err == nil {
				total += n
			}
		}
	}
	return total
}

func localPort(c *conn) string {
	if a, ok := c.nc.LocalAddr().(*net.TCPAddr); ok {
		return strconv.Itoa(a.Port)
	}
	return "0"
}

// infoBuilder writes INFO's text: "# Section" headers, "field:value" lines,
// CRLF line ends and a blank line between sections.
type infoBuilder struct{ strings.Builder }

func (b *infoBuilder) section(name string) {
	if b.Len() > 0 {
		b.WriteString("\r\n")
	}
	b.WriteString("# ")
	b.WriteString(name)
	b.WriteString("\r\n")
}

func (b *infoBuilder) field(name, value string) {
	b.WriteString(name)
	b.WriteByte(':')
	b.WriteString(value)
	b.WriteString("\r\n")
}

func (b *infoBuilder) int(name string, v int64) { b.field(name, strconv.FormatInt(v, 10)) }

// memStats caches runtime.ReadMemStats, which stops the world: INFO in a
// tight loop reads it at most once a second.
type memStats struct {
	mu   sync.Mutex
	at   time.Time
	heap uint64
	sys  uint64
}

func (m *memStats) read() (heap, sys uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.at) >= time.Second {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m.heap, m.sys, m.at = ms.HeapAlloc, ms.Sys, time.Now()
	}
	return m.heap, m.sys
}
