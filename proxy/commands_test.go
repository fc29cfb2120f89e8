package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/route"
)

// Replies that are pgcache's own (Redis's are compared in redis_test.go).

func TestServerCommands(t *testing.T) {
	ts := startServer(t, Config{Version: "1.2.3"})
	c := dial(t, ts.addr)
	id := c.do("CLIENT", "ID")
	hello := func(proto string) string {
		return "*14\r\n$6\r\nserver\r\n$7\r\npgcache\r\n$7\r\nversion\r\n$5\r\n7.2.0\r\n$5\r\nproto\r\n:" + proto +
			"\r\n$2\r\nid\r\n" + id + "$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	}
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"HELLO"}, hello("2")},
		{[]string{"HELLO", "2", "AUTH", "default", "any", "SETNAME", "me"}, hello("2")},
		{[]string{"CLIENT", "GETNAME"}, "$2\r\nme\r\n"},
		{[]string{"CLIENT", "SETINFO", "LIB-NAME", "go-redis(,go1.26)"}, "+OK\r\n"},
		{[]string{"CLIENT", "SETINFO", "lib-ver", "9.22.0"}, "+OK\r\n"},
		{[]string{"CLIENT", "SETINFO", "lib-ver", "9 22"}, "-ERR lib-ver cannot contain spaces, newlines or special characters.\r\n"},
		{[]string{"CLIENT", "SETINFO", "color", "blue"}, "-ERR Unrecognized option 'color'\r\n"},
		{[]string{"CLIENT", "SETINFO", "lib-name"}, "-ERR wrong number of arguments for 'client|setinfo' command\r\n"},
		{[]string{"CLIENT", "TRACKING", "ON"}, "+OK\r\n"},
		{[]string{"CLIENT", "TRACKING", "OFF"}, "+OK\r\n"},
		{[]string{"CLIENT", "MAINT_NOTIFICATIONS", "ON"}, "-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n"},
		{[]string{"COMMAND", "COUNT"}, ":" + strconv.Itoa(len(commandList)) + "\r\n"},
		{[]string{"COMMAND", "DOCS"}, "*0\r\n"},
		{[]string{"COMMAND", "INFO", "get", "nosuch"}, "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*1\r\n+@read\r\n*0\r\n*0\r\n*0\r\n$-1\r\n"},
		{[]string{"COMMAND", "INFO", "MSET"}, "*1\r\n*10\r\n$4\r\nmset\r\n:-3\r\n*1\r\n+write\r\n:1\r\n:-1\r\n:2\r\n*1\r\n+@write\r\n*0\r\n*0\r\n*0\r\n"},
		{[]string{"COMMAND", "LIST", "FILTERBY", "MODULE", "x"}, "-ERR syntax error\r\n"},
		{[]string{"DBSIZE"}, ":0\r\n"},
		{[]string{"SET", "a", "1"}, "+OK\r\n"},
		{[]string{"MSET", "pg:b", "2", "pg:x:c", "3"}, "+OK\r\n"},
		{[]string{"DBSIZE"}, ":3\r\n"},
		{[]string{"INFO", "nosuch"}, "$0\r\n\r\n"},
		{[]string{"INFO", "clients"}, "$140\r\n# Clients\r\nconnected_clients:1\r\ncluster_connections:0\r\nmaxclients:10000\r\nblocked_clients:0\r\ntracking_clients:0\r\nclients_in_timeout_table:0\r\n\r\n"},
		{[]string{"INFO", "KEYSPACE"}, "$44\r\n# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\n\r\n"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.cmd, got, tc.want)
		}
	}

	list := c.do("COMMAND", "LIST")
	for _, name := range []string{"get", "set", "mget", "expire", "hello", "client", "command", "info"} {
		if !strings.Contains(list, "\r\n"+name+"\r\n") {
			t.Errorf("COMMAND LIST lacks %s", name)
		}
	}
	if all := c.do("COMMAND"); !strings.HasPrefix(all, "*"+strconv.Itoa(len(commandList))+"\r\n") || !strings.Contains(all, "client|setname") {
		t.Errorf("COMMAND = %.200q...", all)
	}

	// RESP3: maps, sets, nulls and verbatim strings.
	if got, want := c.do("HELLO", "3"), "%7"+hello("3")[3:]; got != want {
		t.Errorf("HELLO 3:\n got %q\nwant %q", got, want)
	}
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"CLIENT", "SETNAME", ""}, "+OK\r\n"},
		{[]string{"CLIENT", "GETNAME"}, "_\r\n"},
		{[]string{"COMMAND", "DOCS"}, "%0\r\n"},
		{[]string{"COMMAND", "INFO", "get"}, "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~1\r\n+@read\r\n~0\r\n~0\r\n~0\r\n"},
		{[]string{"INFO", "clients"}, "=144\r\ntxt:# Clients\r\nconnected_clients:1\r\ncluster_connections:0\r\nmaxclients:10000\r\nblocked_clients:0\r\ntracking_clients:0\r\nclients_in_timeout_table:0\r\n\r\n"},
		{[]string{"MGET", "a", "nosuch"}, "*2\r\n$1\r\n1\r\n_\r\n"},
		{[]string{"HELLO", "2"}, hello("2")},
		{[]string{"GET", "nosuch"}, "$-1\r\n"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.cmd, got, tc.want)
		}
	}
}

