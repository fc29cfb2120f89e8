package proxy

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgcache/pgcache/backends"
)

// INFO [section [section ...]]
//
// Redis 7's sections, in Redis's order, with Redis's field names where
// pgcache has the same thing, then pgcache's own (backends: the lines
// SetInfoFunc adds). No argument or "default" means every section but
// commandstats; "all" and "everything" add it; several may be named
// (INFO cpu clients), in any case; each section comes once; an unknown
// one is left out, so INFO of nothing known is empty, as in Redis.
func cmdInfo(c *conn, args [][]byte) {
	want := make(map[string]bool, len(infoSections))
	if len(args) == 1 {
		args = append(args, []byte("default"))
	}
	for _, a := range args[1:] {
		name := strings.ToLower(string(a))
		for _, sec := range infoSections {
			switch {
			case name == "all" || name == "everything",
				name == "default" && sec.inDefault,
				name == sec.name:
				want[sec.name] = true
			}
		}
	}
	var b infoBuilder
	var backendLines [][2]string
	if want["memory"] || want["stats"] || want["backends"] {
		backendLines = c.s.backendInfo()
	}
	want["backends"] = want["backends"] && c.s.infoFunc.Load() != nil
	for _, sec := range infoSections {
		if want[sec.name] {
			b.section(sec.title)
			sec.write(c, &b, backendLines)
		}
	}
	c.writeVerbatim(b.String())
}

// infoSection is one of INFO's sections.
type infoSection struct {
	name, title string
	inDefault   bool
	write       func(c *conn, b *infoBuilder, backendLines [][2]string)
}

var infoSections []infoSection

func init() {
	infoSections = []infoSection{
		{"server", "Server", true, infoServer},
		{"clients", "Clients", true, infoClients},
		{"memory", "Memory", true, infoMemory},
		{"persistence", "Persistence", true, infoPersistence},
		{"stats", "Stats", true, infoStats},
		{"replication", "Replication", true, infoReplication},
		{"cpu", "CPU", true, infoCPU},
		{"modules", "Modules", true, func(*conn, *infoBuilder, [][2]string) {}},
		{"commandstats", "Commandstats", false, infoCommandStats},
		{"errorstats", "Errorstats", true, infoErrorStats},
		{"cluster", "Cluster", true, func(_ *conn, b *infoBuilder, _ [][2]string) { b.int("cluster_enabled", 0) }},
		{"keyspace", "Keyspace", true, infoKeyspace},
		{"backends", "Backends", true, func(_ *conn, b *infoBuilder, lines [][2]string) {
			for _, kv := range lines {
				b.field(kv[0], kv[1])
			}
		}},
	}
}

func infoServer(c *conn, b *infoBuilder, _ [][2]string) {
	s := c.s
	b.field("redis_version", redisVersion)
	b.field("redis_git_sha1", "00000000")
	b.field("redis_git_dirty", "0")
	b.field("pgcache_version", s.config().Version)
	b.field("redis_mode", "standalone")
	b.field("os", runtime.GOOS+" "+runtime.GOARCH)
	b.field("arch_bits", strconv.Itoa(strconv.IntSize))
	b.field("go_version", runtime.Version())
	b.field("process_id", strconv.Itoa(os.Getpid()))
	b.field("run_id", s.runID)
	b.field("tcp_port", localPort(c))
	now := time.Now()
	b.int("server_time_usec", now.UnixMicro())
	up := now.Sub(s.started)
	b.int("uptime_in_seconds", int64(up/time.Second))
	b.int("uptime_in_days", int64(up/(24*time.Hour)))
	exe, _ := os.Executable()
	b.field("executable", exe)
	file := ""
	if p := s.configFile.Load(); p != nil {
		file = *p
	}
	b.field("config_file", file)
}

func infoClients(c *conn, b *infoBuilder, _ [][2]string) {
	s := c.s
	s.forgetGone()
	b.int("connected_clients", s.stats.ConnectedClients.Load())
	b.int("cluster_connections", 0)
	b.int("maxclients", int64(s.config().MaxClients))
	b.int("blocked_clients", s.waiters.blocked.Load())
	b.int("tracking_clients", s.tracking.Clients())
	b.int("clients_in_timeout_table", 0)
}

