package proxy

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/script"
)

// TestCompareIntrospectionWithRedis: CONFIG, CLIENT, TIME and LASTSAVE
// replies that do not depend on the server's state are Redis's, byte for
// byte.
func TestCompareIntrospectionWithRedis(t *testing.T) {
	ts := startServer(t, Config{})
	redisAddr := startRedis(t)
	ours, theirs := dial(t, ts.addr), dial(t, redisAddr)
	for _, cmd := range [][]string{
		// CONFIG GET of the parameters both have with the same value
		{"CONFIG", "GET", "databases"}, {"CONFIG", "GET", "save"}, {"CONFIG", "GET", "appendonly"},
		{"CONFIG", "GET", "busy-reply-threshold"}, {"CONFIG", "GET", "LUA-TIME-LIMIT"},
		{"CONFIG", "GET", "timeout"}, {"CONFIG", "GET", "proto-max-bulk-len"},
		{"CONFIG", "GET", "client-query-buffer-limit"}, {"CONFIG", "GET", "maxmemory-clients"},
		{"CONFIG", "GET", "daemonize"}, {"CONFIG", "GET", "replicaof"}, {"CONFIG", "GET", "cluster-enabled"},
		{"CONFIG", "GET", "notify-keyspace-events"}, {"CONFIG", "GET", "nosuch"}, {"CONFIG", "GET", "nosuch*"},
		{"CONFIG", "GET", "timeout", "timeout", "TIMEOUT"}, {"CONFIG", "GET"},
		// CONFIG SET: what both accept, and Redis's errors
		{"CONFIG", "SET", "busy-reply-threshold", "1000"}, {"CONFIG", "GET", "lua-time-limit"},
		{"CONFIG", "SET", "lua-time-limit", "5000"}, {"CONFIG", "GET", "busy-reply-threshold"},
		{"CONFIG", "SET", "timeout", "30"}, {"CONFIG", "GET", "timeout"}, {"CONFIG", "SET", "timeout", "0"},
		{"CONFIG", "SET", "proto-max-bulk-len", "100mb"}, {"CONFIG", "GET", "proto-max-bulk-len"},
		{"CONFIG", "SET", "proto-max-bulk-len", "512mb"},
		{"CONFIG", "SET", "save", ""}, {"CONFIG", "SET", "appendonly", "no"}, {"CONFIG", "SET", "databases", "1"},
		{"CONFIG", "SET", "nosuch", "1"}, {"CONFIG", "SET", "timeout", "1", "nosuch", "1"},
		{"CONFIG", "SET", "timeout"}, {"CONFIG", "SET", "timeout", "1", "databases"},
		{"CONFIG", "SET", "timeout", "1", "timeout", "2"}, {"CONFIG", "SET", "busy-reply-threshold", "1", "lua-time-limit", "2"},
		{"CONFIG", "SET", "daemonize", "yes"}, {"CONFIG", "SET", "timeout", "abc"}, {"CONFIG", "SET", "timeout", "-1"},
		{"CONFIG", "SET", "proto-max-bulk-len", "1k"}, {"CONFIG", "SET", "proto-max-bulk-len", "lots"},
		{"CONFIG", "SET", "maxclients", "0"}, {"CONFIG", "SET", "timeout", "5", "maxclients", "0"},
		{"CONFIG", "GET", "timeout"},
		{"CONFIG", "RESETSTAT"}, {"CONFIG", "RESETSTAT", "x"}, {"CONFIG", "HELP"}, {"CONFIG", "NOSUCH"}, {"CONFIG"},
		// CLIENT
		{"CLIENT", "KILL"}, {"CLIENT", "KILL", "id", "10", "wrong_arg"}, {"CLIENT", "KILL", "id", "str"},
		{"CLIENT", "KILL", "id", "-1"}, {"CLIENT", "KILL", "id", "0"}, {"CLIENT", "KILL", "type", "wrong_type"},
		{"CLIENT", "KILL", "user", "wrong_user"}, {"CLIENT", "KILL", "skipme", "yes_or_no"},
		{"CLIENT", "KILL", "1.2.3.4:5"}, {"CLIENT", "KILL", "ID", "999999"}, {"CLIENT", "KILL", "TYPE", "master"},
		{"CLIENT", "KILL", "ID", "999999", "SKIPME", "no"},
		{"CLIENT", "LIST", "TYPE", "wrong"}, {"CLIENT", "LIST", "TYPE", "pubsub"}, {"CLIENT", "LIST", "ID", "abc"},
		{"CLIENT", "LIST", "ID", "999999"}, {"CLIENT", "LIST", "foo"}, {"CLIENT", "INFO", "x"},
		{"CLIENT", "NO-EVICT", "on"}, {"CLIENT", "NO-EVICT", "OFF"}, {"CLIENT", "NO-EVICT", "maybe"},
		{"CLIENT", "REPLY", "maybe"}, {"CLIENT", "REPLY", "ON"}, {"CLIENT", "GETREDIR"}, {"CLIENT", "GETREDIR", "x"},
		{"TIME", "x"}, {"LASTSAVE", "x"}, {"INFO", "nosuch"}, {"INFO", "nosuch", "sentinel"},
	} {
		got, want := ours.do(cmd...), theirs.do(cmd...)
		if got != want {
			t.Errorf("%q:\n pgcache %q\n   redis %q", cmd, got, want)
		}
	}
	// Parameters pgcache cannot change: a new value is refused with the reason.
	for _, tc := range []struct{ cmd, want string }{
		{"appendonly yes", "-ERR CONFIG SET failed (possibly related to argument 'appendonly') - " + noFeature + "\r\n"},
		{"maxmemory 1", "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - " + fromFile + "\r\n"},
		{"REWRITE", "-ERR CONFIG REWRITE is not supported: pgcache's configuration is its YAML config file\r\n"},
	} {
		args := append([]string{"CONFIG"}, strings.Fields(tc.cmd)...)
		if tc.cmd != "REWRITE" {
			args = append([]string{"CONFIG", "SET"}, strings.Fields(tc.cmd)...)
		}
		if got := ours.do(args...); got != tc.want {
			t.Errorf("%q = %q, want %q", args, got, tc.want)
		}
	}
}