func TestInfo(t *testing.T) {
	ts := startServer(t, Config{Version: "1.2.3"})
	ts.SetInfoFunc(func(context.Context) [][2]string {
		return [][2]string{{"backend_mem_entries", "42"}}
	})
	c := dial(t, ts.addr)
	c.do("SET", "k", "v")
	c.do("GET", "k")
	c.do("GET", "nosuch")
	info := c.do("INFO")
	for _, want := range []string{
		"# Server\r\n", "redis_version:7.2.0\r\n", "pgcache_version:1.2.3\r\n", "redis_mode:standalone\r\n",
		"process_id:", "uptime_in_seconds:", "tcp_port:" + ts.addr[strings.LastIndexByte(ts.addr, ':')+1:] + "\r\n",
		"\r\n\r\n# Clients\r\nconnected_clients:1\r\ncluster_connections:0\r\nmaxclients:10000\r\n",
		"# Memory\r\nused_memory:",
		"# Stats\r\ntotal_connections_received:1\r\ntotal_commands_processed:3\r\n",
		"keyspace_hits:1\r\nkeyspace_misses:1\r\n",
		"# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n",
		"# Backends\r\nbackend_mem_entries:42\r\n",
	} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q:\n%s", want, info)
		}
	}
	if got := c.do("INFO", "server", "STATS"); strings.Contains(got, "# Clients") || !strings.Contains(got, "# Stats") {
		t.Errorf("INFO server stats = %q", got)
	}
	if got := c.do("INFO", "backends"); !strings.HasSuffix(got, "# Backends\r\nbackend_mem_entries:42\r\n\r\n") {
		t.Errorf("INFO backends = %q", got)
	}
}

// TestRouting: keys go to the route with the longest matching prefix,
// which stores them without it; multi-key commands split across routes
// and answer in the client's order.
func TestRouting(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	c.do("MSET", "k", "mem", "pg:k", "pg", "pg:x:k", "pgx", "pg:k2", "pg2", "k2", "mem2")
	for _, tc := range []struct{ route, key, want string }{
		{"memory", "k", "mem"}, {"postgres", "k", "pg"}, {"pgx", "k", "pgx"},
		{"postgres", "k2", "pg2"}, {"memory", "k2", "mem2"},
	} {
		v, ok, err := ts.backend(tc.route).Get(context.Background(), tc.key)
		if err != nil || !ok || string(v) != tc.want {
			t.Errorf("route %s key %q = %q, %v, %v; want %q", tc.route, tc.key, v, ok, err, tc.want)
		}
	}
	if got, want := c.do("MGET", "pg:x:k", "k", "nosuch", "pg:k", "pg:x:nosuch", "k2", "pg:k2"),
		"*7\r\n$3\r\npgx\r\n$3\r\nmem\r\n$-1\r\n$2\r\npg\r\n$-1\r\n$4\r\nmem2\r\n$3\r\npg2\r\n"; got != want {
		t.Errorf("MGET across routes:\n got %q\nwant %q", got, want)
	}
	if got := c.do("EXISTS", "k", "pg:k", "pg:x:k", "pg:x:nosuch", "k"); got != ":4\r\n" {
		t.Errorf("EXISTS across routes = %q", got)
	}
	if got := c.do("DEL", "pg:x:k", "k", "nosuch", "pg:k"); got != ":3\r\n" {
		t.Errorf("DEL across routes = %q", got)
	}
	if got := c.do("MGET", "k", "pg:k", "pg:x:k", "k2"); got != "*4\r\n$-1\r\n$-1\r\n$-1\r\n$4\r\nmem2\r\n" {
		t.Errorf("MGET after DEL = %q", got)
	}
}

