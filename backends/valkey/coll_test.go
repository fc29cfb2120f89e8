package valkey

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/internal/testenv"
)

// passOp is a client's request as the RESP front hands it to Do: any
// command, its keys at keyAt. Its Run is never called: Do passes it on.
type passOp struct {
	backends.Passed
	name    string
	writes  backends.Writes
	timeout time.Duration // a blocking command's (coll.Blocker)
}

func (o *passOp) Name() string            { return o.name }
func (o *passOp) Writes() backends.Writes { return o.writes }
func (o *passOp) Run(backends.View) error { return errors.New("passOp: Run called") }

// blockOp is a passOp that says it blocks, as the blocking commands' Ops do.
type blockOp struct{ passOp }

func (o *blockOp) Reply(coll.Writer)      {}
func (o *blockOp) Ready() bool            { return false }
func (o *blockOp) Timeout() time.Duration { return o.timeout }
func (o *blockOp) TimedOut(w coll.Writer) { w.NullArray() }

var _ coll.Blocker = (*blockOp)(nil)

// request makes the passOp of a command line; the keys are the arguments
// at keyAt.
func request(resp int, w backends.Writes, keyAt []int, args ...string) (*passOp, []string) {
	op := &passOp{name: strings.ToLower(args[0]), writes: w}
	for _, a := range args {
		op.Args = append(op.Args, []byte(a))
	}
	op.KeyAt, op.RESP = keyAt, resp
	keys := make([]string, len(keyAt))
	for i, at := range keyAt {
		keys[i] = args[at]
	}
	return op, keys
}

// do passes a command line on through s and returns the reply.
func do(t testing.TB, s *Store, resp int, w backends.Writes, keyAt []int, args ...string) backends.Reply {
	t.Helper()
	op, keys := request(resp, w, keyAt, args...)
	if err := s.Do(ctxT(t), keys, op); err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	if op.Reply.Kind == backends.ReplyNone {
		t.Fatalf("%s: no reply", strings.Join(args, " "))
	}
	return op.Reply
}

// wire writes a reply as the RESP front does (proxy/cmd_coll.go), in the
// client's protocol: what the client reads.
func wire(r backends.Reply, resp int, nullArray bool) string {
	var b strings.Builder
	var w func(r backends.Reply, top bool)
	w = func(r backends.Reply, top bool) {
		switch r.Kind {
		case backends.ReplyStatus:
			fmt.Fprintf(&b, "+%s\r\n", r.Str)
		case backends.ReplyError:
			fmt.Fprintf(&b, "-%s\r\n", r.Str)
		case backends.ReplyInt:
			fmt.Fprintf(&b, ":%d\r\n", r.Int)
		case backends.ReplyBulk:
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(r.Str), r.Str)
		case backends.ReplyNull:
			switch {
			case resp == 3:
				b.WriteString("_\r\n")
			case top && nullArray:
				b.WriteString("*-1\r\n")
			default:
				b.WriteString("$-1\r\n")
			}
		case backends.ReplyDouble:
			f := coll.FormatScore(r.Float)
			if resp == 3 {
				fmt.Fprintf(&b, ",%s\r\n", f)
			} else {
				fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(f), f)
			}
		case backends.ReplyBool:
			switch {
			case resp == 2:
				fmt.Fprintf(&b, ":%d\r\n", r.Int)
			case r.Int != 0:
				b.WriteString("#t\r\n")
			default:
				b.WriteString("#f\r\n")
			}
		case backends.ReplyArray, backends.ReplySet, backends.ReplyMap:
			n, c := len(r.Elems), "*"
			switch {
			case resp == 2:
			case r.Kind == backends.ReplySet:
				c = "~"
			case r.Kind == backends.ReplyMap:
				n, c = n/2, "%"
			}
			fmt.Fprintf(&b, "%s%d\r\n", c, n)
			for _, e := range r.Elems {
				w(e, false)
			}
		}
	}
	w(r, true)
	return b.String()
}