func infoMemory(c *conn, b *infoBuilder, lines [][2]string) {
	m := c.s.mem.read()
	b.field("used_memory", strconv.FormatUint(m.heap, 10))
	b.field("used_memory_human", bytesHuman(m.heap))
	// What the Go runtime holds from the system and has not returned: the
	// resident set's upper bound as the runtime sees it.
	b.field("used_memory_rss", strconv.FormatUint(m.rss, 10))
	b.field("used_memory_rss_human", bytesHuman(m.rss))
	b.field("used_memory_peak", strconv.FormatUint(m.peak, 10))
	b.field("used_memory_peak_human", bytesHuman(m.peak))
	b.field("used_memory_sys", strconv.FormatUint(m.sys, 10))
	scripts, scriptBytes := c.s.scripts.CachedScripts()
	b.int("used_memory_scripts_eval", scriptBytes)
	b.int("number_of_cached_scripts", int64(scripts))
	max := sumInfo(lines, "_max_bytes")
	b.int("maxmemory", max)
	b.field("maxmemory_human", bytesHuman(uint64(max)))
	b.field("maxmemory_policy", "allkeys-lfu")
	b.field("mem_allocator", "go-"+runtime.Version())
}

func infoPersistence(c *conn, b *infoBuilder, _ [][2]string) {
	// A store without persistence, as Redis with save "" and appendonly no
	// reports itself; the last save is the start.
	for _, kv := range [][2]string{
		{"loading", "0"},
		{"async_loading", "0"},
		{"rdb_changes_since_last_save", "0"},
		{"rdb_bgsave_in_progress", "0"},
		{"rdb_last_save_time", strconv.FormatInt(c.s.started.Unix(), 10)},
		{"rdb_last_bgsave_status", "ok"},
		{"rdb_last_bgsave_time_sec", "-1"},
		{"rdb_current_bgsave_time_sec", "-1"},
		{"rdb_saves", "0"},
		{"aof_enabled", "0"},
		{"aof_rewrite_in_progress", "0"},
		{"aof_rewrite_scheduled", "0"},
		{"aof_last_rewrite_time_sec", "-1"},
		{"aof_current_rewrite_time_sec", "-1"},
		{"aof_last_bgrewrite_status", "ok"},
		{"aof_rewrites", "0"},
		{"aof_last_write_status", "ok"},
	} {
		b.field(kv[0], kv[1])
	}
}

func infoStats(c *conn, b *infoBuilder, lines [][2]string) {
	s, st := c.s, &c.s.stats
	base := s.base.Load()
	_, _, errTotal := s.errStats.snapshot()
	b.int("total_connections_received", st.ConnectionsTotal.Load()-base.connections)
	b.int("total_commands_processed", st.CommandsProcessed.Load()-base.commands)
	b.int("instantaneous_ops_per_sec", s.ops.perSecond())
	b.int("rejected_connections", st.RejectedConnections.Load()-base.rejected)
	b.int("sync_full", 0)
	b.int("sync_partial_ok", 0)
	b.int("sync_partial_err", 0)
	// The memory backends' sweepers' count (backend_*_expired_keys).
	b.int("expired_keys", sumInfo(lines, "_expired_keys")-base.expired)
	// Not counted: the memory backend does not report its evictions.
	b.int("evicted_keys", 0)
	b.int("evicted_clients", 0)
	b.int("keyspace_hits", s.metrics.Hits.Load()-base.hits)
	b.int("keyspace_misses", s.metrics.Misses.Load()-base.misses)
	b.int("pubsub_channels", 0)
	b.int("pubsub_patterns", 0)
	b.int("pubsubshard_channels", 0)
	tkeys, titems, tprefixes := s.tracking.Counts()
	b.int("tracking_total_keys", int64(tkeys))
	b.int("tracking_total_items", int64(titems))
	b.int("tracking_total_prefixes", int64(tprefixes))
	b.int("unexpected_error_replies", 0)
	b.int("total_error_replies", errTotal)
	// pgcache's own
	b.int("client_query_buffer_limit_disconnections", st.QueryLimitDisconnects.Load())
	b.int("client_output_buffer_limit_disconnections", st.OutputLimitDisconnects.Load())
	b.int("protocol_errors", st.ProtocolErrors.Load())
}

func infoReplication(c *conn, b *infoBuilder, _ [][2]string) {
	b.field("role", "master")
	b.int("connected_slaves", 0)
	b.field("master_failover_state", "no-failover")
	b.field("master_replid", c.s.runID)
	b.field("master_replid2", strings.Repeat("0", 40))
	b.int("master_repl_offset", 0)
	b.int("second_repl_offset", -1)
	b.int("repl_backlog_active", 0)
	b.int("repl_backlog_size", 0)
	b.int("repl_backlog_first_byte_offset", 0)
	b.int("repl_backlog_histlen", 0)
}