// TestInfoSections: INFO's sections as Redis 7 selects them, parsed by
// go-redis.
func TestInfoSections(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr})
	defer rdb.Close()
	rdb.Set(ctx, "k", "v", 0)
	sections := func(args ...string) []string {
		t.Helper()
		m, err := rdb.InfoMap(ctx, args...).Result()
		if err != nil {
			t.Fatalf("INFO %v: %v", args, err)
		}
		var names []string
		for name := range m {
			names = append(names, strings.ToLower(name))
		}
		return names
	}
	has := func(names []string, name string) bool {
		for _, n := range names {
			if n == name {
				return true
			}
		}
		return false
	}
	def := []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "errorstats", "cluster", "keyspace"}
	for _, args := range [][]string{nil, {"default"}, {"all"}, {"everything"}, {"cpu", "all"}, {"cpu", "default"}} {
		names := sections(args...)
		for _, want := range def {
			if !has(names, want) {
				t.Errorf("INFO %v lacks section %s: %v", args, want, names)
			}
		}
		all := len(args) > 0 && (args[0] == "all" || args[0] == "everything" || args[len(args)-1] == "all")
		if has(names, "commandstats") != all {
			t.Errorf("INFO %v: commandstats present %v, want %v", args, has(names, "commandstats"), all)
		}
	}
	if names := sections("CPU", "clients", "nosuch"); len(names) != 2 || !has(names, "cpu") || !has(names, "clients") {
		t.Errorf("INFO CPU clients nosuch: sections %v", names)
	}
	info := rdb.Info(ctx, "cpu", "all").Val()
	if strings.Count(info, "used_cpu_user_children") != 1 || strings.Count(info, "# Server") != 1 {
		t.Errorf("INFO cpu all repeats sections:\n%s", info)
	}
	m := rdb.InfoMap(ctx, "everything").Val()
	for section, fields := range map[string][]string{
		"Server":      {"redis_version", "redis_mode", "os", "arch_bits", "process_id", "run_id", "tcp_port", "uptime_in_seconds", "uptime_in_days", "executable", "config_file"},
		"Clients":     {"connected_clients", "blocked_clients", "tracking_clients", "maxclients"},
		"Memory":      {"used_memory", "used_memory_human", "used_memory_peak", "used_memory_rss", "maxmemory", "maxmemory_policy"},
		"Persistence": {"loading", "rdb_changes_since_last_save", "rdb_last_save_time", "aof_enabled"},
		"Stats":       {"total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec", "keyspace_hits", "keyspace_misses", "expired_keys", "evicted_keys", "total_error_replies"},
		"Replication": {"role", "connected_slaves", "master_repl_offset"},
		"CPU":         {"used_cpu_sys", "used_cpu_user"},
		"Keyspace":    {"db0"},
	} {
		for _, f := range fields {
			if _, ok := m[section][f]; !ok {
				t.Errorf("INFO everything: %s lacks %s", section, f)
			}
		}
	}
	if m["Server"]["redis_version"] != redisVersion || m["Replication"]["role"] != "master" ||
		m["Keyspace"]["db0"] != "keys=1,expires=0,avg_ttl=0" || m["Cluster"]["cluster_enabled"] != "0" {
		t.Errorf("INFO everything: %v", m)
	}
	// The kernel splits CPU time between user and system by sampling: a
	// short test may see either at 0, not both.
	user, err1 := strconv.ParseFloat(m["CPU"]["used_cpu_user"], 64)
	sys, err2 := strconv.ParseFloat(m["CPU"]["used_cpu_sys"], 64)
	if err1 != nil || err2 != nil || user+sys <= 0 {
		t.Errorf("used_cpu_user %q, used_cpu_sys %q", m["CPU"]["used_cpu_user"], m["CPU"]["used_cpu_sys"])
	}
	if v, err := strconv.ParseInt(m["Memory"]["used_memory"], 10, 64); err != nil || v <= 0 {
		t.Errorf("used_memory = %q", m["Memory"]["used_memory"])
	}
}