// TestNoRoute: without a catch-all, a key no prefix matches is an error,
// and a multi-key command naming one runs nothing.
func TestNoRoute(t *testing.T) {
	ts := startServerWith(t, Config{}, func(r *route.Route) {
		if r.Name == "memory" {
			r.Prefixes = nil // HTTP only
		}
	})
	c := dial(t, ts.addr)
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"SET", "k", "v"}, "-ERR no route for key 'k'\r\n"},
		{[]string{"GET", "k\r\nx"}, "-ERR no route for key 'k  x'\r\n"},
		{[]string{"MSET", "pg:a", "1", "zz", "2"}, "-ERR no route for key 'zz'\r\n"},
		{[]string{"GET", "pg:a"}, "$-1\r\n"},
		{[]string{"SET", "pg:a", "1"}, "+OK\r\n"},
		{[]string{"DEL", "pg:a", "zz"}, "-ERR no route for key 'zz'\r\n"},
		{[]string{"GET", "pg:a"}, "$1\r\n1\r\n"},
		{[]string{"DBSIZE"}, ":1\r\n"},
	} {
		if got := c.do(tc.cmd...); got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.cmd, got, tc.want)
		}
	}
}

// TestValueLimits: a route's MaxValueBytes refuses larger values, and when
// every route has one, a bulk larger than all of them is a protocol error.
func TestValueLimits(t *testing.T) {
	ts := startServerWith(t, Config{}, func(r *route.Route) {
		r.MaxValueBytes = 100
		if r.Name == "postgres" {
			r.MaxValueBytes = 10
		}
	})
	c := dial(t, ts.addr)
	if got := c.do("SET", "pg:k", strings.Repeat("v", 11)); got != "-ERR value too large\r\n" {
		t.Errorf("SET over the route's limit = %q", got)
	}
	if got := c.do("MSET", "a", "1", "pg:k", strings.Repeat("v", 11)); got != "-ERR value too large\r\n" {
		t.Errorf("MSET over the route's limit = %q", got)
	}
	if got := c.do("SET", "k", strings.Repeat("v", 100)); got != "+OK\r\n" {
		t.Errorf("SET at the limit = %q", got)
	}
	// A pipelined run on one collection: the value over the limit fails
	// its own command only.
	pipeline(t, c, []step{
		{[]string{"RPUSH", "pg:l", "a"}, ":1\r\n"},
		{[]string{"RPUSH", "pg:l", strings.Repeat("v", 11)}, "-ERR value too large\r\n"},
		{[]string{"RPUSH", "pg:l", "b"}, ":2\r\n"},
		{[]string{"LLEN", "pg:l"}, ":2\r\n"},
	})
	if got := c.do("SET", "k", strings.Repeat("v", 101)); got != "-ERR Protocol error: invalid bulk length\r\n" || !c.closed() {
		t.Errorf("SET past every route's limit = %q, want a protocol error and a close", got)
	}
	serves(t, ts.addr)
}