func infoCPU(_ *conn, b *infoBuilder, _ [][2]string) {
	sys, user, csys, cuser, ok := cpuTimes()
	if !ok {
		return
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	b.field("used_cpu_sys", f(sys))
	b.field("used_cpu_user", f(user))
	b.field("used_cpu_sys_children", f(csys))
	b.field("used_cpu_user_children", f(cuser))
}

// infoCommandStats lists the commands run or refused since the start or
// CONFIG RESETSTAT. usec is estimated from the calls timed (see
// cmdstats.go).
func infoCommandStats(c *conn, b *infoBuilder, _ [][2]string) {
	for _, cmd := range allCommands() {
		st := c.statsOf(cmd)
		calls, rejected, failed := st.calls.Load(), st.rejected.Load(), st.failed.Load()
		if calls == 0 && rejected == 0 && failed == 0 {
			continue
		}
		var usec int64
		var perCall float64
		if timed := st.timed.Load(); timed > 0 {
			nanos := st.nanos.Load()
			perCall = float64(nanos) / float64(timed) / 1e3
			usec = int64(perCall * float64(calls))
		}
		b.field("cmdstat_"+cmd.name, "calls="+strconv.FormatInt(calls, 10)+
			",usec="+strconv.FormatInt(usec, 10)+
			",usec_per_call="+strconv.FormatFloat(perCall, 'f', 2, 64)+
			",rejected_calls="+strconv.FormatInt(rejected, 10)+
			",failed_calls="+strconv.FormatInt(failed, 10))
	}
}

func infoErrorStats(c *conn, b *infoBuilder, _ [][2]string) {
	codes, counts, _ := c.s.errStats.snapshot()
	for i, code := range codes {
		b.field("errorstat_"+code, "count="+strconv.FormatInt(counts[i], 10))
	}
}

// infoKeyspace is db0's line: keys as DBSIZE counts them. expires is not
// counted (no backend counts its expiring keys cheaply) and avg_ttl is
// not sampled: both are 0, in Redis's shape for the tools that parse it.
func infoKeyspace(c *conn, b *infoBuilder, _ [][2]string) {
	if n := c.keyCount(); n > 0 {
		b.field("db0", "keys="+strconv.FormatInt(n, 10)+",expires=0,avg_ttl=0")
	}
}

// backendInfo is the lines SetInfoFunc's function returns, or none.
func (s *Server) backendInfo() [][2]string {
	if f := s.infoFunc.Load(); f != nil {
		return (*f)(s.ctx)
	}
	return nil
}

// maxMemory is the memory backends' bounds added up (their
// backend_<name>_max_bytes lines): what the keys pgcache holds in memory
// may take.
func (s *Server) maxMemory() int64 { return sumInfo(s.backendInfo(), "_max_bytes") }

// sumInfo adds the backends' lines named backend_<driver>_<suffix>, for
// the figures INFO reports across drivers (a Valkey driver's
// client_cache_max_bytes is the size of a client cache, not a bound of the
// keys, and is left out).
func sumInfo(lines [][2]string, suffix string) int64 {
	var total int64
	for _, kv := range lines {
		name := kv[0]
		if !strings.HasPrefix(name, "backend_") || !strings.HasSuffix(name, suffix) ||
			strings.HasSuffix(name, "_client_cache"+suffix) {
			continue
		}
		if n, err := strconv.ParseInt(kv[1], 10, 64); err == nil {
			total += n
		}
	}
	return total
}

// keyCount counts keys as DBSIZE does, leaving out routes that cannot.
func (c *conn) keyCount() int64 {
	var total int64
	for _, r := range c.t.Routes() {
		if s, ok := backends.As[backends.Sizer](r.Backend); ok && len(r.Prefixes) > 0 {
			if n, err := s.Len(c.ctx); err == nil {
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

// bytesHuman is Redis's bytesToHuman: "912.65K", "11.78M", "0B".
func bytesHuman(n uint64) string {
	units := []string{"B", "K", "M", "G", "T", "P"}
	if n < 1024 {
		return strconv.FormatUint(n, 10) + "B"
	}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + units[i]
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
// tight loop reads it at most once a second. peak is the largest heap
// seen by those reads.
type memStats struct {
	mu   sync.Mutex
	at   time.Time
	last memFigures
}

type memFigures struct{ heap, sys, rss, peak uint64 }

func (m *memStats) read() memFigures {
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.at) >= time.Second {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m.last.heap, m.last.sys, m.last.rss = ms.HeapAlloc, ms.Sys, ms.Sys-ms.HeapReleased
		m.last.peak = max(m.last.peak, ms.HeapAlloc)
		m.at = time.Now()
	}
	return m.last
}

// SetConfigFile names the config file INFO reports as config_file.
func (s *Server) SetConfigFile(path string) { s.configFile.Store(&path) }