// cmdstat parses INFO commandstats into name -> field -> value.
func cmdstat(t *testing.T, c *rawClient) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, line := range strings.Split(c.do("INFO", "commandstats", "errorstats"), "\r\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !(strings.HasPrefix(name, "cmdstat_") || strings.HasPrefix(name, "errorstat_")) {
			continue
		}
		fields := map[string]string{}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		out[name] = fields
	}
	return out
}

// TestCommandStats: calls, rejected and failed calls per command, grouped
// GETs and SETs included, error replies by code, and CONFIG RESETSTAT.
func TestCommandStats(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	if got := c.do("CONFIG", "RESETSTAT"); got != "+OK\r\n" {
		t.Fatalf("CONFIG RESETSTAT = %q", got)
	}
	c.do("SET", "n", "1")
	// 20 pipelined GETs and 5 SETs: served in groups (group.go).
	var batch strings.Builder
	for range 20 {
		batch.WriteString(encode("GET", "n"))
	}
	for i := range 5 {
		batch.WriteString(encode("SET", "s"+strconv.Itoa(i), "v"))
	}
	c.send(batch.String())
	for range 25 {
		c.reply()
	}
	c.do("INCR", "n")
	c.do("SET", "str", "x")
	c.do("INCR", "str")                                            // failed: not an integer
	c.do("GET")                                                    // rejected: arity
	c.do("NOSUCH")                                                 // unknown: an error, no command
	c.do("EVAL", "return redis.call('incr', KEYS[1])", "1", "str") // a script's error reply
	c.do("MULTI")
	c.do("INCR", "n")
	c.do("EXEC")
	st := cmdstat(t, c)
	for _, tc := range []struct{ name, field, want string }{
		{"cmdstat_get", "calls", "20"},
		{"cmdstat_get", "rejected_calls", "1"},
		{"cmdstat_set", "calls", "7"},
		{"cmdstat_incr", "calls", "4"},
		{"cmdstat_incr", "failed_calls", "2"},
		{"cmdstat_eval", "calls", "1"},
		{"cmdstat_eval", "failed_calls", "1"},
		{"cmdstat_multi", "calls", "1"},
		{"cmdstat_exec", "calls", "1"},
		{"cmdstat_exec", "failed_calls", "0"},
		{"cmdstat_config|resetstat", "calls", "1"},
		{"errorstat_ERR", "count", "4"},
	} {
		if got := st[tc.name][tc.field]; got != tc.want {
			t.Errorf("%s %s = %q, want %s (%v)", tc.name, tc.field, got, tc.want, st[tc.name])
		}
	}
	for name, f := range st {
		if !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		if _, err := strconv.ParseFloat(f["usec_per_call"], 64); err != nil || f["usec"] == "" {
			t.Errorf("%s: usec %q usec_per_call %q", name, f["usec"], f["usec_per_call"])
		}
	}
	if u, _ := strconv.ParseFloat(st["cmdstat_incr"]["usec_per_call"], 64); u <= 0 {
		t.Errorf("cmdstat_incr usec_per_call = %v: the first call of a command is always timed", u)
	}
	info := c.do("INFO", "stats")
	if !strings.Contains(info, "total_error_replies:4\r\n") {
		t.Errorf("INFO stats: want total_error_replies:4:\n%s", info)
	}

	c.do("CONFIG", "RESETSTAT")
	st = cmdstat(t, c)
	if len(st) != 1 || st["cmdstat_config|resetstat"]["calls"] != "1" {
		t.Errorf("after CONFIG RESETSTAT: %v", st)
	}
	info = c.do("INFO", "stats")
	for _, want := range []string{"total_error_replies:0\r\n", "keyspace_hits:0\r\n", "total_connections_received:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO stats after CONFIG RESETSTAT lacks %q:\n%s", want, info)
		}
	}
}