// rawConn is a plain connection to a server in RESP2 or RESP3 (HELLO 3),
// whose replies are the bytes the server sent: what Do's replies are
// compared with.
type rawConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t testing.TB, srv *testenv.Redis, resp int) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawConn{c: c, r: bufio.NewReader(c)}
	if resp == 3 {
		rc.do(t, "HELLO", "3")
	}
	return rc
}

func (rc *rawConn) send(t testing.TB, args ...string) {
	t.Helper()
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write([]byte(req.String())); err != nil {
		t.Fatal(err)
	}
}

func (rc *rawConn) do(t testing.TB, args ...string) string {
	t.Helper()
	rc.send(t, args...)
	var out strings.Builder
	if err := readRaw(rc.r, &out); err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

// readRaw copies one reply, nested ones included, from r to out.
func readRaw(r *bufio.Reader, out *strings.Builder) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	n, _ := strconv.Atoi(strings.TrimSuffix(line[1:], "\r\n"))
	switch line[0] {
	case '$', '!', '=':
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		out.Write(buf)
	case '%', '|':
		n *= 2
		fallthrough
	case '*', '~', '>':
		for range max(n, 0) {
			if err := readRaw(r, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestDoReplies: a request passed on answers what the server answers a
// client of the same protocol, byte for byte once written: the same
// commands on a route's keys through Do and on other keys through a plain
// connection, in RESP2 and RESP3.
func TestDoReplies(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	ctx := ctxT(t)
	for _, resp := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(resp), func(t *testing.T) {
			raw := dialRaw(t, server, resp)
			p := fmt.Sprintf("p%d:", resp) // the route's keys; raw's are "raw<route>:<p>…"
			rp := "raw" + s.route + ":" + p
			mustSet(t, s, p+"str", "x")
			if _, err := server.Do(ctx, "SET", rp+"str", "x"); err != nil {
				t.Fatal(err)
			}
			const (
				R  = backends.ReadOnly
				W  = backends.WritesAll
				W1 = backends.WritesFirst
			)
			for _, tc := range []struct {
				w         backends.Writes
				keyAt     []int
				nullArray bool
				args      []string
			}{
				{W, []int{1}, false, []string{"HSET", "h", "f1", "v1", "f2", "v2", "f3", ""}},
				{W, []int{1}, false, []string{"HSET", "h", "f1", "v1"}},
				{R, []int{1}, false, []string{"HGET", "h", "f1"}},
				{R, []int{1}, false, []string{"HGET", "h", "f3"}},
				{R, []int{1}, false, []string{"HGET", "h", "nope"}},
				{R, []int{1}, false, []string{"HGET", "nokey", "f"}},
				{R, []int{1}, false, []string{"HGETALL", "h"}},
				{R, []int{1}, false, []string{"HGETALL", "nokey"}},
				{W, []int{1}, false, []string{"HMSET", "h", "f4", "v4"}},
				{R, []int{1}, false, []string{"HMGET", "h", "f1", "nope", "f4"}},
				{W, []int{1}, false, []string{"HINCRBYFLOAT", "h", "n", "1.5"}},
				{W, []int{1}, false, []string{"HSET", "h"}},             // arity
				{R, []int{1}, false, []string{"HGET", "str", "f"}},      // WRONGTYPE
				{W, []int{1}, false, []string{"HSET", "str", "f", "v"}}, // WRONGTYPE
				{W, []int{1}, false, []string{"ZADD", "z", "1.5", "a", "2", "b", "-inf", "c"}},
				{W, []int{1}, false, []string{"ZADD", "z", "XX", "NX", "1", "a"}}, // syntax
				{R, []int{1}, false, []string{"ZRANGE", "z", "0", "-1", "WITHSCORES"}},
				{R, []int{1}, false, []string{"ZRANGE", "z", "0", "-1"}},
				{R, []int{1}, false, []string{"ZSCORE", "z", "a"}},
				{R, []int{1}, false, []string{"ZSCORE", "z", "nope"}},
				{R, []int{1}, false, []string{"ZRANDMEMBER", "nokey", "2", "WITHSCORES"}},
				{W, []int{1}, false, []string{"SADD", "s", "x", "y", "1"}},
				{R, []int{1}, false, []string{"SMEMBERS", "s"}},
				{R, []int{1}, false, []string{"SMISMEMBER", "s", "x", "nope"}},
				{R, []int{1}, false, []string{"SISMEMBER", "s", "y"}},
				{W, []int{1}, false, []string{"RPUSH", "l", "a", "b", "c"}},
				{W, []int{1}, true, []string{"LPOP", "l", "2"}},
				{W, []int{1}, true, []string{"LPOP", "nokey", "2"}},
				{W, []int{1}, false, []string{"LPOP", "nokey"}},
				{R, []int{1}, false, []string{"LRANGE", "l", "0", "-1"}},
				{W, []int{1, 2}, false, []string{"LMOVE", "l", "l2", "LEFT", "RIGHT"}},
				{W1, []int{1, 2, 3}, false, []string{"SINTERSTORE", "s2", "s", "nokey"}},
				{W1, []int{1, 2}, false, []string{"SUNIONSTORE", "s2", "s"}},
				{R, []int{1, 2}, false, []string{"SINTER", "s2", "s"}},
				{W1, []int{1, 3, 4}, false, []string{"ZUNIONSTORE", "z2", "2", "z", "nokey", "WEIGHTS", "2", "1"}},
				{R, []int{1}, false, []string{"ZRANGE", "z2", "0", "-1", "WITHSCORES"}},
			} {
				op, keys := request(resp, tc.w, tc.keyAt, tc.args...)
				rawArgs := append([]string(nil), tc.args...)
				for i, at := range tc.keyAt {
					keys[i] = p + keys[i]
					rawArgs[at] = rp + rawArgs[at]
				}
				op.NullArray = tc.nullArray
				if err := s.Do(ctx, keys, op); err != nil {
					t.Fatalf("%s: %v", strings.Join(tc.args, " "), err)
				}
				got, want := wire(op.Reply, resp, tc.nullArray), raw.do(t, rawArgs...)
				if got != want {
					t.Errorf("%s: got %q, want %q", strings.Join(tc.args, " "), got, want)
				}
			}
		})
	}
}

// TestDoReplyKinds: the kinds a reply is converted to, which the RESP
// front writes by (a status is no bulk, a RESP3 set no array, a map keeps
// its order); an error reply is a reply, not an error of Do.
func TestDoReplyKinds(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	mustSet(t, s, "str", "x")
	do(t, s, 3, backends.WritesAll, []int{1}, "HSET", "h", "b", "2", "a", "1")
	for _, tc := range []struct {
		resp int
		args []string
		want backends.ReplyKind
	}{
		{3, []string{"HMSET", "h", "c", "3"}, backends.ReplyStatus},
		{3, []string{"HGETALL", "h"}, backends.ReplyMap},
		{2, []string{"HGETALL", "h"}, backends.ReplyArray},
		{3, []string{"HGET", "h", "x"}, backends.ReplyNull},
		{2, []string{"HGET", "h", "x"}, backends.ReplyNull},
		{3, []string{"HGET", "str", "x"}, backends.ReplyError},
		{3, []string{"SMEMBERS", "h"}, backends.ReplyError},
	} {
		r := do(t, s, tc.resp, backends.WritesAll, []int{1}, tc.args...)
		if r.Kind != tc.want {
			t.Errorf("RESP%d %s: kind %d, want %d", tc.resp, strings.Join(tc.args, " "), r.Kind, tc.want)
		}
	}
	r := do(t, s, 3, backends.ReadOnly, []int{1}, "HGETALL", "h")
	if got := wire(r, 3, false); got != "%3\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nc\r\n$1\r\n3\r\n" {
		t.Errorf("HGETALL = %q, want b, a, c in the server's order", got)
	}
	r = do(t, s, 3, backends.ReadOnly, []int{1}, "HGET", "str", "x")
	if !strings.HasPrefix(string(r.Str), "WRONGTYPE ") {
		t.Errorf("HGET of a string = %q, want the server's WRONGTYPE", r.Str)
	}
}

// TestDoKeys: the route's keys are stored under its namespace, or as they
// are with raw_keys; a request that is not a client's is not supported.
func TestDoKeys(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, newDriver(t, server, nil))
	do(t, s, 3, backends.WritesAll, []int{1}, "HSET", "hk", "f", "prefixed")
	if got, err := server.Do(ctx, "HGET", s.route+":hk", "f"); err != nil || got != "prefixed" {
		t.Errorf("HGET %s:hk f = %q, %v; want prefixed", s.route, got, err)
	}
	raw := open(t, newDriver(t, server, map[string]any{"raw_keys": true}))
	do(t, raw, 2, backends.WritesAll, []int{1}, "HSET", "raw-hk", "f", "raw")
	if got, err := server.Do(ctx, "HGET", "raw-hk", "f"); err != nil || got != "raw" {
		t.Errorf("HGET raw-hk f = %q, %v; want raw", got, err)
	}
	if err := s.Do(ctx, []string{"hk"}, notPassed{}); !errors.Is(err, backends.ErrUnsupported) {
		t.Errorf("Do of an Op that is no request = %v, want ErrUnsupported", err)
	}
	op, keys := request(3, backends.ReadOnly, []int{1}, "HGET", "hk", "f")
	if err := s.Do(ctx, append(keys, "more"), op); err == nil {
		t.Errorf("Do with more keys than the request names succeeded")
	}
}

// notPassed is an Op that is not a client's request.
type notPassed struct{}

func (notPassed) Name() string            { return "load" }
func (notPassed) Writes() backends.Writes { return backends.ReadOnly }
func (notPassed) Run(backends.View) error { return nil }

// TestDoCluster: in a cluster a multi-key command over keys of one slot
// (hash tags) is passed on as one command; over keys of several slots it
// is answered with the server's own CROSSSLOT refusal.
func TestDoCluster(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, newDriver(t, cluster, nil))
	do(t, s, 3, backends.WritesAll, []int{1}, "SADD", "{u1}a", "x", "y")
	do(t, s, 3, backends.WritesAll, []int{1}, "SADD", "{u1}b", "y", "z")
	if r := do(t, s, 3, backends.WritesFirst, []int{1, 2, 3}, "SINTERSTORE", "{u1}d", "{u1}a", "{u1}b"); r.Kind != backends.ReplyInt || r.Int != 1 {
		t.Fatalf("SINTERSTORE over one slot = %+v, want 1", r)
	}
	if r := do(t, s, 2, backends.ReadOnly, []int{1}, "SMEMBERS", "{u1}d"); wire(r, 2, false) != "*1\r\n$1\r\ny\r\n" {
		t.Fatalf("SMEMBERS {u1}d = %q, want [y]", wire(r, 2, false))
	}
	r := do(t, s, 3, backends.WritesFirst, []int{1, 2}, "SUNIONSTORE", "d", "{u1}a")
	_, err := cluster.Do(ctx, "SUNIONSTORE", s.key("d"), s.key("{u1}a"))
	if r.Kind != backends.ReplyError || err == nil || string(r.Str) != err.Error() {
		t.Fatalf("SUNIONSTORE over two slots = %+v, want the server's %v", r, err)
	}
	if r := do(t, s, 3, backends.WritesAll, []int{1, 2}, "SMOVE", "{u1}a", "{u1}b", "x"); r.Kind != backends.ReplyInt || r.Int != 1 {
		t.Fatalf("SMOVE = %+v, want 1", r)
	}
}