func TestBackendErrorReplies(t *testing.T) {
	r := &route.Route{Name: "sessions", BackendName: "pg"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("connect: %w", backends.ErrUnavailable), "ERR backend pg unavailable"},
		{backends.ErrNotInteger, "ERR value is not an integer or out of range"},
		{fmt.Errorf("incr: %w", backends.ErrOverflow), "ERR increment or decrement would overflow"},
		{backends.ErrValueTooLarge, "ERR value too large"},
		{fmt.Errorf("key %q is not a uuid: %w", "x", backends.ErrBadKey), `ERR key "x" is not a uuid: invalid key`},
		{backends.ErrBadValue, "ERR invalid value"},
		{errors.New("deadlock detected"), "ERR backend pg: deadlock detected"},
		{context.Canceled, "ERR backend pg: context canceled"},
	} {
		if got := backendError(r, tc.err); got != tc.want {
			t.Errorf("backendError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestBorrowedKeys: keys handed to a backend point into the read buffer,
// which the next request overwrites; what the backend keeps must not.
func TestBorrowedKeys(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	for i, write := range [][]string{
		{"SET", "b1", "v"}, {"SET", "b2", "v", "EX", "100"}, {"SETNX", "b3", "v"}, {"INCR", "b4"},
		{"MSET", "b5", "v", "pg:b6", "v"}, {"EXPIRE", "b1", "100"}, {"GETEX", "b2", "PERSIST"},
		{"PEXPIRE", "b3", "100000"}, {"GETEX", "b4", "EX", "100"}, {"SET", "b5", "w", "KEEPTTL", "GET"},
	} {
		c.do(write...)
		c.do("ECHO", strings.Repeat(strconv.Itoa(i), 64)) // overwrite the buffer
	}
	if got, want := c.do("MGET", "b1", "b2", "b3", "b4", "b5", "pg:b6"), "*6\r\n$1\r\nv\r\n$1\r\nv\r\n$1\r\nv\r\n$1\r\n1\r\n$1\r\nw\r\n$1\r\nv\r\n"; got != want {
		t.Errorf("MGET = %q, want %q", got, want)
	}
	for _, k := range []string{"b1", "b3", "b4"} {
		if got := c.do("TTL", k); got != ":100\r\n" {
			t.Errorf("TTL %s = %q, want :100", k, got)
		}
	}
}

// TestAllBytes: every byte value round-trips in keys and values.
func TestAllBytes(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for i := range 256 {
		key := string(all[i:]) + string(all[:i])
		if got := c.do("SET", key, string(all[:i])); got != "+OK\r\n" {
			t.Fatalf("SET with byte %d first = %q", i, got)
		}
	}
	for i := range 256 {
		key := string(all[i:]) + string(all[:i])
		want := "$" + strconv.Itoa(i) + "\r\n" + string(all[:i]) + "\r\n"
		if got := c.do("GET", key); got != want {
			t.Fatalf("GET with byte %d first = %q, want %q", i, got, want)
		}
	}
	if got := c.do("ECHO", string(all)); got != "$256\r\n"+string(all)+"\r\n" {
		t.Errorf("ECHO of all bytes = %q", got)
	}
}

// TestPipelining: a thousand commands in one write, answered in order.
func TestPipelining(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	var in, want strings.Builder
	for i := range 1000 {
		k, v := "p"+strconv.Itoa(i), strconv.Itoa(i*7)
		switch i % 4 {
		case 0:
			in.WriteString(encode("SET", k, v))
			want.WriteString("+OK\r\n")
		case 1:
			in.WriteString(encode("SET", k, v))
			in.WriteString(encode("GET", k))
			want.WriteString("+OK\r\n$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n")
		case 2:
			in.WriteString("INCRBY " + k + " 5\r\n") // inline, in the same stream
			want.WriteString(":5\r\n")
		case 3:
			in.WriteString(encode("GET", "nosuch"))
			want.WriteString("$-1\r\n")
		}
	}
	c.send(in.String())
	var got strings.Builder
	for got.Len() < want.Len() {
		got.WriteString(c.reply())
	}
	if got.String() != want.String() {
		t.Fatalf("pipelined replies differ (got %d bytes, want %d)", got.Len(), want.Len())
	}
	if n := ts.Stats().CommandsProcessed.Load(); n != 1250 {
		t.Errorf("CommandsProcessed = %d, want 1250", n)
	}
}

func TestInlineCommands(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	for _, tc := range []struct{ in, want string }{
		{"SET greeting \"hello world\"\r\n", "+OK\r\n"},
		{"GET greeting\n", "$11\r\nhello world\r\n"},
		{"set 'it''s' x\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	} {
		c.send(tc.in)
		if got := c.reply(); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.in, got, tc.want)
		}
	}
	if !c.closed() {
		t.Error("connection open after a protocol error")
	}
	serves(t, ts.addr)
}

func TestStatsMetrics(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	c.do("PING")
	c.do("PING")
	bad := dial(t, ts.addr)
	bad.send("*x\r\n")
	bad.reply()
	eventually(t, "protocol error counted", func() bool { return ts.Stats().ProtocolErrors.Load() == 1 })
	eventually(t, "bad client gone", func() bool { return ts.Stats().ConnectedClients.Load() == 1 })
	mfs, err := ts.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		got[mf.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	for name, want := range map[string]float64{
		"pgcache_resp_commands_total":                 2,
		"pgcache_resp_connections_total":              2,
		"pgcache_resp_connected_clients":              1,
		"pgcache_resp_protocol_errors_total":          1,
		"pgcache_resp_rejected_connections_total":     0,
		"pgcache_resp_output_limit_disconnects_total": 0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (registered: %v), want %v", name, v, ok, want)
		}
	}
}