// TestCommandStatsPerServer: two servers in one process count their own
// commands, and CONFIG RESETSTAT zeroes only its own server's.
func TestCommandStatsPerServer(t *testing.T) {
	a, b := dial(t, startServer(t, Config{}).addr), dial(t, startServer(t, Config{}).addr)
	for range 3 {
		a.do("SET", "k", "v")
	}
	b.do("SET", "k", "v")
	b.do("GET", "k")
	for _, tc := range []struct {
		name     string
		c        *rawClient
		set, get string
	}{{"a", a, "3", ""}, {"b", b, "1", "1"}} {
		st := cmdstat(t, tc.c)
		if got := st["cmdstat_set"]["calls"]; got != tc.set {
			t.Errorf("server %s: SET calls = %q, want %q", tc.name, got, tc.set)
		}
		if got := st["cmdstat_get"]["calls"]; got != tc.get {
			t.Errorf("server %s: GET calls = %q, want %q", tc.name, got, tc.get)
		}
	}
	a.do("CONFIG", "RESETSTAT")
	if got := cmdstat(t, a)["cmdstat_set"]["calls"]; got != "" {
		t.Errorf("server a after its CONFIG RESETSTAT: SET calls = %q, want none", got)
	}
	if got := cmdstat(t, b)["cmdstat_set"]["calls"]; got != "1" {
		t.Errorf("server b after a's CONFIG RESETSTAT: SET calls = %q, want 1", got)
	}
}

// clientLine is Redis 7's CLIENT LIST line, as unit/introspection checks
// it.
var clientLine = regexp.MustCompile(`^id=\d+ addr=127\.0\.0\.1:\d+ laddr=127\.0\.0\.1:\d+ fd=\d+ name=\S* age=\d+ idle=\d+ flags=[NxecA]+ db=0 sub=0 psub=0 ssub=0 multi=-?\d+ qbuf=\d+ qbuf-free=\d+ argv-mem=\d+ multi-mem=\d+ rbs=\d+ rbp=\d+ obl=\d+ oll=0 omem=0 tot-mem=\d+ events=r cmd=\S+ user=default redir=-1 resp=[23]$`)