// TestDoFencesClientCache: a write passed on fences its keys in the
// client cache, as the store's own writes do: a GET right after SUNIONSTORE
// replaced a cached string never answers the string.
func TestDoFencesClientCache(t *testing.T) {
	s := open(t, newDriver(t, server, cached(nil)))
	ctx := ctxT(t)
	do(t, s, 3, backends.WritesAll, []int{1}, "SADD", "src", "m")
	for i := range 50 {
		mustSet(t, s, "d", "x"+strconv.Itoa(i))
		hits := s.d.stats.hits.Load()
		for range 2 { // the second read is a client-cache hit
			if v, _ := mustGet(t, s, "d"); v != "x"+strconv.Itoa(i) {
				t.Fatalf("d = %q", v)
			}
		}
		if s.d.stats.hits.Load() == hits {
			t.Fatal("d was not served from the client cache")
		}
		do(t, s, 3, backends.WritesFirst, []int{1, 2}, "SUNIONSTORE", "d", "src")
		if v, ok, err := s.Get(ctx, "d"); !errors.Is(err, backends.ErrWrongType) && !strings.Contains(fmt.Sprint(err), "WRONGTYPE") {
			t.Fatalf("GET d after SUNIONSTORE = %q, %v, %v; want WRONGTYPE", v, ok, err)
		}
	}
	// A read passed on fences nothing: the cached string stays.
	mustSet(t, s, "d2", "y")
	mustGet(t, s, "d2")
	hits := s.d.stats.hits.Load()
	do(t, s, 3, backends.ReadOnly, []int{1}, "HGET", "d2", "f")
	if v, _ := mustGet(t, s, "d2"); v != "y" || s.d.stats.hits.Load() != hits+1 {
		t.Fatalf("d2 = %q (hits %d -> %d), want y from the client cache", v, hits, s.d.stats.hits.Load())
	}
}

// blockedClients is how many of the server's clients are blocked.
func blockedClients(t testing.TB, srv *testenv.Redis) int {
	t.Helper()
	info, err := srv.Do(context.Background(), "INFO", "clients")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "blocked_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatal("INFO clients has no blocked_clients")
	return 0
}

func blpop(resp int, timeout string, keys ...string) (*blockOp, []string) {
	args := append(append([]string{"BLPOP"}, keys...), timeout)
	at := make([]int, len(keys))
	for i := range keys {
		at[i] = 1 + i
	}
	p, ks := request(resp, backends.WritesAll, at, args...)
	p.NullArray = true
	sec, _ := strconv.ParseFloat(timeout, 64)
	p.timeout = time.Duration(sec * float64(time.Second))
	return &blockOp{*p}, ks
}

// TestDoBlocking: BLPOP passed on waits on a connection of its own, so the
// store's other requests are served meanwhile; a push through another
// client wakes it, and it answers the key as the client named it.
func TestDoBlocking(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	other := open(t, newDriver(t, server, nil))
	other.prefix = s.prefix // another client of the same route's keys
	ctx := ctxT(t)
	for _, resp := range []int{2, 3} {
		op, keys := blpop(resp, "0", "q0", "q")
		done := make(chan error, 1)
		go func() { done <- s.Do(ctx, keys, op) }()
		if !poll(500, func() bool { return blockedClients(t, server) == 1 }) {
			t.Fatal("BLPOP did not block")
		}
		start := time.Now()
		do(t, s, resp, backends.WritesAll, []int{1}, "HSET", "h", "f", "v")
		do(t, s, resp, backends.ReadOnly, []int{1}, "HGET", "h", "f")
		if d := time.Since(start); d > time.Second {
			t.Errorf("requests beside a blocked BLPOP took %v", d)
		}
		select {
		case err := <-done:
			t.Fatalf("BLPOP returned before a push: %v", err)
		default:
		}
		do(t, other, 3, backends.WritesAll, []int{1}, "RPUSH", "q", "job")
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("RPUSH did not wake BLPOP")
		}
		if got, want := wire(op.Request().Reply, resp, true), "*2\r\n$1\r\nq\r\n$3\r\njob\r\n"; got != want {
			t.Errorf("RESP%d BLPOP = %q, want %q (the key as the client named it)", resp, got, want)
		}
		// A timeout answers the nil array (RESP2) or null (RESP3).
		op, keys = blpop(resp, "0.05", "empty")
		if err := s.Do(ctx, keys, op); err != nil {
			t.Fatal(err)
		}
		if got, want := wire(op.Request().Reply, resp, true), map[int]string{2: "*-1\r\n", 3: "_\r\n"}[resp]; got != want {
			t.Errorf("RESP%d BLPOP's timeout = %q, want %q", resp, got, want)
		}
	}
}