func TestClientListAndInfo(t *testing.T) {
	ts := startServer(t, Config{})
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	idA := strings.TrimSpace(a.do("CLIENT", "ID")[1:])
	idB := strings.TrimSpace(b.do("CLIENT", "ID")[1:])
	b.do("CLIENT", "SETNAME", "bee")
	b.do("MULTI")
	b.do("SET", "x", "1")
	b.do("SET", "y", "2")

	info := a.do("CLIENT", "INFO")
	line := strings.TrimSuffix(info[strings.Index(info, "\r\n")+2:], "\n\r\n")
	if !clientLine.MatchString(line) || !strings.Contains(line, " flags=N ") || !strings.Contains(line, " qbuf=26 ") ||
		!strings.Contains(line, " cmd=client|info ") || !strings.HasPrefix(line, "id="+idA+" ") || !strings.Contains(line, " multi=-1 ") {
		t.Errorf("CLIENT INFO = %q", line)
	}

	list := a.do("CLIENT", "LIST")
	lines := strings.Split(strings.TrimSuffix(list[strings.Index(list, "\r\n")+2:], "\n\r\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("CLIENT LIST with two clients: %q", lines)
	}
	for _, l := range lines {
		if !clientLine.MatchString(l) {
			t.Errorf("CLIENT LIST line %q is not Redis's format", l)
		}
	}
	if !strings.HasPrefix(lines[0], "id="+idA+" ") || !strings.Contains(lines[0], " cmd=client|list ") {
		t.Errorf("CLIENT LIST's first line (the caller) = %q", lines[0])
	}
	for _, want := range []string{"id=" + idB + " ", " name=bee ", " flags=x ", " multi=2 ", " cmd=set "} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("CLIENT LIST's line of a named client inside MULTI lacks %q: %q", want, lines[1])
		}
	}
	b.do("EXEC")
	if got := a.do("CLIENT", "LIST", "ID", idB, "999"); !strings.Contains(got, "id="+idB+" ") || !strings.Contains(got, " multi=-1 ") ||
		!strings.Contains(got, " cmd=exec ") || strings.Count(got, "id=") != 1 {
		t.Errorf("CLIENT LIST ID %s 999 = %q", idB, got)
	}
	if got := a.do("CLIENT", "LIST", "TYPE", "normal"); strings.Count(got, "id=") != 2 {
		t.Errorf("CLIENT LIST TYPE normal = %q", got)
	}
	a.do("HELLO", "3")
	if got := a.do("CLIENT", "INFO"); !strings.HasPrefix(got, "=") || !strings.Contains(got, "txt:id="+idA+" ") || !strings.Contains(got, " resp=3\n") {
		t.Errorf("CLIENT INFO in RESP3 = %q", got)
	}
}

// TestClientKill: a killed client's connection is closed and leaves the
// count at once; the old form by address; SKIPME no kills the caller after
// its reply.
func TestClientKill(t *testing.T) {
	ts := startServer(t, Config{})
	a, b, c := dial(t, ts.addr), dial(t, ts.addr), dial(t, ts.addr)
	idB := strings.TrimSpace(b.do("CLIENT", "ID")[1:])
	c.do("PING")
	if got := a.do("CLIENT", "KILL", "ID", idB); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL ID %s = %q", idB, got)
	}
	if !b.closed() {
		t.Fatal("the killed client's connection is still open")
	}
	if got := a.do("INFO", "clients"); !strings.Contains(got, "connected_clients:2\r\n") {
		t.Errorf("after a kill: %q", got)
	}
	if got := a.do("CLIENT", "LIST"); strings.Contains(got, "id="+idB+" ") {
		t.Errorf("CLIENT LIST after the kill still lists %s: %q", idB, got)
	}
	// The old form, by address: +OK, and the client is gone.
	addr := c.nc.LocalAddr().String()
	if got := a.do("CLIENT", "KILL", addr); got != "+OK\r\n" {
		t.Fatalf("CLIENT KILL %s = %q", addr, got)
	}
	if !c.closed() {
		t.Fatal("the client killed by address is still connected")
	}
	// SKIPME no: the caller too, after its reply.
	d := dial(t, ts.addr)
	d.do("PING")
	if got := a.do("CLIENT", "KILL", "USER", "default", "SKIPME", "no"); got != ":2\r\n" {
		t.Fatalf("CLIENT KILL USER default SKIPME no = %q", got)
	}
	if !a.closed() || !d.closed() {
		t.Fatal("CLIENT KILL SKIPME no left a client connected")
	}
	serves(t, ts.addr)
}

// TestClientReply: OFF drops every reply until ON, SKIP the next one, as
// in Redis; pipelined GETs, which are served in groups, too.
func TestClientReply(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	c.do("SET", "k", "v")
	c.send(encode("CLIENT", "REPLY", "OFF") + encode("PING", "a") + encode("GET", "k") + encode("GET", "k") +
		encode("SET", "k", "w") + encode("NOSUCH") + encode("CLIENT", "REPLY", "ON") + encode("PING", "b"))
	if got := c.reply(); got != "+OK\r\n" {
		t.Fatalf("first reply after CLIENT REPLY OFF … ON = %q, want ON's +OK", got)
	}
	if got := c.reply(); got != "$1\r\nb\r\n" {
		t.Fatalf("after ON: %q", got)
	}
	if got := c.do("GET", "k"); got != "$1\r\nw\r\n" {
		t.Fatalf("the SET sent with replies off did not run: GET = %q", got)
	}
	c.send(encode("CLIENT", "REPLY", "SKIP") + encode("PING", "skipped") + encode("PING", "c"))
	if got := c.reply(); got != "$1\r\nc\r\n" {
		t.Fatalf("after CLIENT REPLY SKIP: %q", got)
	}
	c.send(encode("CLIENT", "REPLY", "SKIP") + encode("CLIENT", "REPLY", "ON") + encode("PING"))
	if got := c.reply(); got != "+OK\r\n" {
		t.Fatalf("CLIENT REPLY SKIP then ON: %q", got)
	}
	if got := c.reply(); got != "+PONG\r\n" {
		t.Fatalf("then PING: %q", got)
	}
	// Separate writes: the state holds across batches.
	c.send(encode("CLIENT", "REPLY", "OFF"))
	c.send(encode("GET", "k"))
	c.send(encode("CLIENT", "REPLY", "ON"))
	if got := c.reply(); got != "+OK\r\n" {
		t.Fatalf("OFF, GET, ON in three writes: %q", got)
	}
}

// TestConfigSetBusyThreshold: CONFIG SET busy-reply-threshold (or its
// alias lua-time-limit) sets the threshold of scripts and of the stores'
// waits, and a client that needs a running script's key gets -BUSY.
func TestConfigSetBusyThreshold(t *testing.T) {
	ts := startServer(t, Config{})
	admin, looping, other := dial(t, ts.addr), dial(t, ts.addr), dial(t, ts.addr)
	if got := admin.do("CONFIG", "SET", "lua-time-limit", "100"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET lua-time-limit 100 = %q", got)
	}
	if got := admin.do("CONFIG", "GET", "busy-reply-threshold"); got != "*2\r\n$20\r\nbusy-reply-threshold\r\n$3\r\n100\r\n" {
		t.Fatalf("CONFIG GET busy-reply-threshold = %q", got)
	}
	if got := ts.scripts.BusyThreshold(); got != 100*time.Millisecond {
		t.Fatalf("the script engine's threshold = %v, want 100ms", got)
	}
	if got := ts.busy.Load(); got != 100*time.Millisecond {
		t.Fatalf("the stores' threshold = %v, want 100ms", got)
	}
	done := make(chan string, 1)
	go func() {
		done <- looping.do("EVAL", "local v = redis.call('get', KEYS[1]); while true do end", "1", "busycfg")
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := other.do("GET", "busycfg")
		if got == "-"+script.ErrBusyEval+"\r\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET of a busy script's key: %q, never -BUSY", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := scriptKill(t, admin); got != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", got)
	}
	if got := <-done; !strings.Contains(got, "Script killed by user") {
		t.Fatalf("the killed script's reply = %q", got)
	}
}