// TestDoBlockingCancel: a blocked BLPOP whose caller goes away (its
// context ends: the client disconnected) returns at once, and the server
// no longer holds it blocked: a later push stays in the list.
func TestDoBlockingCancel(t *testing.T) {
	s := open(t, newDriver(t, server, nil))
	for _, timeout := range []string{"0", "30"} {
		ctx, cancel := context.WithCancel(context.Background())
		op, keys := blpop(3, timeout, "cq")
		done := make(chan error, 1)
		go func() { done <- s.Do(ctx, keys, op) }()
		if !poll(500, func() bool { return blockedClients(t, server) == 1 }) {
			t.Fatal("BLPOP did not block")
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("BLPOP cancelled = %v, want context.Canceled", err)
			}
		case <-time.After(time.Second):
			t.Fatalf("BLPOP (timeout %s) did not return when its context ended", timeout)
		}
		if !poll(500, func() bool { return blockedClients(t, server) == 0 }) {
			t.Fatalf("the server still blocks a client after the cancel (timeout %s)", timeout)
		}
	}
	do(t, s, 3, backends.WritesAll, []int{1}, "RPUSH", "cq", "x")
	if r := do(t, s, 3, backends.ReadOnly, []int{1}, "LLEN", "cq"); r.Int != 1 {
		t.Fatalf("LLEN cq = %d after the push, want 1: a cancelled BLPOP popped it", r.Int)
	}
}