// TestBusyThresholdPerServer: the threshold CONFIG SET changes is the
// server's own: another server in the process keeps its own, for its
// scripts and its stores.
func TestBusyThresholdPerServer(t *testing.T) {
	a, b := startServer(t, Config{}), startServer(t, Config{})
	if got := dial(t, a.addr).do("CONFIG", "SET", "busy-reply-threshold", "100"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET busy-reply-threshold 100 = %q", got)
	}
	if got := dial(t, b.addr).do("CONFIG", "GET", "busy-reply-threshold"); got != "*2\r\n$20\r\nbusy-reply-threshold\r\n$4\r\n5000\r\n" {
		t.Errorf("the other server's CONFIG GET busy-reply-threshold = %q", got)
	}
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{
		{"the server's", a.busy.Load(), 100 * time.Millisecond},
		{"its scripts'", a.scripts.BusyThreshold(), 100 * time.Millisecond},
		{"the other server's", b.busy.Load(), backends.DefaultBusyThreshold},
		{"its scripts'", b.scripts.BusyThreshold(), backends.DefaultBusyThreshold},
	} {
		if tc.got != tc.want {
			t.Errorf("%s threshold = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestConfigSetMaxClients: CONFIG SET maxclients takes effect for the
// next connection.
func TestConfigSetMaxClients(t *testing.T) {
	ts := startServer(t, Config{})
	a := dial(t, ts.addr)
	if got := a.do("CONFIG", "SET", "maxclients", "1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET maxclients 1 = %q", got)
	}
	b := dial(t, ts.addr)
	if got := b.reply(); got != "-"+errMaxClients+"\r\n" {
		t.Fatalf("a second client with maxclients 1: %q", got)
	}
	if got := a.do("CONFIG", "GET", "maxclients"); got != "*2\r\n$10\r\nmaxclients\r\n$1\r\n1\r\n" {
		t.Fatalf("CONFIG GET maxclients = %q", got)
	}
}

// TestConfigGetPatterns: globs over the names, aliases reported under both
// names, each name once.
func TestConfigGetPatterns(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2})
	defer rdb.Close()
	all, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(paramNames) {
		t.Errorf("CONFIG GET * has %d parameters, want %d", len(all), len(paramNames))
	}
	// Setting each to its own value is accepted, as Redis's CONFIG sanity test does.
	for k, v := range all {
		if k == "requirepass" || params[k].why == immutable { // as Redis's test skips them
			continue
		}
		if err := rdb.ConfigSet(ctx, k, v).Err(); err != nil {
			t.Errorf("CONFIG SET %s %q (its value): %v", k, v, err)
		}
	}
	res, err := rdb.Do(ctx, "CONFIG", "GET", "maxmemory*", "*of", "BIND", "maxmemory").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i := 0; i+1 < len(res); i += 2 {
		if _, dup := got[res[i]]; dup {
			t.Errorf("CONFIG GET answers %s twice", res[i])
		}
		got[res[i]] = res[i+1]
	}
	for _, want := range []string{"maxmemory", "maxmemory-policy", "maxmemory-clients", "replicaof", "slaveof", "BIND"} {
		if _, ok := got[want]; !ok {
			t.Errorf("CONFIG GET maxmemory* *of BIND maxmemory lacks %s: %v", want, got)
		}
	}
	if port := ts.addr[strings.LastIndexByte(ts.addr, ':')+1:]; all["port"] != port || all["bind"] != "127.0.0.1" {
		t.Errorf("port %q bind %q, want %s 127.0.0.1", all["port"], all["bind"], port)
	}
}

// TestObjectLooksUpTheKeyFirst: OBJECT's subcommands answer nil for a
// missing key before anything else, as Redis's objectCommandLookupOrReply.
func TestObjectLooksUpTheKeyFirst(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	c.do("SADD", "s", "m")
	for _, sub := range []string{"FREQ", "IDLETIME", "REFCOUNT", "ENCODING"} {
		if got := c.do("OBJECT", sub, "missing"); got != "$-1\r\n" {
			t.Errorf("OBJECT %s missing = %q, want nil", sub, got)
		}
	}
	for sub, want := range map[string]string{"IDLETIME": ":0\r\n", "REFCOUNT": ":1\r\n", "ENCODING": "$9\r\nhashtable\r\n",
		"FREQ": "-ERR An LFU maxmemory policy is not selected, access frequency not tracked."} {
		if got := c.do("OBJECT", sub, "s"); !strings.HasPrefix(got, want) {
			t.Errorf("OBJECT %s s = %q, want %q", sub, got, want)
		}
	}
}

// TestConfigEncodingLimits: the encoding thresholds (hash-max-listpack-
// entries and the rest, under their ziplist aliases too) are read and set
// as Redis's, and OBJECT ENCODING reports collections by them.
func TestConfigEncodingLimits(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"CONFIG", "GET", "hash-max-ziplist-entries"}, "*2\r\n$24\r\nhash-max-ziplist-entries\r\n$3\r\n512\r\n"},
		{[]string{"CONFIG", "SET", "hash-max-ziplist-entries", "2"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "hash-max-listpack-entries"}, "*2\r\n$25\r\nhash-max-listpack-entries\r\n$1\r\n2\r\n"},
		{[]string{"HSET", "h", "a", "1", "b", "2"}, ":2\r\n"},
		{[]string{"OBJECT", "ENCODING", "h"}, "$8\r\nlistpack\r\n"},
		{[]string{"HSET", "h", "c", "3"}, ":1\r\n"},
		{[]string{"OBJECT", "ENCODING", "h"}, "$9\r\nhashtable\r\n"},
		{[]string{"CONFIG", "SET", "zset-max-ziplist-value", "1k"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "zset-max-listpack-value"}, "*2\r\n$23\r\nzset-max-listpack-value\r\n$4\r\n1000\r\n"},
		{[]string{"CONFIG", "SET", "set-max-intset-entries", "1"}, "+OK\r\n"},
		{[]string{"SADD", "s", "1", "2"}, ":2\r\n"},
		{[]string{"OBJECT", "ENCODING", "s"}, "$9\r\nhashtable\r\n"},
		{[]string{"CONFIG", "SET", "list-max-ziplist-size", "1", "list-compress-depth", "2"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "list-compress-depth"}, "*2\r\n$19\r\nlist-compress-depth\r\n$1\r\n2\r\n"},
		// Redis's refusals, under the name the client used.
		{[]string{"CONFIG", "SET", "hash-max-ziplist-value", "-1"}, "-ERR CONFIG SET failed (possibly related to argument 'hash-max-ziplist-value') - argument must be a memory value\r\n"},
		{[]string{"CONFIG", "SET", "List-Max-Ziplist-Size", "3000000000"}, "-ERR CONFIG SET failed (possibly related to argument 'list-max-ziplist-size') - argument must be between -2147483648 and 2147483647 inclusive\r\n"},
		{[]string{"CONFIG", "SET", "set-max-intset-entries", "x"}, "-ERR CONFIG SET failed (possibly related to argument 'set-max-intset-entries') - argument couldn't be parsed into an integer\r\n"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// TestEncodingLimitsPerServer: the encoding thresholds are one server's,
// as busy-reply-threshold is: another server in the process keeps its own.
func TestEncodingLimitsPerServer(t *testing.T) {
	a, b := dial(t, startServer(t, Config{}).addr), dial(t, startServer(t, Config{}).addr)
	if got := a.do("CONFIG", "SET", "set-max-intset-entries", "1"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET set-max-intset-entries 1 = %q", got)
	}
	for _, c := range []*rawClient{a, b} {
		c.do("SADD", "s", "1", "2")
	}
	if got := a.do("OBJECT", "ENCODING", "s"); got != "$9\r\nhashtable\r\n" {
		t.Errorf("OBJECT ENCODING on the server set to 1 = %q", got)
	}
	if got := b.do("OBJECT", "ENCODING", "s"); got != "$6\r\nintset\r\n" {
		t.Errorf("OBJECT ENCODING on the other server = %q", got)
	}
}

// TestTimeAndLastSave: TIME is now, LASTSAVE the start.
func TestTimeAndLastSave(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr})
	defer rdb.Close()
	now, err := rdb.Time(ctx).Result()
	if err != nil || time.Since(now).Abs() > 5*time.Second {
		t.Errorf("TIME = %v, %v", now, err)
	}
	if last, err := rdb.LastSave(ctx).Result(); err != nil || last != ts.started.Unix() {
		t.Errorf("LASTSAVE = %d, %v; want %d", last, err, ts.started.Unix())
	}
}