// TestDoRESP2Client: the RESP2 client is made on first use and closed with
// the driver.
func TestDoRESP2Client(t *testing.T) {
	d := newDriver(t, server, nil)
	s := open(t, d)
	resp2Conns := func() int {
		list, err := server.Do(context.Background(), "CLIENT", "LIST")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(list, "\n") {
			if strings.Contains(l, "name=pgcache ") && strings.Contains(l, " resp=2") {
				n++
			}
		}
		return n
	}
	before := resp2Conns()
	do(t, s, 3, backends.WritesAll, []int{1}, "HSET", "h", "f", "v")
	if d.r2.c != nil {
		t.Fatal("a RESP3 request made the RESP2 client")
	}
	for range 3 {
		if r := do(t, s, 2, backends.ReadOnly, []int{1}, "HGETALL", "h"); r.Kind != backends.ReplyArray {
			t.Fatalf("RESP2 HGETALL = %+v, want an array", r)
		}
	}
	if d.r2.c == nil || resp2Conns() <= before {
		t.Fatal("no RESP2 client after RESP2 requests")
	}
	d.Close()
	if d.r2.c != nil || !poll(500, func() bool { return resp2Conns() == before }) {
		t.Fatalf("the RESP2 client outlived the driver (%d connections in RESP2, %d before)", resp2Conns(), before)
	}
}

// TestMessageLayout: the copy of valkey-go's ValkeyMessage that replies are
// read through matches it; a valkey-go upgrade that changes it fails here.
func TestMessageLayout(t *testing.T) {
	if err := messageLayout(); err != nil {
		t.Fatal(err)
	}
}
